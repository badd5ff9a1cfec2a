"""Hidden tests of the exercises of *Transformers as language recognizers*
(``book/recognizers.ipynb``), and their graded variants (:mod:`course.variants`): the weights
come back as numbers and are checked exactly, for every length, in the grader's process."""

import math
import random

from companion.exercises import check_previous_position_layer, check_tied_queries
from course.hidden import HiddenTest, close, variant_params
from course.variants import Variant


def _feedback(check, **params):
    """A judge: ``check`` (a function of :mod:`companion.exercises`) on the matrices the test
    lists, with the variant's ``params``; a list of another length is refused before the call,
    so that no message speaks of the check's own arguments."""
    def judge(got, expected) -> str:
        if not isinstance(got, list) or len(got) != len(expected):
            return f"not a list of {len(expected)} weight matrices"
        try:
            feedback = check(*got, **params)
        except ValueError as error:
            return f"not a weight matrix ({error})"
        except TypeError:
            return "not a weight matrix"
        return "" if feedback else feedback.message
    return judge


def _previous(rng: random.Random) -> Variant:
    k = rng.randrange(2, 8)
    return Variant(f"copy x_(i-{k})", {
        "Copying the previous position": f"Copying from {k} positions back",
        "(Exercise 5.1 of": "(After Exercise 5.1 of",
        "x_{i-1}]^\\top$, and $[x_0, 1, 0, 0, x_0]^\\top$\nat position 0.":
            f"x_{{i-{k}}}]^\\top$ for $i \\ge {k}$,\nand $[x_i, 1, i, i^2, x_0]^\\top$ at the "
            f"positions $i < {k}$.",
        "check_previous_position_layer(W_Q, W_K, W_V)":
            f"check_previous_position_layer(W_Q, W_K, W_V, offset={k})",
        "$j = i - 1$": f"$j = i - {k}$",
        "(i-1)": f"(i-{k})",
        "At\n$i = 0$ it is $-2j - j^2$, maximized at $j = 0$, as required.":
            f"For\n$i \\le {k}$ its coefficient $2(i-{k})$ is not positive, so it is maximized at "
            "$j = 0$, as required.",
        "[2i - 2, -1]": f"[2i - {2 * k}, -1]",
        "W_Q = [[0, -2, 2,": f"W_Q = [[0, -{2 * k}, 2,",
    }, {"offset": k})


def _hard(rng: random.Random) -> Variant:
    k = rng.randrange(2, 8)
    tie = f"$j = i - {k}$ and $j = i - {k - 1}$"
    return Variant(f"ties at i-{k} and i-{k - 1}", {
        "position $i \\ge 1$ has **two** maximal scores, at\n$j = i - 1$ and $j = i$.":
            f"position $i \\ge {k}$ has **two** maximal scores, at\n{tie}.",
        "$-(j - (i - \\tfrac12))^2$ is maximal at both $j = i - 1$ and $j = i$":
            f"$-(j - (i - \\tfrac{{{2 * k - 1}}}{{2}}))^2$ is maximal at both {tie}",
        "(2i - 1)j": f"(2i - {2 * k - 1})j",
        "[2i - 1, -1]": f"[2i - {2 * k - 1}, -1]",
        "(At\n$i = 0$": f"(At\n$i < {k}$",
        "still copies $x_{i-1}$;\naverage-hard attention writes $(x_{i-1} + x_i)/2$.":
            f"copies $x_{{i-{k}}}$;\naverage-hard attention writes "
            f"$(x_{{i-{k}}} + x_{{i-{k - 1}}})/2$.",
        "W_Q_tie = [[0, -1, 2,": f"W_Q_tie = [[0, -{2 * k - 1}, 2,",
        "check_tied_queries(W_Q_tie)": f"check_tied_queries(W_Q_tie, offset={k})",
        "torch.randn(6,": "torch.randn(10,",
        "left[1:], x[:-1]": f"left[{k}:], x[:-{k}]",
        "copy x_(i-1)": f"copy x_(i-{k})",
        "mean[1:], (x[:-1] + x[1:]) / 2": f"mean[{k}:], (x[:-{k}] + x[1:-{k - 1}]) / 2",
        "(x_(i-1) + x_i) / 2": f"(x_(i-{k}) + x_(i-{k - 1})) / 2",
    }, {"offset": k})


LEADS = range(1, 5)  # a variant's ties have this many more 1s than 0s (the book's: 0)


def _zero(rng: random.Random) -> Variant:
    lead = rng.choice(LEADS)
    m = rng.choice([m for m in range(10, 14) if (m - lead) % 2 == 0])
    k, n = (m + lead) // 2, m + 1
    ties = math.comb(m, k)
    return Variant(f"a lead of {lead}, length {m}", {
        "Remove the $-\\tfrac12$ that CLS contributes to the MAJORITY recognizer.":
            f"Let CLS contribute $-{lead}\\tfrac12$ instead of $-\\tfrac12$ to the MAJORITY "
            f"recognizer, so that it\nrecognizes the strings with at least {lead + 1} more 1s "
            f"than 0s, and remove its margin, the $\\tfrac12$\n(CLS then contributes $-{lead}$).",
        "strings of length 12": f"strings of length {m}",
        "Without the CLS term the logit is $(2k - m)/n$, which is 0 exactly for the strings "
        "with as\nmany 1s as 0s: the 924 ties of length 12.":
            f"Without the margin the logit is $(2k - m - {lead})/n$, which is 0 exactly for the "
            f"strings\nwith $k = {k}$ 1s ($2k - m = {lead}$): the {ties} ties of length {m}.",
        "all 924": f"all {ties}",
        "(ties are not in MAJORITY)": "(ties are not in the language)",
        '("balance", "is_0"): -1})':
            f'("balance", "is_0"): -1,\n            ("balance", "is_cls"): -{lead}}})',
        "all_strings(12)": f"all_strings({m})",
        "2 * w.sum(dim=1) == 12": f"w.sum(dim=1) == {k}",
        "2 * ones == 12": f"ones == {k}", "(2 * ones > 12)": f"(ones > {k})",
        "where the 1s outnumber the 0s": f"where there are more than {k} 1s",
        "math.comb(12, 6)": f"math.comb({m}, {k})",
        "C(12, 6) = 924 ties of length 12": f"C({m}, {k}) = {ties} ties of length {m}",
        "majority_model(ties) < -1 / (2 * 13)":
            f"majority_model(ties) - {lead} / {n} < -1 / (2 * {n})",
    }, {"lead": lead})


VARIANTS = {"ex-rec-previous": _previous, "ex-rec-hard": _hard, "ex-rec-zero": _zero}


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    m, tied = rng.sample([4, 6, 8, 10, 14], 2)  # even lengths have ties
    odd = rng.choice([5, 7, 9, 11])
    strings = [[rng.randrange(2) for _ in range(odd)] for _ in range(rng.randrange(5, 20))]
    # The ties of every lead, 2k - m from 0 to max(LEADS), at lengths of both parities, and
    # their neighbours (a constant 0 would pass on the ties alone: e2): the same strings for
    # the book and every variant, so that they do not give the lead away (R10).
    middle = max(LEADS) // 2
    ties = HiddenTest(f"torch.cat([no_margin(w[(2 * w.sum(dim=1) - w.shape[1] - {middle}).abs() "
                      f"<= {middle + 2}]) for w in (all_strings({tied - 1}), "
                      f"all_strings({tied}))]).detach().double()", close(atol=1e-12))
    return {
        "ex-rec-previous": [HiddenTest("[W_Q, W_K, W_V]", _feedback(
            check_previous_position_layer, **variant_params(variants, "ex-rec-previous")))],
        "ex-rec-hard": [HiddenTest("[W_Q_tie]", _feedback(
            check_tied_queries, **variant_params(variants, "ex-rec-hard")))],
        "ex-rec-zero": [  # tie_logits is 0 up to rounding: zeros would pass, so it is not graded
            HiddenTest(f"no_margin(all_strings({m})).detach().double()", close(atol=1e-12)),
            HiddenTest(f"no_margin(torch.tensor({strings})).detach().double()",
                       close(atol=1e-12)),
            ties,
        ],
    }
