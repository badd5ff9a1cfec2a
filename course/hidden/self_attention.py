"""Hidden tests of the exercises of *Self-attention* (``book/self_attention.ipynb``), and their
graded variants (:mod:`course.variants`)."""

import math
import random

from course.hidden import HiddenTest, close, tensor_literal
from course.variants import Variant


def _small(got, expected) -> str:
    """A judge: the error of an exact identity is zero up to float64 rounding."""
    if isinstance(got, bool) or not isinstance(got, int | float):
        return "the value is not a number"
    return "" if abs(got) < 1e-9 else "the error is not 0 up to rounding"


MEASURES = {  # another size of the difference than its largest absolute entry
    "root-mean-square entry": ".square().mean().sqrt().item()",
    "sum of the absolute entries": ".abs().sum().item()",
    "Frobenius norm": ".norm().item()",
}


def _permutation(rng: random.Random) -> Variant:
    words = rng.choice(sorted(MEASURES))
    return Variant(f"the {words}", {"the largest absolute entry of": f"the {words} of",
                                    ".abs().max().item()": MEASURES[words]})


TEMPERATURE_SOLUTION = (
    "Scaling the scores by $\\beta$ multiplies the ratio between a weight and the largest "
    "weight of\nits row by $e^{-\\beta \\Delta}$, where $\\Delta$ is the gap to the row's "
    "maximum score. Every\nentry below the maximum vanishes, and the maximal entries share the "
    "weight equally: the limit is\naverage-hard attention. Rows 1 and 2 have a unique maximum "
    "and become one-hot; row 3 has three\nequal scores, so it stays uniform.")


def _temperature(rng: random.Random) -> Variant:
    """beta to plus or minus infinity, with a bias a j on the score of key j (not both the
    book's +infinity and a = 0)."""
    sign, a = rng.choice([(s, a) for s in (1, -1) for a in (0, 0.5, 1, 2, 3, -0.5, -1, -2, -3)
                          if (s, a) != (1, 0)])
    extreme, scores = ("max", "S") if sign > 0 else ("min", "-S")
    largest = "largest" if sign > 0 else "smallest"
    term = f" {'+' if a > 0 else '-'} {abs(a)} * torch.arange(3.0)" if a else ""
    return Variant(f"beta to {'minus ' * (sign < 0)}infinity, bias {a} j", {
        # the longer texts first: each replacement changes what the later ones see
        'assert torch.equal(limit, attention_weights(S, kind="average_hard")), (\n'
        '    "the limit should equal average-hard attention exactly")':
            f'hard = attention_weights({scores}, kind="average_hard")\n'
            f'assert torch.equal(limit[:2], hard[:2]), (\n'
            f'    "rows 1 and 2 should be one-hot at the {largest} score")',
        "limit = is_max.double() / is_max.sum(dim=-1, keepdim=True)":
            (f"bias = {a} * torch.arange(3.0)  # a j, for key j\n"
             f"weight = is_{extreme}.double() * bias.exp()\n" if a else
             f"weight = is_{extreme}.double()\n")
            + "limit = weight / weight.sum(dim=-1, keepdim=True)",
        "by a large factor $\\beta$ before the softmax.":
            f"by a large {'negative ' * (sign < 0)}factor $\\beta$"
            + (f", add $a j$ with $a = {a}$ to every score of\nkey $j$ (counted from 0), "
               if a else " ") + "and take the softmax.",
        "as $\\beta \\to \\infty$": f"as $\\beta \\to {'-' * (sign < 0)}\\infty$",
        'attention_weights(S, kind="average_hard")':
            f'attention_weights({scores}, kind="average_hard")',
        TEMPERATURE_SOLUTION: (
            f"Scaling the scores by $\\beta$ multiplies the ratio between a weight and the "
            f"weight of its\nrow's {largest} score by $e^{{-|\\beta| \\Delta}}$, where $\\Delta$ "
            f"is the gap between their scores (the bias\ndoes not grow with $\\beta$). Every "
            f"entry but the {largest} vanishes, and the {largest} entries share the\nweight "
            + ("equally: the limit is average-hard attention on $-S$." if not a else
               "in proportion to $e^{a j}$, what the softmax of the bias alone gives them.")
            + f" Rows 1 and 2 have a unique {largest}\nscore and become one-hot; row 3 has three "
            + ("equal scores, so it stays uniform." if not a else
               "equal scores, so its weights are\n$e^{a j}/(1 + e^a + e^{2a})$, not one-hot.")),
        "S.max(dim=-1": f"S.{extreme}(dim=-1", "is_max": f"is_{extreme}",
        "(10.0, 100.0)": f"({sign * 10.0}, {sign * 100.0})",
        "    print(beta, (attention_weights(beta * S) - limit).abs().max().item())":
            "    gap = (attention_weights(beta * S + bias) - limit).abs().max()\n"
            "    print(beta, gap.item())" if a else
            "    print(beta, (attention_weights(beta * S) - limit).abs().max().item())",
        "gap = (attention_weights(1000.0 * S)":
            f"scaled = {sign * 1000.0} * S{term}  # beta S + a j\n"
            "gap = (attention_weights(scaled)",
        "softmax(1000 S)": f"softmax({sign * 1000} S{' + a j' * bool(a)})",
    }, {"sign": sign, "a": a})


CROSSOVER_SOLUTION = (
    "The quadratic part costs $2n^2 d$ multiply-adds and the projections $3nd^2$, so the "
    "quadratic\npart is larger exactly when $n > 3d/2$. For $d = 32$ that is $n > 48$. With "
    "$d = 4096$ the\ncrossover is at $n = 6144$: shorter sequences spend more on projections "
    "than on attention\nscores.")


NARROWER = [2, 4, 8]  # r: keys and queries, or values, of width d/r in a variant
# The widths d tested are multiples of every q (the book's 2; a variant's r + 1, or 1), so
# that every crossover p d / q is whole; the same for the book and every variant (N22).
WHOLE = math.lcm(2, *(r + 1 for r in NARROWER))


def _crossover(rng: random.Random) -> Variant:
    """Keys and queries, or values, of width d/r, or an output projection: the crossover
    n = p d / q changes (with q dividing d)."""
    r = rng.choice(NARROWER)
    shapes = {  # what changes: (its words, d_k, d_v, p, q, the projections' cost in d^2 n)
        "narrow keys": (f"$d_k = d/{r}$ (keys and queries narrower than the values) and "
                        "$d_v = d$", f"d // {r}", "d", 2 + r, 1 + r, f"(2/{r} + 1)"),
        "narrow values": (f"$d_k = d$ and $d_v = d/{r}$ (values narrower than the keys)",
                          "d", f"d // {r}", 2 * r + 1, r + 1, f"(2 + 1/{r})"),
        "output projection": ("$d_k = d_v = d$ and an output projection $\\mathbf{W}^O \\in "
                              "\\mathbb{R}^{d \\times d}$ applied to the\nresult (a fourth "
                              "projection)", "d", "d", 2, 1, "4"),
    }
    which = rng.choice(sorted(shapes))
    words, d_k, d_v, p, q, linear = shapes[which]
    extra = " + 2 * n * d * d" if which == "output projection" else ""
    largest = 4096 // (8 * q) * 8 * q  # the largest d <= 4096 with q | d (n <= 8192)
    name = which if which == "output projection" else f"{which}, r = {r}"
    return Variant(name, {
        "For $d_k = d_v = d$, find": f"For {words}, find",
        "costs more than the three projections.":
            "costs more than the projections" + (" (four of them)." if extra else "."),
        CROSSOVER_SOLUTION: (
            f"The quadratic part costs $2n^2 d$ times $(d_k + d_v)/(2d)$ multiply-adds, and "
            f"the projections\n$nd^2$ times {linear}; setting them equal gives "
            f"$n = {p}d/{q}$" + (", a whole number when\n$d$ is a multiple of "
                                 f"{q}" if q > 1 else "") + f". For $d = {32 * q}$ that is "
            f"$n = {32 * p}$, and with $d = 4096$ the crossover is at\n"
            f"$n \\approx {round(4096 * p / q)}$: shorter sequences spend more on projections "
            "than on attention scores."),
        "return 3 * d // 2": f"return {p} * d // {q}  # exact when {q} divides d",
        "return 2 * 2 * n * n * d / attention_flops(n, d, d, d)":
            f"d_k, d_v = {d_k}, {d_v}\n    return 2 * n * n * (d_k + d_v) / (\n"
            f"        attention_flops(n, d, d_k, d_v){extra})",
        "for d in (8, 32, 4096):": f"for d in ({8 * q}, {32 * q}, {largest}):",
        "quadratic_share(47, 32) < 0.5 < quadratic_share(49, 32)":
            f"quadratic_share({32 * p - 1}, {32 * q}) < 0.5 < quadratic_share({32 * p + 1}, "
            f"{32 * q})",
    })


STRICT_SOLUTION_START = "Row 0 then has no allowed position"


def _strict(rng: random.Random) -> Variant:
    """Keys at least s positions back, or s ahead (not the book's s = 1 back): the first or
    last s rows are empty."""
    ahead, s = rng.choice([(a, s) for a in (False, True) for s in (1, 2, 3)
                           if (a, s) != (False, 1)])
    mask = f"torch.ones(4, 4, dtype=torch.bool).{'triu' if ahead else 'tril'}" \
           f"({s if ahead else -s})"
    empty = list(range(4 - s, 4)) if ahead else list(range(s))
    rest = [i for i in range(4) if i not in empty]
    rows = (f"{empty[0]}:" if ahead else f":{s}") if s > 1 else str(empty[0])
    others = f":{4 - s}" if ahead else f"{s}:"
    listed = " and ".join(map(str, empty)) if s < 3 else f"{empty[0]}-{empty[-1]}"
    plural = "s" if s > 1 else ""
    relation = f"j \\ge i + {s}" if ahead else f"j \\le i - {s}"
    other_rows = f"rows {rest[0]}-{rest[-1]}" if len(rest) > 1 else f"row {rest[0]}"
    have = "have" if len(rest) > 1 else "has"
    return Variant(f"keys at least {s} {'ahead' if ahead else 'back'}", {
        "`chiang2024esslli`. Compute `naive`": (
            f"`chiang2024esslli`. Here take a stricter mask: position $i$ may attend only to "
            f"${relation}$,\nthe mask `{mask}`. With it, compute `naive`"),
        "mask=future_mask(4, strict=True))`": "mask=that mask)`",
        "What goes\nwrong at position 0": f"What goes\nwrong at position{plural} {listed}",
        "strict = future_mask(4, strict=True)": f"strict = {mask}",
        # whole lines of the check, so that no replacement's text is replaced again
        'assert naive[0].isnan().all(), "the naive softmax of row 0 should be NaN"':
            f'assert naive[{rows}].isnan().all(), (\n    "the naive softmax of '
            f'row{plural} {listed} should be NaN")',
        'assert not naive[1:].isnan().any(), "rows 1-3 have allowed positions"':
            f'assert not naive[{others}].isnan().any(), "{other_rows} {have} allowed '
            'positions"',
        "assert (weights[0] == 0).all()": f"assert (weights[{rows}] == 0).all()",
        'assert torch.allclose(weights[1:], naive[1:]), "rows 1-3 should agree"':
            f'assert torch.allclose(weights[{others}], naive[{others}]), (\n'
            f'    "{other_rows} should agree")',
        "companion gives an empty row zero weights": "companion gives empty rows zero weights",
        STRICT_SOLUTION_START: f"Row{plural} {listed} then {'have' if s > 1 else 'has'} no "
                               "allowed position",
        "position 0 receives the zero vector":
            f"position{plural} {listed} receive{'' if s > 1 else 's'} the zero vector",
    }, {"ahead": ahead, "s": s})


VARIANTS = {"ex-sa-permutation": _permutation, "ex-sa-temperature": _temperature,
            "ex-sa-crossover": _crossover, "ex-sa-strict": _strict}


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    def permuted(n):
        order = list(range(n))
        rng.shuffle(order)
        return f"{tensor_literal(rng, (n, 8))}, torch.tensor({order})"

    n_plain, n_masked, n_strict = (rng.randrange(3, 20) for _ in range(3))
    masked = HiddenTest(f"equivariance_error({permuted(n_masked)}, "
                        f"mask=future_mask({n_masked}))", close(rtol=1e-6))
    if "ex-sa-permutation" in variants:  # the measure matters only where the error is not 0
        permutation = [masked, HiddenTest(f"equivariance_error({permuted(n_strict)}, "
                                          f"mask=future_mask({n_strict}, strict=True))",
                                          close(rtol=1e-6))]
    else:
        permutation = [HiddenTest(f"equivariance_error({permuted(n_plain)})", _small), masked]
    return {
        "ex-sa-permutation": permutation,
        "ex-sa-temperature": [HiddenTest("limit", close(atol=1e-12, locate=False))],
        "ex-sa-crossover": [
            HiddenTest(f"crossover_length({WHOLE * rng.randrange(1, 10_000 // WHOLE)})",
                       close(rtol=0, atol=0)) for _ in range(3)],
        "ex-sa-strict": [HiddenTest("naive", close(locate=False)),
                         HiddenTest("weights", close(locate=False))],
    }
