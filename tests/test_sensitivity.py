"""Sensitivity (companion.sensitivity) against a brute force written here, one string and one
flip at a time, on random truth tables, circuits and a model's decisions; against the closed
forms of PARITY (n), FIRST (1) and MAJORITY (a central binomial term); and bad input."""

import itertools
import math

import pytest
import torch

from companion import circuits, model
from companion.languages import first, majority, parity
from companion.sensitivity import average_sensitivity, sensitivity_profile


def brute_force(decide, n):
    """Each string's number of sensitive positions, strings in lexicographic order, computed
    from ``decide`` (a function of a tuple of bits) one string and one flip at a time."""
    profile = []
    for x in itertools.product((0, 1), repeat=n):
        flipped = (x[:i] + (1 - x[i],) + x[i + 1:] for i in range(n))
        profile.append(sum(decide(y) != decide(x) for y in flipped))
    return profile


def one_at_a_time(f):
    return lambda x: bool(f(torch.tensor([x])).item())


@pytest.mark.parametrize("n", range(0, 9))
def test_random_truth_tables_against_brute_force(n):
    table = torch.rand(2**n, generator=torch.Generator().manual_seed(n)) < 0.5
    index = 2 ** torch.arange(n - 1, -1, -1)

    def f(w):
        return table[(w * index).sum(dim=1)]

    assert sensitivity_profile(f, n).tolist() == brute_force(one_at_a_time(f), n)


def test_circuits_and_a_models_decisions_against_brute_force():
    n = 7
    for circuit in (circuits.parity_tree(n), circuits.majority_fan_in_2(n)):
        assert sensitivity_profile(circuit.evaluate, n).tolist() == brute_force(
            one_at_a_time(circuit.evaluate), n)
    config = model.Config(vocab=2, outputs=1, d=8, heads=2, layers=1, positions="learned",
                          max_length=8)
    torch.manual_seed(0)
    net = model.Model(config)

    def decide(w):
        with torch.no_grad():
            return net(w)[:, -1, 0] > 0

    profile = sensitivity_profile(decide, n)
    assert profile.tolist() == brute_force(one_at_a_time(decide), n)


def majority_average(n):
    """MAJORITY's average sensitivity in closed form (n >= 1): the accepted strings with the
    fewest 1s, n//2 + 1, are sensitive at each of their 1s, the rejected strings with the most
    1s, n//2, at each of their 0s, and no other string anywhere."""
    accepted, rejected = n // 2 + 1, n // 2
    return (math.comb(n, accepted) * accepted + math.comb(n, rejected) * (n - rejected)) / 2**n


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 10, 15, 16])
def test_closed_forms(n):
    assert sensitivity_profile(parity, n).tolist() == [n] * 2**n
    assert average_sensitivity(first, n) == 1.0
    assert average_sensitivity(majority, n) == pytest.approx(majority_average(n), rel=1e-12)


def test_majority_grows_like_the_square_root_and_parity_like_n():
    for n in (9, 15, 19):  # odd n: (n + 1) C(n, (n+1)/2) / 2^n, about sqrt(2n / pi)
        exact = (n + 1) * math.comb(n, (n + 1) // 2) / 2**n
        assert average_sensitivity(majority, n) == pytest.approx(exact, rel=1e-12)
        assert 0.9 < exact / math.sqrt(2 * n / math.pi) < 1.1


def test_the_empty_string_and_bad_input():
    assert sensitivity_profile(parity, 0).tolist() == [0]
    assert average_sensitivity(parity, 0) == 0.0
    with pytest.raises(ValueError, match="n must be <= 20"):
        average_sensitivity(parity, 21)
    with pytest.raises(ValueError, match="n must be >= 0"):
        sensitivity_profile(parity, -1)
    with pytest.raises(TypeError, match="n must be an int"):
        sensitivity_profile(parity, 3.0)
    with pytest.raises(TypeError, match="f must be"):
        sensitivity_profile("parity", 3)
    with pytest.raises(TypeError, match="f must return a BoolTensor"):
        sensitivity_profile(lambda w: w.sum(dim=1), 3)
    with pytest.raises(TypeError, match="f must return a BoolTensor"):
        sensitivity_profile(lambda w: [True] * len(w), 3)
    with pytest.raises(ValueError, match="one decision per string"):
        sensitivity_profile(lambda w: torch.ones(len(w), 2, dtype=torch.bool), 3)
