"""The checks of the exercises of *Which programs does training find?* (companion.exercises:
certificates, predictions, fooling pairs) and their hidden tests (course/hidden/generalization.py):
right answers pass, wrong ones fail with a message that says what is wrong, bad input to a
check is refused, and every variant's model answer passes its own hidden tests and the book's
fails them."""

import json
import random

import pytest
import torch

from companion.exercises import (
    check_certificate,
    check_fooling_pairs,
    check_prediction,
    fooling_problem,
    varied_strings,
)
from companion.languages import all_strings
from companion.rasp import Q, at_j, count, leftmost, local, periodic, to_data
from course import hidden
from course.variants import drawable

MODULE = hidden.load("generalization")
QUICK = {"lengths": range(1, 9), "long_lengths": (41,), "samples": 60}


def pairs_at_most_one(w):  # at most one position i with w[i] = w[i - 1] = 1
    return ((w[:, 1:] == 1) & (w[:, :-1] == 1)).sum(dim=1) <= 1


def book_certificate():
    return count(Q("1") & local(Q("1"), 1)) <= 1


def even_ones(w):
    return w[:, 0::2].sum(dim=1) > w[:, 1::2].sum(dim=1)


def book_certify():
    return count(Q("1") & periodic(2, 0)) > count(Q("1") & periodic(2, 1))


def squares(w):
    n = w.shape[1]
    if n % 2:
        return torch.zeros(len(w), dtype=torch.bool)
    return (w[:, :n // 2] == w[:, n // 2:]).all(dim=1)


def book_pairs(h):
    return all_strings(h), all_strings(h)


# --- check_certificate --------------------------------------------------------------------

def test_a_right_certificate_passes():
    feedback = check_certificate(book_certificate, pairs_at_most_one)
    assert feedback and "transformer" in feedback.message


@pytest.mark.parametrize("program, words", [
    (lambda: count(Q("1") & local(Q("1"), 1)) <= 2, "accepts '111'"),
    (lambda: count(Q("1") & local(Q("1"), 2)) <= 1, "a string"),
    (lambda: count(Q("1")), "it is a count"),
    (lambda: leftmost("all", at_j(Q("1")), True, False), "leftmost or rightmost"),
    (lambda: at_j(Q("1")), "depends on j"),
    (lambda: "11", "not a program of companion.rasp"),
    (lambda: 1 / 0, "raised ZeroDivisionError"),
    (lambda: count(Q("1") & local(Q("1"), 40) & local(Q("1"), 40)) <= 1, "reach back 80"),
    (lambda: count(Q("1")) * 100 >= count(Q("0")), "add up to 101"),
])
def test_a_wrong_certificate_fails_and_says_why(program, words):
    feedback = check_certificate(program, pairs_at_most_one, **QUICK)
    assert not feedback and words in feedback.message, feedback.message


def test_a_certificate_may_be_held_to_no_positional_predicate():
    feedback = check_certificate(book_certificate, pairs_at_most_one, predicates=(), **QUICK)
    assert not feedback and "it uses local" in feedback.message
    assert check_certificate(book_certificate, pairs_at_most_one, predicates=("local",),
                             **QUICK)


def test_a_long_string_catches_a_certificate_right_on_short_ones():
    def short_only():  # right up to length 12: at most one pair, or more than 12 symbols
        return (count(Q("1") & local(Q("1"), 1)) <= 1) | (count(True) >= 13)
    assert check_certificate(short_only, pairs_at_most_one, long_lengths=())
    assert not check_certificate(short_only, pairs_at_most_one)


@pytest.mark.parametrize("kwargs, error", [
    ({"language": "no"}, TypeError),
    ({"lengths": [13]}, ValueError),
    ({"long_lengths": [201]}, ValueError),
    ({"lengths": [], "long_lengths": []}, ValueError),
    ({"samples": 2}, ValueError),
    ({"predicates": ("relative",)}, ValueError),
    ({"seed": -1}, ValueError),
])
def test_check_certificate_refuses_bad_input(kwargs, error):
    arguments = {"certificate": book_certificate, "language": pairs_at_most_one, **kwargs}
    with pytest.raises(error):
        check_certificate(**arguments)


def test_a_language_that_is_no_language_is_named():
    with pytest.raises(TypeError, match="BoolTensor"):
        check_certificate(book_certificate, lambda w: w.sum(dim=1), **QUICK)


def test_varied_strings_fall_on_both_sides_of_a_threshold():
    w = varied_strings(80, 300, torch.Generator().manual_seed(0))
    assert w.shape == (302, 80) and ((w == 0) | (w == 1)).all()
    pairs = ((w[:, 1:] == 1) & (w[:, :-1] == 1)).sum(dim=1)
    assert {0, 1, 2, 3} <= set(pairs.tolist()) and pairs.max() > 40
    density = w.float().mean(dim=1)
    assert density.min() == 0 and density.max() == 1 and ((density - 0.5).abs() < 0.1).any()
    with pytest.raises(ValueError):
        varied_strings(0, 10, torch.Generator())


# --- check_prediction ---------------------------------------------------------------------

RIGHT = {"none": False, "learned": True}


def test_a_right_prediction_passes_with_and_without_the_expected_one():
    assert check_prediction(lambda: RIGHT, book_certify, even_ones, expected=RIGHT)
    feedback = check_prediction(lambda: RIGHT, book_certify, even_ones)
    assert feedback and "consistent" in feedback.message


@pytest.mark.parametrize("predicted, certify, words", [
    ({"none": True, "learned": True}, book_certify, "may use no positional predicate"),
    ({"none": False, "learned": False}, book_certify, "must return None"),
    (RIGHT, lambda: None, "must return one"),
    ({"none": True, "learned": False}, lambda: None, "contradict"),
    ({"none": 0, "learned": 1}, book_certify, "True or False"),
    ({"nope": False, "learned": True}, book_certify, "must return a dict"),
    ([False, True], book_certify, "must return a dict"),
    (RIGHT, lambda: count(Q("1")) > count(Q("0")), "is wrong"),
])
def test_a_wrong_prediction_fails_and_says_why(predicted, certify, words):
    feedback = check_prediction(lambda: predicted, certify, even_ones, expected=RIGHT)
    assert not feedback and words in feedback.message, feedback.message


def test_a_consistent_but_wrong_prediction_fails_against_the_expected_one():
    never = count(Q("1")) < 0  # a NoPE program, right on no task here but the empty one

    def empty(w):
        return torch.zeros(len(w), dtype=torch.bool)
    both = {"none": True, "learned": True}
    assert check_prediction(lambda: both, lambda: never, empty)
    feedback = check_prediction(lambda: both, lambda: never, empty, expected=RIGHT)
    assert not feedback and "'none'" in feedback.message
    feedback = check_prediction(lambda: RIGHT, lambda: never, empty)
    assert not feedback and "uses no positional predicate" in feedback.message


def test_check_prediction_refuses_bad_input():
    with pytest.raises(ValueError, match="expected"):
        check_prediction(lambda: RIGHT, book_certify, even_ones, expected={"none": 1})
    with pytest.raises(TypeError):
        check_prediction(RIGHT, book_certify, even_ones)


# --- check_fooling_pairs ------------------------------------------------------------------

def test_right_fooling_pairs_pass():
    feedback = check_fooling_pairs(book_pairs, squares)
    assert feedback and "2**h" in feedback.message


@pytest.mark.parametrize("answer, words", [
    (lambda h: (all_strings(h), all_strings(h).flip(1)), "is not in the language"),
    (lambda h: (all_strings(h), torch.zeros(2**h, h, dtype=torch.long)), "is not in"),
    (lambda h: (all_strings(h)[:-1], all_strings(h)[:-1]), "2**h"),
    (lambda h: (all_strings(h).float(), all_strings(h)), "integer tensor"),
    (lambda h: (all_strings(h).tolist(), all_strings(h)), "must be a LongTensor"),
    (lambda h: (2 * all_strings(h), all_strings(h)), "only the symbols 0 and 1"),
    (lambda h: (torch.cat([all_strings(h)] * 2, 1), all_strings(h)), "h = 1 columns"),
    (lambda h: all_strings(h), "must return a pair"),
    (lambda h: (all_strings(h)[[0] * 2**h], all_strings(h)), "distinct"),
])
def test_wrong_fooling_pairs_fail_and_say_why(answer, words):
    feedback = check_fooling_pairs(answer, squares, hs=[1, 3])
    assert not feedback and words in feedback.message, feedback.message


def test_an_off_diagonal_pair_in_the_language_is_named():
    def both_halves_any(w):  # every even-length string: not a fooling set for it
        return torch.full((len(w),), w.shape[1] % 2 == 0)
    why = fooling_problem(all_strings(2), all_strings(2), both_halves_any, 2)
    assert "firsts[0] followed by seconds[1] is in the language, though 0 != 1" in why


@pytest.mark.parametrize("hs", [[0], [11], []])
def test_check_fooling_pairs_refuses_bad_input(hs):
    with pytest.raises(ValueError):
        check_fooling_pairs(book_pairs, squares, hs=hs)


# --- the hidden tests and their variants --------------------------------------------------

def _value(test, namespace):
    """The value a hidden test sends back, as the grader reads it (JSON)."""
    local = dict(namespace)
    exec(test.cell_source().rsplit("\nprint(", 1)[0], local)
    return json.loads(json.dumps(eval(f"_hidden_test_plain(({test.expression}))", local)))


@pytest.mark.parametrize("name", sorted(MODULE.TASKS))
def test_every_tasks_certificate_decides_its_language(name):
    words, (none, learned), source, imports, body, _ = MODULE.TASKS[name]
    assert learned >= none and (body is None) == (not learned) == (imports is None)
    language = MODULE._language(f"def task(w):\n    {source}\n")
    if body:
        namespace = {}
        exec(f"from companion.rasp import {imports}\ndef certify():\n{body}", namespace)
        feedback = check_certificate(namespace["certify"], language,
                                     predicates=() if none else None, **QUICK)
        assert feedback, (name, feedback.message)


def test_the_hidden_certificate_tests_judge_the_program_not_the_instructors():
    tests = MODULE.hidden_tests(random.Random(3), {})["ex-gen-certificate"]
    right = to_data(book_certificate())
    wrong = to_data(count(Q("1") & local(Q("1"), 1)) <= 2)
    for test in tests:
        assert test.judge(right, None) == ""
        why = test.judge(wrong, right)
        assert why.startswith("it gives the wrong answer on some string of length"), why
        assert "'" not in why, "the message shows no string"
    assert tests[0].judge("a program", None).startswith("not a program")
    assert "leftmost" in tests[0].judge(to_data(leftmost("all", at_j(Q("1")), True, False)),
                                        None)


def test_the_hidden_prediction_tests_need_both_halves_right():
    tests = MODULE.hidden_tests(random.Random(4), {})["ex-gen-predict"]
    certificate = to_data(book_certify())
    for test in tests:
        assert test.judge([[False, True], certificate], None) == ""
        assert test.judge([[True, True], certificate], None) == "the prediction is wrong"
        assert test.judge([[0, 1], certificate], None) == "the prediction is wrong"
        assert "None" in test.judge([[False, True], None], None)
        wrong = to_data(count(Q("1")) > count(Q("0")))
        assert "wrong answer" in test.judge([[False, True], wrong], None)
    variants = {v.params["name"]: v for v in drawable(MODULE._task)}
    assert set(variants) == set(MODULE.TASKS) - {MODULE.BOOK_TASK}
    palindrome = MODULE.hidden_tests(random.Random(4), {"ex-gen-predict": variants[
        "palindrome"]})["ex-gen-predict"][0]
    assert palindrome.judge([[False, False], None], None) == ""
    assert "none exists" in palindrome.judge([[False, False], certificate], None)


@pytest.mark.parametrize("variant", drawable(MODULE._outside), ids=lambda v: v.name)
def test_each_fooling_variant_takes_its_own_pairs_and_not_the_books(variant):
    reverse, middle = variant.params["reverse"], variant.params["middle"]
    tests = MODULE.hidden_tests(random.Random(5), {"ex-gen-outside": variant})["ex-gen-outside"]
    book = MODULE.hidden_tests(random.Random(5), {})["ex-gen-outside"]
    assert [t.expression for t in tests] == [t.expression for t in book]

    def own(h):
        firsts = all_strings(h)
        rest = firsts.flip(1) if reverse else firsts
        if middle:
            rest = torch.cat([torch.full((2**h, 1), int(middle)), rest], dim=1)
        return firsts, rest
    for test in tests:
        assert test.judge(_value(test, {"fooling_pairs": own}), None) == ""
        assert test.judge(_value(test, {"fooling_pairs": book_pairs}), None) != ""
    for test in book:
        assert test.judge(_value(test, {"fooling_pairs": book_pairs}), None) == ""
    assert book[0].judge([[[0]], [[0]]], None).startswith("firsts must have 2**h")
    assert book[0].judge([[0, 1], [1]], None).startswith("firsts and seconds must be")
    assert book[0].judge("pairs", None) == "not a pair (firsts, seconds)"
