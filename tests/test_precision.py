"""The rounding analysis of companion.precision against computation in low precision."""

import math

import numpy as np
import pytest
import torch

from companion import evaluation
from companion.constructions import parity_transformer
from companion.languages import all_strings, parity
from companion.precision import (
    parity_guaranteed_length,
    parity_rounding_bounds,
    parity_spike_probe,
    unit_roundoff,
)


def test_unit_roundoff_is_half_the_machine_epsilon():
    assert unit_roundoff(torch.float32) == 2.0**-24
    assert unit_roundoff(torch.bfloat16) == 2.0**-8
    assert unit_roundoff(torch.float64) == 2.0**-53
    with pytest.raises(TypeError, match="dtype"):
        unit_roundoff(torch.long)


def test_bad_lengths_are_refused():
    with pytest.raises(ValueError, match="n must"):
        parity_rounding_bounds(1, torch.float32)
    with pytest.raises(ValueError, match="n must"):
        parity_rounding_bounds([2.5], torch.float32)


def test_count_bound_is_about_k_squared_u():
    # Step 2 by hand, to first order in u: k weights, each off by 2u, summed with k - 1
    # roundings of relative size up to u each: |E| <= k (2 + k - 1) u = k (k + 1) u.
    u, n = unit_roundoff(torch.float32), np.array([10, 100, 1000])
    count = parity_rounding_bounds(n, torch.float32)["count"]
    k = n - 1
    assert np.allclose(count, k * (k + 1) * u, rtol=1e-3)


def test_guaranteed_lengths_shrink_with_precision():
    lengths = [parity_guaranteed_length(d, up_to=10**5)
               for d in (torch.bfloat16, torch.float16, torch.float32)]
    assert lengths == sorted(lengths) and lengths[0] >= 2
    # The bound is of order 1/sqrt(u): the guaranteed n scales like 2**(p/2).
    assert 2**12 / 8 < lengths[2] < 2**12
    assert parity_guaranteed_length(torch.float64, up_to=10**6) == 10**6


def _sequential_sum(values, dtype):
    total = torch.zeros((), dtype=dtype)
    for value in values:  # left to right, one rounding per addition
        total = total + value
    return total


def test_count_bound_holds_for_a_worst_kind_of_summation_order():
    # Left-to-right summation of k equal weights is the classical worst case; the bound must
    # cover it as well as whatever the matrix kernel of this machine does.
    for dtype, m in ((torch.float32, 3000), (torch.bfloat16, 60)):
        n = m + 1
        weight = torch.tensor(1 / n, dtype=dtype)
        error = abs(_sequential_sum([weight] * m, dtype).double().item() * n - m)
        assert error <= parity_rounding_bounds(n, dtype)["count"]


def test_spike_probe_is_exact_in_float64():
    probe = parity_spike_probe(50, torch.float64)
    assert abs(probe["count error"]) < 1e-9 and abs(probe["e_k"]) < 1e-9
    assert abs(probe["at k"] - 1) < 1e-9 and abs(probe["at k-1"]) < 1e-9
    with pytest.raises(ValueError, match="m must"):
        parity_spike_probe(0, torch.float64)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_measured_count_errors_and_spikes_stay_within_the_bounds(dtype):
    for m in (10, 99, 1000, 3000):
        bounds, probe = parity_rounding_bounds(m + 1, dtype), parity_spike_probe(m, dtype)
        assert abs(probe["count error"]) <= bounds["count"]
        assert probe["spike error"] <= bounds["ffn"]
        # The spike follows what FFN 1 sees, up to its own rounding.
        assert abs(probe["at k"] - max(0, 1 - abs(probe["e_k"]))) <= bounds["ffn"]
        assert abs(probe["at k-1"] - max(0, -probe["e_k-1"])) <= bounds["ffn"]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_every_string_up_to_the_guaranteed_length_is_right_in_low_precision(dtype):
    model = parity_transformer().to(dtype)
    longest = parity_guaranteed_length(dtype, up_to=1000)
    for m in range(1, longest):
        w = all_strings(m)
        assert torch.equal(evaluation.logits(model, w) > 0, parity(w)), m


def test_float32_is_right_on_every_count_up_to_the_guaranteed_length():
    model = parity_transformer().to(torch.float32)
    longest = parity_guaranteed_length(torch.float32, up_to=10**4)
    for m in sorted({*np.geomspace(1, longest - 1, 12).astype(int).tolist(), longest - 1}):
        counts = torch.arange(m + 1)[:, None]
        w = (torch.arange(m).expand(m + 1, m) < counts).long()  # 1^k 0^(m-k), every k
        w = torch.cat([w, w.flip(1)])  # ones at the end too
        assert torch.equal(evaluation.logits(model, w) > 0, parity(w)), m


def test_margin_is_the_closed_form_logit_in_exact_arithmetic():
    # With u -> 0 the margin tends to |Delta| = 2 tanh(c)/n for even n (the paper's s times n).
    bounds = parity_rounding_bounds(np.array([10, 1000]), torch.float64, c=1.0)
    assert np.allclose(bounds["margin"], 2 * math.tanh(1.0) / np.array([10, 1000]), rtol=1e-6)
