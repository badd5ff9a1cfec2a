"""Hidden tests of the exercises of *Hahn's lemma and exact solutions*
(``book/exact_solutions.ipynb``), and their graded variants (:mod:`course.variants`)."""

import random
from fractions import Fraction

from course.hidden import HiddenTest, close
from course.variants import Variant


def _plus(a: int, space: str = " ") -> str:
    """``" + a"``, ``" - |a|"`` or nothing: an offset written after a term."""
    return f"{space}+{space}{a}" if a > 0 else f"{space}-{space}{-a}" if a < 0 else ""


OFFSETS = [a for a in range(-6, 7) if a]  # a variant's step: [i < k + a]


def _triangle(rng: random.Random) -> Variant:
    # max(0, k - i + a) - max(0, k - i + a - 1) = [i < k + a]
    a = rng.choice(OFFSETS)
    return Variant(f"the step of max(0, k - i{_plus(a)}) - max(0, k - i{_plus(a - 1)})", {
        "$\\max(0, k - i) - \\max(0, k - i - 1)$":
            f"$\\max(0, k - i{_plus(a)}) - \\max(0, k - i{_plus(a - 1)})$",
        "$\\max(0, k-i) - \\max(0, k-i-1)$ is 1 for $i \\le k - 1$ and 0 for $i \\ge k$: the step\n"
        "$[i < k]$. Layer 2 would then average $[i < k]/n$":
            f"$\\max(0, k-i{_plus(a, '')}) - \\max(0, k-i{_plus(a - 1, '')})$ is 1 for "
            f"$i \\le k{_plus(a - 1)}$ and 0 for "
            f"$i \\ge k{_plus(a)}$: the step\n$[i < k{_plus(a)}]$. Layer 2 would then average "
            f"$[i < k{_plus(a)}]/n$",
        "lie below $k$, which": f"lie below $k{_plus(a)}$, which",
        "return i < k": f"return i < k{_plus(a)}",
        "torch.relu(k_ex - i) - torch.relu(k_ex - i - 1)":
            f"torch.relu(k_ex - i{_plus(a)}) - torch.relu(k_ex - i{_plus(a - 1)})",
    })


MEASURES = {  # what changes instead of the logit: the replacements
    "sigma(s)": {
        "the largest change of the logit $s$\nof the model `built` (a float)":
            "the largest change of the probability\n$\\sigma(s)$ that the model `built` "
            "accepts the string (a float)",
        "return (evaluation.logits(built, flipped)\n"
        "            - evaluation.logits(built, w)).abs().max().item()":
            "return (torch.sigmoid(evaluation.logits(built, flipped))\n"
            "            - torch.sigmoid(evaluation.logits(built, w))).abs().max().item()",
        "flipping it moves $s$ by\n$e^c/(e^c + n - 1) \\approx e/n$.":
            "flipping it moves $s$ from $\\pm x/2$\nto $\\mp x/2$, with "
            "$x = e^c/(e^c + n - 1) \\approx e/n$, and $\\sigma(s)$ by "
            "$\\sigma(x/2) - \\sigma(-x/2)$\n$= \\tanh(x/4) \\approx e/(4n)$.",
        "a change of about $4\\tanh(c)/n^2$. Both are $O(1/n)$,\nas the lemma requires;":
            "and $\\sigma(s)$ by about $\\tanh(c)/n^2$. Both are $O(1/n)$,\nas the lemma "
            "requires ($\\sigma$ is $\\tfrac14$-Lipschitz: the probability moves by at most "
            "a\nquarter of the logit's change);",
    },
    "the cross-entropy": {
        "the largest change of the logit $s$\nof the model `built` (a float)":
            "the largest change of the cross-entropy,\nin bits, of the answer $s > 0$ that the "
            "model `built` gives the drawn string (a float;\n`evaluation.cross_entropy_bits` "
            "computes the cross-entropy)",
        "return (evaluation.logits(built, flipped)\n"
        "            - evaluation.logits(built, w)).abs().max().item()":
            "s = evaluation.logits(built, w)\n"
            "    answer = s > 0  # the model's answer on w\n"
            "    bits = evaluation.cross_entropy_bits(evaluation.logits(built, flipped),\n"
            "                                         answer.expand(m))\n"
            "    return (bits - evaluation.cross_entropy_bits(s, answer)).abs().max().item()",
        "flipping it moves $s$ by\n$e^c/(e^c + n - 1) \\approx e/n$.":
            "flipping it moves $s$ from $\\pm x/2$\nto $\\mp x/2$, with "
            "$x = e^c/(e^c + n - 1) \\approx e/n$: the cross-entropy of the first answer "
            "goes\nfrom $\\log_2(1 + e^{-x/2})$ to $\\log_2(1 + e^{x/2})$, a change of exactly "
            "$x/(2\\ln 2) \\approx e/(2n\\ln 2)$\nbits.",
        "a change of about $4\\tanh(c)/n^2$. Both are $O(1/n)$,\nas the lemma requires;":
            "and the cross-entropy by about $2\\tanh(c)/(n^2\\ln 2)$ bits. Both are "
            "$O(1/n)$,\nas the lemma requires (the cross-entropy changes by at most "
            "$1/\\ln 2$ bits per unit of the\nlogit);",
    },
}


def _sensitivity(rng: random.Random) -> Variant:
    words = rng.choice(sorted(MEASURES))
    return Variant(f"the largest change of {words}", MEASURES[words])


def _large_c(rng: random.Random) -> Variant:
    a = rng.randrange(2, 13)  # c = ln(a n): the weight a n / ((a + 1) n - 1) > a / (a + 1)
    bound = Fraction(a, 2 * (a + 1))  # |s| > a / (2 (a + 1)) at every length
    return Variant(f"strings that start with 0, c = ln({a}n)", {
        "on a string that starts with 1 (for any fixed $n$)":
            "on a string that starts with 0 (for any fixed $n$)",
        "when $c = \\ln n$, for": f"when $c = \\ln({a}n)$, for",
        "With $c = \\ln n$ the weight becomes $n/(2n - 1) > \\tfrac12$, and\n$|s| > \\tfrac14$":
            f"With $c = \\ln({a}n)$ the weight becomes ${a}n/({a + 1}n - 1) > "
            f"\\tfrac{{{a}}}{{{a + 1}}}$, and\n$|s| > \\tfrac{{{bound.numerator}}}"
            f"{{{bound.denominator}}}$",
        "eq1(1001, 1, c)": "eq1(1001, 0, c)",
        "first_limit = 0.5": "first_limit = -0.5",
        "eq1(n, 1, math.log(n))": f"eq1(n, 0, math.log({a} * n))",
        "assert 0.25 < s <= 0.5":
            f"assert -0.5 <= s < -{bound.numerator} / {bound.denominator}",
    })


VARIANTS = {"ex-exact-triangle": _triangle, "ex-exact-sensitivity": _sensitivity,
            "ex-exact-large-c": _large_c}


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    def step(k):
        """The step at ``k``, from below where every variant's step differs from the book's:
        one range for the book and every variant (N22)."""
        low = min(rng.randrange(-30, 0), k + min(OFFSETS))
        return HiddenTest(f"step_indicator(torch.arange({low}.0, {k + 40}.0), {k}).double()",
                          close(rtol=0, atol=0))

    m = rng.randrange(40, 100)
    strings = ", ".join(repr("".join(rng.choice("01") for _ in range(length)))
                        for length in (m, 4 * m, 16 * m))
    # Strings the check never draws, so the changes are the reference's to rounding.
    changes = [HiddenTest(f"[largest_flip_change(models[{name!r}][0], torch.tensor("
                          f"[[int(b) for b in w]])) for w in [{strings}]]",
                          close(rtol=1e-6, locate=False))
               for name in ("FIRST", "PARITY")]
    return {
        "ex-exact-triangle": [step(rng.randrange(-5, 15)), step(rng.randrange(15, 2000))],
        "ex-exact-sensitivity": changes,
        "ex-exact-large-c": [HiddenTest("first_limit", close(atol=1e-9, locate=False)),
                             HiddenTest("log_c_logits", close(atol=1e-9, locate=False))],
    }
