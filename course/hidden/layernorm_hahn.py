"""Hidden tests of the exercises of *Layer normalization against Hahn's lemma*
(``book/layernorm_hahn.ipynb``), and their graded variants (:mod:`course.variants`)."""

import math
import random

from course.hidden import HiddenTest, close, log_uniform
from course.variants import Variant

QUESTION = ("For which `eta` is it positive, and how does it compare with the paper's formula "
            "in nats?")  # the book's
SOLUTION = ("so the cross-entropy in bits is\n$\\log_2(1 + e^{-c\\sqrt{d/2}})$. Setting it to "
            "$\\eta$ gives $e^{-c\\sqrt{d/2}} = 2^\\eta - 1$, so\n"
            "$c = -\\ln(2^\\eta - 1)/\\sqrt{d/2}$: the paper's $-\\ln(e^\\eta - 1)/\\sqrt{d/2}$ "
            "with $e^\\eta$\n(nats) replaced by $2^\\eta$ (bits). It is positive only for "
            "$\\eta < 1$ bit, the\ncross-entropy of a coin flip, which any logit of the right "
            "sign beats.")

TARGETS = {  # another target than the cross-entropy in bits
    "the cross-entropy in nats": {
        "Sharpening in bits": "Sharpening in nats",
        "is exactly `eta` **bits**": "is exactly `eta` **nats**",
        QUESTION:
            "For which `eta` is it positive, and how does it compare with the scale for `eta` "
            "bits?",
        SOLUTION:
            "so the cross-entropy in nats is\n$\\ln(1 + e^{-c\\sqrt{d/2}})$. Setting it to "
            "$\\eta$ gives $e^{-c\\sqrt{d/2}} = e^\\eta - 1$, so\n$c = -\\ln(e^\\eta - 1)/"
            "\\sqrt{d/2}$, the paper's bound taken with equality. It is positive only for\n"
            "$\\eta < \\ln 2$ nats, the cross-entropy of a coin flip; for $\\eta$ bits, "
            "$2^\\eta$ replaces $e^\\eta$.",
        "math.log(2**eta - 1)": "math.log(math.exp(eta) - 1)",
        "for eta in (0.9, 0.1, 1e-3):": "for eta in (0.5, 0.1, 1e-3):",
        "bits = math.log2(": "nats = math.log(",
        "abs(bits - eta)": "abs(nats - eta)",
        "your scale gives {bits} bits": "your scale gives {nats} nats",
    },
    "the probability of the wrong answer": {
        "Sharpening in bits": "Sharpening as a probability",
        "for which every string's cross-entropy is exactly `eta` **bits**":
            "for which every string gets the wrong answer with probability exactly `eta`\n"
            "($0 < \\eta < \\tfrac12$)",
        QUESTION:
            "How does it compare with the scale for a cross-entropy of `eta` bits?",
        SOLUTION:
            "so the probability of the wrong answer\nis $\\sigma(-c\\sqrt{d/2}) = 1/(1 + "
            "e^{c\\sqrt{d/2}})$. Setting it to $\\eta$ gives $e^{c\\sqrt{d/2}} =\n(1 - \\eta)/"
            "\\eta$, so $c = \\ln((1 - \\eta)/\\eta)/\\sqrt{d/2}$, positive for $\\eta < "
            "\\tfrac12$. For a\ncross-entropy of $\\eta$ bits it is $-\\ln(2^\\eta - 1)/"
            "\\sqrt{d/2}$, larger: when the wrong answer has\nprobability $\\eta$, the "
            "cross-entropy is $-\\log_2(1 - \\eta) \\ge \\eta/\\ln 2 > \\eta$ bits.",
        "-math.log(2**eta - 1)": "math.log((1 - eta) / eta)",
        "for eta in (0.9, 0.1, 1e-3):": "for eta in (0.4, 0.1, 1e-3):",
        "bits = math.log2(1 + math.exp(-c * math.sqrt(d / 2)))":
            "wrong = 1 / (1 + math.exp(c * math.sqrt(d / 2)))",
        "abs(bits - eta)": "abs(wrong - eta)",
        "your scale gives {bits} bits": "your scale gives a probability of {wrong}",
    },
}
# The largest eta tested: c > 0 below 1 bit in the book; in every variant (one range, so that
# the inputs do not tell them apart: N22), below both ln 2 nats and a probability of 1/2.
LARGEST_ETA, LARGEST_VARIANT_ETA = 0.9, 0.45


def _scale(rng: random.Random) -> Variant:
    words = rng.choice(sorted(TARGETS))
    return Variant(f"{words}, not the cross-entropy in bits", TARGETS[words])


def _crossover(rng: random.Random) -> Variant:
    ratio = rng.choice([3, 2])  # of eps to the variance, where the logit is 1/sqrt(1 + ratio)
    fraction = {3: "half", 2: "$1/\\sqrt{3}$"}[ratio]  # of its eps = 0 value
    return Variant(f"the variance at most eps/{ratio}", {
        "would see a variance\n$2 s_n^2 / d$ at most $\\varepsilon$ ($d = 12$).":
            f"would see a variance\n$2 s_n^2 / d$ at most $\\varepsilon/{ratio}$ ($d = 12$): "
            f"where the ratio $r$ of the chapter reaches {ratio},\nand the logit has fallen to "
            f"{fraction} of its $\\varepsilon = 0$ value.",
        "as the chapter's\ngrid found;":
            f"beyond the chapter's\ncrossover (where $r = 1$) by a factor of about "
            f"$\\sqrt{{{ratio}}}$, since $|s_n|$ falls about like $1/n$ there;",
        "return 2 * s**2 / model.d <= eps": f"return 2 * s**2 / model.d <= eps / {ratio}",
        "assert variance_at(n, eps) <= eps,": f"assert variance_at(n, eps) <= eps / {ratio},",
        "variance_at(n - 1, eps) > eps,": f"variance_at(n - 1, eps) > eps / {ratio},",
    })


def _right(delta: float, m: int, k: int) -> bool:
    """Whether the eps = 0 PARITY solution with count weight 1 + delta decides a string of m
    symbols with k ones right: the sign of layer 2's attention sum at CLS, as the book's
    solution derives it (each position i scaled by G_i = 3 / |x_i| by layer 1's normalizations,
    T_i its triangle)."""
    n, K = m + 1, (1 + delta) * k
    T = [max(0.0, 1 - abs(K - i)) for i in range(n)]
    G = [3 / math.sqrt(2 + (i * i + K * K + 1 + T[i] ** 2) / n**2) for i in range(n)]
    score = [G[0] * G[i] * (1 - 2 * (i % 2)) for i in range(n)]  # |score| < 5: no overflow
    odd, even = [math.exp(-x) for x in score], [math.exp(x) for x in score]
    s = sum((odd[i] / sum(odd) - even[i] / sum(even)) * G[i] * T[i] for i in range(n))
    return (s > 0) == (k % 2 == 1)


def _accuracies(delta: float, m: int, probabilities) -> list[float]:
    """The variants' answers: for each p of ``probabilities``, the probability that a string of
    m symbols, each 1 with probability p, is classified right (p = 1/2: the book's fraction of
    all strings)."""
    right = [k for k in range(m + 1) if _right(delta, m, k)]
    return [sum(math.comb(m, k) * p**k * (1 - p)**(m - k) for k in right)
            for p in probabilities]


PROBABILITIES = [0.1, 0.2, 0.25, 0.3, 0.4, 0.6, 0.7, 0.75, 0.8, 0.9]  # of a 1, in a variant


def _random_strings(rng: random.Random) -> Variant:
    p = rng.choice(PROBABILITIES)
    q = round(1 - p, 2)
    return Variant(f"random strings with P(1) = {p}", {
        "the fraction of all strings of length $m$ that the\n$\\varepsilon = 0$ PARITY solution "
        "classifies correctly,":
            "the probability that the\n$\\varepsilon = 0$ PARITY solution classifies correctly a "
            f"random string of length $m$ whose\nsymbols are 1 independently with probability "
            f"${p}$,",
        "computed from the number of strings with each number of 1s\n(no model).":
            "computed from the probability of each number of 1s\n(no model).",
        "on every string of length 12.": "on every string of length 12,\nweighted by its "
                                         "probability.",
        "$\\binom{m}{k}$ strings have $k$ ones.":
            f"a random string has $k$ ones with\nprobability $\\binom{{m}}{{k}} {p}^k "
            f"{q}^{{m-k}}$.",
        "chance = torch.tensor([math.comb(m, j) / 2**m for j in range(m + 1)])":
            f"chance = torch.tensor([math.comb(m, j) * {p}**j * {q}**(m - j)\n"
            "                           for j in range(m + 1)])",
        "w = all_strings(12)\n":
            "w = all_strings(12)\n"
            f"chance = {p}**w.sum(dim=1) * {q}**(12 - w.sum(dim=1))  # of each "
            "string\n",
        "== parity(w)).double().mean().item()": "== parity(w)).double().dot(chance).item()",
    }, {"p": p})


VARIANTS = {"ex-lnh-scale": _scale, "ex-lnh-crossover": _crossover,
            "ex-lnh-accuracy": _random_strings}


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    largest_eta = LARGEST_VARIANT_ETA if "ex-lnh-scale" in variants else LARGEST_ETA

    def accuracy_test():
        """Inputs on which the book's uniform strings give another value than every variant's
        random strings: the same inputs for the book and every variant (N22)."""
        while True:
            m = rng.randrange(4, 40)
            delta = rng.uniform(-0.49, 1 / m)  # the exercise's range: every triangle is read
            book, *others = _accuracies(delta, m, [0.5, *PROBABILITIES])
            if all(abs(other - book) > 1e-6 for other in others):
                return HiddenTest(f"predicted_accuracy({delta!r}, {m})")

    return {
        "ex-lnh-scale": [HiddenTest(f"output_scale({log_uniform(rng, 1e-4, largest_eta)!r}, "
                                    f"{2 * rng.randrange(1, 30)})") for _ in range(3)],
        "ex-lnh-crossover": [HiddenTest(f"crossover_length({log_uniform(rng, 3e-5, 1e-2)!r})",
                                        close(rtol=0, atol=0)) for _ in range(2)],
        "ex-lnh-accuracy": [accuracy_test() for _ in range(3)],
    }
