"""Hidden tests of the exercises of *Circuit classes* (``book/circuits.ipynb``), and their
graded variants (:mod:`course.variants`).

Each test asks the submission for one member of its circuit family, as plain data (inputs,
gates, output), rebuilds it with :class:`companion.circuits.Circuit` in the grader's process
and runs it there: on every input for a short length, on strings of every weight for a long
one (:func:`companion.exercises.check_circuit_family`)."""

import math
import random

from companion.exercises import check_circuit_family
from course.hidden import HiddenTest, circuit_from_data, variant_params
from course.variants import Variant


def _data(family: str, n: int) -> str:
    return f"(lambda c: [c.n_inputs, c.gates, c.output])({family}({n}))"


def _decides(n, language, circuit_class, max_depth, max_size=None, seed=0):
    """A judge: the circuit (ignoring the instructor's) has ``n`` inputs, decides
    ``language`` and obeys ``circuit_class`` and the bounds (ints or functions of n)."""
    def judge(got, expected) -> str:
        try:
            circuit = circuit_from_data(got)
        except (TypeError, ValueError) as error:  # not a circuit, or a broken one
            return f"not a valid circuit ({error})"
        lengths, sampled = ([n], ()) if n <= 10 else ((), (n,))
        feedback = check_circuit_family(lambda _: circuit, language, lengths, circuit_class,
                                        max_depth, sampled_lengths=sampled, samples=500,
                                        seed=seed)
        if not feedback:  # its message, but never the string it fails on (an oracle)
            wrong = "gives the wrong answer on"
            return (f"family({n}) gives the wrong answer on some string" if wrong in
                    feedback.message else feedback.message)
        bound = max_size(n) if callable(max_size) else max_size
        if bound is not None and circuit.size > bound:
            return f"its size is {circuit.size}, more than {bound}"
        return ""
    return judge


def _family_tests(rng, family, language, circuit_class, max_depth, max_size=None,
                  short=None, long=range(12, 70)):
    """Tests of ``family`` at three lengths up to 10, tried on every input (from ``short``, or
    by default one of 0 and 1 and two of 2..10), and one from ``long``, sampled."""
    lengths = ([rng.choice([0, 1]), *rng.sample(range(2, 11), 2)] if short is None else
               rng.sample(short, 3))
    lengths.append(rng.choice(long))
    return [HiddenTest(_data(family, n), _decides(n, language, circuit_class, max_depth,
                                                   max_size, rng.randrange(2**31)))
            for n in lengths]


BOOK = {  # the arguments of _family_tests for the book's exercises
    "ex-circ-or": {"family": "or_family", "language": lambda w: w.sum(dim=1) > 0,
                   "circuit_class": "NC",
                   "max_depth": lambda n: math.ceil(math.log2(n)) if n > 1 else 0},
    "ex-circ-two": {"family": "two_ones", "language": lambda w: w.sum(dim=1) >= 2,
                    "circuit_class": "AC", "max_depth": 2, "max_size": lambda n: n * n + 2},
    "ex-circ-half": {"family": "exactly_half", "circuit_class": "TC", "max_depth": 3,
                     "language": lambda w: 2 * w.sum(dim=1) == w.shape[1]},
}
# A variant's params are its arguments of _family_tests, with lengths at which its language is
# not constant (a constant circuit fails) and the book's answer is wrong: the same lengths for
# every variant of an exercise, so that its tests do not tell them apart (N22).


def _or(rng: random.Random) -> Variant:
    p = rng.randrange(2, 8)
    return Variant(f"NOR of the positions divisible by {p}", {
        "OR in logarithmic depth": "NOR in logarithmic depth",
        "or_family": "nor_family",
        '"the input has at least one\n1" with depth $\\lceil \\log_2 n \\rceil$ (and a constant 0 '
        "for $n = 0$)":
            f'"the bits at positions $0, {p}, {2 * p}, \\dots$ are\nall 0" with depth '
            f"$\\lceil \\log_2 \\lceil n/{p} \\rceil \\rceil + 1$ (and a constant 1 for $n = 0$)",
        "Combine the inputs pairwise":
            f"Combine the inputs at positions $0, {p}, {2 * p}, \\dots$ pairwise",
        "halves the number of nodes.":
            "halves the number of nodes. A NOT gate on top turns \"one of them is 1\" into "
            "\"all of them\nare 0\".",
        "list(range(n))": f"list(range(0, n, {p}))",
        'circuit.set_output(circuit.gate("OR"))':
            'circuit.set_output(circuit.gate("AND"))  # the constant 1',
        "circuit.set_output(layer[0])": 'circuit.set_output(circuit.gate("NOT", layer[0]))',
        "math.ceil(math.log2(n)) if n > 1 else 0":
            f"math.ceil(math.log2(-(-n // {p}))) + 1 if n else 0",
        "lambda w: w.sum(dim=1) > 0": f"lambda w: w[:, ::{p}].sum(1) == 0",
    }, {"family": "nor_family", "language": lambda w: w[:, ::p].sum(dim=1) == 0,
        "circuit_class": "NC", "short": range(1, 11),
        "max_depth": lambda n: math.ceil(math.log2(-(-n // p))) + 1 if n else 0})


COUNTS = [3, 4]  # of ex-circ-two's variants: at least t 0s or 1s


def _two(rng: random.Random) -> Variant:
    t, symbol = rng.choice(COUNTS), rng.choice([1, 0])
    word = {3: "three", 4: "four"}[t]
    family, depth = "at_least", 3 - symbol  # NOT gates for 0s; one name (N22)
    negated = "" if symbol else "    negated = [circuit.gate(\"NOT\", i) for i in range(n)]\n"
    gates, literal, nodes = (("AND and OR", "w_i", "n + 1") if symbol else
                             ("NOT, AND and OR", "\\neg w_i", "2n + 1"))
    return Variant(f"at least {t} {symbol}s", {
        "At least two 1s": f"At least {word} {symbol}s",
        "two_ones": family,
        'depth 2 (AND and OR of unbounded fan-in, no MAJORITY) for "at\nleast two 1s"':
            f'depth {depth} ({gates} of unbounded fan-in, no MAJORITY) for "at\nleast {word} '
            f'{symbol}s"',
        "OR over all pairs $i < j$ of $w_i \\wedge w_j$: depth 2 and $\\binom{n}{2} + n + 1$ "
        "nodes, which\nis polynomial.":
            f"OR over all sets $S$ of {t} positions of $\\bigwedge_{{i \\in S}} {literal}$"
            f"{'' if symbol else ', with a NOT gate per input'}: depth {depth} and\n"
            f"$\\binom{{n}}{{{t}}} + {nodes}$ nodes, which is polynomial, of degree {t}.",
        "# Solution (a model answer)\n": "# Solution (a model answer)\nfrom itertools import "
                                         "combinations\n\n\n",
        '    pairs = [circuit.gate("AND", i, j)\n             for i in range(n) for j in '
        "range(i + 1, n)]\n":
            f'{negated}    sets = [circuit.gate("AND", *s) for s in combinations('
            f'{"range(n)" if symbol else "negated"}, {t})]\n',
        "*pairs": "*sets",
        "lambda w: w.sum(dim=1) >= 2,": f"lambda w: (w == {symbol}).sum(1) >= {t},",
        '"AC", max_depth=2)': f'"AC", max_depth={depth},\n'
                              "                                sampled_lengths=(16, 24))",
        "20 * sizes[0]": f"{2 * 4**t} * sizes[0]",
        "faster than n^2": f"faster than n^{t}",
    }, {"family": family, "language": lambda w: (w == symbol).sum(dim=1) >= t,
        "circuit_class": "AC", "max_depth": depth, "max_size": lambda n: n**t + n + 2,
        "short": range(max(COUNTS), 11),  # the same lengths for every variant (N22)
        "long": range(12, 25)})  # up to C(24, 4) AND gates


LEADS = [-3, -1, 1, 3]  # of ex-circ-half's variants: 2k - n, for k 1s


def _half(rng: random.Random) -> Variant:
    d = rng.choice(LEADS)
    e, ahead, behind = abs(d), "1" if d > 0 else "0", "0" if d > 0 else "1"
    words = f"exactly {['one', 'three'][e // 2]} more {ahead}{'s' * (e > 1)} than {behind}s"
    constants = f"{e} constant{'s' * (e > 1)}"
    family = "ahead_family"  # one name for every variant, so one notebook answers one
    sign, pads = ("+", ["falses", "trues"]) if d > 0 else ("-", ["trues", "falses"])
    return Variant(words, {
        "Exactly half with": f"{words.capitalize()} with",
        "exactly_half": family,
        '"exactly half of the\nbits are 1" (for odd $n$ the answer is always no)':
            f'"{words}"\n(for even $n$ the answer is always no)',
        '"At least half are 1" is one MAJORITY gate on the inputs; "at least half are 0" is one '
        "on their\nnegations. Exactly half is the AND of the two: depth 3 (NOT, MAJORITY, AND). "
        "For odd $n$ the two\ngates cannot both fire, since the 1s and the 0s cannot both be at "
        "least $n/2$.":
            f"With $k$ 1s, $2k \\ge n {sign} {e}$ is one MAJORITY gate on the inputs and "
            f"{constants} {int(d < 0)}, and\n$2(n - k) \\ge n {'-+'[d < 0]} {e}$ one on their "
            f"negations and {constants} {int(d > 0)}. {words.capitalize()},\n"
            f"$2k - n = {d}$, is the AND of the two: depth 3 (NOT, MAJORITY, AND; a constant has "
            "depth 0). For\neven $n$ the two gates cannot both fire, since $2k - n$ is then even.",
        '    ones = circuit.gate("MAJORITY", *range(n))':
            f'    falses = [circuit.gate("OR") for _ in range({e})]  # OR() is the constant 0\n'
            f'    trues = [circuit.gate("AND") for _ in range({e})]  # AND() is the constant 1\n'
            f'    ones = circuit.gate("MAJORITY", *range(n), *{pads[0]})  # 2k >= n {sign} {e}',
        'circuit.gate("MAJORITY", *negated)':
            f'circuit.gate("MAJORITY", *negated, *{pads[1]})  # 2k <= n {sign} {e}',
        "half = lambda w: 2 * w.sum(dim=1) == w.shape[1]":
            f"ahead = lambda w: 2 * w.sum(dim=1) - w.shape[1] == {d}",
        ", half, range": ", ahead, range",
    }, {"family": family, "language": lambda w: 2 * w.sum(dim=1) - w.shape[1] == d,
        "circuit_class": "TC", "max_depth": 3,
        "short": range(max(LEADS), 11, 2),  # odd n (2k - n is odd), from where every
        "long": range(13, 70, 2)})  # variant's language is not empty: the same for all (N22)


VARIANTS = {"ex-circ-or": _or, "ex-circ-two": _two, "ex-circ-half": _half}


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    return {label: _family_tests(rng, **variant_params(variants, label, book))
            for label, book in BOOK.items()}
