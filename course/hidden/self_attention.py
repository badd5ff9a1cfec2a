"""Hidden tests of the exercises of *Self-attention* (``book/self_attention.ipynb``), and their
graded variants (:mod:`course.variants`)."""

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


def _temperature(rng: random.Random) -> Variant:
    return Variant("beta to minus infinity", {
        "by a large factor $\\beta$": "by a large negative factor $\\beta$",
        "as $\\beta \\to \\infty$": "as $\\beta \\to -\\infty$",
        'attention_weights(S, kind="average_hard")': 'attention_weights(-S, kind="average_hard")',
        "S.max(dim=-1": "S.min(dim=-1", "is_max": "is_min",
        "(10.0, 100.0)": "(-10.0, -100.0)",
        "attention_weights(1000.0 * S)": "attention_weights(-1000.0 * S)",
        "softmax(1000 S)": "softmax(-1000 S)",
        "$e^{-\\beta \\Delta}$": "$e^{-|\\beta| \\Delta}$",
        "the gap to the row's maximum score": "the gap to the row's minimum score",
        "Every\nentry below the maximum vanishes, and the maximal entries share":
            "Every\nentry above the minimum vanishes, and the minimal entries share",
        "the limit is\naverage-hard attention.": "the limit is\naverage-hard attention on $-S$.",
        "have a unique maximum": "have a unique minimum",
    })


def _crossover(rng: random.Random) -> Variant:
    return Variant("four projections, with the output projection", {
        "costs more than the three projections.": (
            "costs more than the four projections: the chapter's three and an output "
            "projection $\\mathbf{W}^O \\in \\mathbb{R}^{d \\times d}$ applied to the result."),
        "return 3 * d // 2": "return 2 * d",
        "/ attention_flops(n, d, d, d)": "/ (attention_flops(n, d, d, d) + 2 * n * d * d)",
        "quadratic_share(47, 32) < 0.5 < quadratic_share(49, 32)":
            "quadratic_share(63, 32) < 0.5 < quadratic_share(65, 32)",
        "projections $3nd^2$": "projections $4nd^2$",
        "$n > 3d/2$. For $d = 32$ that is $n > 48$": "$n > 2d$. For $d = 32$ that is $n > 64$",
        "$n = 6144$": "$n = 8192$",
    })


def _strict(rng: random.Random) -> Variant:
    return Variant("strict past masking, j > i", {
        "`chiang2024esslli`. Compute `naive`": (
            "`chiang2024esslli`; its transpose, *strict past* masking, allows position $i$ to "
            "attend only to $j > i$. With strict past masking, compute `naive`"),
        "mask=future_mask(4, strict=True))`": "mask=future_mask(4, strict=True).T)`",
        "What goes\nwrong at position 0": "What goes\nwrong at position 3",
        "strict = future_mask(4, strict=True)": "strict = future_mask(4, strict=True).T",
        "naive[0]": "naive[3]", "naive[1:]": "naive[:3]", "weights[0]": "weights[3]",
        "weights[1:]": "weights[:3]", "row 0 should": "row 3 should",
        "rows 1-3": "rows 0-2",
        "Row 0 then has no allowed position": "Row 3 then has no allowed position",
        "position 0 receives the zero vector": "position 3 receives the zero vector",
    })


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
        "ex-sa-temperature": [HiddenTest("limit", close(atol=1e-12))],
        "ex-sa-crossover": [HiddenTest(f"crossover_length({2 * rng.randrange(1, 5000)})",
                                       close(rtol=0, atol=0)) for _ in range(3)],
        "ex-sa-strict": [HiddenTest("naive"), HiddenTest("weights")],
    }
