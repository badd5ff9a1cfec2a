"""Hidden tests of the exercises of *Learning to write the steps* (``book/scratchpad.ipynb``),
and their graded variants (:mod:`course.variants`)."""

import math
import random

from course.hidden import HiddenTest, close
from course.variants import Variant

EXACT = close(rtol=0, atol=0)

# --- ex-pad-chain: what a chain of steps that err at random gets right -----------------------

BOOK_ANSWER = "    answer = flips[:, -1] == 0 if m else torch.ones(100_000, dtype=torch.bool)\n"
BOOK_SOLUTION = """\
A wrong step flips the written parity, and every later step reads it and carries the flip: the
last parity is right exactly when the number of wrong steps is even. With $K$ wrong steps out of
$m$, binomial with parameter $\\varepsilon$,
$P(K \\text{ even}) = \\frac{1}{2}\\left(1 + (1 - 2\\varepsilon)^m\\right)$, since
$(1 - \\varepsilon + \\varepsilon)^m + (1 - \\varepsilon - \\varepsilon)^m$ counts each even
$K$ twice and each odd $K$ not at all. As $m$ grows, $(1 - 2\\varepsilon)^m \\to 0$ for
$0 < \\varepsilon < 1$, and the parity of many random flips is a coin toss: the answer is right
half the time, not never. If the answer is right on all of 100 strings of length 48, the chance of a
right answer is at least about $1 - 3/100$ at 95% confidence (the rule of three: no failure in
100 trials), so $(1 - 2\\varepsilon)^{48} \\ge 0.94$ and $\\varepsilon \\le 6.4 \\times 10^{-4}$;
a single wrong answer would not even say which step erred."""


GIVEN = range(2, 7)  # steps given in a variant, always right


def _chain(rng: random.Random) -> Variant:
    kind = rng.choice(["every parity", "given steps", "expected wrong"])
    if kind == "every parity":
        return Variant("every written parity right", {
            "is right. The check": "and every parity written before it, are right. The check",
            "return (1 + (1 - 2 * eps) ** m) / 2": "return (1 - eps) ** m",
            BOOK_ANSWER: "    answer = (flips == 0).all(dim=1)\n",
            BOOK_SOLUTION: (
                "Every parity is right exactly when no step errs, so the probability is\n"
                "$(1 - \\varepsilon)^m$. It falls to 0 as $m$ grows, while the answer alone, "
                "right whenever the\nnumber of wrong steps is even, tends to $1/2$. If every "
                "chain of 100 strings of length 48\nis right, then "
                "$(1 - \\varepsilon)^{48} \\ge 0.97$ at 95% confidence (the rule of three: "
                "no failure\nin 100 trials), so $\\varepsilon \\le 6.3 \\times 10^{-4}$."),
        })
    if kind == "given steps":
        given = rng.choice(GIVEN)
        return Variant(f"the first {given} parities given", {
            "independently of the other steps.": (
                f"independently of the other steps, except the first {given}, which are given "
                "and\nalways right (a prompt)."),
            "return (1 + (1 - 2 * eps) ** m) / 2": (
                f"return (1 + (1 - 2 * eps) ** max(m - {given}, 0)) / 2"),
            "    wrong = torch.rand(100_000, m, generator=chains) < eps  # wrong steps\n": (
                "    wrong = torch.rand(100_000, m, generator=chains) < eps  # wrong steps\n"
                f"    wrong[:, :{given}] = False  # the first {given} are given\n"),
            BOOK_SOLUTION: (
                "A wrong step flips the written parity, and every later step reads it and "
                "carries the flip: the\nlast parity is right exactly when the number of wrong "
                f"steps is even. Only the {given} given steps\ncannot err, so with "
                f"$n = \\max(m - {given}, 0)$ the probability is "
                "$\\frac{1}{2}\\left(1 + (1 - 2\\varepsilon)^n\\right)$,\n"
                "since $(1 - \\varepsilon + \\varepsilon)^n + (1 - \\varepsilon - "
                "\\varepsilon)^n$ counts each even number of wrong steps\ntwice and each odd "
                "one not at all. It tends to $1/2$ as $m$ grows: the parity of many random\n"
                "flips is a coin toss."),
        })
    return Variant("the expected number of wrong parities", {
        "the probability\nthat the answer, the last parity written for a string of $m$ "
        "symbols, is right.": (
            "the expected\nnumber of wrong parities among the $m$ written for a string of $m$ "
            "symbols."),
        "return (1 + (1 - 2 * eps) ** m) / 2": (
            "return sum((1 - (1 - 2 * eps) ** j) / 2 for j in range(1, m + 1))"),
        BOOK_ANSWER: "    answer = flips.sum(dim=1)  # wrong parities per chain\n",
        "    assert abs(measured - p) <= 5 * (p * (1 - p) / 100_000) ** 0.5 + 1e-9, (":
            "    spread = answer.double().std().item()\n"
            "    assert abs(measured - p) <= 5 * spread / 100_000**0.5 + 1e-9, (",
        BOOK_SOLUTION: (
            "A wrong step flips the written parity, and every later step reads it and carries "
            "the flip: the\nparity written at step $j$ is wrong when an odd number of the "
            "first $j$ steps erred, with\nprobability $(1 - (1 - 2\\varepsilon)^j)/2$ (the "
            "even terms of the binomial expansion cancel in\n$1 - (1 - 2\\varepsilon)^j$). "
            "By the linearity of expectation the expected number of wrong\nparities is the sum "
            "of these over $j = 1, \\dots, m$; it grows like $m/2$ for long chains."),
    })


def _chain_tests(rng: random.Random) -> list:
    """Four tests with ``0 < eps < 1/2`` and ``m >= 2``, where every variant's value differs
    from the book's: rare errors on a long chain, frequent ones on a short chain, every length
    from 2 to just past the most steps a variant gives, and a chain longer than those. The same
    for every variant (N22)."""
    rare = (round(rng.uniform(0.001, 0.01), 4), rng.randrange(20, 200))
    frequent = (round(rng.uniform(0.05, 0.3), 4), rng.randrange(2, 10))
    around = round(rng.uniform(0.01, 0.2), 4)
    longer = (round(rng.uniform(0.02, 0.1), 4), rng.randrange(max(GIVEN) + 2, max(GIVEN) + 30))
    judge = close(rtol=1e-9, atol=1e-12)
    return [*(HiddenTest(f"chain_measure({eps!r}, {m})", judge) for eps, m in (rare, frequent)),
            HiddenTest(f"[chain_measure({around!r}, m) for m in range(2, {max(GIVEN) + 5})]",
                       judge),
            HiddenTest(f"chain_measure({longer[0]!r}, {longer[1]})", judge)]


# --- ex-pad-sign: the sign test ----------------------------------------------------------------

BOOK_TAIL = "of at least as many heads as there are positive\ndifferences (1.0 when none is left)"
BOOK_P = "    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n"
BOOK_COUNT = "        count = sum(sum(p) >= k for p in patterns)\n"
BOOK_SIGN_SOLUTION = """With $n$ nonzero differences of which $k$ are positive, the p-value is
$\\sum_{i = k}^{n} \\binom{n}{i} 2^{-n}$. Ten positive differences out of ten give
$2^{-10} \\approx 0.001$, whatever their sizes"""
SIGN_TESTS = {
    "two-sided": (
        "of a number of heads at least as far from $n/2$ as the\nnumber of positive "
        "differences is (the two-sided test; 1.0 when none is left)",
        "    lower = sum(math.comb(n, i) for i in range(0, k + 1)) / 2**n\n"
        "    upper = sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n\n"
        "    return min(1.0, 2 * min(lower, upper))",
        "        count = sum(abs(2 * sum(p) - n) >= abs(2 * k - n) for p in patterns)\n",
        "With $n$ nonzero differences of which $k$ are positive, the binomial distribution is "
        "symmetric\nabout $n/2$, so the two tails as far from it as $k$ weigh twice the smaller "
        "one (capped at 1).\nTen positive differences out of ten give $2 \\cdot 2^{-10} "
        "\\approx 0.002$, whatever their sizes"),
    "a loss": (
        "of at most as many heads as there are positive\ndifferences (the test for a loss; "
        "1.0 when none is left)",
        "    return sum(math.comb(n, i) for i in range(0, k + 1)) / 2**n",
        "        count = sum(sum(p) <= k for p in patterns)\n",
        "With $n$ nonzero differences of which $k$ are positive, the p-value for a loss is\n"
        "$\\sum_{i = 0}^{k} \\binom{n}{i} 2^{-n}$. Ten positive differences out of ten give "
        "1: no evidence of a\nloss at all. None out of ten would give $2^{-10}$, whatever "
        "their sizes"),
    "mid-p": (
        "of more heads than there are positive differences,\nplus half the probability of "
        "exactly as many (the mid-p value; 0.5 when none is left)",
        "    above = sum(math.comb(n, i) for i in range(k + 1, n + 1))\n"
        "    return (above + math.comb(n, k) / 2) / 2**n",
        "        count = sum((sum(p) > k) + (sum(p) == k) / 2 for p in patterns)\n",
        "With $n$ nonzero differences of which $k$ are positive, the mid-p value is\n"
        "$\\left(\\sum_{i > k} \\binom{n}{i} + \\binom{n}{k}/2\\right) 2^{-n}$. Ten positive "
        "differences out of ten give\n$2^{-11} \\approx 0.0005$, whatever their sizes"),
}


def _sign(rng: random.Random) -> Variant:
    kind = rng.choice(sorted(SIGN_TESTS))
    tail, answer, count, solution = SIGN_TESTS[kind]
    replace = {BOOK_TAIL: tail, BOOK_P: answer, BOOK_COUNT: count,
               BOOK_SIGN_SOLUTION: solution}
    names = {"a loss": "the sign test for a loss"}
    return Variant(names.get(kind, f"the {kind} sign test"), replace)


def _p_value(kind: str, n: int, k: int) -> float:
    """The p-value of ``kind`` (``"book"`` or a key of :data:`SIGN_TESTS`) for ``k`` positive
    differences out of ``n`` nonzero ones, each outcome weighing ``2^-n``."""
    above = sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n
    below = sum(math.comb(n, i) for i in range(0, k + 1)) / 2**n
    return {"book": above, "two-sided": min(1.0, 2 * min(above, below)), "a loss": below,
            "mid-p": above - math.comb(n, k) / 2 ** (n + 1)}[kind]


def _differences(rng: random.Random, low: int, high: int, ties: int) -> list:
    """Per-seed differences of ``low`` to ``high - 1`` seeds, ``ties`` of them 0, mostly
    positive or mixed, drawn again until every variant's p-value differs from the book's."""
    while True:
        seeds, gain = rng.randrange(low, high), rng.uniform(-0.3, 0.7)
        signs = [1 if rng.random() < 0.5 + gain / 2 else -1 for _ in range(seeds - ties)]
        n, k = len(signs), signs.count(1)
        if all(_p_value(kind, n, k) != _p_value("book", n, k) for kind in SIGN_TESTS):
            break
    values = [round(rng.uniform(0.001, 0.5) * sign, 4) for sign in signs] + [0.0] * ties
    rng.shuffle(values)
    return values


def _sign_tests(rng: random.Random) -> list:
    """Per-seed differences, with ties in some: many seeds, a few, mostly positive or mixed,
    on which every variant's p-value differs from the book's; and, in one test, the cases
    where some do not: only ties, as many positive differences as negative ones, beside a
    few seeds that tell every variant from the book. The same for every variant (N22)."""
    tests = [f"sign_test(torch.tensor({_differences(rng, low, high, ties)!r}, "
             "dtype=torch.float64))"
             for low, high, ties in ((5, 21, 0), (5, 21, rng.randrange(1, 4)), (2, 8, 0))]
    half = rng.randrange(1, 3)
    balanced = [round(rng.uniform(0.001, 0.5) * sign, 4) for sign in [1, -1] * half]
    balanced += [0.0] * rng.randrange(0, 3)
    rng.shuffle(balanced)
    cases = [[0.0] * rng.randrange(1, 4), balanced, _differences(rng, 2, 5, 2)]
    tests.append(f"[sign_test(torch.tensor(v, dtype=torch.float64)) for v in {cases!r}]")
    return [HiddenTest(expression, close(rtol=1e-9, atol=1e-15)) for expression in tests]


# --- ex-pad-layout: the scratchpad of any automaton -------------------------------------------

BOOK_LAYOUT_CHECK = """from companion.languages import all_strings
from companion.steps import run_dfa

for m in range(7):  # PARITY: the chapter's own sequences
    w = all_strings(m)
    got = automaton_scratchpad([[0, 1], [1, 0]], 0, w)
    assert torch.equal(got, scratchpad.scratchpad_sequence(w)), m
mod3 = [[0, 1], [1, 2], [2, 0]]  # the number of 1s modulo 3, from state 1
w = all_strings(6)
got = automaton_scratchpad(mod3, 1, w)
assert torch.equal(got[:, 0], torch.full((64,), 3)), "position 0: the start"
assert torch.equal(got[:, 1::2], w), "odd positions: the symbols"
assert torch.equal(got[:, 2::2], 2 + run_dfa(mod3, 1, w)), "even: the states"
last = [[0, 1, 2]] * 3  # three symbols: the state is the last one read
w = torch.tensor([[2, 0, 1, 1], [1, 2, 2, 0]])
want = torch.tensor([[3, 2, 5, 0, 3, 1, 4, 1, 4], [3, 1, 4, 2, 5, 2, 5, 0, 3]])
assert torch.equal(automaton_scratchpad(last, 0, w), want), "k = 3 symbols"
"""
BOOK_STATEMENT = """the teacher-forced sequences `LongTensor[B, 2m + 1]`, holding the token of
the start state at position 0, $w_j$ at position $2j - 1$ and the token of $q_j$, the state
after $w_1 \\cdots w_j$, at position $2j$, where the token of state $q$ is $k + q$. The check
compares it with `scratchpad_sequence` for PARITY and with a run of another automaton."""
BOOK_LAYOUT_ANSWER = """    tokens = torch.full((w.shape[0], 2 * w.shape[1] + 1), k + start)
    for j in range(w.shape[1]):
        state = table[state, w[:, j]]
        tokens[:, 2 * j + 1], tokens[:, 2 * j + 2] = w[:, j], k + state
    return tokens
"""
def _layout_check(asserts: list, want: str) -> str:
    """The check cell of a layout: its ``asserts`` on the mod-3 automaton over every string of
    length 6, then the sequences ``want`` of a three-symbol automaton on two strings."""
    return "\n".join([
        "mod3 = [[0, 1], [1, 2], [2, 0]]  # the number of 1s modulo 3, from state 1",
        "w = all_strings(6)", "got = automaton_scratchpad(mod3, 1, w)", *asserts,
        "last = [[0, 1, 2]] * 3  # three symbols: the state is the last one read",
        "w = torch.tensor([[2, 0, 1, 1], [1, 2, 2, 0]])", f"want = torch.tensor({want})",
        'assert torch.equal(automaton_scratchpad(last, 0, w), want), "k = 3 symbols"', ""])


LAYOUTS = {
    "states first": (
        """the teacher-forced sequences `LongTensor[B, 2m + 1]`, holding the token of
the start state at position 0, the token of $w_j$ at position $2j - 1$ and that of $q_j$, the
state after $w_1 \\cdots w_j$, at position $2j$, where the token of state $q$ is $q$ and that
of the symbol $a$ is $S + a$ ($S$ the number of states). The check runs another automaton.""",
        """    S = table.shape[0]
    tokens = torch.full((w.shape[0], 2 * w.shape[1] + 1), start)
    for j in range(w.shape[1]):
        state = table[state, w[:, j]]
        tokens[:, 2 * j + 1], tokens[:, 2 * j + 2] = S + w[:, j], state
    return tokens
""",
        _layout_check([
            'assert got.shape == (64, 13), "2m + 1 positions"',
            'assert torch.equal(got[:, 0], torch.full((64,), 1)), "position 0: the start"',
            'assert torch.equal(got[:, 1::2], 3 + w), "odd positions: the symbols"',
            'assert torch.equal(got[:, 2::2], run_dfa(mod3, 1, w)), "even: the states"'],
            '[[0, 5, 2, 3, 0, 4, 1, 4, 1], [0, 4, 1, 5, 2, 5, 2, 3, 0]]')),
    "no start token": (
        """the teacher-forced sequences `LongTensor[B, 2m]`, holding $w_j$ at
position $2j - 2$ and the token of $q_j$, the state after $w_1 \\cdots w_j$, at position
$2j - 1$ (no start token), where the token of state $q$ is $k + q$. The check runs another
automaton.""",
        """    tokens = torch.zeros((w.shape[0], 2 * w.shape[1]), dtype=torch.long)
    for j in range(w.shape[1]):
        state = table[state, w[:, j]]
        tokens[:, 2 * j], tokens[:, 2 * j + 1] = w[:, j], k + state
    return tokens
""",
        _layout_check([
            'assert got.shape == (64, 12), "2m positions"',
            'assert torch.equal(got[:, 0::2], w), "even positions: the symbols"',
            'assert torch.equal(got[:, 1::2], 2 + run_dfa(mod3, 1, w)), "odd: the states"'],
            '[[2, 5, 0, 3, 1, 4, 1, 4], [1, 4, 2, 5, 2, 5, 0, 3]]')),
    "a start token of its own": (
        """the teacher-forced sequences `LongTensor[B, 2m + 1]`, holding a start
token $k + S$ ($S$ the number of states) at position 0, $w_j$ at position $2j - 1$ and the
token of $q_j$, the state after $w_1 \\cdots w_j$, at position $2j$, where the token of state
$q$ is $k + q$. The check runs another automaton.""",
        """    S = table.shape[0]
    tokens = torch.full((w.shape[0], 2 * w.shape[1] + 1), k + S)
    for j in range(w.shape[1]):
        state = table[state, w[:, j]]
        tokens[:, 2 * j + 1], tokens[:, 2 * j + 2] = w[:, j], k + state
    return tokens
""",
        _layout_check([
            'assert got.shape == (64, 13), "2m + 1 positions"',
            'assert torch.equal(got[:, 0], torch.full((64,), 5)), "position 0: START"',
            'assert torch.equal(got[:, 1::2], w), "odd positions: the symbols"',
            'assert torch.equal(got[:, 2::2], 2 + run_dfa(mod3, 1, w)), "even: the states"'],
            '[[6, 2, 5, 0, 3, 1, 4, 1, 4], [6, 1, 4, 2, 5, 2, 5, 0, 3]]')),
}


def _layout(rng: random.Random) -> Variant:
    kind = rng.choice(sorted(LAYOUTS))
    statement, answer, check = LAYOUTS[kind]
    return Variant(kind, {  # the cells' last lines end without a newline
        BOOK_STATEMENT: statement, BOOK_LAYOUT_ANSWER.rstrip(): answer.rstrip(),
        BOOK_LAYOUT_CHECK.rstrip(): check.rstrip(),
        "For PARITY\n($k = 2$, states 0 and 1, start 0) the tokens of the states are 2 and 3, "
        "those of\n`scratchpad_sequence`, so the two agree.": (
            "The layout is the chapter's, with other token ids or positions: what matters to "
            "a learner is\nthat each state sits next to the symbol that made it."),
    }, {"kind": kind})


def _layout_tests(rng: random.Random) -> list:
    tests = []
    for symbols in (3, rng.randrange(2, 4), rng.randrange(2, 4)):  # one with three symbols
        states = rng.randrange(1, 5)
        table = [[rng.randrange(states) for _ in range(symbols)] for _ in range(states)]
        m = rng.randrange(0, 9)
        w = [[rng.randrange(symbols) for _ in range(m)] for _ in range(rng.randrange(1, 4))]
        tests.append(HiddenTest(
            f"automaton_scratchpad({table!r}, {rng.randrange(states)}, "
            f"torch.tensor({w!r}, dtype=torch.long).reshape({len(w)}, {m}))", EXACT))
    return tests


VARIANTS = {"ex-pad-chain": _chain, "ex-pad-sign": _sign, "ex-pad-layout": _layout}


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    return {
        "ex-pad-chain": _chain_tests(rng),
        "ex-pad-sign": _sign_tests(rng),
        "ex-pad-layout": _layout_tests(rng),
    }
