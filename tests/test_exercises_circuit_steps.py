"""The checks of the exercises of *Circuits by steps* (companion.exercises: a closed form of
decision-tree rank, a fan-in-2 circuit run by the decoder, the decoder's steps on a family) and
their hidden tests (course/hidden/circuit_steps.py): right answers pass, wrong ones fail with a
message that says what is wrong, bad input to a check is refused, every variant's closed form
is the computed one, and every variant's model answer passes its own check and hidden tests,
where the book's fails every one of them."""

import json
import random
from pathlib import Path

import nbformat
import pytest
import torch

from companion import circuits
from companion.circuits import Circuit, parity_tree
from companion.decision_trees import eh_rank
from companion.exercises import (
    check_fan_in_2_circuit,
    check_rank_formula,
    check_step_count,
    symmetric_rank,
)
from companion.rasp import EXAMPLES, to_circuit
from course import hidden
from course.assignments import ANSWER, CHECK, tagged
from course.variants import apply_variants, drawable

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "book" / "circuit_steps.ipynb"
MODULE = hidden.load("circuit_steps")
LABELS = ("ex-cs-rank", "ex-cs-circuit", "ex-cs-steps")
NAMES = {"ex-cs-rank": "rank", "ex-cs-circuit": "build", "ex-cs-steps": "steps"}


def two_ones(w):
    return w.sum(dim=1) >= 2


def equal_halves(w):
    h = w.shape[1] // 2
    return (w[:, :h] == w[:, h:]).all(dim=1)


def book_build(n):
    namespace = {"Circuit": Circuit}
    exec(MODULE.BUILD_HEAD + MODULE.FUNCTIONS["equal"][2], namespace)  # noqa: S102
    return namespace["build"](n)


def three_n(n):
    return 3 * n


# --- symmetric_rank and check_rank_formula ---------------------------------------------------

def test_the_rank_counted_by_the_number_of_ones_is_the_enumerated_one():
    for t in range(0, 7):
        for n in range(0, 11):
            def f(w, t=t):
                return w.sum(dim=1) >= t
            assert symmetric_rank(f, n) == eh_rank(f, n) == max(0, min(t, n - t + 1)), (t, n)
    assert symmetric_rank(lambda w: w.sum(dim=1) % 2 == 1, 300) == 300


def test_a_right_rank_passes_at_every_length():
    feedback = check_rank_formula(lambda n: min(2, n - 1), two_ones)
    assert feedback and "n = 1..12" in feedback.message and "100" in feedback.message
    feedback = check_rank_formula(lambda n: n - 1, lambda w: (w[:, 0] == 1) & (
        w[:, 1:].sum(dim=1) % 2 == 1), lengths=range(1, 9))
    assert feedback and "counted" not in feedback.message  # not symmetric: no long lengths


@pytest.mark.parametrize("answer, words", [
    (lambda n: n if n > 1 else 0, "the least depth of a decision tree"),
    (lambda n: min(2, n), "one more than the rank"),
    (lambda n: min(2, n - 1) if n <= 12 else 3, "too many to enumerate"),
    (lambda n: 1 / 0, "raised ZeroDivisionError"),
    (lambda n: "two", "must be a number"),
    (lambda n: 1.5, "whole number"),
])
def test_a_wrong_rank_fails_and_says_why(answer, words):
    feedback = check_rank_formula(answer, two_ones)
    assert not feedback and words in feedback.message, feedback.message


@pytest.mark.parametrize("kwargs, error", [
    ({"function": "no"}, TypeError),
    ({"rank": None}, TypeError),
    ({"function": lambda w: w.sum(dim=1)}, TypeError),  # not a BoolTensor
    ({"lengths": [13]}, ValueError),
    ({"lengths": []}, ValueError),
    ({"long_lengths": [401]}, ValueError),
])
def test_check_rank_formula_refuses_bad_input(kwargs, error):
    arguments = {"rank": lambda n: min(2, n - 1), "function": two_ones, **kwargs}
    with pytest.raises(error):
        check_rank_formula(**arguments)


# --- check_fan_in_2_circuit --------------------------------------------------------------------

def test_a_right_circuit_passes_and_reports_its_gates():
    feedback = check_fan_in_2_circuit(book_build, equal_halves, three_n)
    assert feedback and "35 gates at n = 14 (at most 42 allowed)" in feedback.message


def _wide(n):
    if n < 4:
        return book_build(n)
    c = Circuit(n)
    return c.set_output(c.gate("AND", *range(n)))


def _majority(n):
    c = Circuit(n)
    return c.set_output(c.gate("MAJORITY", 0, 1))


def _flipped(n):
    c = book_build(n)
    return c.set_output(c.gate("NOT", c.output))


@pytest.mark.parametrize("answer, words", [
    (lambda n: "circuit", "must return a companion.circuits.Circuit"),
    (lambda n: book_build(n + 2), "inputs, not 2"),
    (lambda n: Circuit(n), "no output node"),
    (_wide, "an AND gate of fan-in 4"),
    (_majority, "a MAJORITY gate"),
    (_flipped, "'00'"),
    (lambda n: 1 / 0, "raised ZeroDivisionError"),
])
def test_a_wrong_circuit_fails_and_says_why(answer, words):
    feedback = check_fan_in_2_circuit(answer, equal_halves, three_n)
    assert not feedback and words in feedback.message, feedback.message


def test_a_circuit_over_its_budget_fails_with_the_count():
    feedback = check_fan_in_2_circuit(book_build, equal_halves, lambda n: 2 * n)
    assert not feedback and "5 gates, more than the 4 allowed" in feedback.message


def test_the_chosen_strings_catch_a_circuit_right_on_short_lengths_only():
    def short_only(n):
        if n <= 8:
            return book_build(n)
        c = Circuit(n)  # the halves' first bits only
        either, both = c.gate("OR", 0, n // 2), c.gate("AND", 0, n // 2)
        return c.set_output(c.gate("NOT", c.gate("AND", either, c.gate("NOT", both))))
    feedback = check_fan_in_2_circuit(short_only, equal_halves, three_n)
    assert not feedback and "of those tried of length 14" in feedback.message


@pytest.mark.parametrize("kwargs, error", [
    ({"build": None}, TypeError),
    ({"budget": 30}, TypeError),
    ({"budget": lambda n: -1}, ValueError),
    ({"lengths": [17]}, ValueError),
    ({"lengths": [], "sampled_lengths": []}, ValueError),
    ({"samples": 0}, ValueError),
])
def test_check_fan_in_2_circuit_refuses_bad_input(kwargs, error):
    arguments = {"build": book_build, "function": equal_halves, "budget": three_n, **kwargs}
    with pytest.raises(error):
        check_fan_in_2_circuit(**arguments)


# --- check_step_count ----------------------------------------------------------------------------

def test_a_right_count_of_steps_passes():
    feedback = check_step_count(lambda n: 4 * (n - 1), parity_tree)
    assert feedback and "64 lengths" in feedback.message


@pytest.mark.parametrize("answer, words", [
    (lambda n: 5 * n - 4, "counts the inputs too"),  # the size
    (lambda n: 5 * n - 3, "BOS and the inputs"),
    (lambda n: 4 * n - 5, "one off"),
    (lambda n: 4 * n, "but the decoder of family(1) takes 0 steps"),
    (lambda n: [4 * (n - 1)], "must be a number"),
    (lambda n: 1 / 0, "raised ZeroDivisionError"),
])
def test_a_wrong_count_of_steps_fails_and_says_why(answer, words):
    feedback = check_step_count(answer, parity_tree)
    assert not feedback and words in feedback.message, feedback.message


@pytest.mark.parametrize("kwargs, error", [
    ({"steps": 3}, TypeError),
    ({"family": lambda n: "circuit"}, TypeError),
    ({"lengths": [-1]}, ValueError),
    ({"lengths": []}, ValueError),
])
def test_check_step_count_refuses_bad_input(kwargs, error):
    arguments = {"steps": lambda n: 4 * (n - 1), "family": parity_tree, **kwargs}
    with pytest.raises(error):
        check_step_count(**arguments)


# --- the closed forms of every variant ---------------------------------------------------------

def _defined(source: str, name: str):
    namespace = {"Circuit": Circuit, "torch": torch}
    exec(source, namespace)  # noqa: S102 - this module's own text
    return namespace[name]


@pytest.mark.parametrize("name", sorted(MODULE.FAMILIES))
def test_each_rank_is_the_computed_one(name):
    rank = _defined("def rank(n):\n" + MODULE.FAMILIES[name][2], "rank")
    function = _defined(MODULE.family_check(name), "function")
    for n in range(1, 12):
        assert rank(n) == eh_rank(function, n), (name, n)
    if name != "and_parity":
        for n in (20, 57, 100, 400):
            assert rank(n) == symmetric_rank(function, n), (name, n)


FAMILIES = {"parity_tree": parity_tree, "parity_dnf": circuits.parity_dnf,
            "parity_threshold": circuits.parity_threshold,
            "majority_gate": circuits.majority_gate,
            "rasp_majority": lambda n: to_circuit(EXAMPLES["majority"], n)}


@pytest.mark.parametrize("name", sorted(MODULE.STEP_FAMILIES))
def test_each_count_of_steps_is_the_number_of_gates(name):
    steps = _defined("def steps(n):\n" + MODULE.STEP_FAMILIES[name][4], "steps")
    for n in range(1, 17 if name == "parity_dnf" else 65):
        assert steps(n) == len(FAMILIES[name](n).gates), (name, n)


def test_the_parity_threshold_count_holds_for_every_n():
    """The closed form, symbolically: the sum of |n - 2k| in the solution, for n = 2m and
    n = 2m + 1 with m a symbol."""
    import sympy
    m, k = sympy.symbols("m k", integer=True, nonnegative=True)
    even = sympy.summation(2 * (m - k), (k, 1, m)) + sympy.summation(2 * (k - m), (k, m + 1,
                                                                                   2 * m))
    assert sympy.simplify(even - (2 * m) ** 2 / 2) == 0
    odd = sympy.summation(2 * m + 1 - 2 * k, (k, 1, m)) + sympy.summation(
        2 * k - 2 * m - 1, (k, m + 1, 2 * m + 2))
    assert sympy.simplify(odd - ((2 * m + 2) ** 2 / 2 + 2)) == 0


@pytest.mark.parametrize("name", sorted(MODULE.FUNCTIONS))
def test_each_model_circuit_is_within_its_budget_and_right(name):
    build = _defined(MODULE.BUILD_HEAD + MODULE.FUNCTIONS[name][2], "build")
    function = MODULE.FUNCTIONS[name][4]
    for n in range(2, 31, 2):
        circuit = build(n)
        assert circuit.obeys("NC") and len(circuit.gates) <= 3 * n, (name, n)
        w = circuit_strings(n)
        assert torch.equal(circuit.evaluate(w), function(w)), (name, n)


def circuit_strings(n):
    from companion.exercises import circuit_test_strings
    from companion.languages import all_strings
    return all_strings(n) if n <= 12 else circuit_test_strings(n, 300,
                                                               torch.Generator().manual_seed(0))


# --- the book's cells, the variants and the hidden tests --------------------------------------

@pytest.fixture(scope="module")
def book():
    if not NOTEBOOK.is_file():
        pytest.skip(f"{NOTEBOOK.name} is not written yet")
    return nbformat.read(NOTEBOOK, as_version=4)


def _answer(notebook, label: str):
    """The function that the exercise's answer cell defines."""
    (cell,) = tagged(notebook, ANSWER, label)
    namespace = {}
    exec(notebook.cells[cell].source, namespace)  # noqa: S102 - the book's own cell
    return namespace[NAMES[label]]


def _run_check(notebook, label: str, answer) -> None:
    """Run the exercise's check cell on ``answer``; it raises where the answer is wrong."""
    (cell,) = tagged(notebook, CHECK, label)
    exec(notebook.cells[cell].source, {NAMES[label]: answer, "torch": torch,  # noqa: S102
                                       "print": lambda *_: None})


def _value(test, answer, label):
    """What the hidden test sends back for ``answer``, as the grader reads it (JSON)."""
    namespace = {NAMES[label]: answer, "torch": torch}
    exec(test.cell_source().rsplit("\nprint(", 1)[0], namespace)  # noqa: S102
    return json.loads(json.dumps(eval(f"_hidden_test_plain(({test.expression}))",  # noqa: S307
                                      namespace)))


def test_the_book_states_each_exercise(book):
    assert set(book.metadata["exercises"]) == set(LABELS)
    text = "\n".join(cell.source for cell in book.cells)
    for label in LABELS:
        assert f":label: {label}\n" in text and f"```{{solution}} {label}\n" in text


@pytest.mark.parametrize("label", LABELS)
def test_the_books_answer_passes_its_check_and_hidden_tests(book, label):
    answer = _answer(book, label)
    _run_check(book, label, answer)
    for seed in range(3):
        for test in MODULE.hidden_tests(random.Random(seed), {})[label]:
            value = _value(test, answer, label)
            assert test.judge(value, value) == "", test.expression


@pytest.mark.parametrize("label, count", [("ex-cs-rank", 4), ("ex-cs-circuit", 5),
                                          ("ex-cs-steps", 4)])
def test_every_variant_is_answered_by_its_own_model_answer_and_not_the_books(
        book, label, count):
    """Each variant's answer cell passes its check cell and its hidden tests; the book's fails
    the variant's check and every one of its hidden tests."""
    variants = drawable(MODULE.VARIANTS[label], draws=200)
    assert len(variants) == count
    book_answer = _answer(book, label)
    for variant in variants:
        edition = apply_variants(book, {label: variant})
        code = [line for cell in edition.cells if cell.metadata.get("exercise") == label
                for line in cell.source.splitlines()]
        assert max(map(len, code)) <= 79, variant.name  # the page's width
        answer = _answer(edition, label)
        _run_check(edition, label, answer)
        with pytest.raises(AssertionError):
            _run_check(edition, label, book_answer)
        for seed in range(3):
            tests = MODULE.hidden_tests(random.Random(seed), {label: variant})[label]
            for test in tests:
                value = _value(test, answer, label)
                assert test.judge(value, value) == "", (variant.name, test.expression)
                why = test.judge(_value(test, book_answer, label), value)
                assert why, (variant.name, test.expression)


def test_the_circuit_judge_says_what_is_wrong_and_never_where(book):
    (test, *_) = MODULE.hidden_tests(random.Random(2), {})["ex-cs-circuit"]
    n = int(test.expression.rsplit("(", 1)[1].rstrip(")"))
    right = _value(test, book_build, "ex-cs-circuit")
    assert test.judge(right, None) == ""
    inputs, gates, output = right
    flipped = [inputs, [*gates, ["NOT", [output]]], inputs + len(gates)]
    assert test.judge(flipped, None) == f"the circuit is wrong on some input of length {n}"
    assert test.judge("circuit", None).startswith("not a valid circuit")
    assert test.judge([n, [["MAJORITY", [0, 1]]], n], None).startswith("only NOT, AND")
    assert test.judge([n, [["AND", [0]]] * (3 * n + 1), n], None).endswith("allowed")
    assert test.judge([n + 1, [], 0], None) == f"the circuit has {n + 1} inputs, not {n}"
