"""companion.generalization: each task's language against a definition written here on Python
strings, every certificate against its language on every string to length 10 and on long
strings drawn inside and outside it, the samplers, and a small stacked run."""

import re

import pytest
import torch
from test_rasp import _depths  # the nesting depth after each symbol, 0 opening

from companion import generalization as gen
from companion.languages import all_strings
from companion.rasp import is_c_rasp, positional_predicates, run

# Each task's language on a str (nothing of companion.generalization).
LANGUAGES = {
    "majority": lambda s: s.count("1") > s.count("0"),
    "dyck1": lambda s: min(_depths(s)) >= 0 and _depths(s)[-1] == 0,
    "first": lambda s: s[0] == "1",
    "even_pairs": lambda s: sum(s[k] != s[k + 1] for k in range(len(s) - 1)) % 2 == 0,
    "no_000": lambda s: "000" not in s,
    "aa_star": lambda s: re.fullmatch("(00)*", s) is not None,
    "parity": lambda s: s.count("1") % 2 == 1,
    "tomita6": lambda s: (s.count("0") - s.count("1")) % 3 == 0,
    "palindrome": lambda s: s == s[::-1],
    "square": lambda s: len(s) % 2 == 0 and s[:len(s) // 2] == s[len(s) // 2:],
}


def _text(w: torch.Tensor) -> list[str]:
    return ["".join(map(str, row)) for row in w.tolist()]


def _expected(task: str, w: torch.Tensor) -> torch.Tensor:
    return torch.tensor([LANGUAGES[task](s) for s in _text(w)])


def test_every_task_has_its_language():
    assert set(gen.TASKS) == set(LANGUAGES)


@pytest.mark.parametrize("task", list(gen.TASKS))
def test_label_is_the_language_on_every_short_string(task):
    for m in range(1, 11):
        w = all_strings(m)
        assert torch.equal(gen.label(task, w), _expected(task, w)), m


@pytest.mark.parametrize("task", list(gen.TASKS))
def test_strings_fall_on_both_sides(task):
    """Drawn strings are about half inside, half outside (all of one length for (00)*, whose
    membership is the length's parity), and their labels are the language's."""
    generator = torch.Generator().manual_seed(0)
    for m in (20, 21, 64):
        w = gen.strings(task, 2000, m, generator)
        inside = gen.label(task, w)
        assert torch.equal(inside, _expected(task, w))
        if task == "aa_star":
            assert bool(inside.all()) == (m % 2 == 0)
        elif not (task in gen.EVEN_ONLY and m % 2):
            assert 0.3 < inside.float().mean() < 0.7, (m, inside.float().mean())


@pytest.mark.parametrize("task", [t for t in gen.TASKS if gen.certificate(t) is not None])
def test_each_certificate_is_its_language_everywhere(task):
    program = gen.certificate(task)
    assert is_c_rasp(program)
    assert (positional_predicates(program) == ()) == gen.predicted(task, "none")
    assert gen.predicted(task, "learned")
    for m in range(1, 11):
        w = all_strings(m)
        assert torch.equal(run(program, w), _expected(task, w)), m
    generator = torch.Generator().manual_seed(1)
    for m in (100, 257):  # long strings, about half of them inside
        w = gen.strings(task, 200, m, generator)
        assert torch.equal(run(program, w), _expected(task, w)), m


def test_the_tasks_predicted_to_fail_have_no_certificate():
    for task in gen.TASKS:
        failing = not gen.predicted(task, "learned")
        assert failing == (gen.certificate(task) is None)
        assert gen.predicted(task, "learned") or not gen.predicted(task, "none")


def test_a_dataset_is_bos_the_string_and_padding():
    generator = torch.Generator().manual_seed(0)
    tokens, position, labels = gen.dataset("square", range(3, 7), 5, generator)
    assert tokens.shape == (10, 7) and sorted(set(position.tolist())) == [4, 6]  # even only
    assert (tokens[:, 0] == gen.BOS).all()
    for row, m, y in zip(tokens, position, labels, strict=True):
        assert (row[m + 1:] == gen.PAD).all() and set(row[1:m + 1].tolist()) <= {0, 1}
        assert bool(y) == LANGUAGES["square"](_text(row[None, 1:m + 1])[0])


def test_a_small_run_trains_every_model_and_holds_nope_at_zero():
    result = gen.run(tasks=["first", "parity"], seeds=[0, 1], max_train_length=4,
                     bins=[(5, 6)], steps=3, batch=4, per_length=4, test_per_length=2,
                     d=8, heads=2, layers=1, device="cpu", progress=False)
    assert result.accuracy.shape == (2, 2, 2, 2)
    assert ((result.accuracy >= 0) & (result.accuracy <= 1)).all()
    table = result.params["position.weight"]  # models in the order task, encoding, seed
    nope = torch.tensor([e == "none" for _ in range(2) for e in gen.ENCODINGS for _ in range(2)])
    assert (table[nope] == 0).all() and (table[~nope] != 0).any()


def _result(accuracy) -> gen.Result:
    return gen.Result(["first", "parity"], list(gen.ENCODINGS), list(range(10)), [(5, 8)],
                      torch.tensor(accuracy, dtype=torch.float64), None, {})


def test_the_table_counts_a_verdict_against_each_prediction():
    """FIRST right everywhere, PARITY at chance: every pair agrees; FIRST at chance with NoPE
    disagrees."""
    right, chance = [[1.0, 1.0]] * 10, [[1.0, 0.5]] * 10
    table = gen.measured(_result([[right, right], [chance, chance]]))
    assert table["agrees"].all()
    assert list(table["measured"]) == ["generalizes", "generalizes", "fails", "fails"]
    assert {"5-8 low", "5-8 high"} <= set(table.columns)
    table = gen.measured(_result([[chance, right], [chance, chance]]))
    assert list(table["agrees"]) == [False, True, True, True]


def test_bootstrap_mean_brackets_the_mean():
    values = torch.tensor([0.2, 0.4, 0.9, 1.0])
    mean, low, high = gen.bootstrap_mean(values, generator=torch.Generator().manual_seed(0))
    assert mean == pytest.approx(0.625) and 0.2 <= low <= mean <= high <= 1.0
    assert gen.bootstrap_mean([0.5] * 5)[1:] == (0.5, 0.5)


def test_bad_input_is_refused():
    generator = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="task"):
        gen.label("dyck2", "01")
    with pytest.raises(ValueError, match="encoding"):
        gen.predicted("first", "rope")
    with pytest.raises(ValueError, match="m >= 1"):
        gen.label("first", torch.zeros(2, 0, dtype=torch.long))
    with pytest.raises(ValueError, match="bins must be increasing"):
        gen.run(bins=[(30, 40), (20, 25)], progress=False)
    with pytest.raises(ValueError, match="bins must be increasing"):
        gen.run(max_train_length=20, bins=[(15, 30)], progress=False)
    with pytest.raises(ValueError, match="seeds"):
        gen.run(seeds=[], progress=False)
    with pytest.raises(ValueError, match="an even one for square"):
        gen.dataset("square", [3], 4, generator)
    with pytest.raises(TypeError, match="result must be a Result"):
        gen.measured({})
    with pytest.raises(ValueError, match="values must be a 1-d"):
        gen.bootstrap_mean([[0.5]])


def test_the_narrow_tables_say_the_same():
    right, chance = [[1.0, 1.0]] * 10, [[1.0, 0.5]] * 10
    table = gen.measured(_result([[chance, right], [chance, chance]]))
    narrow = gen.compact(table, "APE")
    assert list(narrow.columns) == ["pred.", "1–4", "5–8", "95%"]
    assert list(narrow.index) == ["first", "parity"]
    assert list(narrow["pred."]) == ["yes", "no"]
    assert list(narrow["5–8"]) == ["1.00", "0.50"] and narrow.loc["first", "95%"] == "1.00–1.00"
    assert list(gen.compact(table, "NoPE")["5–8"]) == ["0.50", "0.50"]
    assert set(gen.predictions().columns) == {"NoPE", "APE", "why"}
    with pytest.raises(TypeError, match="table must be"):
        gen.compact(gen.predictions(), "APE")
    with pytest.raises(ValueError, match="encoding"):
        gen.compact(table, "none")


def test_huangs_numbers_sit_beside_ours_by_task_encoding_and_source():
    accuracy = torch.full((2, 2, 10, 3), 0.5, dtype=torch.float64)
    result = gen.Result(["parity", "first"], list(gen.ENCODINGS), list(range(10)),
                        [(5, 8), (9, 12)], accuracy, None, {})
    table = gen.against_huang(result)  # FIRST is not among Huang et al.'s tasks
    assert list(table.index) == [("parity", e, who) for e in ("NoPE", "APE")
                                 for who in ("Huang", "ours")]
    assert tuple(table.loc[("parity", "APE", "Huang")]) == gen.HUANG["parity"]["learned"]
    assert (table.xs("ours", level=2) == 50.0).all().all()


def test_a_task_of_ones_own_trains_beside_the_named_ones():
    def ends_in_1(w):  # a language written here, not one of TASKS
        return w[:, -1] == 1

    mine = gen.Custom("ends_in_1", ends_in_1, {"none": True, "learned": True})
    w = torch.tensor([[0, 1], [1, 0]])
    assert gen.label(mine, w).tolist() == [True, False]
    assert gen.predicted(mine, "none") and gen.name_of(mine) == "ends_in_1"
    result = gen.run(tasks=[mine, "parity"], seeds=[0, 1], max_train_length=4, bins=[(5, 6)],
                     steps=2, batch=4, per_length=4, test_per_length=2, d=8, heads=2,
                     layers=1, device="cpu", progress=False)
    table = gen.measured(result)
    assert ("ends_in_1", "NoPE") in table.index and ("parity", "APE") in table.index
    with pytest.raises(ValueError, match="predicted must be"):
        gen.Custom("x", ends_in_1, {"none": True})
    with pytest.raises(TypeError, match="language"):
        gen.Custom("x", None, {"none": True, "learned": True})
    with pytest.raises(ValueError, match="one verdict per string"):
        gen.label(gen.Custom("x", lambda w: w, {"none": True, "learned": True}), w)
    with pytest.raises(ValueError, match="distinct names"):
        gen.run(tasks=[gen.Custom("parity", ends_in_1, mine.predicted), "parity"],
                progress=False)
