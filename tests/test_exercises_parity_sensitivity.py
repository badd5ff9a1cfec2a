"""The checks of the exercises of *PARITY after 2024: sensitivity, depth and sharp minima*
(companion.exercises: a closed form of sensitivity, a wide layer that counts modulo m, the
expected increase of a quadratic loss) and their hidden tests
(course/hidden/parity_sensitivity.py): right answers pass, wrong ones fail with a message that
says what is wrong, bad input to a check is refused, and every variant's model answer passes
its own check and hidden tests, where the book's fails every one of them."""

import json
import random
from fractions import Fraction
from math import comb
from pathlib import Path

import nbformat
import pytest
import torch

from companion.exercises import (
    check_expected_increase,
    check_threshold_sensitivity,
    check_zigzag,
    relu_sum,
    symmetric_average_sensitivity,
    zigzag_problem,
)
from companion.languages import majority, parity
from companion.sensitivity import average_sensitivity
from course import hidden
from course.assignments import ANSWER, CHECK, tagged
from course.variants import apply_variants, drawable

ROOT = Path(__file__).resolve().parents[1]
MODULE = hidden.load("parity_sensitivity")
LABELS = ("ex-sens-threshold", "ex-sens-zigzag", "ex-sens-sharp")
NAMES = {"ex-sens-threshold": "average", "ex-sens-zigzag": "zigzag",
         "ex-sens-sharp": "expected_increase"}


def at_least(w, t):
    return w.sum(dim=1) >= t


def book_average(n, t):
    return Fraction(t * comb(n, t) + (n - t + 1) * comb(n, t - 1), 2**n)


def book_zigzag(n, m, r):
    k = torch.arange(n + 1)
    y = (k % m == r).double()
    rise = n * torch.diff(y, prepend=y.new_zeros(1))
    return (k - 1).double() / n, torch.diff(rise, prepend=rise.new_zeros(1))


def uniform_mean(w):
    return w.double().mean(dim=1)


def equal(k, m, r):
    return (k % m == r).double()


def book_increase(H, epsilon):
    return epsilon**2 * H.trace().item() / 2


def gaussian(d, epsilon, draws, generator):
    return epsilon * torch.randn(draws, d, generator=generator, dtype=torch.float64)


# --- symmetric_average_sensitivity and check_threshold_sensitivity ---------------------------

@pytest.mark.parametrize("n", [0, 1, 2, 7, 10])
def test_the_sensitivity_counted_by_the_number_of_ones_is_the_enumerated_one(n):
    for f in (parity, majority, lambda w: w.sum(dim=1) % 3 == 1,
              lambda w: torch.ones(len(w), dtype=torch.bool)):
        exact = symmetric_average_sensitivity(f, n)
        assert isinstance(exact, Fraction) and float(exact) == pytest.approx(
            average_sensitivity(f, n), abs=1e-12)
    assert symmetric_average_sensitivity(parity, 500) == 500


def test_a_right_closed_form_passes_as_a_fraction_or_a_float():
    feedback = check_threshold_sensitivity(book_average, at_least)
    assert feedback and "every t" in feedback.message and "60" in feedback.message
    assert check_threshold_sensitivity(lambda n, t: 2 * t * comb(n, t) / 2**n, at_least)


@pytest.mark.parametrize("answer, words", [
    (lambda n, t: Fraction(t * comb(n, t), 2**n), "half of it"),  # no t - 1 term
    (lambda n, t: book_average(n, t + 1), "the value for t + 1"),  # an off-by-one threshold
    (lambda n, t: book_average(n, t - 1 if t > 1 else t), "the value for t - 1"),
    (lambda n, t: book_average(n, t) * 2**n, "total over all 2**"),
    (lambda n, t: book_average(n, t) if n < 13 else Fraction(1), "too many to enumerate"),
    (lambda n, t: 1 / 0, "raised ZeroDivisionError"),
    (lambda n, t: "a third", "must be a number"),
    (lambda n, t: float("nan"), "finite"),
    (lambda n, t: float(book_average(n, t)) * (1 + 1e-6), "but the average sensitivity"),
])
def test_a_wrong_closed_form_fails_and_says_why(answer, words):
    feedback = check_threshold_sensitivity(answer, at_least, lengths=range(2, 9))
    assert not feedback and words in feedback.message, feedback.message


def test_the_long_lengths_catch_a_form_right_on_short_ones_only():
    def short_only(n, t):
        return book_average(n, t) if n <= 12 else book_average(n, t) + Fraction(1, 2**n)
    assert check_threshold_sensitivity(short_only, at_least, long_lengths=())
    feedback = check_threshold_sensitivity(short_only, at_least)
    assert not feedback and "average(20, 1)" in feedback.message


@pytest.mark.parametrize("kwargs, error", [
    ({"language": "no"}, TypeError),
    ({"language": lambda w, t: w[:, 0] >= t}, ValueError),  # not a function of the count
    ({"language": lambda w, t: w.sum(dim=1)}, TypeError),  # not a BoolTensor
    ({"lengths": [13]}, ValueError),
    ({"long_lengths": [1001]}, ValueError),
    ({"lengths": [], "long_lengths": []}, ValueError),
])
def test_check_threshold_sensitivity_refuses_bad_input(kwargs, error):
    arguments = {"average": book_average, "language": at_least, **kwargs}
    with pytest.raises(error):
        check_threshold_sensitivity(**arguments)


# --- check_zigzag ------------------------------------------------------------------------------

def test_a_right_zigzag_passes_and_reports_its_width():
    feedback = check_zigzag(book_zigzag, equal, uniform_mean)
    assert feedback and "101 ReLUs at n = 100" in feedback.message


def test_the_chapters_wide_layer_is_the_zigzag_of_parity_with_n_relus():
    def wide_layer(n, m, r):  # the chapter's for r = 1 (in float64), the book's for r = 0
        b = torch.arange(n, dtype=torch.float64) / n
        c = torch.full((n,), 2.0 * n, dtype=torch.float64) * (-1.0) ** torch.arange(n)
        c[0] = n
        return (b, c) if r == 1 else book_zigzag(n, m, r)
    feedback = check_zigzag(wide_layer, equal, uniform_mean, moduli=[2])
    assert feedback and "ReLUs at n = 100" in feedback.message


@pytest.mark.parametrize("answer, words", [
    (lambda n, m, r: ((torch.arange(n + 1) - 1).double() / n,
                      book_zigzag(n, m, (r + 1) % m)[1]), "zigzag(1, 2, 0): at k = 0 the sum"),
    (lambda n, m, r: (torch.arange(n + 1).double() / n, book_zigzag(n, m, r)[1]),
     "the sum is"),  # the bends at k/n, not before: no value at t = 0
    (lambda n, m, r: tuple(x.float() for x in book_zigzag(n, m, r)), "1-d float64 tensor"),
    (lambda n, m, r: tuple(torch.cat([x, x[:1]]) for x in book_zigzag(n, m, r)),
     "more than the 2 allowed"),
    (lambda n, m, r: (book_zigzag(n, m, r)[0], book_zigzag(n, m, r)[1][1:]), "one length"),
    (lambda n, m, r: book_zigzag(n, m, r)[0], "must return a pair (b, c)"),
    (lambda n, m, r: (book_zigzag(n, m, r)[0].tolist(), book_zigzag(n, m, r)[1]),
     "b must be a tensor"),
    (lambda n, m, r: (book_zigzag(n, m, r)[0], book_zigzag(n, m, r)[1] / 0), "finite"),
    (lambda n, m, r: 1 / 0, "raised ZeroDivisionError"),
])
def test_a_wrong_zigzag_fails_and_says_why(answer, words):
    feedback = check_zigzag(answer, equal, uniform_mean)
    assert not feedback and words in feedback.message, feedback.message


def test_the_strings_are_decided_as_the_language_decides_them():
    """A ``mean`` that is right on 1^k 0^(n-k) but not on every string: the values pass, the
    strings do not."""
    def sorted_mean(w):
        return w.double().cummin(dim=1).values.mean(dim=1)
    feedback = check_zigzag(book_zigzag, equal, sorted_mean)
    assert not feedback and "decides the string 01 wrong" in feedback.message


@pytest.mark.parametrize("kwargs, error", [
    ({"zigzag": None}, TypeError),
    ({"mean": lambda w: w.double().mean()}, ValueError),
    ({"threshold": float("nan")}, ValueError),
    ({"lengths": [0]}, ValueError),
    ({"moduli": [1]}, ValueError),
    ({"lengths": []}, ValueError),
])
def test_check_zigzag_refuses_bad_input(kwargs, error):
    arguments = {"zigzag": book_zigzag, "wanted": equal, "mean": uniform_mean, **kwargs}
    with pytest.raises(error):
        check_zigzag(**arguments)


def test_zigzag_problem_hides_where_the_sum_is_wrong_when_asked():
    b, c = book_zigzag(6, 3, 1)
    t = torch.arange(7, dtype=torch.float64) / 6
    assert zigzag_problem(b, c, t, equal(torch.arange(7), 3, 1), 7) == ""
    assert torch.allclose(relu_sum(b, c, t), equal(torch.arange(7), 3, 1))
    wrong = equal(torch.arange(7), 3, 2)
    assert zigzag_problem(b, c, t, wrong, 7, show=False) == "the sum is wrong at some k"
    assert zigzag_problem(b, c, t, wrong, 7).startswith("at k = 1 the sum is 1, not 0")


# --- check_expected_increase -------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(3))
def test_the_exact_increase_passes_whatever_the_draws(seed):
    feedback = check_expected_increase(book_increase, gaussian, seed=seed)
    assert feedback and "6 standard errors" in feedback.message
    assert check_expected_increase(lambda H, e: e**2 * H.trace() / 2, gaussian, seed=seed)


@pytest.mark.parametrize("answer, words", [
    (lambda H, e: e * H.trace().item() / 2, "epsilon**2, not epsilon"),
    (lambda H, e: e**2 * H.trace().item(), "times that)"),
    (lambda H, e: e**2 * H.sum().item() / 2, "but the mean increase"),
    (lambda H, e: e**2 * len(H) / 2, "but the mean increase"),
    (lambda H, e: e**2 * H.trace().item() * (1 + 1e-7 * H.trace().item()) / 2, "linear in H"),
    (lambda H, e: "epsilon**2 tr(H) / 2", "must be a number"),
    (lambda H, e: torch.stack([H.trace(), H.trace()]) * e**2 / 2, "must be one number"),
    (lambda H, e: float("inf"), "finite"),
    (lambda H, e: H.hessian(), "raised AttributeError"),
])
def test_a_wrong_increase_fails_and_says_why(answer, words):
    feedback = check_expected_increase(answer, gaussian)
    assert not feedback and words in feedback.message, feedback.message


@pytest.mark.parametrize("kwargs, error", [
    ({"noise": lambda d, e, draws, g: torch.zeros(draws, d + 1)}, ValueError),
    ({"noise": lambda d, e, draws, g: [0.0] * d}, TypeError),
    ({"dims": [0]}, ValueError),
    ({"epsilons": [0.0]}, ValueError),
    ({"draws": 10}, ValueError),
    ({"dims": []}, ValueError),
])
def test_check_expected_increase_refuses_bad_input(kwargs, error):
    arguments = {"expected_increase": book_increase, "noise": gaussian, **kwargs}
    with pytest.raises(error):
        check_expected_increase(**arguments)


# --- the book's cells, the variants and the hidden tests --------------------------------------

@pytest.fixture(scope="module")
def book():
    return nbformat.read(ROOT / "book" / "parity_sensitivity.ipynb", as_version=4)


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


def test_the_book_states_each_exercise_with_its_points(book):
    assert book.metadata["exercises"] == dict.fromkeys(LABELS, 2)
    text = "\n".join(cell.source for cell in book.cells)
    for label in LABELS:
        assert f":label: {label}\n" in text and f"```{{solution}} {label}\n" in text


@pytest.mark.parametrize("label", LABELS)
def test_the_books_answer_passes_its_check_and_hidden_tests(book, label):
    answer = _answer(book, label)
    _run_check(book, label, answer)
    for seed in range(5):
        for test in MODULE.hidden_tests(random.Random(seed), {})[label]:
            value = _value(test, answer, label)
            assert test.judge(value, value) == "", test.expression


def test_the_books_closed_form_is_the_counted_sensitivity(book):
    average = _answer(book, "ex-sens-threshold")
    for test in MODULE.hidden_tests(random.Random(0), {})["ex-sens-threshold"]:
        n, t = eval(test.expression.removeprefix("float(average").removesuffix(")"))  # noqa: S307
        assert average(n, t) == symmetric_average_sensitivity(lambda w, t=t: at_least(w, t), n)


@pytest.mark.parametrize("label, count", [("ex-sens-threshold", 4), ("ex-sens-zigzag", 5),
                                          ("ex-sens-sharp", 5)])
def test_every_variant_is_answered_by_its_own_model_answer_and_not_the_books(
        book, label, count):
    """Each variant's answer cell passes its check cell and its hidden tests; the book's fails
    the variant's check and every one of its hidden tests."""
    variants = drawable(MODULE.VARIANTS[label])
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
        for seed in range(6):
            tests = MODULE.hidden_tests(random.Random(seed), {label: variant})[label]
            for test in tests:
                value = _value(test, answer, label)
                assert test.judge(value, value) == "", (variant.name, test.expression)
                why = test.judge(_value(test, book_answer, label), value)
                assert why, (variant.name, test.expression)


def test_each_closed_form_of_the_variants_is_the_counted_sensitivity(book):
    for variant in drawable(MODULE._threshold):
        edition = apply_variants(book, {"ex-sens-threshold": variant})
        average = _answer(edition, "ex-sens-threshold")
        namespace = {}
        exec(MODULE.language_check(variant.params["language"]), namespace)  # noqa: S102
        language = namespace["language"]
        for n in (1, 2, 5, 13, 40):
            for t in range(1, n + 1):
                exact = symmetric_average_sensitivity(
                    lambda w, t=t, language=language: language(w, t), n)
                assert average(n, t) == exact, (variant.name, n, t)


def test_the_zigzag_judge_says_what_is_wrong_and_never_where(book):
    (test, *_) = MODULE.hidden_tests(random.Random(2), {})["ex-sens-zigzag"]
    n = int(test.expression.split("(")[1].split(",")[0])
    right = _value(test, _answer(book, "ex-sens-zigzag"), "ex-sens-zigzag")
    assert test.judge(right, None) == ""
    assert test.judge([right[0], [-x for x in right[1]]], None) == "the sum is wrong at some k"
    assert test.judge("b and c", None) == "not a pair (b, c)"
    assert test.judge([[0.0] * (n + 2), [0.0] * (n + 2)], None).startswith("b and c must be")
    assert test.judge([["0"], [1.0]], None) == "b and c must be 1-d tensors of numbers"
    assert test.judge([[[0.0]], [[1.0]]], None).startswith("b must be a 1-d float64")
    assert test.judge([[0.0], [1.0, 2.0]], None).startswith("b and c must have one length")
