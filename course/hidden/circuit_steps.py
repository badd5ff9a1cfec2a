"""Hidden tests of the exercises of *Circuits by steps* (``book/circuit_steps.ipynb``), and their
graded variants (:mod:`course.variants`).

Each exercise's texts (its function or family; the model answer's body; the check's
definitions; the worked solution) are written here once, as functions of the variant's
parameters, and the book's are these functions at the book's parameters: a variant replaces
the book's text by its own. A rank and a number of steps are whole numbers, compared with the
instructor edition's. A circuit comes back as plain data (inputs, gates, output), and the judge
rebuilds it with :class:`companion.circuits.Circuit` in the grader's own process, checks its
gates and their number, and runs it on every input (or on chosen strings of a long length)
against the function's definition written here."""

import random

import torch

from companion.exercises import circuit_test_strings
from companion.languages import all_strings
from course.hidden import HiddenTest, circuit_from_data, close, variant_params
from course.variants import Variant

EXACT = close(rtol=0, atol=0)

# --- ex-cs-rank: the rank of another family ----------------------------------------------------

BOOK_FAMILY = "two"
RANK_NOTE = ("{cite:t}`barcelo2025ehrenfeucht` show that the rank is the least number of steps "
             "of a one-layer\ndecoder with hard attention that computes the function: ")
RACE = '''\
Say that a function of $m$ free bits is a *race* $(a, b)$ when it is 1 as soon as $a$ of them are
read as 1 and 0 as soon as $b$ are read as 0, with $a + b = m + 1$: "at least $t$ ones" of $n$
bits is the race $(t, n - t + 1)$. Reading a 1 leaves the race $(a - 1, b)$ and reading a 0
the race $(a, b - 1)$, whichever bit is read; a race with $a = 0$ or $b = 0$ is constant. The
rank of a race is $\\min(a, b)$, by induction on $a + b$.

*A tree of that rank.* Read the bits in any order. If $a < b$, the subtrees have ranks
$\\min(a - 1, b) = a - 1$ and $\\min(a, b - 1) = a$: they differ, and the node has rank $a$;
if $a > b$, the same with the roles swapped; if $a = b$, both have rank $a - 1$ and the
node has rank $a$.

*No smaller rank.* A tree's root reads some bit and its subtrees compute the two
restrictions, of rank at least $\\min(a - 1, b)$ and $\\min(a, b - 1)$ by induction; the rank of
a node only grows with the ranks of its subtrees, so no tree beats the one above, whichever
bit it reads first. This is the recursion that `eh_rank` computes over all subcubes.'''
# name: (the function in words, the check's definition (comment, body), the model answer's
# line, the solution's last paragraph)
FAMILIES = {
    "two": (
        "at least two of its bits are 1",
        ("at least two bits are 1", "    return w.sum(dim=1) >= 2"),
        "    return min(2, n - 1)  # the race (2, n - 1)\n",
        "At least two ones is the race $(2, n - 1)$, of rank $\\min(2, n - 1)$: 0 for $n = 1$ (no "
        "string has two\nones), 1 for $n = 2$ (AND) and 2 from $n = 3$ on, while the least "
        "depth of a tree is $n$ for\n$n \\ge 2$. " + RANK_NOTE + "two, at every length."),
    "three": (
        "at least three of its bits are 1",
        ("at least three bits are 1", "    return w.sum(dim=1) >= 3"),
        "    return max(0, min(3, n - 2))  # the race (3, n - 2)\n",
        "At least three ones is the race $(3, n - 2)$, of rank $\\max(0, \\min(3, n - 2))$: 0 "
        "for $n \\le 2$ (no string\nhas three ones), then 1, 2 and 3 from $n = 5$ on. "
        + RANK_NOTE + "three, at every length."),
    "four": (
        "at least four of its bits are 1",
        ("at least four bits are 1", "    return w.sum(dim=1) >= 4"),
        "    return max(0, min(4, n - 3))  # the race (4, n - 3)\n",
        "At least four ones is the race $(4, n - 3)$, of rank $\\max(0, \\min(4, n - 3))$: 0 "
        "for $n \\le 3$ (no string\nhas four ones), then 1, 2, 3 and 4 from $n = 7$ on. "
        + RANK_NOTE + "four, at every length."),
    "majority": (
        "more of its bits are 1 than 0 (MAJORITY)",
        ("more 1s than 0s", "    return 2 * w.sum(dim=1) > w.shape[1]"),
        "    return (n + 1) // 2  # the race (n // 2 + 1, n - n // 2)\n",
        "MAJORITY is at least $\\lfloor n/2 \\rfloor + 1$ ones, the race "
        "$(\\lfloor n/2 \\rfloor + 1, \\lceil n/2 \\rceil)$, of rank\n$\\lceil n/2 \\rceil$. "
        + RANK_NOTE + "about $n/2$, growing with\nthe length."),
}
AND_PARITY = (
    "its first bit is 1 and an odd number of the others are 1",
    ("x_1 and PARITY of the rest",
     "    return (w[:, 0] == 1) & (w[:, 1:].sum(dim=1) % 2 == 1)"),
    "    return n - 1  # read x_1 first: 0, or PARITY of n - 1 bits\n",
    '''\
Let $g_m$ and $h_m$ be $x_1 \\wedge$ PARITY and $x_1 \\wedge \\neg$PARITY of the other $m - 1$ of
$m$ bits (so $g_1 = 0$, $h_1 = x_1$). Every restriction of PARITY of $k$ bits is PARITY or its
negation of $k - 1$ bits, two subtrees of one rank, so PARITY and its negation have rank $k$.

*A tree of rank $m - 1$* for $g_m$ or $h_m$, $m \\ge 2$: read $x_1$; the subtrees are the
constant 0 (rank 0) and PARITY or its negation of $m - 1$ bits (rank $m - 1 \\ge 1$): they
differ, and the node has rank $m - 1$.

*No smaller rank*, by induction on $m$, over the bit a tree reads first (the rank of a node
only grows with the ranks of its subtrees): reading $x_1$ gives rank $m - 1$, as above;
reading another bit leaves $g_{m-1}$ and $h_{m-1}$, of ranks 0 and 1 for $m = 2$ (so rank 1)
and of rank $m - 2$ both for $m \\ge 3$ (so rank $m - 1$).

So the rank is $n - 1$ for every $n \\ge 1$ ($g_1$ is the constant 0), one less than PARITY's:
''' + RANK_NOTE + "$n - 1$, the bits after the first.")
FAMILIES["and_parity"] = AND_PARITY
FAMILY_CHECK = "def function(w):  # {comment}\n{body}\n"
RANK_NAMES = {"two": "at least two ones", "three": "at least three ones",
              "four": "at least four ones", "majority": "MAJORITY",
              "and_parity": "x_1 AND PARITY of the rest"}


def family_check(name: str) -> str:
    """The check's definition of the function ``name``."""
    comment, body = FAMILIES[name][1]
    return FAMILY_CHECK.format(comment=comment, body=body)


def rank_statement(name: str) -> str:
    """The line of the statement that names the function."""
    return f"Take the function of $n$ bits that is 1 when\n{FAMILIES[name][0]}.\n"


def rank_solution(name: str) -> str:
    """The worked solution: the race's proof for a threshold, then the family's rank."""
    last = FAMILIES[name][3]
    return last if name == "and_parity" else f"{RACE}\n\n{last}"


def _rank(rng: random.Random) -> Variant:
    name = rng.choice(sorted(set(FAMILIES) - {BOOK_FAMILY}))
    return Variant(RANK_NAMES[name], {
        rank_statement(BOOK_FAMILY): rank_statement(name),
        FAMILIES[BOOK_FAMILY][2].rstrip("\n"): FAMILIES[name][2].rstrip("\n"),
        family_check(BOOK_FAMILY): family_check(name),
        rank_solution(BOOK_FAMILY): rank_solution(name),
    }, {"family": name})


def _rank_tests(rng: random.Random, family=BOOK_FAMILY) -> list[HiddenTest]:
    """The same lengths for every family (the instructor edition's values differ): from 6 on,
    where every variant's rank differs from the book's, one up to 12 and three beyond."""
    return [HiddenTest(f"rank({rng.randrange(low, high)})", EXACT)
            for low, high in ((6, 13), (13, 41), (41, 121), (121, 1001))]


# --- ex-cs-circuit: a circuit for another function ---------------------------------------------

BOOK_FUNCTION = "equal"
PAIRS = '''\
    c, h = Circuit(n), n // 2
    differ = []  # x_i XOR x_j, 4 gates each
    for i in range(h):
        j = {partner}
        either, both = c.gate("OR", i, j), c.gate("AND", i, j)
        differ.append(c.gate("AND", either, c.gate("NOT", both)))
    anywhere = differ[0]
    for d in differ[1:]:  # an OR chain of the n/2 differences
        anywhere = c.gate("OR", anywhere, d)
    return c.set_output({output})
'''
COUNT = '''\
    c = Circuit(n)
    seen, twice = 0, None  # a 1 so far; two 1s so far
    for i in range(1, n):
        both = c.gate("AND", seen, i)
        twice = both if twice is None else c.gate("OR", twice, both)
        seen = c.gate("OR", seen, i)
    return c.set_output({output})
'''
ADJACENT = '''\
    c = Circuit(n)
    pairs = [c.gate("AND", i, i + 1) for i in range(n - 1)]
    anywhere = pairs[0]
    for p in pairs[1:]:  # an OR chain of the n - 1 pairs
        anywhere = c.gate("OR", anywhere, p)
    return c.set_output(c.gate("NOT", anywhere))
'''
PAIRS_SOLUTION = '''\
Compare each pair with a XOR, $(x_i \\vee x_j) \\wedge \\neg(x_i \\wedge x_j)$: 4 gates of fan-in at
most 2. {combine} That makes ${count}$ gates, within the $3n$ allowed, so the decoder takes
${count}$ steps, linear in $n$, at 2 significand bits: the circuit has fan-in 2, and
`circuit_bits(2)` is 2.'''
# name: (the function in words, the check's definition (comment, body), the model answer's
# body, the solution, the function itself)
FUNCTIONS = {
    "equal": (
        "the first half of the input equals the second half, $x_i = x_{i + n/2}$ for every\n"
        "$i < n/2$ (positions $0, \\dots, n - 1$)",
        ("the first half equals the second",
         "    h = w.shape[1] // 2\n    return (w[:, :h] == w[:, h:]).all(dim=1)"),
        PAIRS.format(partner="i + h", output='c.gate("NOT", anywhere)'),
        PAIRS_SOLUTION.format(
            combine="The halves differ when one of the $n/2$ pairs $(i, i + n/2)$ "
                    "does, an OR of\n$n/2 - 1$ gates, and one NOT makes them equal.",
            count="5n/2"),
        lambda w: (w[:, :w.shape[1] // 2] == w[:, w.shape[1] // 2:]).all(dim=1)),
    "mirror": (
        "the input reads the same backwards, $x_i = x_{n - 1 - i}$ for every $i < n/2$\n"
        "(positions $0, \\dots, n - 1$)",
        ("a palindrome", "    return (w == w.flip(1)).all(dim=1)"),
        PAIRS.format(partner="n - 1 - i", output='c.gate("NOT", anywhere)'),
        PAIRS_SOLUTION.format(
            combine="The input is no palindrome when one of the $n/2$ pairs "
                    "$(i, n - 1 - i)$ differs,\nan OR of $n/2 - 1$ gates, and one NOT "
                    "makes it one.",
            count="5n/2"),
        lambda w: (w == w.flip(1)).all(dim=1)),
    "differ": (
        "the first half of the input differs from the second half, $x_i \\ne x_{i + n/2}$ for\n"
        "some $i < n/2$ (positions $0, \\dots, n - 1$)",
        ("the halves differ somewhere",
         "    h = w.shape[1] // 2\n    return (w[:, :h] != w[:, h:]).any(dim=1)"),
        PAIRS.format(partner="i + h", output="anywhere"),
        PAIRS_SOLUTION.format(
            combine="The halves differ when one of the $n/2$ pairs $(i, i + n/2)$ does, "
                    "an OR of\n$n/2 - 1$ gates.",
            count="5n/2 - 1"),
        lambda w: (w[:, :w.shape[1] // 2] != w[:, w.shape[1] // 2:]).any(dim=1)),
    "one": (
        "exactly one of its bits is 1",
        ("exactly one 1", "    return w.sum(dim=1) == 1"),
        COUNT.format(output='c.gate("AND", seen, c.gate("NOT", twice))'),
        "Read the bits in order, keeping two wires: *seen*, a 1 so far (an OR chain, $n - 1$ "
        "gates),\nand *twice*, two 1s so far: a second 1 arrives where *seen* and the new bit "
        "are both 1\n($n - 1$ ANDs, OR-ed together by $n - 2$ gates). Exactly one 1 is *seen* "
        "and not *twice*, two\ngates more: $3n - 2$ gates, within the $3n$ allowed, so the "
        "decoder takes $3n - 2$ steps at\n2 significand bits.",
        lambda w: w.sum(dim=1) == 1),
    "two": (
        "at least two of its bits are 1",
        ("at least two 1s", "    return w.sum(dim=1) >= 2"),
        COUNT.format(output="twice"),
        "Read the bits in order, keeping two wires: *seen*, a 1 so far (an OR chain, $n - 1$ "
        "gates),\nand *twice*, two 1s so far: a second 1 arrives where *seen* and the new bit "
        "are both 1\n($n - 1$ ANDs, OR-ed together by $n - 2$ gates), and *twice* is the "
        "answer: $3n - 4$ gates (the\nlast OR of *seen* is never read, but it is a gate), "
        "within the $3n$ allowed, so the decoder\ntakes $3n - 4$ steps at 2 significand bits.",
        lambda w: w.sum(dim=1) >= 2),
    "adjacent": (
        "no two adjacent bits are both 1",
        ("no two adjacent 1s", "    return ~(w[:, 1:] & w[:, :-1]).bool().any(dim=1)"),
        ADJACENT,
        "Two adjacent 1s are an AND of a neighbouring pair ($n - 1$ gates), somewhere an OR "
        "of them\n($n - 2$ gates), and one NOT says there are none: $2n - 2$ gates, within "
        "the $3n$ allowed,\nso the decoder takes $2n - 2$ steps at 2 significand bits.",
        lambda w: ~(w[:, 1:] & w[:, :-1]).bool().any(dim=1)),
}
BUILD_CHECK = '''\
def function(w):  # {comment}
{body}
'''
BUILD_HEAD = "def build(n):\n"
CIRCUIT_NAMES = {"mirror": "a palindrome", "differ": "the halves differ",
                 "one": "exactly one 1", "two": "at least two 1s",
                 "adjacent": "no two adjacent 1s"}


def build_check(name: str) -> str:
    comment, body = FUNCTIONS[name][1]
    return BUILD_CHECK.format(comment=comment, body=body)


def build_statement(name: str) -> str:
    return f"whose output is 1 exactly when\n{FUNCTIONS[name][0]}.\n"


def _circuit(rng: random.Random) -> Variant:
    name = rng.choice(sorted(set(FUNCTIONS) - {BOOK_FUNCTION}))
    book = FUNCTIONS[BOOK_FUNCTION]
    return Variant(CIRCUIT_NAMES[name], {
        build_statement(BOOK_FUNCTION): build_statement(name),
        (BUILD_HEAD + book[2]).rstrip("\n"): (BUILD_HEAD + FUNCTIONS[name][2]).rstrip("\n"),
        build_check(BOOK_FUNCTION): build_check(name),
        book[3]: FUNCTIONS[name][3],
    }, {"function": name})


def _circuit_judge(n: int, name: str, seed: int):
    """A judge of ``[n_inputs, gates, output]``: a circuit on ``n`` inputs of NOT, AND and OR
    gates of fan-in at most 2, at most ``3n`` of them, whose output is the function's on
    every input (``n <= 12``) or on chosen strings; its message never names a string."""
    function = FUNCTIONS[name][4]

    def judge(got, expected) -> str:
        try:
            circuit = circuit_from_data(got)
        except (TypeError, ValueError) as error:  # not a circuit, or a broken one
            return f"not a valid circuit ({error})"
        if circuit.n_inputs != n:
            return f"the circuit has {circuit.n_inputs} inputs, not {n}"
        if not circuit.obeys("NC"):
            return "only NOT, AND and OR gates of fan-in at most 2 are allowed"
        if len(circuit.gates) > 3 * n:
            return f"{len(circuit.gates)} gates, more than the {3 * n} allowed"
        w = all_strings(n) if n <= 12 else circuit_test_strings(
            n, 500, torch.Generator().manual_seed(seed))
        if not torch.equal(circuit.evaluate(w), function(w)):
            return f"the circuit is wrong on some input of length {n}"
        return ""
    return judge


def _circuit_tests(rng: random.Random, function=BOOK_FUNCTION) -> list[HiddenTest]:
    """Even lengths from 4 (where the variants differ from the book's function), two tried on
    every input and two on chosen strings, the same for every variant."""
    tests = []
    for low, high in ((4, 9), (8, 13), (14, 31), (30, 81)):
        n = rng.randrange(low, high, 2)
        tests.append(HiddenTest(f"(lambda c: [c.n_inputs, c.gates, c.output])(build({n}))",
                                _circuit_judge(n, function, rng.randrange(2**31))))
    return tests


# --- ex-cs-steps: the steps on another family ---------------------------------------------------

BOOK_STEPS = "parity_tree"
# name: (the family in the statement, the range of n, the check's import and call, its
# lengths, the model answer's body, the solution)
STEP_FAMILIES = {
    "parity_tree": (
        "`parity_tree(n)` in `companion/circuits.py`", "$n = 1, \\dots, 64$",
        ("from companion.circuits import parity_tree", "parity_tree(n)"), "range(1, 65)",
        "    return 4 * (n - 1)  # n - 1 XOR gadgets of 4 gates\n",
        "Each `_xor` adds four gates (OR, AND, NOT, AND) and puts one node in the place of two "
        "in\n`layer`; a pass that leaves an odd node over moves it on as it is, with no gate. "
        "The layer\nstarts with $n$ nodes and ends with one, so there are $n - 1$ gadgets, "
        "$4(n - 1)$ gates, and the\ndecoder takes $4(n - 1)$ steps (none for $n = 1$, where "
        "the output is the input). The count\ndepends neither on the pairing nor on the "
        "depth: every tree of two-input XORs over $n$\nleaves has $n - 1$ inner nodes. So "
        "PARITY takes a number of steps linear in $n$, at 2\nsignificand bits, where "
        "{cite:t}`li2024chain` count a step per gate of any circuit."),
    "parity_dnf": (
        "`parity_dnf(n)` in `companion/circuits.py`", "$n = 1, \\dots, 16$",
        ("from companion.circuits import parity_dnf", "parity_dnf(n)"), "range(1, 17)",
        "    return n + 2 ** (n - 1) + 1  # NOTs, one AND per odd input, OR\n",
        "`parity_dnf` adds a NOT per input ($n$ gates), one AND per assignment of odd weight, "
        "and one\nOR. Flipping the first bit pairs the assignments of odd weight with those of "
        "even weight,\nso half of the $2^n$ are odd: $n + 2^{n-1} + 1$ gates and as many steps "
        "for $n \\ge 1$, exponential\nin $n$, at $\\lceil \\log_2(2^{n-1} + 1) \\rceil = n$ "
        "significand bits for the widest gate, the OR."),
    "parity_threshold": (
        "`parity_threshold(n)` in `companion/circuits.py`", "$n = 1, \\dots, 64$",
        ("from companion.circuits import parity_threshold", "parity_threshold(n)"),
        "range(1, 65)",
        "    if n % 2 == 0:  # sum of |n - 2k| over k = 1..n is n^2 / 2\n"
        "        return n * n // 2 + 2 * n + 1\n"
        "    return (n + 1) ** 2 // 2 + 2 * n + 5\n",
        '''\
For each odd $j \\le n$, `parity_threshold` makes `_at_least(j)` and `_at_least(j + 1)`, a
NOT and an AND, then one OR over them all. `_at_least(k)` pads its MAJORITY gate with
$|n - 2k|$ constants, each a gate: $|n - 2k| + 1$ gates. With $\\lceil n/2 \\rceil$ odd $j$, and
$k = j, j + 1$ running over $1, \\dots, n$ ($n$ even) or $1, \\dots, n + 1$ ($n$ odd):

$$
\\begin{aligned}
\\text{steps} &= 1 + 4\\lceil n/2 \\rceil + \\textstyle\\sum_k |n - 2k|\\\\
&= \\begin{cases} n^2/2 + 2n + 1 & n \\text{ even},\\\\
(n + 1)^2/2 + 2n + 5 & n \\text{ odd}, \\end{cases}
\\end{aligned}
$$

since for $n = 2m$ the terms $|2m - 2k|$ are $2|m - k|$, adding up to $2m^2$, and for
$n = 2m + 1$ they are the odd numbers up to $2m - 1$ and again up to $2m + 3$, adding up to
$m^2 + (m + 2)^2 = (n + 1)^2/2 + 2$. Quadratic in $n$, mostly constants: constant depth costs
steps.'''),
    "majority_gate": (
        "`majority_gate(n)` in `companion/circuits.py`", "$n = 1, \\dots, 64$",
        ("from companion.circuits import majority_gate", "majority_gate(n)"), "range(1, 65)",
        "    return 2  # a constant 0 and one MAJORITY gate\n",
        "`majority_gate` adds one constant 0 (`OR()`, a gate) and one MAJORITY gate over the "
        "inputs and\nit: 2 steps, whatever $n$. The whole count happens in one step, by a "
        "gate of fan-in $n + 1$,\nwhich needs `circuit_bits(n + 1)`, $\\lceil \\log_2(n + 2) "
        "\\rceil$ significand bits: few steps, but a\nprecision that grows with $n$."),
    "rasp_majority": (
        "`to_circuit(EXAMPLES[\"majority\"], n)` in `companion/rasp.py`",
        "$n = 1, \\dots, 64$",
        ("from companion.rasp import EXAMPLES, to_circuit",
         'to_circuit(EXAMPLES["majority"], n)'), "range(1, 65)",
        "    return 2 * n + 3  # 2n NOTs, two constant 0s, one MAJORITY\n",
        "The program compares `count(Q(\"1\"))` with `count(Q(\"0\"))`: `at_least_zero` reads "
        "the $n$ bits of `Q(\"1\")`, the\ninputs themselves (no gate), and, for the term of "
        "weight $-1$, `NOT` of each bit of `Q(\"0\")`, which is\nitself `NOT` of an input: "
        "$2n$ NOT gates. The threshold is $1 + n$ over $2n$ inputs, so the\nMAJORITY gate is "
        "padded with $2(n + 1) - 2n = 2$ constant 0s: $2n + 3$ gates and steps for\n"
        "$n \\ge 1$."),
}
STEPS_CHECK = '''\
{import_line}
from companion.exercises import check_step_count


def family(n):  # the circuits the decoder runs
    return {call}


feedback = check_step_count(steps, family, lengths={lengths})
'''
STEPS_NAMES = {"parity_dnf": "parity_dnf", "parity_threshold": "parity_threshold",
               "majority_gate": "majority_gate", "rasp_majority": "C-RASP's MAJORITY"}


def steps_check(name: str) -> str:
    (import_line, call), lengths = STEP_FAMILIES[name][2], STEP_FAMILIES[name][3]
    return STEPS_CHECK.format(import_line=import_line, call=call, lengths=lengths)


def steps_statement(name: str) -> dict[str, str]:
    book, new = STEP_FAMILIES[BOOK_STEPS], STEP_FAMILIES[name]
    return {f"the decoder takes on {book[0]}": f"the decoder takes on {new[0]}",
            f"for {book[1]}.": f"for {new[1]}."}


def _steps(rng: random.Random) -> Variant:
    name = rng.choice(sorted(set(STEP_FAMILIES) - {BOOK_STEPS}))
    book = STEP_FAMILIES[BOOK_STEPS]
    return Variant(STEPS_NAMES[name], {
        **steps_statement(name),
        book[4].rstrip("\n"): STEP_FAMILIES[name][4].rstrip("\n"),
        steps_check(BOOK_STEPS): steps_check(name),
        book[5]: STEP_FAMILIES[name][5],
    }, {"family": name})


def _steps_tests(rng: random.Random, family=BOOK_STEPS) -> list[HiddenTest]:
    """Lengths from 4 to 16, the same for every family: ``parity_dnf`` goes no further, and
    takes as many steps as ``parity_tree`` at ``n = 3``."""
    return [HiddenTest(f"steps({rng.randrange(low, high)})", EXACT)
            for low, high in ((4, 7), (7, 10), (10, 14), (14, 17))]


VARIANTS = {"ex-cs-rank": _rank, "ex-cs-circuit": _circuit, "ex-cs-steps": _steps}


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    return {
        "ex-cs-rank": _rank_tests(rng, **variant_params(variants, "ex-cs-rank")),
        "ex-cs-circuit": _circuit_tests(rng, **variant_params(variants, "ex-cs-circuit")),
        "ex-cs-steps": _steps_tests(rng, **variant_params(variants, "ex-cs-steps")),
    }
