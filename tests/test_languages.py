import itertools

import pytest
import torch

from companion import languages


def brute_force(m):
    """Every string of length m as a Python tuple, and its three memberships by counting."""
    for bits in itertools.product((0, 1), repeat=m):
        ones = sum(bits)
        yield bits, ones % 2 == 1, m > 0 and bits[0] == 1, ones > m - ones


@pytest.mark.parametrize("m", range(0, 9))
def test_languages_agree_with_counting_on_every_string(m):
    cases = list(brute_force(m))
    strings = torch.tensor([bits for bits, *_ in cases], dtype=torch.long).reshape(len(cases), m)
    assert torch.equal(strings, languages.all_strings(m))
    for decide, column in ((languages.parity, 1), (languages.first, 2), (languages.majority, 3)):
        expected = torch.tensor([case[column] for case in cases])
        assert torch.equal(decide(strings), expected)


def test_single_strings_give_plain_bools():
    assert languages.parity("0110") is False and languages.parity("0111") is True
    assert languages.first("10") is True and languages.first("01") is False
    assert languages.first("") is False
    assert languages.majority("110") is True and languages.majority("1100") is False


def test_random_strings_are_reproducible_and_uniform():
    a = languages.random_strings(4000, 50, generator=torch.Generator().manual_seed(3))
    b = languages.random_strings(4000, 50, generator=torch.Generator().manual_seed(3))
    assert a.shape == (4000, 50) and a.dtype == torch.long and torch.equal(a, b)
    assert set(a.unique().tolist()) == {0, 1}
    assert abs(a.double().mean().item() - 0.5) < 0.01  # 200k fair bits: sd 0.0011


@pytest.mark.parametrize(
    "bad, error, words",
    [
        ("0120", ValueError, "'2'"),
        (torch.tensor([[0, 2]]), ValueError, "0 and 1"),
        (torch.tensor([[0.0, 1.0]]), TypeError, "integer dtype"),
        (torch.tensor([[True, False]]), TypeError, "integer dtype"),
        (torch.tensor([0, 1]), ValueError, r"\[B, m\]"),
        (torch.zeros(0, 3, dtype=torch.long), ValueError, "empty batch"),
        ([0, 1], TypeError, "str or a LongTensor"),
    ],
)
@pytest.mark.parametrize("decide", [languages.parity, languages.first, languages.majority])
def test_bad_strings_are_refused(decide, bad, error, words):
    with pytest.raises(error, match=words):
        decide(bad)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
                                   torch.uint16, torch.uint32, torch.uint64])
def test_strings_of_every_integer_dtype_are_read_or_refused_by_their_symbols(dtype):
    w = torch.tensor([[0, 1, 1], [1, 0, 0]]).to(dtype)
    assert torch.equal(languages.parity(w), torch.tensor([False, True]))
    with pytest.raises(ValueError, match="only the symbols 0 and 1"):
        languages.as_strings(torch.tensor([[0, 2, 1]]).to(dtype))


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="batch"):
        languages.random_strings(0, 5)
    with pytest.raises(TypeError, match="m"):
        languages.random_strings(3, 2.0)
    with pytest.raises(TypeError, match="generator"):
        languages.random_strings(3, 2, generator=5)
    with pytest.raises(ValueError, match="m must be <= 20"):
        languages.all_strings(30)
    with pytest.raises(ValueError, match="m must be >= 0"):
        languages.all_strings(-1)


def python_truth(formula):
    """A formula's value by Python's own not/and/or on the written formula."""
    text = formula.replace("¬", " not ").replace("∧", " and ").replace("∨", " or ")
    return bool(eval(text))  # noqa: S307 -- 0, 1, parentheses and connectives only


def test_all_formulas_counts_follow_the_recursion():
    count = 2
    for depth in range(3):
        formulas = languages.all_formulas(depth)
        assert len(formulas) == len(set(formulas)) == count
        count = 2 + count + 2 * count**2  # constants, negations, two binary connectives


def test_corrected_bfvp_grammar_derives_exactly_the_true_formulas():
    for formula in languages.all_formulas(2):
        found = languages.derivable_from(formula)
        assert found == {"F1" if python_truth(formula) else "F0"}, formula


def test_printed_bfvp_grammar_is_wrong_on_disjunctions_of_false_formulas():
    printed = languages.BFVP_GRAMMAR_AS_PRINTED
    assert languages.derivable_from("(0∨0)", printed) == frozenset()  # true of nothing
    assert languages.derivable_from("(1∨1)", printed) == {"F0", "F1"}
    assert "F1" in languages.derivable_from("(¬(1∨1))", printed)  # accepted, but false
    wrong = [f for f in languages.all_formulas(2)
             if ("F1" in languages.derivable_from(f, printed)) != python_truth(f)]
    assert wrong and all("∨" in f for f in wrong)


# DFAs (transitions[state][symbol], start 0, accepting states) and the languages they recognize,
# some with states to spare: the monoid must not depend on them.
DFAS = {
    "parity": (([0, 1], [1, 0]), [1], lambda s: s.count("1") % 2 == 1),
    "ones mod 3, doubled states": (([0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 0]), [0, 3],
                                   lambda s: s.count("1") % 3 == 0),
    "no 11": (([0, 1], [0, 2], [2, 2]), [0, 1], lambda s: "11" not in s),
    "0*1*": (([0, 1], [2, 1], [2, 2]), [0, 1], lambda s: "10" not in s),
    "first is 1": (([1, 2], [1, 1], [2, 2]), [2], lambda s: s[:1] == "1"),
    "(00)*": (([1, 2], [0, 2], [2, 2]), [0], lambda s: "1" not in s and len(s) % 2 == 0),
    "everything, unreachable states": (([0, 0], [2, 1], [1, 2]), [0], lambda s: True),
}


def _classes(language, length=5, context=3):
    """Brute force: the syntactic congruence's classes among the words up to ``length``, each
    word told apart by which contexts x _ y (x, y up to ``context`` symbols) it completes into
    the language; and whether u^6 ~ u^7 for every such word u (aperiodicity, 6 > monoid size)."""
    words = ["".join(t) for k in range(length + 1) for t in itertools.product("01", repeat=k)]
    contexts = [(x, y) for x in words if len(x) <= context for y in words if len(y) <= context]
    profile = lambda u: tuple(language(x + u + y) for x, y in contexts)  # noqa: E731
    aperiodic = all(profile(u * 6) == profile(u * 7) for u in words if len(u) <= 3)
    return len({profile(u) for u in words}), aperiodic


@pytest.mark.parametrize("name", DFAS)
def test_the_syntactic_monoid_agrees_with_the_syntactic_congruence(name):
    transitions, accepting, language = DFAS[name]
    monoid = languages.syntactic_monoid([list(row) for row in transitions], 0, accepting)
    size, aperiodic = _classes(language)
    assert len(monoid) == size
    assert tuple(range(len(next(iter(monoid))))) in monoid, "the empty string's map"
    assert languages.is_aperiodic(monoid) == aperiodic


def test_star_free_is_aperiodic():
    par = languages.syntactic_monoid([[0, 1], [1, 0]], 0, [1])
    assert not languages.is_aperiodic(par)  # PARITY: its monoid is the group Z_2
    assert languages.is_aperiodic({(0, 0), (0, 1)})  # a constant map and the identity
    with pytest.raises(ValueError, match="transitions\\[1\\]\\[0\\]"):
        languages.syntactic_monoid([[0, 1], [2, 0]], 0, [0])


def test_mixed_strings_fall_on_both_sides_of_dyck1_and_zeros_then_ones():
    w = languages.mixed_strings(100, torch.Generator().manual_seed(0))
    assert w.shape == (64, 100) and w.dtype == torch.long and set(w.unique().tolist()) <= {0, 1}
    again = languages.mixed_strings(100, torch.Generator().manual_seed(0))
    assert torch.equal(w, again)
    depth = (1 - 2 * w).cumsum(dim=1)  # 0 opens, 1 closes
    dyck = (depth.min(dim=1).values >= 0) & (depth[:, -1] == 0)
    zeros_then_ones = (w[:, 1:] >= w[:, :-1]).all(dim=1)
    for inside in (dyck, zeros_then_ones):
        assert 2 <= int(inside.sum()) <= 62
    with pytest.raises(ValueError, match="m must be >= 1"):
        languages.mixed_strings(0)
    with pytest.raises(TypeError, match="generator"):
        languages.mixed_strings(5, generator=0)
