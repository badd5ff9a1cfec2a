"""Hidden tests of the exercises of *Which programs does training find?*
(``book/generalization.ipynb``), and their graded variants (:mod:`course.variants`).

A certificate is judged in the grader's process, as in *Attention as logic and as circuits*: the
submission sends its program as plain data (:func:`companion.rasp.to_data`), the grader builds it
again (:func:`companion.rasp.from_data`) and runs it, compiled into a transformer and into a
circuit too (:func:`companion.exercises.language_problem`), on strings the submission never
sees: every string of a short length, or :func:`companion.exercises.varied_strings` of a long
one. A prediction comes back with its certificate, and both must be right in one test, so that
an answer right in one half and wrong in the other passes none. A fooling set comes back as two
lists of strings and its ``4**h`` concatenations are decided in the grader's process
(:func:`companion.exercises.fooling_problem`).

Each language is written here once, as the source text that the variant's check cell shows,
and the judge runs that same text."""

import random

import torch

from companion.exercises import (
    certificate_problem,
    fooling_problem,
    language_problem,
    varied_strings,
)
from companion.languages import all_strings
from companion.rasp import from_data
from course.hidden import HiddenTest, variant_params
from course.variants import Variant

AS_DATA = "from companion.rasp import to_data as _hidden_to_data"
LONG_SAMPLES = 240  # varied strings of a long length, each test


def _language(source: str):
    """The function ``task`` (or ``language``) that ``source`` defines, run with torch."""
    namespace = {"torch": torch}
    exec(source, namespace)  # noqa: S102 - this module's own text, never a submission's
    return namespace.get("task") or namespace["language"]


def _rebuilt(data):
    """``(program, "")``, or ``(None, why not)`` for data that no program gives."""
    try:
        return from_data(data), ""
    except (TypeError, ValueError) as error:
        return None, f"not a program ({error})"


def _strings(m: int, seed: int) -> torch.Tensor:
    """Every string of length ``m <= 10``, or varied strings of a longer one."""
    if m <= 10:
        return all_strings(m)
    return varied_strings(m, LONG_SAMPLES, torch.Generator().manual_seed(seed))


def _program_judge(m: int, seed: int, language, predicates=None):
    """A judge of a program sent as data: a certificate (with at most ``predicates``) that
    decides ``language`` on :func:`_strings` three ways; its message never shows a string."""
    def judge(got, expected) -> str:
        program, why = _rebuilt(got)
        if why or (why := certificate_problem(program, predicates)):
            return why
        return language_problem(program, language, _strings(m, seed), show=False)
    return judge


def _lengths(rng: random.Random) -> list[int]:
    """Two short lengths, every string tried, and a long one."""
    return [*rng.sample(range(6, 11), 2), rng.randrange(40, 101)]


# --- ex-gen-certificate: another pair of symbols, offset and bound ---------------------------

PAIRS_CHECK = '''\
def language(w):  # at most 1 position i with w[i] = 1 and w[i - 1] = 1
    def pairs(s):
        return sum(s[i] == 1 and s[i - 1] == 1 for i in range(1, len(s)))
    return torch.tensor([pairs(s) <= 1 for s in w.tolist()])
'''
STATEMENT_PAIRS = ("at most one position $i$ holds a 1 with a 1 at position $i - 1$ (the factor "
                   "11 at most once, overlapping occurrences counted apart: 111 holds it twice).")
TIMES = {1: "once", 2: "twice", 3: "three times"}
HOW_MANY = {1: "one position $i$ holds", 2: "two positions $i$ hold",
            3: "three positions $i$ hold"}


def _pairs_check(a: int, b: int, c: int, t: int) -> str:
    return (PAIRS_CHECK.replace("at most 1 position i with w[i] = 1 and w[i - 1] = 1",
                                f"at most {t} i with w[i] = {a}, w[i - {c}] = {b}")
            .replace("s[i] == 1 and s[i - 1] == 1 for i in range(1, len(s))",
                     f"s[i] == {a} and s[i - {c}] == {b} for i in range({c}, len(s))")
            .replace("pairs(s) <= 1", f"pairs(s) <= {t}"))


def _pairs(rng: random.Random) -> Variant:
    while True:
        a, b, c, t = rng.choice([0, 1]), rng.choice([0, 1]), rng.choice([1, 2, 3]), \
            rng.choice([1, 2, 3])
        if (a, b, c, t) != (1, 1, 1, 1):
            break
    gloss = (f"the factor {b}{a} at most {TIMES[t]}, overlapping occurrences counted apart"
             if c == 1 else f"a {b} and, {c} positions later, a {a}, at most {TIMES[t]}")
    return Variant(f"at most {t} pairs w[i] = {a}, w[i - {c}] = {b}", {
        STATEMENT_PAIRS: f"at most {HOW_MANY[t]} a {a} with a {b} at position $i - {c}$ "
                         f"({gloss}).",
        'Q("1") & local(Q("1"), 1)': f'Q("{a}") & local(Q("{b}"), {c})',
        "# a 1 at i, a 1 at i - 1": f"# a {a} at i, a {b} at i - {c}",
        "count(pairs) <= 1": f"count(pairs) <= {t}",
        "$w_i = 1$ and $w_{i - 1} = 1$": f"$w_i = {a}$ and $w_{{i - {c}}} = {b}$",
        "reads $Q_1$ at $i - 1$ (false where $i < 1$)":
            f"reads $Q_{b}$ at $i - {c}$ (false where $i < {c}$)",
        "and the program compares it with 1.": f"and the program compares it with {t}.",
        PAIRS_CHECK: _pairs_check(a, b, c, t),
    }, {"a": a, "b": b, "c": c, "t": t})


def _certificate_tests(rng, a=1, b=1, c=1, t=1):
    language = _language(_pairs_check(a, b, c, t))
    return [HiddenTest("_hidden_to_data(certificate())",
                       _program_judge(m, rng.randrange(2**31), language), AS_DATA)
            for m in _lengths(rng)]


# --- ex-gen-predict: another task --------------------------------------------------------------

# name: (the task in words, the predictions (none, learned), the check's definition of the
# language, the names the model answer imports, the body of its certify(), the solution's
# reasoning). "even_ones" is the book's.
BOOK_TASK = "even_ones"
PARITY_OF_ONES = ("On $1^m$ the verdict alternates with $m$, and on $1^m$ every vector of a "
                  "C-RASP program\nwithout positions is eventually constant "
                  "({prf:ref}`Proposition 5.2 <prop-logic-parity>`): "
                  "no such program decides the\ntask, and NoPE "
                  "is predicted to fail.")
LOCAL = ("Forbidding a factor needs the symbols just before $i$, which local predicates "
         "read; without\npositions, C-RASP cannot single out the position before $i$ (as for "
         "no 000 in this chapter), so\nNoPE is predicted to fail, and learned positions, with "
         "the local predicates, to generalize.")
NOPE = ("The program uses counts and comparisons alone: the task is in C-RASP without "
        "positions, so\nthe theory predicts that NoPE generalizes, and learned positions too "
        "(C-RASP[] is part of\nC-RASP[periodic, local]).")
OUTSIDE = ("No C-RASP[periodic, local] program decides it, so the theory predicts that both "
           "fail: ")
TASKS = {
    "even_ones": (
        "more 1s at even positions than at odd positions",
        (False, True), "return w[:, 0::2].sum(dim=1) > w[:, 1::2].sum(dim=1)",
        "Q, count, periodic",
        '    even, odd = periodic(2, 0), periodic(2, 1)\n'
        '    return count(Q("1") & even) > count(Q("1") & odd)',
        "$1^m$ has $\\lceil m/2 \\rceil$ 1s at even positions and $\\lfloor m/2 \\rfloor$ at "
        "odd ones, so it is in the\nlanguage exactly when $m$ is odd. " + PARITY_OF_ONES
        + " The periodic predicates\n$[i \\equiv 0 \\pmod 2]$ and $[i \\equiv 1 \\pmod 2]$ "
        "split the 1s by the parity of their positions,\nand one comparison of two counts "
        "decides the task: it is in C-RASP[periodic], and learned\npositions are predicted "
        "to generalize."),
    "odd_ones": (
        "at least as many 1s at odd positions as at even positions",
        (False, True), "return w[:, 1::2].sum(dim=1) >= w[:, 0::2].sum(dim=1)",
        "Q, count, periodic",
        '    even, odd = periodic(2, 0), periodic(2, 1)\n'
        '    return count(Q("1") & odd) >= count(Q("1") & even)',
        "$1^m$ is in the language exactly when $m$ is even. " + PARITY_OF_ONES
        + " The periodic\npredicates split the 1s by the parity of their positions, and one "
        "comparison of two counts\ndecides the task: learned positions are predicted to "
        "generalize."),
    "even_majority": (
        "an even length and more 1s than 0s",
        (False, True), "return (w.sum(dim=1) > (1 - w).sum(dim=1)) & (w.shape[1] % 2 == 0)",
        "Q, count, periodic",
        '    even_length = periodic(2, 1)  # the last position is odd\n'
        '    return even_length & (count(Q("1")) > count(Q("0")))',
        "$1^m$ is in the language exactly when $m$ is even. " + PARITY_OF_ONES
        + " At the last\nposition, $[i \\equiv 1 \\pmod 2]$ says that the length is even, "
        "and a comparison of counts gives\nthe majority: learned positions are predicted to "
        "generalize."),
    "zeros_length_3k": (
        "a length divisible by 3 and at least as many 0s as 1s",
        (False, True), "return ((1 - w).sum(dim=1) >= w.sum(dim=1)) & (w.shape[1] % 3 == 0)",
        "Q, count, periodic",
        '    length_3k = periodic(3, 2)  # the last position is 3k - 1\n'
        '    return length_3k & (count(Q("0")) >= count(Q("1")))',
        "$0^m$ is in the language exactly when 3 divides $m$, and on $0^m$ every vector of a "
        "C-RASP\nprogram without positions is eventually constant, as on $1^m$ "
        "({prf:ref}`Proposition 5.2 <prop-logic-parity>`): NoPE\nis predicted to fail. "
        "At the last position, "
        "$[i \\equiv 2 \\pmod 3]$ says that 3 divides the\nlength, and a comparison of counts "
        "does the rest: learned positions are predicted to\ngeneralize."),
    "no_11": (
        "no two 1s in a row (no factor 11)",
        (False, True), "return ~((w[:, 1:] == 1) & (w[:, :-1] == 1)).any(dim=1)",
        "Q, count, local",
        '    pairs = Q("1") & local(Q("1"), 1)  # a factor 11 ends at i\n'
        '    return count(pairs) <= 0',
        LOCAL),
    "no_00": (
        "no two 0s in a row (no factor 00)",
        (False, True), "return ~((w[:, 1:] == 0) & (w[:, :-1] == 0)).any(dim=1)",
        "Q, count, local",
        '    pairs = Q("0") & local(Q("0"), 1)  # a factor 00 ends at i\n'
        '    return count(pairs) <= 0',
        LOCAL),
    "no_111": (
        "no three 1s in a row (no factor 111)",
        (False, True), "return ~(w[:, 2:] + w[:, 1:-1] + w[:, :-2] == 3).any(dim=1)",
        "Q, count, local",
        '    ones = Q("1") & local(Q("1"), 1) & local(Q("1"), 2)\n'
        '    return count(ones) <= 0  # no factor 111 ends anywhere',
        LOCAL),
    "twice_ones": (
        "at least twice as many 1s as 0s",
        (True, True), "return w.sum(dim=1) >= 2 * (1 - w).sum(dim=1)",
        "Q, count",
        '    return count(Q("1")) >= 2 * count(Q("0"))',
        NOPE),
    "prefix_zeros": (
        "every prefix has at least as many 0s as 1s",
        (True, True), "return ((1 - 2 * w).cumsum(dim=1) >= 0).all(dim=1)",
        "Q, count",
        '    above = count(Q("1")) > count(Q("0"))  # a prefix with more 1s\n'
        '    return count(above) <= 0',
        NOPE),
    "sorted": (
        "every 0 comes before every 1 (the strings $0^a 1^b$)",
        (True, True), "return (w[:, 1:] >= w[:, :-1]).all(dim=1)",
        "Q, count",
        '    late = Q("0") & (count(Q("1")) >= 1)  # a 0 after a 1\n'
        '    return count(late) <= 0',
        NOPE),
    "first_zero": (
        "the first symbol is 0",
        (True, True), "return w[:, 0] == 0",
        "Q, count",
        '    first = count(True) <= 1  # only position 0 counts 1 position\n'
        '    return count(first & Q("0")) >= 1',
        NOPE),
    "palindrome": (
        "the string reads the same backwards (a palindrome)",
        (False, False), "return (w == w.flip(1)).all(dim=1)", None, None,
        OUTSIDE + "a palindrome's first half must be\ncompared with its second, symbol by "
        "symbol, which needs more bits sent across the middle\nthan any such program sends "
        "(this chapter's communication argument)."),
    "square": (
        "the string is some $w$ written twice ($ww$)",
        (False, False),
        "half = w.shape[1] // 2\n    return (w[:, :half] == w[:, w.shape[1] - half:]).all("
        "dim=1) & (\n        w.shape[1] % 2 == 0)",
        None, None,
        OUTSIDE + "a square's first half must be\ncompared with its second, symbol by symbol, "
        "which needs more bits sent across the middle\nthan any such program sends (this "
        "chapter's communication argument)."),
    "even_parity": (
        "an even number of 1s",
        (False, False), "return w.sum(dim=1) % 2 == 0", None, None,
        OUTSIDE + "this is PARITY's complement,\nwhich this chapter places outside "
        "C-RASP[periodic, local] with PARITY itself."),
    "ones_mod_3": (
        "a number of 1s divisible by 3",
        (False, False), "return w.sum(dim=1) % 3 == 0", None, None,
        OUTSIDE + "like PARITY and Tomita 6, it\ncounts modulo a number, which this chapter "
        "places outside C-RASP[periodic, local]."),
}
PREDICT_CHECK = "def task(w):  # {words}\n    {language}\n"
EXPECTED = ',\n                            expected={"none": False, "learned": True})'
PREDICTION = 'return {{"none": {none}, "learned": {learned}}}'


def _task_check(name: str) -> str:
    words, _, language, *_ = TASKS[name]
    return PREDICT_CHECK.format(words=words.replace("$", ""), language=language)


def _task(rng: random.Random) -> Variant:
    name = rng.choice(sorted(set(TASKS) - {BOOK_TASK}))
    words, (none, learned), _, imports, body, solution = TASKS[name]
    book = TASKS[BOOK_TASK]
    return Variant(words, {
        f"*{book[0]}*": f"*{words}*",
        "from companion.rasp import Q, count, periodic\n\n\n":
            f"from companion.rasp import {imports}\n\n\n" if imports else "",
        PREDICTION.format(none=False, learned=True): PREDICTION.format(none=none,
                                                                        learned=learned),
        book[4]: body or "    return None  # no C-RASP[periodic, local] program",
        _task_check(BOOK_TASK): _task_check(name),
        EXPECTED: ")",
        book[5]: solution,
    }, {"name": name})


PREDICT_SETUP = f'''{AS_DATA}
def _hidden_answer(_predicted, _program):
    _said = ([_predicted.get("none"), _predicted.get("learned")]
             if isinstance(_predicted, dict) else None)
    return [_said, None if _program is None else _hidden_to_data(_program)]'''


def _prediction_judge(m: int, seed: int, name: str):
    """A judge of ``[[none, learned], program data or None]``: the predictions right, and
    the certificate too (C-RASP without positions where NoPE is predicted), or None where
    the task has none; its message never shows a string nor the right prediction."""
    _, (none, learned), source, *_ = TASKS[name]
    language = _language(f"def task(w):\n    {source}\n")
    certificate = _program_judge(m, seed, language, () if none else None)

    def judge(got, expected) -> str:
        if not (isinstance(got, list) and len(got) == 2):
            return "not a prediction and a certificate"
        said, data = got
        if said != [none, learned] or not all(isinstance(v, bool) for v in said):
            return "the prediction is wrong"
        if not learned:
            return "" if data is None else "certify() returns a program where none exists"
        if data is None:
            return "certify() returns None where the prediction needs a certificate"
        return certificate(data, None)
    return judge


def _predict_tests(rng, name=BOOK_TASK):
    return [HiddenTest("_hidden_answer(predict(), certify())",
                       _prediction_judge(m, rng.randrange(2**31), name), PREDICT_SETUP)
            for m in _lengths(rng)]


# --- ex-gen-outside: another language whose halves must be compared --------------------------

# (reverse, middle): the strings w m v with v = w, or w reversed, and m the middle symbol or
# nothing; (False, "") is the book's squares.
SQUARES_CHECK = '''\
def language(w):  # squares: the two halves are equal
    n = w.shape[1]
    if n % 2:
        return torch.zeros(len(w), dtype=torch.bool)
    return (w[:, :n // 2] == w[:, n // 2:]).all(dim=1)
'''
MIDDLED_CHECK = '''\
def language(w):  # {comment}
    n = w.shape[1]
    if n % 2{odd}:
        return torch.zeros(len(w), dtype=torch.bool)
    first, second = w[:, :n // 2], w[:, n - n // 2:]{middle}
    return (first == second{flip}).all(dim=1){symbol}
'''
LANGUAGES = {
    (True, ""): ("the strings $ww^R$, some $w \\in \\{0, 1\\}^*$ followed by $w^R$, $w$ "
                 "reversed (the palindromes\nof even length),", "w^R"),
    (False, "0"): ("the strings $w0w$, some $w \\in \\{0, 1\\}^*$ written twice with a 0 "
                   "between,", "0w"),
    (False, "1"): ("the strings $w1w$, some $w \\in \\{0, 1\\}^*$ written twice with a 1 "
                   "between,", "1w"),
    (True, "0"): ("the strings $w0w^R$, some $w \\in \\{0, 1\\}^*$, a 0 and $w^R$, $w$ "
                  "reversed,", "0w^R"),
    (True, "1"): ("the strings $w1w^R$, some $w \\in \\{0, 1\\}^*$, a 1 and $w^R$, $w$ "
                  "reversed,", "1w^R"),
}
SQUARES = ("the squares, the strings $ww$ that are some $w \\in \\{0, 1\\}^*$ written "
           "twice,")
SECONDS = "    seconds = firsts.clone()  # w again\n"


def _middled_check(reverse: bool, middle: str) -> str:
    comment = "w" + (f" {middle} " if middle else " ") + ("w reversed" if reverse else "w")
    return MIDDLED_CHECK.format(
        comment=comment, odd=" == 0" if middle else "",
        middle="\n    centre = w[:, n // 2]" if middle else "",
        flip=".flip(1)" if reverse else "",
        symbol=f" & (centre == {middle})" if middle else "")


def _seconds(reverse: bool, middle: str) -> str:
    if not middle:
        return "    seconds = firsts.flip(1)  # w reversed\n"
    rest = "firsts.flip(1)" if reverse else "firsts"
    return (f"    centre = torch.full((2**h, 1), {middle})\n"
            f"    seconds = torch.cat([centre, {rest}], dim=1)  # {middle} then "
            f"{'w reversed' if reverse else 'w'}\n")


def _outside(rng: random.Random) -> Variant:
    reverse, middle = rng.choice(sorted(LANGUAGES))
    words, second = LANGUAGES[reverse, middle]
    concat = "w_i\\," + (f"{middle}\\," if middle else "") + ("w_j^R" if reverse else "w_j")
    return Variant(f"w{middle}w{'^R' if reverse else ''}", {
        SQUARES: words,
        "`seconds` of shape $[2^h, h]$": "`seconds` of shape $[2^h, h + 1]$" if middle else
            "`seconds` of shape $[2^h, h]$",
        "and $w$ as its second:": f"and ${second}$ as its second:",
        "is $w_i\\,w_j$,": f"is ${concat}$,",
        "a string of length $2h$": f"a string of length $2h{' + 1' if middle else ''}$",
        SECONDS: _seconds(reverse, middle),
        SQUARES_CHECK: _middled_check(reverse, middle),
    }, {"reverse": reverse, "middle": middle})


def _fooling_judge(h: int, language):
    def judge(got, expected) -> str:
        if not (isinstance(got, list) and len(got) == 2):
            return "not a pair (firsts, seconds)"
        try:
            firsts, seconds = (torch.tensor(part, dtype=torch.long) for part in got)
        except (TypeError, ValueError, RuntimeError, OverflowError):
            return "firsts and seconds must be tensors of 0s and 1s, one row per string"
        if firsts.dim() != 2 or seconds.dim() != 2:  # [] of no rows reads as 1-d
            return f"firsts and seconds must be 2-d, with 2**h = {2**h} rows each"
        return fooling_problem(firsts, seconds, language, h)
    return judge


def _outside_tests(rng, reverse=False, middle=""):
    source = _middled_check(reverse, middle) if (reverse or middle) else SQUARES_CHECK
    language = _language(source)
    hs = [rng.randrange(2, 5), rng.randrange(5, 9)]
    return [HiddenTest(f"fooling_pairs({h})", _fooling_judge(h, language)) for h in hs]


VARIANTS = {"ex-gen-certificate": _pairs, "ex-gen-predict": _task, "ex-gen-outside": _outside}


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    return {
        "ex-gen-certificate": _certificate_tests(
            rng, **variant_params(variants, "ex-gen-certificate")),
        "ex-gen-predict": _predict_tests(rng, **variant_params(variants, "ex-gen-predict")),
        "ex-gen-outside": _outside_tests(rng, **variant_params(variants, "ex-gen-outside")),
    }
