"""BFVP and the word problem of S_k, against brute force written independently."""

import itertools

import pytest
import torch

from companion.languages import bfvp_value, random_formula, word_problem


def python_value(formula: str) -> bool:
    """Evaluate by rewriting into Python syntax (an independent evaluator for the tests)."""
    text = formula.replace("∧", " and ").replace("∨", " or ").replace("¬", " not ")
    return bool(eval(text))  # noqa: S307 -- test-only, on generated formulas


def test_bfvp_against_python_on_random_formulas():
    generator = torch.Generator().manual_seed(0)
    for depth in range(0, 7):
        for _ in range(20):
            formula = random_formula(depth, generator)
            assert bfvp_value(formula) == python_value(formula), formula


def test_bfvp_accepts_ascii_operators_and_spaces():
    assert bfvp_value("((1 & 0) | (! 0))") is True
    assert bfvp_value("(1∧(¬1))") is False


def test_bfvp_deep_formulas_do_not_recurse():
    formula = "(¬" * 5000 + "1" + ")" * 5000
    assert bfvp_value(formula) is True


@pytest.mark.parametrize("bad, position", [
    ("(1∧0", "position 0 is never closed"), ("1∧0", "position 1"),
    ("(1∧)", "positions 0..3"), ("(1 2)", "'2' at position 3"), (")", "position 0"),
    ("((1))", "positions 1..3"), ("", "empty"),
])
def test_malformed_formulas_name_the_position(bad, position):
    with pytest.raises(ValueError, match=position):
        bfvp_value(bad)


def permutation_product_is_identity(letters, k):
    """Brute force: apply every letter (a dict of images) in turn to every point."""
    for start in range(k):
        point = start
        for letter in letters:
            point = letter.get(point, point)
        if point != start:
            return False
    return True


def as_mapping(cycle):
    return {a: b for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True)}


def test_word_problem_against_brute_force():
    letters = ["(01)", "(01234)", "(12)", "(0243)"]
    for length in range(0, 5):
        for word in itertools.product(letters, repeat=length):
            mappings = [as_mapping(tuple(int(c) for c in letter[1:-1])) for letter in word]
            assert word_problem("".join(word)) == permutation_product_is_identity(mappings, 5)


def test_word_problem_examples_and_order():
    assert word_problem("(01)(01)") and not word_problem("(01234)(01234)")
    assert word_problem("(01234)" * 5)
    # Letters act left to right: (01) then (12) sends 0->2->1->0, the cycle (021), whose
    # inverse is (012). Composing right to left would give (012), with inverse (021).
    assert word_problem(["(01)", "(12)", "(012)"]) is True
    assert word_problem(["(01)", "(12)", "(021)"]) is False
    assert word_problem(["(01)(12)", "(012)"]) is True  # a letter is a product of cycles


@pytest.mark.parametrize("bad, words", [
    ("(015)", "not in \\[k\\]"), ("(01", "never closed"), ("(011)", "repeats"),
    ("()", "malformed cycle"), ("01", "expected '\\('"),
])
def test_malformed_words(bad, words):
    with pytest.raises(ValueError, match=words):
        word_problem(bad)
    with pytest.raises(ValueError, match="k must be <= 10"):
        word_problem("(01)", k=11)


def test_derived_series_against_group_theory():
    from companion.languages import derived_series_orders

    # S3 > A3 > 1; S4 > A4 > Klein four-group > 1; S5 > A5, which is perfect (A5' = A5).
    assert derived_series_orders(3) == [6, 3, 1]
    assert derived_series_orders(4) == [24, 12, 4, 1]
    assert derived_series_orders(5) == [120, 60]
