"""The hidden tests of a chapter's graded variants do not tell the variants apart (N22, R10):
the submission's code sees each test's expression (its inputs, and the cell's source through
IPython's ``In``), so where they depended on the variant, one notebook carried the answers of
every variant and picked the right one at grading time."""

import json
import random
from pathlib import Path

import nbformat
import pytest

from course import hidden
from course.assignments import ANSWER, tagged
from course.variants import drawable

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = [path.stem for path in sorted((ROOT / "book").glob("*.ipynb"))
            if (ROOT / "course" / "hidden" / f"{path.stem}.py").is_file()]
WITH_VARIANTS = [chapter for chapter in CHAPTERS if hidden.load(chapter).VARIANTS]


def _shown(tests: dict) -> tuple:
    """What the submission's kernel sees of a chapter's hidden tests: every expression and
    setup, exercise by exercise."""
    return tuple((label, test.setup, test.expression)
                 for label in sorted(tests) for test in tests[label])


def test_every_chapter_with_hidden_tests_has_variants():
    assert WITH_VARIANTS == CHAPTERS and CHAPTERS


@pytest.mark.parametrize("chapter", WITH_VARIANTS)
def test_the_hidden_tests_do_not_tell_the_variants_of_an_exercise_apart(chapter):
    """Drawn with the same generator, the expressions and setups of *every* exercise of the
    chapter are the same whichever variant of one exercise the edition holds: the inputs
    neither reveal that exercise's variant nor shift the other exercises' draws."""
    module = hidden.load(chapter)
    others = {label: make(random.Random(0)) for label, make in module.VARIANTS.items()}
    for label, make in module.VARIANTS.items():
        variants = drawable(make)
        assert len(variants) > 1, f"{label} has one variant"
        for seed in range(12):
            shown = {}
            for variant in variants:
                tests = module.hidden_tests(random.Random(seed), {**others, label: variant})
                shown.setdefault(_shown(tests), []).append(variant.name)
            assert len(shown) == 1, (f"{label}: the hidden tests (seed {seed}) tell these "
                                     f"variants apart: {list(shown.values())}")


# --- ex-steps-machine: the machine comes back as data, and runs in the grader's process ------

STEPS = hidden.load("intermediate_steps")


@pytest.fixture(scope="module")
def grouping_tm():
    """The book's model answer, ``grouping_tm(zeros, ones)``."""
    book = nbformat.read(ROOT / "book" / "intermediate_steps.ipynb", as_version=4)
    (answer,) = tagged(book, ANSWER, "ex-steps-machine")
    namespace = {}
    exec(book.cells[answer].source, namespace)
    return namespace["grouping_tm"]


def _sent(machine) -> list:
    """What the hidden test's expression sends back for ``ratio_tm()`` returning
    ``machine``, as the grader reads it (JSON)."""
    return json.loads(json.dumps(eval(STEPS.MACHINE, {"ratio_tm": lambda: machine})))


def test_the_machine_of_each_ratio_passes_on_its_variant_and_fails_on_another(grouping_tm):
    """The test shows the submission no string (the judge keeps them), and the judge never
    says which string a machine fails on."""
    ratios = sorted(STEPS.RATIOS)
    variants = {(v.params["zeros"], v.params["ones"]): v for v in drawable(STEPS._ratio)}
    assert sorted(variants) == ratios
    for k, ratio in enumerate(ratios):
        tests = STEPS.hidden_tests(random.Random(k), {"ex-steps-machine": variants[ratio]})
        test = tests["ex-steps-machine"][k % 2]
        assert test.expression == STEPS.MACHINE and not test.setup
        assert test.judge(_sent(grouping_tm(*ratio)), None) == ""
        other = ratios[(k + 1) % len(ratios)]
        assert test.judge(_sent(grouping_tm(*other)), None) == "it decides some string wrong"
    book = STEPS.hidden_tests(random.Random(0), {})["ex-steps-machine"][0]
    assert book.judge(_sent(grouping_tm(1, 1)), None) == ""
    assert book.judge(_sent(grouping_tm(2, 1)), None) == "it decides some string wrong"


MOVE_RIGHT = [[0, a, 0, a, 1] for a in range(3)]  # never halts


@pytest.mark.parametrize("data", [
    "a machine", None, 7, {"transitions": []}, [],
    [MOVE_RIGHT, 0, [1]],  # no rejecting states
    [{"0,0": [0, 0, 1]}, 0, [1], [2]],  # transitions not a list
    [[[0, 0, 1, 0]], 0, [1], [2]],  # a transition without its move
    [[[0, 0, 10**30, 0, 1]], 0, [1], [2]],  # a huge state
    [[[0, 0, 1, 0, 1]], -10**30, [1], [2]],
    [[[0, 0, 1, 0, 1]], 0, [1, 10**6], [2]],
    [[[0, 0, 1, 0, 1.0]], 0, [1], [2]],  # not ints
    [[[0, True, 1, 0, 1]], 0, [1], [2]],
    [[[0, 0, 1, "0", 1]], 0, [1], [2]],
    [[[0, 0, 1, 50, 1]], 0, [1], [2]],  # a symbol beyond MAX_SYMBOLS
    [[[q, a, 0, a, 1] for q in range(100) for a in range(8)], 0, [1], [2]],  # too many
    [MOVE_RIGHT, 0, list(range(STEPS.MAX_STATES + 1)), []],
    [[[0, 0, 1, 0, 1], [0, 0, 2, 0, 1]], 0, [1], [2]],  # (0, 0) twice
    [[[0, 0, 1, 0, 0]], 0, [1], [2]],  # compile_tm's ValueError: a move 0
    [[[1, 0, 1, 0, 1]], 0, [1], [2]],  # and a halting state's transition
    [[[0, 0, -1, 0, 1]], 0, [1], [2]],  # and a state -1
])
def test_the_machine_judge_says_what_is_wrong_with_malformed_data(data):
    test = STEPS.hidden_tests(random.Random(0), {})["ex-steps-machine"][0]
    why = test.judge(data, None)
    assert why.startswith("not a valid machine ("), why


def test_the_machine_judge_stops_a_machine_that_never_halts():
    test = STEPS.hidden_tests(random.Random(0), {})["ex-steps-machine"][0]
    assert "does not halt" in test.judge([MOVE_RIGHT, 0, [1], [2]], None)
