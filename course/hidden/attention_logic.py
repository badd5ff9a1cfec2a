"""Hidden tests of the exercises of *Attention as logic and as circuits*
(``book/attention_logic.ipynb``), and their graded variants (:mod:`course.variants`).

A program is judged in the grader's process: the submission sends it as plain data
(:func:`companion.rasp.to_data`), the grader builds it again (:func:`companion.rasp.from_data`)
and runs it on strings the submission never sees, every string of a short length or mixed and
near-threshold strings of a long one; on the same strings, the program's transformer
(:func:`companion.rasp.to_transformer`) and its circuit (:func:`companion.rasp.to_circuit`)
must give the verdicts that running it gives. The depth exercise's function is asked about
random programs that the test writes out, and its answers are compared with the instructor's."""

import random
import re

import torch

from companion.languages import all_strings, mixed_strings
from companion.rasp import (
    Count,
    from_data,
    is_b_rasp,
    listing,
    nodes,
    run,
    to_circuit,
    to_transformer,
)
from course.hidden import HiddenTest, close, variant_params
from course.variants import Variant

EXACT = close(rtol=0, atol=0)
# The largest program the judge compiles: lines of its listing; named vectors that one line reads
# (its FFN has a unit for each of their 2**k values), and that one attention line reads at i
# (5 dimensions of the residual stream for each of their 2**k values, each attention a [d, d]
# matrix); and the sum of the absolute coefficients of one comparison (its MAJORITY gate reads
# each bit that many times). Within them, the largest programs are judged in under half a
# minute; the answers of the book and of its variants have at most 3 lines, each reading at
# most 2 vectors, none at i, and weights up to 5.
MAX_LINES, MAX_READS, MAX_READS_AT_I, MAX_WEIGHT = 16, 6, 2, 16
AS_DATA = "from companion.rasp import to_data as _hidden_to_data"
SOURCES = ("from companion.rasp import Q as _Q, at_j as _at_j, leftmost as _leftmost, "
           "rightmost as _rightmost")


def _rebuilt(data):
    """``(program, "")``, or ``(None, why not)`` for data that no program gives."""
    try:
        return from_data(data), ""
    except (TypeError, ValueError) as error:
        return None, f"not a program ({error})"


def _too_large(program) -> str:
    """Why the judge will not compile ``program``, or "": read from its listing, where a line
    names what it reads as ``P3(j)`` or ``Q_1(i)``, and from its counts."""
    lines = listing(program).splitlines()
    if len(lines) > MAX_LINES:
        return f"its listing has {len(lines)} lines, more than the {MAX_LINES} the judge compiles"
    for line in lines:
        name, body = line.split("(i) := ", 1)
        reads = set(re.findall(r"(Q_[01]|P\d+)\(([ij])\)", body))
        at_i = sum(side == "i" for _, side in reads)
        if len(reads) > MAX_READS:
            return (f"its line {name} reads {len(reads)} named vectors, more than the "
                    f"{MAX_READS} the judge compiles")
        if body[0] in "◀▶" and at_i > MAX_READS_AT_I:
            return (f"its attention line {name} reads {at_i} named vectors at i, more than the "
                    f"{MAX_READS_AT_I} the judge compiles")
    weight = max((sum(abs(c) for _, c in node.terms) for node in nodes(program)
                  if isinstance(node, Count)), default=0)
    if weight > MAX_WEIGHT:
        return (f"it compares counts whose coefficients add up to {weight}, more than the "
                f"{MAX_WEIGHT} the judge compiles")
    return ""


def _compiled(program, w, verdicts) -> str:
    """Which of the program's transformer and circuit disagrees with ``verdicts``, ``run``'s
    on ``w``, or "": a fault of companion.rasp's compilers, not of the program."""
    ways = {"its transformer (to_transformer)": lambda: to_transformer(program).accepts(w),
            "its circuit (to_circuit)": lambda: to_circuit(program, w.shape[1]).evaluate(w)}
    for way, decide in ways.items():
        try:
            if torch.equal(decide(), verdicts):
                continue
            what = "gives other verdicts"
        except Exception as error:  # noqa: BLE001 - reported as a wrong verdict is
            what = f"raises {type(error).__name__}"
        return (f"its verdicts are right, but {way} {what} on some string of length "
                f"{w.shape[1]}: a fault of companion.rasp's compilers, not of the program; "
                "tell your instructor")
    return ""


def _judge(m, seed, decide, allowed):
    """A judge: the program (ignoring the instructor's) passes ``allowed(program)`` (a reason
    it is not allowed, or "") and :func:`_too_large`, agrees with ``decide(w)`` on every
    string of length ``m`` (``m <= 10``) or on ``strings(m, seed)``, and its transformer and
    its circuit agree with it there (:func:`_compiled`); its message never shows a string."""
    def judge(got, expected) -> str:
        program, why = _rebuilt(got)
        if why or (why := allowed(program)) or (why := _too_large(program)):
            return why
        if m <= 10:
            w = all_strings(m)
        else:
            generator = torch.Generator().manual_seed(seed)
            w = torch.cat([mixed_strings(m, generator), _near_threshold(m, generator)])
        verdicts = run(program, w)
        if not torch.equal(verdicts, decide(w)):
            return f"it gives the wrong answer on some string of length {m}"
        return _compiled(program, w, verdicts)
    return judge


def _near_threshold(m, generator):
    """``LongTensor[2 (m + 1), m]``: for each number of 1s from 0 to ``m``, two strings with
    that many, in random places; every ratio of 1s to 0s, and its neighbours, is there."""
    ones = torch.arange(m + 1).repeat_interleave(2)
    ranks = torch.rand(len(ones), m, generator=generator).argsort(dim=1).argsort(dim=1)
    return (ranks < ones[:, None]).long()


# --- ex-logic-factor: another factor -------------------------------------------------------

def _contains(factor):
    def decide(w):
        return torch.tensor([factor in "".join(map(str, row)) for row in w.tolist()])
    return decide


def _b_rasp(program) -> str:
    return "" if is_b_rasp(program) else "it counts: a B-RASP program has no counts"


def _factor_tests(rng, factor="01", name="has_01", shortest=2):
    lengths = [*rng.sample(range(shortest, 11), 2), rng.randrange(20, 61)]
    return [HiddenTest(f"_hidden_to_data({name})",
                       _judge(m, rng.randrange(2**31), _contains(factor), _b_rasp), AS_DATA)
            for m in lengths]


def _ends(factor: str) -> str:
    """Source of "factor ends at i": Q of its last symbol, and previous(...) of the rest."""
    source = f'Q("{factor[0]}")'
    for symbol in factor[1:]:
        source = f'Q("{symbol}") & previous({source})'
    return source


FACTORS = ["00", "10", "11", "001", "010", "011", "100", "101", "110"]
SHORTEST = max(map(len, FACTORS))  # the shortest length tested: one for every variant (N22)


def _factor(rng: random.Random) -> Variant:
    factor = rng.choice(FACTORS)
    symbols = ", ".join(factor[:-1]) + f" and {factor[-1]}"
    count = {2: "two", 3: "three"}[len(factor)]
    held = " and ".join(
        [f"$Q_{factor[-1]}(i)$ holds"]
        + [f"$Q_{s}$ holds at $i - {k}$" for k, s in enumerate(reversed(factor[:-1]), 1)])
    return Variant(f"the factor {factor}", {
        "has_01": "has_factor",
        "the factor 01 (the symbols 0\nand 1 at two consecutive positions)":
            f"the factor {factor} (the symbols\n{symbols} at {count} consecutive positions)",
        "A factor 01 ends at $i$ when $Q_1(i)$ holds and $Q_0$ holds at $i - 1$":
            f"A factor {factor} ends at $i$ when {held}",
        'Q("1") & previous(Q("0"))  # a 01 ends at i': f"{_ends(factor)}  # a {factor} ends at i",
        '"01" in "".join': f'"{factor}" in "".join',
    }, {"factor": factor, "name": "has_factor", "shortest": SHORTEST})


# --- ex-logic-depth: another rule for the same walk over the program -----------------------

def _vector(rng: random.Random, depth: int) -> str:
    """Source of a random vector over positions, nested at most ``depth`` deep."""
    if depth == 0 or rng.random() < 0.2:
        return rng.choice(['_Q("0")', '_Q("1")'])
    kind = rng.choice(["not", "and", "or", "attention", "attention"])
    if kind == "not":
        return f"(~{_vector(rng, depth - 1)})"
    if kind in ("and", "or"):
        return f"({_vector(rng, depth - 1)} {'&' if kind == 'and' else '|'} " \
               f"{_vector(rng, depth - 1)})"
    op, mask = rng.choice(["_leftmost", "_rightmost"]), rng.choice(["all", "past", "future"])
    return (f'{op}("{mask}", {_pair(rng, depth - 1)}, {_pair(rng, depth - 1)}, '
            f'{rng.choice(["True", "False", _vector(rng, depth - 1)])})')


def _pair(rng: random.Random, depth: int) -> str:
    """Source of a random score or value: vectors read at i and at j, and constants."""
    parts = [rng.choice(["True", "False", f"_at_j({_vector(rng, depth)})",
                         f"_at_j({_vector(rng, depth)})", _vector(rng, depth)])
             for _ in range(rng.choice([1, 1, 2]))]
    return parts[0] if len(parts) == 1 else f"({parts[0]} {rng.choice('&|')} {parts[1]})"


def _depth_tests(rng, name="depth_bound"):
    return [HiddenTest(f"{name}({_vector(rng, 3)})",
                       EXACT, SOURCES) for _ in range(4)]


STATEMENT = ("`depth_bound(program)`, the number $B$ of {prf:ref}`prop-logic-depth` for a "
             "B-RASP\nprogram, computed from the program alone by the proposition's rules "
             "exactly")
CHECK_STATEMENT = ("Check that the bound holds for `to_circuit` at several lengths. Why does "
                   "the\nbound not depend on $m$?")
RULES = "by the rules of {prf:ref}`prop-logic-depth`."
NO_10 = ("For\n`no_10` the bound is 8, the depth of its circuits from $m = 4$ on (7 at $m = "
         "3$, drawn above);\nfolded constants make some circuits shallower than their bound "
         "(FIRST's circuit is a wire, of\ndepth 0, against a bound of 3).")
BOOK_VALUES = ('assert depth_bound(rasp.EXAMPLES["no_10"]) == 8\n'
               'assert depth_bound(rasp.EXAMPLES["first"]) == 3\n'
               'assert depth_bound(leftmost("all", True & at_j(Q("1")), True, False)) == 4')
# Each rule's replacements of the book's text; the function's new name, the same for every rule
# (so one notebook cannot answer both), replaces "depth_bound" last, everywhere.
DEPTH_RULES = {
    "NOT gates for free": ("program_measure", {
        STATEMENT:
            "`program_measure(program)`, a bound on the depth of a B-RASP program's circuit "
            "when\nNOT gates cost nothing (as if every NOT were pushed down to the inputs by De "
            "Morgan's laws),\ncomputed from the program alone by the rules of "
            "{prf:ref}`prop-logic-depth` exactly, but for\nthree: $B(Q_0) = 0$, $B(\\neg P) = "
            "B(P)$, and $B(P) = \\max(B(S), B(V), B(D)) + 2$ for an\nattention line",
        CHECK_STATEMENT:
            "Check that the bound holds for `to_circuit` at several lengths, counting no NOT "
            "gate. Why\ndoes the bound not depend on $m$?",
        RULES:
            RULES[:-1] + " with every NOT free: a symbol test is 0, a NOT\nadds nothing, and "
            "an attention is $\\max(d(S), d(V), d(D)) + 2$, since the NOTs of its\nscores no "
            "longer add a level.",
        NO_10:
            "For\n`no_10` the bound is 5, the depth of its circuits without their NOTs from $m "
            "= 3$ on; folded\nconstants make some circuits shallower than their bound (FIRST's "
            "circuit is a wire, of depth 0,\nagainst a bound of 2).",
        '0 if node.param == "1" else 1': "0",
        'elif node.op == "at_j":': 'elif node.op in ("at_j", "not"):',
        'elif node.op in ("not", "and", "or"):': 'elif node.op in ("and", "or"):',
        "max(score + 1, value, default) + 2": "max(score, value, default) + 2",
        "depths = [to_circuit(program, m).depth for m in (3, 16, 64)]":
            "depths = [without_not(to_circuit(program, m)) for m in (3, 16, 64)]",
        BOOK_VALUES: 'assert depth_bound(rasp.EXAMPLES["no_10"]) == 5\n'
                     'assert depth_bound(rasp.EXAMPLES["first"]) == 2\n'
                     'assert depth_bound(leftmost("all", True & at_j(Q("1")), True, False)) '
                     '== 3',
        "for name, program in rasp.EXAMPLES.items():\n    if rasp.is_b_rasp(program):\n"
        "        depths":
            "def without_not(circuit):  # its depth, a NOT gate adding no level\n"
            "    depth = [0] * circuit.n_inputs\n"
            "    for kind, inputs in circuit.gates:\n"
            "        deepest = max((depth[i] for i in inputs), default=-1)\n"
            '        depth.append(deepest + (kind != "NOT"))\n'
            "    return depth[circuit.output]\n\n\n"
            "for name, program in rasp.EXAMPLES.items():\n    if rasp.is_b_rasp(program):\n"
            "        depths",
    }),
    "attention layers": ("program_measure", {
        "The depth, from the program alone": "The attention layers, from the program alone",
        STATEMENT:
            "`program_measure(program)`: the largest number of attention operations on one "
            "path\nthrough a B-RASP program (each reading the one before), computed from the "
            "program alone: the\nattention layers a transformer needs if attentions that do not "
            "read each other share a layer\n(the rules: an attention is one more than the most "
            "its score, value and default need, any\nother node the most its inputs need, and a "
            "symbol test or a constant 0)",
        CHECK_STATEMENT: "Check it against the number of attention operations. Why does it "
                         "not depend on\n$m$?",
        RULES: "an attention one more than the most its score, value and default need, any "
               "other node\nthe most its inputs need (0 for a symbol test or a constant).",
        "The bound never sees $m$: it reads the\nprogram, and each line adds at most a fixed "
        "number of levels whatever the length, because an\nattention's OR and ANDs have "
        "unbounded fan-in and take all $m$ positions in one level.":
            "It never sees $m$: an attention looks at\nevery position at once, so a longer "
            "string adds positions, not layers.",
        NO_10: "For\n`no_10` it is 2, for FIRST 1, and for `dyck1_depth2`, whose eight "
               "attentions read each other\nthree deep, 3.",
        "bound = {}  # id(node) -> the bound on its depth":
            "bound = {}  # id(node) -> the attention layers it needs",
        '0 if node.param == "1" else 1': "0",
        'elif node.op == "at_j":\n            bound[id(node)] = inputs[0]\n'
        '        elif node.op in ("not", "and", "or"):\n'
        "            bound[id(node)] = max(inputs) + 1\n":
            'elif node.op in ("at_j", "not", "and", "or"):\n'
            "            bound[id(node)] = max(inputs)\n",
        "            score, value, default = inputs\n"
        "            bound[id(node)] = max(score + 1, value, default) + 2\n":
            "            bound[id(node)] = max(inputs) + 1\n",
        "        depths = [to_circuit(program, m).depth for m in (3, 16, 64)]\n"
        "        assert max(depths) <= depth_bound(program), (name, depths)\n":
            "        attentions = sum(n.op in (\"leftmost\", \"rightmost\")\n"
            "                         for n in rasp.nodes(program))\n"
            "        assert min(attentions, 1) <= depth_bound(program) <= attentions\n",
        BOOK_VALUES: 'assert depth_bound(rasp.EXAMPLES["no_10"]) == 2\n'
                     'assert depth_bound(rasp.EXAMPLES["dyck1_depth2"]) == 3\n'
                     'assert depth_bound(leftmost("all", True & at_j(Q("1")), True, False)) '
                     '== 1',
    }),
}


def _depth(rng: random.Random) -> Variant:
    name = rng.choice(sorted(DEPTH_RULES))
    function, replace = DEPTH_RULES[name]
    return Variant(name, {**replace, "depth_bound": function}, {"name": function})


# --- ex-logic-count: another ratio ---------------------------------------------------------

def _ratio(k, symbol, strict):
    other = 1 - symbol

    def decide(w):
        ahead, behind = (w == symbol).sum(dim=1), k * (w == other).sum(dim=1)
        return ahead > behind if strict else ahead >= behind
    return decide


def _counts_only(program) -> str:
    attends = any(getattr(node, "op", None) in ("leftmost", "rightmost") for node in nodes(program))
    return "it attends: use counts and comparisons only" if attends else ""


def _count_tests(rng, k=2, symbol=1, strict=False, name="twice_as_many"):
    lengths = [*rng.sample(range(3, 11), 2), rng.randrange(20, 91)]
    return [HiddenTest(f"_hidden_to_data({name})",
                       _judge(m, rng.randrange(2**31), _ratio(k, symbol, strict), _counts_only),
                       AS_DATA)
            for m in lengths]


def _count(rng: random.Random) -> Variant:
    while True:
        k, symbol, strict = rng.choice([2, 3, 4]), rng.choice([0, 1]), rng.choice([False, True])
        if (k, symbol, strict) != (2, 1, False):
            break
    other = 1 - symbol
    times = {2: "twice", 3: "three times", 4: "four times"}[k]
    words = f"{'more than' if strict else 'at least'} {times} as many {symbol}s as {other}s"
    name = "ratio_program"  # one name for every variant (N22)
    sign = ">" if strict else ">="
    return Variant(words, {
        "twice_as_many": name,
        "with at least twice as many 1s as 0s": f"with {words}",
        'count(Q("1")) >= 2 * count(Q("0"))':
            f'count(Q("{symbol}")) {sign} {k} * count(Q("{other}"))',
        "reads each 1 once and, negated, each 0 twice\n(a 0 counts $-2$)":
            f"reads each {symbol} once and, negated, each {other} {times}\n(a {other} "
            f"counts $-{k}$)",
        "(w == 1).sum(dim=1) >= 2 * (w == 0).sum(dim=1)":
            f"(w == {symbol}).sum(dim=1) {sign} {k} * (w == {other}).sum(dim=1)",
    }, {"k": k, "symbol": symbol, "strict": strict, "name": name})


VARIANTS = {"ex-logic-factor": _factor, "ex-logic-depth": _depth, "ex-logic-count": _count}


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    return {"ex-logic-factor": _factor_tests(rng, **variant_params(variants, "ex-logic-factor")),
            "ex-logic-depth": _depth_tests(rng, **variant_params(variants, "ex-logic-depth")),
            "ex-logic-count": _count_tests(rng, **variant_params(variants, "ex-logic-count"))}
