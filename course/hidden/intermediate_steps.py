"""Hidden tests of the exercises of *Intermediate steps* (``book/intermediate_steps.ipynb``),
and their graded variants (:mod:`course.variants`)."""

import random

import torch

from companion.steps import compile_tm, decode
from course.hidden import HiddenTest, close, variant_params
from course.variants import Variant

EXACT = close(rtol=0, atol=0)

# --- ex-steps-compile: another counting automaton -------------------------------------------

BOOK_RULE = (1, 3, 0)  # count the symbol 1, modulo 3, accept the remainder 0


def _accepts(rule, word) -> bool:
    symbol, modulus, remainder = rule
    return sum(1 for s in word if s == symbol) % modulus == remainder


COUNTERS = {
    "divisible by 4": ((1, 4, 0), {
        "divisible by 3": "divisible by 4",
        "Three states count the 1s modulo 3": "Four states count the 1s modulo 4",
        "$(q + 1) \\bmod 3$": "$(q + 1) \\bmod 4$",
        "(q + 1) % 3] for q in range(3)": "(q + 1) % 4] for q in range(4)",
        "w.sum(dim=1) % 3 == 0": "w.sum(dim=1) % 4 == 0",
    }),
    "the remainder 1": ((1, 3, 1), {
        "is divisible by 3": "leaves the remainder 1 when divided by 3",
        "Start and accept in state 0.": "Start in state 0 and accept in state 1.",
        "return transitions, 0, [0]": "return transitions, 0, [1]",
        "w.sum(dim=1) % 3 == 0": "w.sum(dim=1) % 3 == 1",
    }),
    "counting 0s": ((0, 3, 0), {
        "number of 1s is divisible by 3": "number of 0s is divisible by 3",
        "count the 1s modulo 3: a 0 keeps the state, a 1 moves":
            "count the 0s modulo 3: a 1 keeps the state, a 0 moves",
        "[[q, (q + 1) % 3] for": "[[(q + 1) % 3, q] for",
        "expected = w.sum(dim=1) % 3 == 0": "expected = (m - w.sum(dim=1)) % 3 == 0",
    }),
}


def _counter(rng: random.Random) -> Variant:
    name = rng.choice(sorted(COUNTERS))
    _, replace = COUNTERS[name]
    return Variant(f"strings {name}", replace)


def _compile_tests(rng: random.Random) -> list[HiddenTest]:
    """Two batches of six strings on which, for every variant, the book's automaton answers
    otherwise on some string: the same strings whatever the variant (N22)."""
    tests = []
    for _ in range(2):
        while True:
            words = [[rng.randrange(2) for _ in range(rng.randrange(1, 16))] for _ in range(6)]
            if all(any(_accepts(rule, w) != _accepts(BOOK_RULE, w) for w in words)
                   for rule, _ in COUNTERS.values()):
                break
        rows = ", ".join(f"torch.tensor({w})" for w in words)
        tests.append(HiddenTest(
            f"[bool(decode(compile_dfa(*ones_dfa()), row[None])[1]) for row in [{rows}]]",
            EXACT))
    return tests


# --- ex-steps-precision: another question about the same decoders ----------------------------

FIRST_ERROR = "the smallest $m \\le 60$ for which\n`parity_decoder(dtype)` writes a wrong state"
NONE_CLAUSE = ", or `None` if there is none. Find it"
SEARCH = "Decode the string for $m = 1, 2, \\dots$ and compare with `run_dfa`."
CALL = 'm = first_error_length(dtype, "01")'

QUESTIONS = {
    "last_right_length": {
        CALL: 'right = precision_measure(dtype, "01")\n    m = right + 1 if right < 60 else None',
        "first_error_length": "precision_measure",
        FIRST_ERROR: "the largest $m \\le 60$ such that\n`parity_decoder(dtype)` writes only right "
                     "states on every length up to $m$",
        NONE_CLAUSE: " (0 if it errs at length 1). Find it",
        SEARCH: SEARCH[:-1] + "; the answer is one less than the first length that errs, or 60.",
        "            return m\n    return None": "            return m - 1\n    return 60",
    },
    "error_count": {
        CALL: 'count = precision_measure(dtype, "01")\n'
              "    assert count == sum(errs(dtype, k) for k in range(1, 61)), count\n"
              "    m = next((k for k in range(1, 61) if errs(dtype, k)), None)",
        "first_error_length": "precision_measure",
        FIRST_ERROR: "the number of lengths $m \\le 60$ at which\n`parity_decoder(dtype)` writes "
                     "some wrong state",
        NONE_CLAUSE: ". Find it",
        SEARCH: "Decode the string for $m = 1, \\dots, 60$, compare with `run_dfa` and count the "
                "lengths that err.",
        "    low = parity_decoder(dtype).to(device)\n":
            "    low, count = parity_decoder(dtype).to(device), 0\n",
        "        if not torch.equal(states.cpu(), run_dfa([[0, 1], [1, 0]], 0, w)):\n"
        "            return m\n    return None":
            "        count += not torch.equal(states.cpu(),\n"
            "                                 run_dfa([[0, 1], [1, 0]], 0, w))\n"
            "    return count",
    },
}
PATTERNS = ["01", "10", "0110", "011", "001", "1"]


def _question(rng: random.Random) -> Variant:
    name = rng.choice(sorted(QUESTIONS))
    return Variant(f"{name} instead of first_error_length", QUESTIONS[name],
                   {"function": "precision_measure"})  # one name for every variant (N22)


def _precision_tests(rng: random.Random, function: str) -> list[HiddenTest]:
    patterns = rng.sample(PATTERNS, 2)
    return [HiddenTest(f"{function}(torch.bfloat16, {patterns[0]!r})", EXACT),
            HiddenTest(f"{function}(torch.float16, {patterns[1]!r})", EXACT)]


# --- ex-steps-hahn: count otherwise ----------------------------------------------------------

COUNTS = {
    "the states that stay the same": {
        "count the positions where the states differ": "count the positions where they agree",
        "the number of states that the chapter's $S_5$ decoder `s5`\nwrites differently":
            "the number of states that the chapter's $S_5$ decoder `s5`\nwrites the same",
        "The answer is $m - i$:\nthe states before position $i$ are unchanged, and every later "
        "state":
            "The answer is $i$:\nthe $i$ states before position $i$ are unchanged, and every "
            "later state changes, since it",
        "return int((before != after).sum())": "return int((before == after).sum())",
        "assert got == m - i,": "assert got == i,",
        "{got} states changed": "{got} states stayed",
    },
    "positions counted from 1": {
        "(counting from 0)": "(counting from 1)",
        "The answer is $m - i$:": "The answer is $m - i + 1$:",
        "other[:, i] = 1 - other[:, i]": "other[:, i - 1] = 1 - other[:, i - 1]",
        "for i in range(m):": "for i in range(1, m + 1):",
        "assert got == m - i,": "assert got == m - i + 1,",
    },
}


def _count(rng: random.Random) -> Variant:
    name = rng.choice(sorted(COUNTS))
    return Variant(f"counting {name}", COUNTS[name])


def _hahn_tests(rng: random.Random) -> list[HiddenTest]:
    tests = []
    for _ in range(3):
        m = rng.randrange(3, 20)
        i = rng.randrange(1, m)  # a position that both counts from 0 and from 1 name
        while 2 * i == m:  # i = m - i: the book would pass "the states that stay the same"
            i = rng.randrange(1, m)
        word = [rng.randrange(2) for _ in range(m)]
        tests.append(HiddenTest(f"changed_states(torch.tensor([{word}]), {i})", EXACT))
    return tests


# --- ex-steps-machine: groups of another size ----------------------------------------------

RATIOS = {(1, 2): "twice as many 1s as 0s", (2, 1): "twice as many 0s as 1s",
          (1, 3): "three times as many 1s as 0s", (3, 1): "three times as many 0s as 1s",
          (2, 3): "two 0s for every three 1s", (3, 2): "three 0s for every two 1s"}
NUMBERS = {1: "one", 2: "two", 3: "three"}


def _some(count: int, symbol: str) -> str:
    """``"one 0"``, ``"two 0s"``, ..."""
    return f"{NUMBERS[count]} {symbol}{'s' * (count > 1)}"


def _times(count: int) -> str:
    """``"g"``, ``"2g"``, ... in math."""
    return f"${count if count > 1 else ''}g$"


def _ratio(rng: random.Random) -> Variant:
    zeros, ones = rng.choice(sorted(RATIOS))
    words = RATIOS[zeros, ones]
    group = f"{_some(zeros, '0')} and {_some(ones, '1')}"
    return Variant(words, {
        "that accepts the strings with as many 0s as 1s.":
            f"that accepts the strings with {words}\n({_times(zeros)} 0s and "
            f"{_times(ones)} 1s for some $g \\ge 0$).",
        "cross out one 0 and one 1 at a time": f"cross out {group} at a time",
        "here one 0 and one 1": f"here {group}",
        "as for the chapter's machines. (On $0^n 1^n$ the model answer makes $3n^2 + n + 1$\n"
        "moves.)": "as for the chapter's machines.",
        "return grouping_tm(1, 1)": f"return grouping_tm({zeros}, {ones})",
        "in_ratio = lambda w: (w == 0).sum(dim=1) == (w == 1).sum(dim=1)":
            "def in_ratio(w):\n"
            "    zeros, ones = (w == 0).sum(dim=1), (w == 1).sum(dim=1)\n"
            f"    return (zeros * {ones} == ones * {zeros}) & (zeros % {zeros} == 0)\n\n",
    }, {"zeros": zeros, "ones": ones})


MACHINE = ("(lambda t, s, a, r: [[[*key, *target] for key, target in t.items()], s, list(a), "
           "list(r)])(*ratio_tm())")  # the machine as plain data, read by _machine
MAX_STATES, MAX_SYMBOLS = 64, 8  # of a machine the judge compiles (the model answer's: 16, 5)


def _machine(data) -> tuple:
    """``(transitions, start, accepting, rejecting)`` from the plain data of :data:`MACHINE`
    (``[[q, a, q', a', move], ...]``, start, accepting, rejecting); raises ``ValueError`` where
    it is not that, or is larger than ``MAX_STATES`` states and ``MAX_SYMBOLS`` symbols allow,
    or holds a number that is not a small int: before anything runs it."""
    if not (isinstance(data, list) and len(data) == 4 and all(
            isinstance(part, list) for part in (data[0], data[2], data[3]))):
        raise ValueError("not [transitions, start, accepting, rejecting]")
    rows, start, accepting, rejecting = data
    if len(rows) > MAX_STATES * MAX_SYMBOLS or max(len(accepting), len(rejecting)) > MAX_STATES:
        raise ValueError(f"more than {MAX_STATES * MAX_SYMBOLS} transitions or {MAX_STATES} "
                         "halting states")
    if not all(isinstance(row, list) and len(row) == 5 for row in rows):
        raise ValueError("a transition is not [q, a, q', a', move]")
    numbers = [start, *accepting, *rejecting, *(n for row in rows for n in row)]
    if not all(type(n) is int and -1 <= n < MAX_STATES for n in numbers):
        raise ValueError(f"states and moves must be ints from -1 to {MAX_STATES - 1}")
    if not all(0 <= row[k] < MAX_SYMBOLS for row in rows for k in (1, 3)):
        raise ValueError(f"symbols must be ints from 0 to {MAX_SYMBOLS - 1}")
    transitions = {(q, a): (r, b, move) for q, a, r, b, move in rows}
    if len(transitions) < len(rows):
        raise ValueError("a (state, symbol) has two transitions")
    return transitions, start, accepting, rejecting


def _decides_ratio(words: list, zeros: int, ones: int):
    """A judge: the machine (ignoring the instructor's), compiled by ``compile_tm`` for its
    default 512 positions, accepts exactly the strings of ``words`` with ``zeros * g`` 0s and
    ``ones * g`` 1s; its message never says which string it fails on."""
    def judge(got, expected) -> str:
        try:
            decoder = compile_tm(*_machine(got))
        except (TypeError, ValueError) as error:
            return f"not a valid machine ({error})"
        try:
            _, verdicts = decode(decoder, torch.tensor(words))
        except ValueError:
            return f"a run does not halt within the decoder's {decoder.max_positions} positions"
        right = [w.count(0) * ones == w.count(1) * zeros and w.count(0) % zeros == 0
                 for w in words]
        return "" if verdicts.tolist() == right else "it decides some string wrong"
    return judge


def _machine_tests(rng: random.Random, zeros: int = 1, ones: int = 1) -> list[HiddenTest]:
    """Two batches of strings of 9 to 16 symbols, longer than the check's, decided by the
    submission's machine in the grader's process: four in the language (g groups, shuffled)
    and four drawn at random (mostly outside it). The test shows the submission no string,
    and draws them from a generator of their own, so that the other exercises' inputs do not
    depend on the variant either (N22)."""
    tests = []
    for _ in range(2):
        own = random.Random(rng.getrandbits(64))
        g = own.choice([g for g in range(1, 17) if 9 <= g * (zeros + ones) <= 16])
        m = g * (zeros + ones)
        members = [own.sample([0] * (g * zeros) + [1] * (g * ones), m) for _ in range(4)]
        others = [[own.randrange(2) for _ in range(m)] for _ in range(4)]
        tests.append(HiddenTest(MACHINE, _decides_ratio(members + others, zeros, ones)))
    return tests


# --- ex-steps-backwards: the fetching query set by name, to read the input backwards ----------

BOOK_BACKWARDS = ("The automaton `BACKWARDS_DFA = ([[0, 1], [0, 1]], 0, [1])` remembers the last "
                  "symbol it read,\nso it accepts the strings that end in 1.")
BOOK_FIRST = ("The decoder then reads its input backwards, writes the automaton's states on\n"
              "the reversed string, and accepts the strings that begin with 1: FIRST.")
BACKWARDS = {  # name: (the automaton, what it does, what the decoder reading backwards accepts)
    "counting 1s modulo 3": (
        ([[0, 1], [1, 2], [2, 0]], 0, [0]),
        "counts the 1s modulo 3, so it\naccepts the strings whose number of 1s is divisible "
        "by 3.",
        "the same strings, since the count does not depend on the order"),
    "the last two symbols": (
        ([[0, 1], [2, 3], [0, 1], [2, 3]], 0, [1]),
        "remembers the last two symbols it\nread ($2a + b$ after $a\\,b$, as if the string "
        "began with $0\\,0$), so it accepts the strings that end\nin $0\\,1$ and the "
        "string $1$.",
        "the strings that begin with $1\\,0$ and the string $1$"),
    "the first symbol": (
        ([[1, 2], [1, 1], [2, 2]], 0, [2]),
        "remembers the first symbol it\nread (state 1 after a first 0, state 2 after a "
        "first 1), so it accepts the strings that begin\nwith 1: FIRST.",
        "the strings that end in 1"),
}


def _backwards(rng: random.Random) -> Variant:
    name = rng.choice(sorted(BACKWARDS))
    dfa, does, accepts = BACKWARDS[name]
    return Variant(name, {
        BOOK_BACKWARDS: f"The automaton `BACKWARDS_DFA = {dfa!r}` {does}",
        BOOK_FIRST: ("The decoder then reads its input backwards, writes the automaton's "
                     f"states on\nthe reversed string, and accepts {accepts}."),
        "BACKWARDS_DFA = ([[0, 1], [0, 1]], 0, [1])": f"BACKWARDS_DFA = {dfa!r}",
    }, {"dfa": dfa})


def _backwards_tests(rng: random.Random) -> list[HiddenTest]:
    """Three batches of strings longer than the check's (9 to 40 symbols), the states written."""
    tests = []
    for _ in range(3):
        m = rng.randrange(9, 41)
        w = [[rng.randrange(2) for _ in range(m)] for _ in range(3)]
        tests.append(HiddenTest(f"decode(backwards_decoder(), torch.tensor({w}))[0]", EXACT))
    return tests


VARIANTS = {"ex-steps-compile": _counter, "ex-steps-precision": _question,
            "ex-steps-hahn": _count, "ex-steps-machine": _ratio,
            "ex-steps-backwards": _backwards}


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    precision = variant_params(variants, "ex-steps-precision",
                               {"function": "first_error_length"})
    return {
        "ex-steps-compile": _compile_tests(rng),
        "ex-steps-precision": _precision_tests(rng, precision["function"]),
        "ex-steps-hahn": _hahn_tests(rng),
        "ex-steps-machine": _machine_tests(rng, **variant_params(variants, "ex-steps-machine")),
        "ex-steps-backwards": _backwards_tests(rng),
    }
