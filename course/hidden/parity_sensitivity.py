"""Hidden tests of the exercises of *PARITY after 2024: sensitivity, depth and sharp minima*
(``book/parity_sensitivity.ipynb``), and their graded variants (:mod:`course.variants`).

Each exercise's texts (its language, target or noise; the model answer's body; the check's
definitions; the worked solution) are written here once, as functions of the variant's
parameters, and the book's are these functions at the book's parameters: a variant replaces
the book's text by its own. A closed form of sensitivity and an expected increase are numbers,
compared with the instructor edition's. A wide layer comes back as its thresholds and
coefficients, and the judge evaluates the sum of ReLUs in the grader's own process, at every
count of ones, for the variant's attention and values."""

import random

import torch

from companion.exercises import zigzag_problem
from course.hidden import HiddenTest, close, variant_params
from course.variants import Variant

EXACT = close(rtol=1e-9, atol=0)  # a relative 1e-9, however small the value

# --- ex-sens-threshold: another language of the number of ones --------------------------------

BOOK_LANGUAGE = "at_least"
ENUMERATE = ("Enumerating the $2^n$ strings, as `average_sensitivity` does, takes $2^{60}$ "
             "evaluations at\n$n = 60$; the closed form takes a few binomial coefficients.")
ONE_FLIP = "Flipping one bit moves the number $k$ of ones by one, so a flip changes the answer"
# name: (the language in words, the check's definition of it (comment, body), the model
# answer's lines that count the sensitive (string, position) pairs, the solution)
LANGUAGES = {
    "at_least": (
        "at least $t$ ones", ("at least t ones", "    return w.sum(dim=1) >= t"),
        "    # t ones: sensitive at each 1; t - 1 ones: at each of their n - t + 1 0s\n"
        "    total = t * comb(n, t) + (n - t + 1) * comb(n, t - 1)\n",
        f"{ONE_FLIP}\nonly between $k = t - 1$ and $k = t$. A string with $t$ ones is "
        "sensitive at each of its $t$\nones, one with $t - 1$ ones at each of its $n - t + 1$ "
        "zeros, and every other string nowhere:\n\n"
        "$$\n\\begin{aligned}\n"
        "\\mathrm{as} &= 2^{-n}\\Bigl[t\\tbinom{n}{t} + (n - t + 1)\\tbinom{n}{t - 1}\\Bigr]\\\\\n"
        "&= 2^{1 - n}\\, t\\tbinom{n}{t}.\n\\end{aligned}\n$$\n\n"
        "The two terms are equal: each counts the flips between the levels $t - 1$ and $t$ of "
        "the\ncube, once from each end. With $t = \\lfloor n/2 \\rfloor + 1$ this is "
        "MAJORITY's formula of this\nchapter. " + ENUMERATE),
    "at_most": (
        "at most $t$ ones", ("at most t ones", "    return w.sum(dim=1) <= t"),
        "    # t ones: sensitive at each of their n - t 0s; t + 1 ones: at each 1\n"
        "    total = (n - t) * comb(n, t) + (t + 1) * comb(n, t + 1)\n",
        f"{ONE_FLIP}\nonly between $k = t$ and $k = t + 1$. A string with $t$ ones is "
        "sensitive at each of its\n$n - t$ zeros, one with $t + 1$ ones at each of its "
        "$t + 1$ ones, and every other string nowhere:\n\n"
        "$$\n\\begin{aligned}\n"
        "\\mathrm{as} &= 2^{-n}\\Bigl[(n - t)\\tbinom{n}{t} + (t + 1)\\tbinom{n}{t + 1}"
        "\\Bigr]\\\\\n&= 2^{1 - n}\\,(n - t)\\tbinom{n}{t}.\n\\end{aligned}\n$$\n\n"
        "The two terms are equal: each counts the flips between the levels $t$ and $t + 1$ of "
        "the\ncube, once from each end. The language is the complement of the strings with at "
        "least\n$t + 1$ ones, and has their sensitivity. " + ENUMERATE),
    "exactly": (
        "exactly $t$ ones", ("exactly t ones", "    return w.sum(dim=1) == t"),
        "    # t ones: at every position; t - 1 ones: at each 0; t + 1 ones: at each 1\n"
        "    total = (n * comb(n, t) + (n - t + 1) * comb(n, t - 1)\n"
        "             + (t + 1) * comb(n, t + 1))\n",
        f"{ONE_FLIP}\nonly between $k = t$ and $k = t \\pm 1$. A string with $t$ ones is "
        "sensitive at all $n$\npositions, one with $t - 1$ ones at each of its $n - t + 1$ "
        "zeros, one with $t + 1$ ones at each\nof its $t + 1$ ones, and every other string "
        "nowhere:\n\n"
        "$$\n\\begin{aligned}\n"
        "\\mathrm{as} &= 2^{-n}\\Bigl[n\\tbinom{n}{t} + (n - t + 1)\\tbinom{n}{t - 1}\\\\\n"
        "&\\qquad + (t + 1)\\tbinom{n}{t + 1}\\Bigr]\\\\\n"
        "&= 2^{1 - n}\\, n\\tbinom{n}{t},\n\\end{aligned}\n$$\n\n"
        "since $(n - t + 1)\\binom{n}{t - 1} = t\\binom{n}{t}$ and "
        "$(t + 1)\\binom{n}{t + 1} = (n - t)\\binom{n}{t}$. " + ENUMERATE),
    "pair": (
        "exactly $t$ or $t + 1$ ones",
        ("t or t + 1 ones", "    ones = w.sum(dim=1)\n    return (ones == t) | (ones == t + 1)"),
        "    # t - 1 ones: at each 0; t ones: at each 1; t + 1 ones: at each 0;\n"
        "    # t + 2 ones: at each 1\n"
        "    total = ((n - t + 1) * comb(n, t - 1) + t * comb(n, t)\n"
        "             + (n - t - 1) * comb(n, t + 1) + (t + 2) * comb(n, t + 2))\n",
        f"{ONE_FLIP}\nonly between $k = t - 1$ and $t$, and between $t + 1$ and $t + 2$. A "
        "string with $t - 1$ ones\nis sensitive at each of its $n - t + 1$ zeros, one with $t$ "
        "ones at each of its $t$ ones\n(flipping a zero gives $t + 1$ ones, still accepted), "
        "one with $t + 1$ ones at each of its\n$n - t - 1$ zeros, one with $t + 2$ ones at "
        "each of its $t + 2$ ones, and every other string\nnowhere ($\\binom{n}{j} = 0$ for "
        "$j > n$):\n\n"
        "$$\n\\begin{aligned}\n"
        "\\mathrm{as} = 2^{-n}\\Bigl[&(n - t + 1)\\tbinom{n}{t - 1} + t\\tbinom{n}{t}\\\\\n"
        "&+ (n - t - 1)\\tbinom{n}{t + 1} + (t + 2)\\tbinom{n}{t + 2}\\Bigr],\n"
        "\\end{aligned}\n$$\n\n"
        "which is $2^{1 - n}\\bigl[t\\binom{n}{t} + (n - t - 1)\\binom{n}{t + 1}\\bigr]$. "
        + ENUMERATE),
    "band": (
        "at least $t$ ones and at least $t$ zeros (none when $2t > n$)",
        ("at least t ones and at least t 0s",
         "    return (w.sum(dim=1) >= t) & ((1 - w).sum(dim=1) >= t)"),
        "    if 2 * t > n:  # no string has t 1s and t 0s\n"
        "        return Fraction(0)\n"
        "    # t or n - t ones: at each 1 or each 0; t - 1 or n - t + 1 ones: at\n"
        "    # each of their n - t + 1 0s or 1s (with n = 2t, t ones: at all n)\n"
        "    total = 2 * (t * comb(n, t) + (n - t + 1) * comb(n, t - 1))\n",
        "The language is $t \\le k \\le n - t$, with $k$ the number of ones: empty when "
        "$2t > n$, and then\n$\\mathrm{as} = 0$. Otherwise flipping one bit moves $k$ by one, "
        "so a flip changes the answer only\nbetween $k = t - 1$ and $t$ and between $n - t$ "
        "and $n - t + 1$. A string with $t$ ones is\nsensitive at each of its $t$ ones and one "
        "with $t - 1$ ones at each of its $n - t + 1$ zeros, as\nfor at least $t$ ones; a "
        "string with $n - t$ ones at each of its $t$ zeros and one with\n$n - t + 1$ ones at "
        "each of its $n - t + 1$ ones, the mirror image (when $n = 2t$, a string\nwith $t$ "
        "ones is sensitive at all $n$ positions, half of them counted at each threshold):\n\n"
        "$$\n\\begin{aligned}\n"
        "\\mathrm{as} &= 2^{1 - n}\\Bigl[t\\tbinom{n}{t} + (n - t + 1)\\tbinom{n}{t - 1}"
        "\\Bigr]\\\\\n&= 2^{2 - n}\\, t\\tbinom{n}{t}.\n\\end{aligned}\n$$\n\n" + ENUMERATE),
}
LANGUAGE_CHECK = "def language(w, t):  # {comment}\n{body}\n"


def language_check(name: str) -> str:
    """The check's definition of the language ``name``."""
    comment, body = LANGUAGES[name][1]
    return LANGUAGE_CHECK.format(comment=comment, body=body)


def threshold_statement(name: str) -> str:
    """The line of the statement that names the language."""
    return f"the strings of length $n$ with\n{LANGUAGES[name][0]}.\n"


def _threshold(rng: random.Random) -> Variant:
    name = rng.choice(sorted(set(LANGUAGES) - {BOOK_LANGUAGE}))
    words, _, body, solution = LANGUAGES[name]
    book = LANGUAGES[BOOK_LANGUAGE]
    return Variant(words.split(" (")[0].replace("$", ""), {
        threshold_statement(BOOK_LANGUAGE): threshold_statement(name),
        book[2]: body,
        language_check(BOOK_LANGUAGE): language_check(name),
        book[3]: solution,
    }, {"language": name})


def _threshold_cases(rng: random.Random) -> list[tuple[int, int]]:
    """``(n, t)``: two short lengths and two long ones, with ``1 <= t <= n - 2`` and
    ``n != 2t``, where the variants' values differ from the book's (at most ``t`` ones has the
    sensitivity of at least ``t`` ones at ``n = 2t``, and ``t`` or ``t + 1`` ones that of at
    least ``t`` ones at ``t = n - 1``)."""
    cases = []
    for low, high in ((4, 9), (9, 13), (30, 81), (81, 201)):
        n = rng.randrange(low, high)
        t = rng.choice([t for t in range(1, n - 1) if 2 * t != n])
        cases.append((n, t))
    return cases


def _threshold_tests(rng: random.Random, language=BOOK_LANGUAGE) -> list[HiddenTest]:
    """The same inputs for every language: the instructor edition's values differ."""
    return [HiddenTest(f"float(average({n}, {t}))", EXACT) for n, t in _threshold_cases(rng)]


# --- ex-sens-zigzag: other values, or a start symbol in the attention -------------------------

# target: (the values wanted in the statement, the check's definition (comment, expression of
# k, m and r), the model answer's, the threshold that decides a string, the values in the
# solution)
TARGETS = {
    "equal": ("is 1 when $k \\bmod m = r$ and 0 otherwise",
              ("1 where k mod m = r, 0 elsewhere", "(k % m == r).double()"),
              "(k % m == r).double()", 0.5,
              "$y_k = 1$ when $k \\bmod m = r$ and 0 otherwise"),
    "other": ("is 1 when $k \\bmod m \\ne r$ and 0 otherwise",
              ("1 where k mod m != r, 0 elsewhere", "(k % m != r).double()"),
              "(k % m != r).double()", 0.5,
              "$y_k = 1$ when $k \\bmod m \\ne r$ and 0 otherwise"),
    "sign": ("is 1 when $k \\bmod m = r$ and $-1$ otherwise",
             ("1 where k mod m = r, -1 elsewhere", "2 * (k % m == r).double() - 1"),
             "2 * (k % m == r).double() - 1", 0.0,
             "$y_k = 1$ when $k \\bmod m = r$ and $-1$ otherwise"),
}
BOOK_TARGET = ("equal", False)
ATTENTION = "that uniform attention over the $n$ bits gives."
START = (" Here a start symbol, which\nreads as 0, takes part in the attention too, so that "
         "the layer reads $t = k/(n + 1)$.")
ZIGZAG_CHECK = '''\
def mean(w):  # {mean_comment}
    return {mean}


def wanted(k, m, r):  # {comment}
    return {values}


feedback = check_zigzag(zigzag, wanted, mean, threshold={threshold})
'''
ZIGZAG_BODY = '''\
    k = torch.arange(n + 1)
    y = {values}  # the sum wanted at t = {at}
    rise = {scale} * torch.diff(y, prepend=y.new_zeros(1))  # slope just before
    c = torch.diff(rise, prepend=rise.new_zeros(1))  # change of slope
    b = (k - 1).double() / {scale}  # a bend before each {at}
    return b, c'''
WIDE_LAYER = (" For $m = 2$ and $r = 1$, $y_0 = 0$ makes $c_0 = 0$, and without that ReLU "
              "this is the zigzag of\n`wide_layer`, $n$ ReLUs at $b_j = j/n$.")
ZIGZAG_SOLUTION = '''\
A sum of ReLUs is piecewise linear in $t$, with a bend at each threshold, and it takes any
values $y_0, \\dots, y_n$ at $t = {points}$ when it bends just before each of them. Put
the bend $b_k = (k - 1)/{s}$ just before $k/{s}$: on the piece from $(k - 1)/{s}$ to $k/{s}$ the
slope must be ${s}(y_k - y_{{k-1}})$ (with $y_{{-1}} = y_{{-2}} = 0$), and $c_k$ is the change of
slope at $b_k$, ${s}(y_k - 2y_{{k-1}} + y_{{k-2}})$. The bend $b_0 = -1/{s}$ lies below every
input, so that the sum can be $y_0 \\ne 0$ at $t = 0$. That makes $n + 1$ ReLUs whatever $m$,
with {values}.{wide}

The language has average sensitivity at least about $n/m$: the strings with $k \\bmod m = r$,
about a fraction $1/m$ of them, are each sensitive at all $n$ positions, since $k \\pm 1$ is
not $r$ modulo $m$. That is above the one-layer bound, so no layer of fixed size counts
modulo $m$ at every length: the width must grow with $n$, as it does here.'''


COMPARED = {0.5: "$1/2$", 0.0: "0"}  # the threshold that decides a string, in words


def zigzag_statement(target: str, start: bool) -> dict[str, str]:
    """The parts of the statement that a variant changes: the book's text and the variant's."""
    threshold = TARGETS[target][3]
    return {ATTENTION: ATTENTION + (START if start else ""),
            f"{TARGETS['equal'][0]},": f"{TARGETS[target][0]},",
            "by comparing the sum with $1/2$": f"by comparing the sum with {COMPARED[threshold]}"}


def zigzag_check(target: str, start: bool) -> str:
    (comment, values), threshold = TARGETS[target][1], TARGETS[target][3]
    return ZIGZAG_CHECK.format(
        mean_comment=("over the n bits and a start symbol 0: t = k/(n + 1)" if start else
                      "uniform attention over the n bits: t = k/n"),
        mean="w.double().sum(dim=1) / (w.shape[1] + 1)" if start else
             "w.double().mean(dim=1)",
        comment=comment, values=values, threshold=threshold)


def zigzag_body(target: str, start: bool) -> str:
    return ZIGZAG_BODY.format(values=TARGETS[target][2], at="k/(n + 1)" if start else "k/n",
                              scale="(n + 1)" if start else "n")


def zigzag_solution(target: str, start: bool) -> str:
    return ZIGZAG_SOLUTION.format(
        points="0, 1/(n + 1), \\dots, n/(n + 1)" if start else "0, 1/n, \\dots, 1",
        s="(n + 1)" if start else "n", values=TARGETS[target][4],
        wide=WIDE_LAYER if (target, start) == BOOK_TARGET else "")


ZIGZAG_NAMES = {"equal": "1 where k mod m = r", "other": "1 where k mod m != r",
                "sign": "1 where k mod m = r, -1 elsewhere"}


def _zigzag(rng: random.Random) -> Variant:
    target, start = rng.choice(sorted({(target, start) for target in TARGETS
                                       for start in (False, True)} - {BOOK_TARGET}))
    replace = {old: new for old, new in zigzag_statement(target, start).items() if old != new}
    replace.update({
        zigzag_body(*BOOK_TARGET): zigzag_body(target, start),
        zigzag_check(*BOOK_TARGET): zigzag_check(target, start),
        zigzag_solution(*BOOK_TARGET): zigzag_solution(target, start),
    })
    return Variant(ZIGZAG_NAMES[target] + (", t = k/(n + 1)" if start else ""), replace,
                   {"target": target, "start": start})


def _zigzag_judge(n: int, m: int, r: int, target: str, start: bool):
    """A judge of ``(b, c)``: the sum of ReLUs, at ``t = k/n`` (or ``k/(n + 1)`` with a start
    symbol), is the target's value at every ``k = 0 .. n``, with at most ``n + 1`` ReLUs; its
    message never says where it is wrong."""
    k = torch.arange(n + 1)
    t = k.double() / (n + 1 if start else n)
    wanted = eval(TARGETS[target][2], {"k": k, "m": m, "r": r})  # noqa: S307 - this module's

    def judge(got, expected) -> str:
        if not (isinstance(got, list) and len(got) == 2):
            return "not a pair (b, c)"
        if not all(isinstance(part, list) and len(part) <= n + 1 for part in got):
            return f"b and c must be 1-d tensors of at most n + 1 = {n + 1} numbers"
        try:
            b, c = (torch.tensor(part, dtype=torch.float64) for part in got)
        except (TypeError, ValueError, RuntimeError, OverflowError):
            return "b and c must be 1-d tensors of numbers"
        return zigzag_problem(b, c, t, wanted, n + 1, show=False)
    return judge


def _zigzag_tests(rng: random.Random, target="equal", start=False) -> list[HiddenTest]:
    """Four lengths from 5 to 250, each with its own ``m`` and ``r``, ``n >= m`` (so that
    every remainder occurs, and the book's answer fails every variant)."""
    tests = []
    for low, high in ((5, 13), (13, 41), (41, 121), (121, 251)):
        n, m = rng.randrange(low, high), rng.randrange(2, 6)
        r = rng.randrange(m)
        tests.append(HiddenTest(f"zigzag({n}, {m}, {r})",
                                _zigzag_judge(n, m, r, target, start)))
    return tests


# --- ex-sens-sharp: other noise ---------------------------------------------------------------

BOOK_NOISE = "gaussian"
MEASURED = "The sharpness that this chapter measures after {cite:t}`hahn2024sensitive` is"
MEASURED_VARIANT = ("A sharpness in the manner of {cite:t}`hahn2024sensitive`, with other noise "
                    "than this\nchapter's, is")
SHARP_TAIL = (" In a trained model the measured sharpness adds terms of higher order in\n"
              "$\\varepsilon$, small when $\\varepsilon$ is.")
# name: (the noise in words, the check's noise function (comment, body), the model answer's
# lines, the solution's account of the noise's second moment)
NOISES = {
    "gaussian": (
        "independent Gaussian noise of mean 0 and standard deviation $\\varepsilon$ on every "
        "parameter.",
        ("Gaussian, sd epsilon, each entry",
         "    return epsilon * torch.randn(draws, d, generator=generator,\n"
         "                                 dtype=torch.float64)"),
        "    # E[delta_i delta_j] = epsilon**2 where i == j, else 0\n"
        "    return epsilon**2 * H.trace().item() / 2\n",
        "Independent entries of mean 0 and variance $\\varepsilon^2$ give $\\Sigma = "
        "\\varepsilon^2 I$, and the expected\nincrease is $\\tfrac{\\varepsilon^2}{2} "
        "\\operatorname{tr} H$, $\\tfrac{\\varepsilon^2}{2}$ times the sum of the eigenvalues "
        "of $H$: the sharpness\nmeasures the total curvature of the minimum over all "
        "directions. A minimum with a few\ndirections of very high curvature, flat in all the "
        "others, is sharp: the isolated minima\nthat Hahn and Rofin find for sensitive "
        "functions."),
    "uniform": (
        "independent noise uniform on $[-\\varepsilon, \\varepsilon]$ on every parameter.",
        ("uniform on [-epsilon, epsilon]",
         "    u = torch.rand(draws, d, generator=generator, dtype=torch.float64)\n"
         "    return epsilon * (2 * u - 1)"),
        "    # E[delta_i delta_j] = epsilon**2 / 3 where i == j, else 0\n"
        "    return epsilon**2 * H.trace().item() / 6\n",
        "Independent entries uniform on $[-\\varepsilon, \\varepsilon]$ have mean 0 and "
        "variance $\\varepsilon^2/3$, so\n$\\Sigma = \\tfrac{\\varepsilon^2}{3} I$ and the "
        "expected increase is $\\tfrac{\\varepsilon^2}{6} \\operatorname{tr} H$: a third of "
        "that\nunder Gaussian noise of standard deviation $\\varepsilon$, and again the total "
        "curvature, the sum of\nthe eigenvalues of $H$."),
    "first_half": (
        "independent Gaussian noise of mean 0 and standard deviation $\\varepsilon$ on the "
        "first\n$\\lfloor d/2 \\rfloor$ parameters only, the others left as they are.",
        ("Gaussian on the first d // 2",
         "    g = torch.randn(draws, d, generator=generator, dtype=torch.float64)\n"
         "    return epsilon * g * (torch.arange(d) < d // 2)"),
        "    # E[delta_i delta_j] = epsilon**2 where i == j < d // 2, else 0\n"
        "    half = H.shape[0] // 2\n"
        "    return epsilon**2 * H.diagonal()[:half].sum().item() / 2\n",
        "Noise on the first $h = \\lfloor d/2 \\rfloor$ parameters only gives "
        "$\\Sigma_{ii} = \\varepsilon^2$ for $i < h$ and 0\nelsewhere, so the expected "
        "increase is $\\tfrac{\\varepsilon^2}{2} \\sum_{i < h} H_{ii}$: the total "
        "curvature of the\nminimum in the parameters that move, the trace of the top left "
        "$h \\times h$ block of $H$."),
    "sphere": (
        "a vector of norm $\\varepsilon$ in a uniformly random direction.",
        ("norm epsilon, random direction",
         "    g = torch.randn(draws, d, generator=generator, dtype=torch.float64)\n"
         "    return epsilon * g / g.norm(dim=1, keepdim=True)"),
        "    # E[delta delta^T] = epsilon**2 I / d\n"
        "    return epsilon**2 * H.trace().item() / (2 * H.shape[0])\n",
        "A vector of norm $\\varepsilon$ in a uniformly random direction has "
        "$\\mathbb{E}[\\Delta_i \\Delta_j] = 0$ for\n$i \\ne j$ (flipping the sign of "
        "$\\Delta_i$ leaves its distribution as it was) and, by symmetry, the\nsame "
        "$\\mathbb{E}[\\Delta_i^2]$ for every $i$, adding up to $\\varepsilon^2$: "
        "$\\Sigma = \\tfrac{\\varepsilon^2}{d} I$, and the expected\nincrease is "
        "$\\tfrac{\\varepsilon^2}{2d} \\operatorname{tr} H$, the mean curvature over the "
        "directions, the mean eigenvalue\nof $H$."),
    "ball": (
        "a point uniform in the ball of radius $\\varepsilon$ around 0.",
        ("uniform in a ball, radius epsilon",
         "    g = torch.randn(draws, d, generator=generator, dtype=torch.float64)\n"
         "    radius = torch.rand(draws, 1, generator=generator, dtype=torch.float64)\n"
         "    return epsilon * radius ** (1 / d) * g / g.norm(dim=1, keepdim=True)"),
        "    # E[delta delta^T] = epsilon**2 I / (d + 2)\n"
        "    return epsilon**2 * H.trace().item() / (2 * (H.shape[0] + 2))\n",
        "A point uniform in the ball has $\\mathbb{E}[\\Delta_i \\Delta_j] = 0$ for "
        "$i \\ne j$ by symmetry, and its norm $\\rho$\nhas density "
        "$d\\rho^{d-1}/\\varepsilon^d$ on $[0, \\varepsilon]$, so "
        "$\\mathbb{E}[\\|\\Delta\\|^2] = \\tfrac{d}{d + 2}\\varepsilon^2$, shared\nequally "
        "by the $d$ coordinates: $\\Sigma = \\tfrac{\\varepsilon^2}{d + 2} I$, and the "
        "expected increase is\n$\\tfrac{\\varepsilon^2}{2(d + 2)} \\operatorname{tr} H$: "
        "again the total curvature, the sum of the eigenvalues of $H$,\nscaled down as $d$ "
        "grows."),
    "shift": (
        "one Gaussian number of mean 0 and standard deviation $\\varepsilon$, added to every "
        "parameter\nalike.",
        ("one Gaussian shift for all",
         "    z = torch.randn(draws, 1, generator=generator, dtype=torch.float64)\n"
         "    return epsilon * z.expand(draws, d)"),
        "    # delta = epsilon z (1, ..., 1): E[delta delta^T] = epsilon**2 J\n"
        "    return epsilon**2 * H.sum().item() / 2\n",
        "One shift $\\varepsilon z$ of every parameter gives $\\Delta_i \\Delta_j = "
        "\\varepsilon^2 z^2$ for all $i, j$, so\n$\\Sigma = \\varepsilon^2 "
        "\\mathbf{1}\\mathbf{1}^\\top$ and the expected increase is "
        "$\\tfrac{\\varepsilon^2}{2} \\sum_{i,j} H_{ij} = \\tfrac{\\varepsilon^2}{2} "
        "\\mathbf{1}^\\top H \\mathbf{1}$:\nthe curvature along the one direction "
        "$\\mathbf{1}$, blind to every other."),
}
NOISE_CHECK = '''\
def noise(d, epsilon, draws, generator):  # {comment}
{body}
'''
SHARP_SOLUTION = '''\
Write $\\Delta^\\top H \\Delta = \\sum_{{i,j}} H_{{ij}} \\Delta_i \\Delta_j$. By linearity of \
expectation,

$$
\\begin{{aligned}}
\\tfrac12\\,\\mathbb{{E}}[\\Delta^\\top H \\Delta]
&= \\tfrac12 \\sum_{{i,j}} H_{{ij}}\\,\\mathbb{{E}}[\\Delta_i \\Delta_j]\\\\
&= \\tfrac12 \\operatorname{{tr}}(H \\Sigma),
\\end{{aligned}}
$$

with $\\Sigma = \\mathbb{{E}}[\\Delta \\Delta^\\top]$ the second moment of the noise: only \
$\\Sigma$ matters, not the\nshape of the distribution. {middle}{tail}'''


def noise_check(name: str) -> str:
    comment, body = NOISES[name][1]
    return NOISE_CHECK.format(comment=comment, body=body)


def sharp_solution(name: str) -> str:
    return SHARP_SOLUTION.format(middle=NOISES[name][3], tail=SHARP_TAIL)


NOISE_NAMES = {"uniform": "noise uniform on [-epsilon, epsilon]",
               "first_half": "Gaussian noise on the first d // 2 parameters only",
               "sphere": "noise of norm epsilon in a random direction",
               "ball": "noise uniform in the ball of radius epsilon",
               "shift": "one Gaussian shift of every parameter"}


def _sharp(rng: random.Random) -> Variant:
    name = rng.choice(sorted(set(NOISES) - {BOOK_NOISE}))
    words, _, body, _ = NOISES[name]
    book = NOISES[BOOK_NOISE]
    return Variant(NOISE_NAMES[name], {
        MEASURED: MEASURED_VARIANT,
        book[0]: words,
        book[2].rstrip("\n"): body.rstrip("\n"),  # the last lines of the answer cell
        noise_check(BOOK_NOISE): noise_check(name),
        sharp_solution(BOOK_NOISE): sharp_solution(name),
    }, {"noise": name})


def _matrix(rng: random.Random, d: int) -> str:
    """Source text of ``A`` (``[d, d]``, normal entries) such that in ``H = A A^T`` the entries
    off the diagonal add up to clearly more or less than 0 (so that the shared shift's answer,
    the sum of ``H``, is not its trace)."""
    while True:
        a = [[round(rng.gauss(0, 1), 6) for _ in range(d)] for _ in range(d)]
        trace = sum(x * x for row in a for x in row)
        total = sum(sum(row[j] for row in a) ** 2 for j in range(d))
        if abs(total - trace) > 0.05 * trace:
            return f"torch.tensor({a!r}, dtype=torch.float64)"


def _sharp_tests(rng: random.Random, noise=BOOK_NOISE) -> list[HiddenTest]:
    """The same inputs for every noise (the instructor edition's values differ): four
    matrices ``H = A A^T`` of sizes 2 to 8 (at least two parameters, so that noise on the
    first half leaves some out), epsilons from 0.01 to 3."""
    tests = []
    for _ in range(4):
        d = rng.randrange(2, 9)
        epsilon = round(rng.choice([rng.uniform(0.01, 0.1), rng.uniform(0.1, 3.0)]), 4)
        setup = f"_hidden_A = {_matrix(rng, d)}\n_hidden_H = _hidden_A @ _hidden_A.T"
        tests.append(HiddenTest(f"float(expected_increase(_hidden_H, {epsilon!r}))", EXACT,
                                setup))
    return tests


VARIANTS = {"ex-sens-threshold": _threshold, "ex-sens-zigzag": _zigzag,
            "ex-sens-sharp": _sharp}


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    return {
        "ex-sens-threshold": _threshold_tests(
            rng, **variant_params(variants, "ex-sens-threshold")),
        "ex-sens-zigzag": _zigzag_tests(rng, **variant_params(variants, "ex-sens-zigzag")),
        "ex-sens-sharp": _sharp_tests(rng, **variant_params(variants, "ex-sens-sharp")),
    }
