"""The hand-set networks of Chiang & Cholak (2022) against brute force and their closed forms.

The closed forms are derived by hand from the paper (Appendix A and §3-§5); they are checked
against the encoder's computation, never against values copied from it."""

import math

import pytest
import torch
import torch.nn.functional as F

from companion.constructions import (
    first_transformer,
    flawed_first_transformer,
    parity_transformer,
    rumelhart_parity,
    scaled_first_bound,
)
from companion.languages import all_strings, first, parity, random_strings

EXACT = {
    "parity": (lambda: parity_transformer(), parity),
    "parity c=3": (lambda: parity_transformer(c=3.0), parity),
    "parity LN eps=0": (lambda: parity_transformer(layernorm=True), parity),
    "parity LN eps=1e-5": (lambda: parity_transformer(layernorm=True, eps=1e-5), parity),
    "first": (lambda: first_transformer(), first),
    "first LN eps=1e-5": (lambda: first_transformer(layernorm=True, eps=1e-5), first),
    "first log-length": (lambda: first_transformer(log_length=True), first),
    "flawed first log-length": (lambda: flawed_first_transformer(log_length=True), first),
}


@pytest.mark.parametrize("name", EXACT)
def test_exact_on_every_string_up_to_length_12(name):
    build, language = EXACT[name]
    model = build()
    with torch.no_grad():
        for m in range(13):
            w = all_strings(m)
            assert torch.equal(model(w) > 0, language(w)), f"{name} fails at m = {m}"


def parity_logit(n, k, c):
    """Seed 000 §3.2 / Appendix A, derived again: the logit s at CLS for n positions, k ones."""
    if n % 2 == 0:
        return (-1) ** (k + 1) * 2 * math.tanh(c) / n**2
    z1 = (n - 1) / 2 * math.exp(c) + (n + 1) / 2 * math.exp(-c)
    z2 = (n + 1) / 2 * math.exp(c) + (n - 1) / 2 * math.exp(-c)
    if k % 2 == 0:
        return -(n - 1) * math.sinh(2 * c) / (n * z1 * z2)
    return (n + 1) * math.sinh(2 * c) / (n * z1 * z2)


@pytest.mark.parametrize("c", [0.5, 1.0, 2.0])
def test_parity_logit_closed_form(c):
    model = parity_transformer(c=c)
    with torch.no_grad():
        for m in range(1, 11):
            w = all_strings(m)
            k = w.sum(dim=1).tolist()
            expected = torch.tensor([parity_logit(m + 1, kk, c) for kk in k], dtype=torch.float64)
            torch.testing.assert_close(model(w), expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("c", [0.5, 1.0, 2.0])
def test_first_logit_closed_forms(c):
    with torch.no_grad():
        for m in range(1, 11):
            w, n = all_strings(m), m + 1
            sign = w[:, 0].double() - 0.5
            k = w.sum(dim=1).double()
            eq1 = math.exp(c) / (math.exp(c) + n - 1) * sign
            torch.testing.assert_close(first_transformer(c=c)(w), eq1)
            flawed = ((math.exp(c) - 1) * sign + (k - n / 2)) / (math.exp(c) + n - 1)
            torch.testing.assert_close(flawed_first_transformer(c=c)(w), flawed)
            log_scaled = n / (2 * n - 1) * sign
            torch.testing.assert_close(first_transformer(log_length=True)(w), log_scaled)
            flawed_log = ((n - 1) * sign + (k - n / 2)) / (2 * n - 1)
            torch.testing.assert_close(flawed_first_transformer(log_length=True)(w), flawed_log)


@pytest.mark.parametrize("layernorm, eps", [(False, 0.0), (True, 0.0), (True, 1e-5),
                                           (True, 0.1)])
def test_scaled_first_bound_holds_at_every_length(layernorm, eps):
    """Proposition 3: the log-scaled FIRST transformer's logit is above the bound in size on the
    two worst strings of each length (its other positions' values are zero, so they stand for
    every string), from n = 2 to far beyond the paper's lengths."""
    bound = scaled_first_bound(layernorm, eps)
    model = first_transformer(layernorm=layernorm, eps=eps, log_length=True)
    with torch.no_grad():
        for n in (2, 3, 4, 10, 1000, 10**5):
            w = torch.tensor([[1] + [0] * (n - 2), [0] + [1] * (n - 2)])
            s = model(w)
            assert s[0] > bound and s[1] < -bound, (n, s)
            if not layernorm:  # tight: n / (2(2n - 1)) tends to 1/4
                assert s[0] - bound <= 1 / (4 * (2 * n - 1)) + 1e-12


def test_scaled_first_bound_fails_at_eps_one():
    """The bound is not for every eps > 0 (the docstring's caveat): at eps = 1 the logit is
    already below it at n = 2 and shrinks as n grows."""
    bound = scaled_first_bound(True, 1.0)
    model = first_transformer(layernorm=True, eps=1.0, log_length=True)
    with torch.no_grad():
        sizes = [model(torch.tensor([[1] + [0] * (n - 2)])).abs().item() for n in (2, 10, 1000)]
    assert sizes[0] < bound and sizes[0] > sizes[1] > sizes[2]


def test_scaled_first_bound_is_the_proofs():
    """With layer normalization, the proof's formula s ((1 + s^2)/6 + eps)^(-1/2) stays above
    the bound over the range 1/4 < |s| <= 1/2 of the unnormalized logit: the bound takes the
    numerator at its smallest, |s| = 1/4, and the variance at its largest, |s| = 1/2."""
    for eps in (0.0, 1e-5, 0.1):
        bound = scaled_first_bound(True, eps)
        s = torch.linspace(0.25, 0.5, 101, dtype=torch.float64)
        proof = s / torch.sqrt((1 + s**2) / 6 + eps)
        assert (proof >= bound).all()
        assert math.isclose(0.25 / math.sqrt((1 + 0.5**2) / 6 + eps), bound)
    assert scaled_first_bound() == scaled_first_bound(False, 0.3) == 0.25
    with pytest.raises(ValueError, match="eps must be >= 0"):
        scaled_first_bound(True, -1.0)


def test_flawed_first_fails_exactly_when_c_is_too_small():
    """Correct on every string of length m iff the worst case says so (seed 000 §5.2)."""
    with torch.no_grad():
        for m in range(2, 11):
            n, w = m + 1, all_strings(m)
            for c in (0.5, 1.0, 1.5, 2.0, 2.5):
                correct = bool(torch.equal(flawed_first_transformer(c=c)(w) > 0, first(w)))
                # worst cases: "1" then zeros (k = 1), and "0" then ones (k = n - 2)
                worst_accept = (math.exp(c) - 1) / 2 + 1 - n / 2 > 0
                worst_reject = -(math.exp(c) - 1) / 2 + (n - 2) - n / 2 < 0
                assert correct == (worst_accept and worst_reject), (m, c)
                if c > math.log(n - 1):
                    assert correct


def test_parity_activations_are_the_papers_vectors():
    model = parity_transformer()
    L = model.layout
    w = torch.tensor([[1, 0, 1, 1, 0, 1]])  # n = 7 positions, k = 4
    n, k = 7, 4
    _, trace = model(w, record=True)
    i = torch.arange(n, dtype=torch.float64)
    symbols = torch.tensor([2, 1, 0, 1, 1, 0, 1])
    c1 = trace.c[0][0]
    assert torch.equal(c1[:, L["is_1"]], (symbols == 1).double())
    assert torch.equal(c1[:, L["is_cls"]], (symbols == 2).double())
    torch.testing.assert_close(c1[:, L["i/n"]], i / n)
    assert torch.equal(c1[:, L["cos(i*pi)"]], torch.cos(i * math.pi).round())
    torch.testing.assert_close(c1[:, L["k/n"]], torch.full((n,), k / n, dtype=torch.float64))
    torch.testing.assert_close(c1[:, L["1/n"]], torch.full((n,), 1 / n, dtype=torch.float64))
    a1 = trace.a[1][0]
    torch.testing.assert_close(a1[:, L["[i=k]/n"]], (i == k).double() / n, rtol=0, atol=1e-15)
    a2_cls = trace.a[2][0, 0]
    expected = L.vector({"is_cls": 1.0, "cos(i*pi)": 1.0, "k/n": k / n, "1/n": 1 / n,
                         "s": parity_logit(n, k, 1.0)})
    torch.testing.assert_close(a2_cls, expected, rtol=0, atol=1e-15)


def test_layernorm_with_eps_zero_is_scale_invariant_in_decisions():
    """Appendix B: LN only rescales the negation-doubled activations; decisions are kept."""
    plain, normed = parity_transformer(), parity_transformer(layernorm=True)
    w = all_strings(9)
    _, trace = normed(w, record=True)
    doubled = trace.a[1]
    torch.testing.assert_close(doubled.mean(-1), torch.zeros(doubled.shape[:2],
                                                            dtype=torch.float64))
    assert torch.equal(plain(w) > 0, normed(w) > 0)


@pytest.mark.parametrize("m", range(1, 13))
def test_rumelhart_parity_on_every_string(m):
    network, w = rumelhart_parity(m), all_strings(m)
    assert torch.equal(network(w), parity(w))
    k = w.sum(dim=1, keepdim=True)
    assert torch.equal(network.hidden(w), (k >= torch.arange(1, m + 1)).double())


def test_bad_arguments():
    for build in (parity_transformer, first_transformer, flawed_first_transformer):
        with pytest.raises(ValueError, match="c must be > 0"):
            build(c=0.0)
        with pytest.raises(TypeError, match="c must be a number"):
            build(c="big")
    with pytest.raises(ValueError, match="eps must be >= 0"):
        parity_transformer(layernorm=True, eps=-0.1)
    with pytest.raises(ValueError, match="eps must be >= 0"):
        first_transformer(eps=-1.0)
    with pytest.raises(ValueError, match="m must be >= 1"):
        rumelhart_parity(0)
    with pytest.raises(ValueError, match="length m = 4"):
        rumelhart_parity(4)("011")


@pytest.mark.parametrize("name", ["PARITY", "FIRST"])
@pytest.mark.parametrize("eta", [0.999, 0.1, 1e-6])
def test_sharpen_keeps_every_decision_and_bounds_the_cross_entropy(name, eta):
    """Proposition 2 of Chiang & Cholak, by brute force over every string up to length 8 and
    on random strings of length 2000."""
    from companion.constructions import sharpen

    build, language = {"PARITY": (parity_transformer, parity),
                       "FIRST": (first_transformer, first)}[name]
    model = build(layernorm=True)
    sharp = sharpen(model, eta)
    generator = torch.Generator().manual_seed(0)
    for w in [*(all_strings(m) for m in range(1, 9)), random_strings(16, 1999, generator)]:
        with torch.no_grad():
            before, after = model(w), sharp(w)
        assert torch.equal(after > 0, before > 0) and torch.equal(after > 0, language(w))
        bits = F.softplus(torch.where(language(w), -after, after)) / math.log(2)
        assert bits.max().item() <= eta
        # the margin: exactly log2(1 + (2^eta - 1)/2) bits, against the sharpened logit
        promised = math.log2(1 + (2**eta - 1) / 2)
        assert (bits - promised).abs().max().item() < 1e-9 * promised
        # every logit is +-margin: the same size on every string, however long
        assert (after.abs() - after.abs()[0]).abs().max() < 1e-9 * after.abs()[0]


def test_sharpen_matches_pytorch_and_refuses_bad_input():
    from companion.constructions import sharpen
    from companion.torch_export import to_torch

    sharp = sharpen(parity_transformer(layernorm=True), 0.01)
    w = random_strings(20, 30, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(sharp(w), to_torch(sharp)(w), rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match="eta"):
        sharpen(parity_transformer(layernorm=True), 0.0)
    with pytest.raises(ValueError, match="eta"):
        sharpen(parity_transformer(layernorm=True), float("nan"))
    for coin_flip_or_worse in (1.0, 1.5):  # the proof's c is positive only below 1 bit
        with pytest.raises(ValueError, match="eta must be < 1"):
            sharpen(parity_transformer(layernorm=True), coin_flip_or_worse)
    with pytest.raises(ValueError, match="eps = 0"):
        sharpen(parity_transformer(), 0.1)
    with pytest.raises(ValueError, match="eps = 0"):
        sharpen(parity_transformer(layernorm=True, eps=1e-5), 0.1)
    with pytest.raises(TypeError, match="Encoder"):
        sharpen("parity", 0.1)


def test_with_eps_changes_only_eps_and_matches_the_layer_norm_formula():
    """A sharpened model's extra layer sees [s, -s, 0, ...] (s: the old logit), so with eps its
    logit is margin * s / sqrt(2 s^2 / d + eps) / sqrt(d / 2): derived by hand, checked here
    against the network, with the old logit computed by the model with the same eps."""
    from companion.constructions import sharpen, with_eps

    for build in (parity_transformer, first_transformer):
        model = build(layernorm=True)
        sharp = sharpen(model, 0.1)
        smoothed = with_eps(sharp, 1e-5)
        assert sharp.eps == 0.0 and smoothed.eps == 1e-5
        for a, b in zip(sharp.parameters(), smoothed.parameters(), strict=True):
            assert torch.equal(a, b)
        margin = sharp.output_weight[0].item() * math.sqrt(sharp.d / 2)
        w = random_strings(64, 40, torch.Generator().manual_seed(2))
        with torch.no_grad():
            s = with_eps(model, 1e-5)(w)
            expected = (margin * s / torch.sqrt(2 * s**2 / sharp.d + 1e-5)
                        / math.sqrt(sharp.d / 2))
            torch.testing.assert_close(smoothed(w), expected, rtol=1e-9, atol=1e-12)
            size = torch.full((64,), margin, dtype=torch.float64)
            torch.testing.assert_close(sharp(w).abs(), size, rtol=1e-12, atol=0)


def test_with_eps_refuses_bad_input():
    from companion.constructions import with_eps

    with pytest.raises(ValueError, match="no layer normalization"):
        with_eps(parity_transformer(), 1e-5)
    with pytest.raises(ValueError, match="eps"):
        with_eps(parity_transformer(layernorm=True), -1.0)
    with pytest.raises(TypeError, match="Encoder"):
        with_eps("parity", 0.0)
