"""The judges of the hidden tests of *Attention as logic and as circuits*
(course/hidden/attention_logic.py): a program passes when running it decides the exercise's
language, and its transformer and its circuit give the verdicts that running it gives; a
program too large to compile is refused before anything runs, with a message that says why."""

import pytest
import torch

from companion.rasp import Q, at_j, count, leftmost, rightmost, to_data
from course import hidden

LOGIC = hidden.load("attention_logic")


def _previous(vector):
    return rightmost("past", True, at_j(vector), False)


def _factor(factor: str):
    """The book's answer to the factor exercise, for ``factor``."""
    return leftmost("all", at_j(eval(LOGIC._ends(factor), {"Q": Q, "previous": _previous})),
                    True, False)


def _judges(factor_or_ratio, m):
    """The judge of one length for the factor "01" or "110", or the ratio 2 or 4."""
    if isinstance(factor_or_ratio, str):
        return LOGIC._judge(m, 0, LOGIC._contains(factor_or_ratio), LOGIC._b_rasp)
    return LOGIC._judge(m, 0, LOGIC._ratio(factor_or_ratio, 1, False), LOGIC._counts_only)


ANSWERS = {"01": _factor("01"), "110": _factor("110"),
           2: count(Q("1")) >= 2 * count(Q("0")),
           4: count(Q("1")) >= count(Q("0")) + count(Q("0")) + 2 * count(Q("0"))}


@pytest.mark.parametrize("exercise", ANSWERS)
@pytest.mark.parametrize("m", [3, 10, 40])
def test_right_answers_pass_three_ways(exercise, m):
    """Ratio 4 written as a sum of counts of three Q("0") objects: the program the review of
    2026-12-01 found the transformer silently wrong on (Finding 2.2)."""
    assert _judges(exercise, m)(to_data(ANSWERS[exercise]), None) == ""


def test_a_wrong_answer_fails():
    wrong = count(Q("1")) > 2 * count(Q("0"))
    assert _judges(2, 9)(to_data(wrong), None) == ("it gives the wrong answer on some string "
                                                   "of length 9")


@pytest.mark.parametrize(("exercise", "program", "message"), [
    ("01", _factor("01") | _factor("00") | _factor("11") | _factor("10") | _factor("010")
     | _factor("101") | _factor("001"), "lines, more than the 16"),
    ("01", leftmost("all", at_j(Q("1") & _previous(Q("1")) & _previous(Q("0"))
                          & _previous(_previous(Q("0"))) & _previous(_previous(Q("1")))
                          & rightmost("all", at_j(Q("1")), True, False)
                          & leftmost("all", at_j(Q("1")), True, False)), True, False),
     "reads 7 named vectors, more than the 6"),
    ("01", leftmost("all", _previous(Q("1")) & _previous(Q("0")) & _previous(_previous(Q("0")))
              & at_j(Q("0")), True, False), "reads 3 named vectors at i, more than the 2"),
    (2, 3 * count(Q("1")) >= 14 * count(Q("0")), "add up to 17, more than the 16"),
])
def test_a_program_too_large_to_compile_is_refused(exercise, program, message):
    why = _judges(exercise, 5)(to_data(program), None)
    assert message in why and "the judge compiles" in why


def test_a_compiler_that_disagrees_is_reported(monkeypatch):
    """Were a compiler wrong, the judge would say which, and that the program is right."""
    class Rejecting:  # a transformer that rejects every string
        def accepts(self, w):
            return torch.zeros(len(w), dtype=torch.bool)

    def broken(program, m):
        raise KeyError("a dimension")

    monkeypatch.setattr(LOGIC, "to_transformer", lambda program: Rejecting())
    why = _judges("01", 6)(to_data(ANSWERS["01"]), None)
    assert why.startswith("its verdicts are right, but its transformer (to_transformer) gives "
                          "other verdicts on some string of length 6")
    monkeypatch.undo()
    monkeypatch.setattr(LOGIC, "to_circuit", broken)
    why = _judges(2, 7)(to_data(ANSWERS[2]), None)
    assert why.startswith("its verdicts are right, but its circuit (to_circuit) raises KeyError")
