"""companion.rasp: B-RASP and C-RASP programs, run batched and compiled into circuits, checked
against plain-Python definitions of their languages on every string up to length 10 and on long
random strings, and against each other."""

import re

import pytest
import torch

from companion.languages import all_strings, mixed_strings
from companion.rasp import (
    EXAMPLES,
    MAX_CIRCUIT_LENGTH,
    Q,
    at_j,
    count,
    evaluate,
    from_data,
    is_b_rasp,
    is_c_rasp,
    leftmost,
    listing,
    local,
    periodic,
    positional_predicates,
    rightmost,
    run,
    to_circuit,
    to_data,
    to_transformer,
)


def _depths(s: str) -> list[int]:
    """The nesting depth after each symbol, 0 opening and 1 closing."""
    depth, depths = 0, []
    for symbol in s:
        depth += 1 if symbol == "0" else -1
        depths.append(depth)
    return depths


# Each example's language, written directly on a Python str (nothing of companion.rasp).
LANGUAGES = {
    "first": lambda s: s[0] == "1",
    "ends_in_1": lambda s: s[-1] == "1",
    "no_10": lambda s: re.fullmatch("0*1*", s) is not None,
    "no_11": lambda s: "11" not in s,
    "dyck1_depth2": lambda s: all(0 <= d <= 2 for d in _depths(s)) and _depths(s)[-1] == 0,
    "majority": lambda s: s.count("1") > s.count("0"),
    "dyck1": lambda s: min(_depths(s)) >= 0 and _depths(s)[-1] == 0,
}


def _strings(w: torch.Tensor) -> list[str]:
    return ["".join(map(str, row)) for row in w.tolist()]


def _language(name: str, w: torch.Tensor) -> torch.Tensor:
    return torch.tensor([LANGUAGES[name](s) for s in _strings(w)])


def test_every_example_has_its_language():
    assert set(EXAMPLES) == set(LANGUAGES)


@pytest.mark.parametrize("name", EXAMPLES)
def test_program_transformer_and_circuit_agree_with_the_language_on_every_short_string(name):
    transformer = to_transformer(EXAMPLES[name])
    for m in range(1, 11):
        w = all_strings(m)
        expected = _language(name, w)
        assert torch.equal(run(EXAMPLES[name], w), expected), (name, m)
        assert torch.equal(transformer.accepts(w), expected), (name, m)
        assert torch.equal(to_circuit(EXAMPLES[name], m).evaluate(w), expected), (name, m)


def _long_strings(m: int, seed: int) -> torch.Tensor:
    return mixed_strings(m, torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("name", EXAMPLES)
def test_program_agrees_with_the_language_on_long_strings(name):
    w = _long_strings(300, seed=0)
    expected = _language(name, w)
    assert expected.any() and not expected.all()
    assert torch.equal(run(EXAMPLES[name], w), expected)


@pytest.mark.parametrize("name", EXAMPLES)
def test_transformer_agrees_with_the_language_on_strings_of_length_100(name):
    w = _long_strings(100, seed=2)
    assert torch.equal(to_transformer(EXAMPLES[name]).accepts(w), _language(name, w))


@pytest.mark.parametrize("name", EXAMPLES)
def test_circuit_agrees_with_the_program_on_strings_of_length_64(name):
    w = _long_strings(64, seed=1)
    assert torch.equal(to_circuit(EXAMPLES[name], 64).evaluate(w), run(EXAMPLES[name], w))


@pytest.mark.parametrize("name", EXAMPLES)
def test_depth_is_fixed_by_the_program_and_b_rasp_needs_no_majority(name):
    circuits = [to_circuit(EXAMPLES[name], m) for m in (16, 32, 64)]
    assert len({c.depth for c in circuits}) == 1
    assert all(c.obeys("AC") == is_b_rasp(EXAMPLES[name]) for c in circuits)


def test_an_attention_that_searches_grows_as_the_square_of_the_length():
    sizes = [to_circuit(EXAMPLES["no_10"], m).size for m in (32, 64)]
    assert 3.5 < sizes[1] / sizes[0] < 4.5  # fitted exponent between 1.8 and 2.2


def test_leftmost_and_rightmost_follow_the_definition():
    """Every mask, direction, score and value on all strings of length 7, against a loop."""
    w = all_strings(7)
    one, zero = Q("1"), Q("0")
    for mask, allowed in (("all", lambda i, j: True), ("past", lambda i, j: j < i),
                          ("future", lambda i, j: j > i)):
        for direction in (leftmost, rightmost):
            program = direction(mask, at_j(one) & ~one, at_j(zero) | one, zero)
            got = evaluate(program, w)
            for b, s in enumerate(_strings(w)):
                for i in range(7):
                    found = [j for j in range(7)
                             if allowed(i, j) and s[j] == "1" and s[i] == "0"]
                    if found:
                        j = found[0] if direction is leftmost else found[-1]
                        expected = s[j] == "0" or s[i] == "1"
                    else:
                        expected = s[i] == "0"
                    assert bool(got[b, i]) == expected, (mask, direction.__name__, s, i)


def _previous(vector):
    return rightmost("past", True, at_j(vector), False)


def _following(vector):
    return leftmost("future", True, at_j(vector), False)


def _one_vector():  # a vector that is one node, read twice below
    return Q("1") & _previous(Q("0"))


# Programs the compilers once got wrong (review of 2026-12-01, Findings 2.2 and 2.3), each with
# its language on a Python str: one symbol test through two Q objects (a silently wrong
# transformer), and lines whose dimensions no unit wrote (a KeyError).
ONCE_WRONG = {
    "#1 >= 2 #0, a sum": (count(Q("1")) >= count(Q("0")) + count(Q("0")),
                          lambda s: s.count("1") >= 2 * s.count("0")),
    "a 1 next to a 0": ((Q("1") & _previous(Q("0"))) | (Q("1") & _following(Q("0"))),
                        lambda s: s.endswith("01")),
    "Q_1 or not Q_1": (Q("1") | ~Q("1"), lambda s: True),
    "a score that reads i": (
        rightmost("past", Q("1") & at_j(Q("0")), at_j(_previous(Q("1"))), False),
        lambda s: s[-1] == "1" and "0" in s[:-1] and s.rindex("0", 0, len(s) - 1) > 0
        and s[s.rindex("0", 0, len(s) - 1) - 1] == "1"),
    "count(False)": (count(False) < count(Q("1")), lambda s: "1" in s),
    "value and default false": (~leftmost("all", at_j(Q("1")), False, False), lambda s: True),
    "P and not P": ((lambda p: p & ~p)(_one_vector()), lambda s: False),
    "a constant": (True, lambda s: True),
}


@pytest.mark.parametrize("name", ONCE_WRONG)
def test_programs_once_compiled_wrong_are_right_three_ways(name):
    program, language = ONCE_WRONG[name]
    transformer = to_transformer(program)
    for m in range(1, 9):
        w = all_strings(m)
        expected = torch.tensor([language(s) for s in _strings(w)])
        assert torch.equal(run(program, w), expected), (name, m)
        assert torch.equal(transformer.accepts(w), expected), (name, m)
        assert torch.equal(to_circuit(program, m).evaluate(w), expected), (name, m)


def test_a_constant_program_runs():
    assert run(True, "01") is True and run(False, "1") is False
    assert torch.equal(run(True, all_strings(2)), torch.ones(4, dtype=torch.bool))


@pytest.mark.parametrize("mask", ["all", "past", "future"])
@pytest.mark.parametrize("direction", [leftmost, rightmost], ids=["leftmost", "rightmost"])
def test_both_compilers_follow_leftmost_and_rightmost(mask, direction):
    """The program of test_leftmost_and_rightmost_follow_the_definition, whose score reads a
    vector at i: its transformer holds its values at every position of every string of length
    7, in its dimension Y, and its circuit gives its verdicts."""
    one, zero = Q("1"), Q("0")
    program = direction(mask, at_j(one) & ~one, at_j(zero) | one, zero)
    w = all_strings(7)
    transformer = to_transformer(program)
    stream = transformer.forward(w)[..., transformer.layout["Y"]]
    assert torch.equal(stream, evaluate(program, w).double())
    assert torch.equal(to_circuit(program, 7).evaluate(w), run(program, w))


@pytest.mark.slow  # two strings of 8193 symbols: [1, n, n] attention scores, about 2 GB
def test_a_compiled_transformer_takes_more_than_8192_positions():
    """No cap on the length (attention.future_mask's 8192 is not used): unique-hard attention
    over all positions, and the causal average of a count (with BOS, n = 8194)."""
    generator = torch.Generator().manual_seed(3)
    w = torch.cat([torch.ones(1, 4097), torch.zeros(1, 4096)], dim=1).long()
    w = w[:, torch.randperm(8193, generator=generator)]
    for name, expected in (("first", bool(w[0, 0])), ("majority", True)):
        model = to_transformer(EXAMPLES[name], dtype=torch.float32)
        assert model.accepts(w).tolist() == [expected], name


def test_counts_and_their_arithmetic():
    w = all_strings(6)
    ones, zeros = evaluate(count(Q("1")), w), evaluate(count(Q("0")), w)
    prefix = torch.arange(1, 7)
    assert torch.equal(ones + zeros, prefix.expand_as(ones))
    assert torch.equal(evaluate(2 * count(Q("1")) - count(Q("0")) + 3, w),
                       2 * ones - zeros + 3)
    assert torch.equal(evaluate(count(Q("1")) >= 2, w), ones >= 2)
    assert torch.equal(evaluate(3 < count(Q("1")), w), ones > 3)
    assert torch.equal(evaluate(count(Q("1")) - count(Q("1")), w), torch.zeros_like(ones))


def test_a_count_with_weights_and_constants_compiles_into_one_majority():
    program = 3 * count(Q("1")) - 2 * count(Q("0")) + 1 >= count(True)
    for m in range(1, 9):
        w = all_strings(m)
        ones = w.sum(dim=1)
        assert torch.equal(to_circuit(program, m).evaluate(w), 3 * ones - 2 * (m - ones) + 1 >= m)


def test_bad_programs_and_inputs_are_refused():
    with pytest.raises(ValueError, match="symbol"):
        Q("2")
    with pytest.raises(ValueError, match="mask"):
        leftmost("before", True, True, False)
    with pytest.raises(ValueError, match="default must be a vector over positions"):
        leftmost("all", True, True, at_j(Q("1")))
    with pytest.raises(ValueError, match="program must be a vector over positions"):
        run(at_j(Q("1")), "01")
    with pytest.raises(TypeError, match="program must be a Boolean vector"):
        run(count(Q("1")), "01")
    with pytest.raises(TypeError, match="compared with < <= > >= only"):
        count(Q("1")) == count(Q("0"))  # noqa: B015 - the comparison is what is refused
    with pytest.raises(TypeError, match="no truth value"):
        Q("1") and Q("0")
    with pytest.raises(TypeError, match="factor must be an int"):
        count(Q("1")) * 0.5
    with pytest.raises(TypeError, match="score must be a Boolean vector"):
        leftmost("all", 1, True, False)
    with pytest.raises(ValueError, match="m >= 1"):
        run(Q("1"), torch.zeros(3, 0, dtype=torch.long))
    with pytest.raises(ValueError, match="m must be <="):
        to_circuit(Q("1"), MAX_CIRCUIT_LENGTH + 1)
    with pytest.raises(ValueError, match="m >= 1"):
        to_transformer(EXAMPLES["first"]).accepts(torch.zeros(2, 0, dtype=torch.long))
    with pytest.raises(TypeError, match="dtype"):
        to_transformer(EXAMPLES["first"], dtype=torch.long)


def test_every_named_vector_of_the_listing_is_a_dimension_holding_its_values():
    """The compiled transformer's residual stream holds, in the dimension of each line of the
    listing, that vector's values at every symbol (and 0 at BOS)."""
    program = EXAMPLES["dyck1"]
    transformer = to_transformer(program)
    w = all_strings(8)
    stream = transformer.forward(w)[:, 1:]  # without BOS
    lines = listing(program).splitlines()
    assert [line.split("(")[0] for line in lines] == ["P1", "P2", "P3", "P4", "Y"]
    ones, zeros = w.cumsum(dim=1), (1 - w).cumsum(dim=1)
    expected = {"P1": ones > zeros, "P3": ones >= zeros, "P4": zeros >= ones}
    expected["P2"] = expected["P1"].cumsum(dim=1) >= 1
    for name, values in expected.items():
        assert torch.equal(stream[..., transformer.layout[name]], values.double()), name
    assert torch.equal(transformer.forward(w)[:, 0, transformer.layout["P1"]],
                       torch.zeros(len(w), dtype=torch.float64))


def test_a_compiled_count_compares_right_on_long_strings():
    """Counts of 0s and 1s that differ by one, and tie, at length 1000: the averages differ by
    1 / 1001, far above float64's rounding."""
    w = torch.tensor([[0, 1] * 500, [1, 0] * 500, [0, 1] * 499 + [1, 1],
                      [1] + [0, 1] * 499 + [0]])
    assert torch.equal(to_transformer(EXAMPLES["majority"]).accepts(w),
                       torch.tensor([False, False, True, False]))
    assert torch.equal(to_transformer(EXAMPLES["dyck1"]).accepts(w),
                       torch.tensor([True, False, False, False]))


@pytest.mark.parametrize("name", EXAMPLES)
def test_a_program_as_plain_data_is_the_same_program(name):
    """to_data gives only lists, strings, ints, bools and None, and from_data builds from it a
    program that answers as the original on every string up to length 9."""
    data = to_data(EXAMPLES[name])

    def plain(value):
        return value is None or isinstance(value, str | int | bool) or (
            isinstance(value, list) and all(plain(v) for v in value))

    assert plain(data) and eval(repr(data)) == data  # noqa: S307 - our own literal
    again = from_data(data)
    assert to_data(again) == data
    w = all_strings(9)
    assert torch.equal(run(again, w), _language(name, w))


@pytest.mark.parametrize(("data", "error", "message"), [
    ("Q1", TypeError, "data must be a list"),
    ([], ValueError, "at least one entry"),
    ([["Q", [], "2"]], ValueError, "symbol"),
    ([["not", [0], None]], ValueError, "index of an earlier entry"),
    ([["Q", [], "1"], ["xor", [0, 0], None]], ValueError, "must be an op of"),
    ([["Q", [], "1"], ["and", [0], None]], ValueError, "number of inputs"),
    ([["Q", [], "1"], ["count", [[0, 1]], 0], ["not", [1], None]], TypeError, "not counts"),
    ([["Q", [], "1"], ["atleast0", [0], None]], TypeError, "reads a count"),
    ([["const", [], 1]], TypeError, "True or False"),
    ([["Q", [], "1"], ["count", [[0, 1.5]], 0], ["atleast0", [1], None]], TypeError,
     "coefficient"),
    ([["Q", [], "1"], ["leftmost", [0, 0, 0], "before"]], ValueError, "mask"),
    ([["Q", [], "1"], ["at_j", [0], None]], ValueError, "depends on j"),
])
def test_data_that_no_program_gives_is_refused(data, error, message):
    with pytest.raises(error, match=message):
        from_data(data)


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_gate_of_a_compiled_circuit_is_read_by_its_output(name):
    circuit = to_circuit(EXAMPLES[name], 16)
    read, n = {circuit.output}, circuit.n_inputs
    for node in range(circuit.n_nodes - 1, n - 1, -1):
        assert node in read, f"gate {node} is read by no one"
        read.update(circuit.gates[node - n][1])


# Programs with positional predicates, and their languages written directly on a str.
POSITIONAL = {
    "no 000": (count(Q("0") & local(Q("0"), 1) & local(Q("0"), 2)) <= 0,
               lambda s: "000" not in s),
    "1 at every even position": (count(periodic(2, 0) & Q("0")) <= 0,
                                 lambda s: set(s[::2]) <= {"1"}),
    "even length": (periodic(2, 1), lambda s: len(s) % 2 == 0),
    "the symbol 3 back is 1": (local(Q("1"), 3), lambda s: len(s) > 3 and s[-4] == "1"),
    "more 1s at positions 0 mod 3 than 0s elsewhere": (
        count(periodic(3, 0) & Q("1")) > count(~periodic(3, 0) & Q("0")),
        lambda s: sum(c == "1" for c in s[::3]) > sum(
            c == "0" for k, c in enumerate(s) if k % 3)),
}


@pytest.mark.parametrize("name", POSITIONAL)
def test_positional_predicates_three_ways_on_every_short_string(name):
    program, language = POSITIONAL[name]
    transformer = to_transformer(program)
    for m in range(1, 11):
        w = all_strings(m)
        expected = torch.tensor([language(s) for s in _strings(w)])
        assert torch.equal(run(program, w), expected), m
        assert torch.equal(transformer.accepts(w), expected), m
        assert torch.equal(to_circuit(program, m).evaluate(w), expected), m
    long = mixed_strings(101, torch.Generator().manual_seed(0))
    expected = torch.tensor([language(s) for s in _strings(long)])
    assert torch.equal(run(program, long), expected)
    assert torch.equal(transformer.accepts(long), expected)
    assert torch.equal(run(from_data(to_data(program)), long), expected)


def test_which_programs_are_c_rasp_and_which_positions_they_read():
    assert positional_predicates(EXAMPLES["majority"]) == ()
    assert positional_predicates(POSITIONAL["no 000"][0]) == ("local",)
    assert positional_predicates(POSITIONAL["even length"][0]) == ("periodic",)
    both = count(local(Q("1"), 1) & periodic(2, 0)) > 0
    assert positional_predicates(both) == ("local", "periodic")
    assert is_c_rasp(both) and not is_c_rasp(EXAMPLES["first"])
    assert is_b_rasp(local(Q("1"), 2)) and is_c_rasp(local(Q("1"), 2))
    with pytest.raises(ValueError, match="program must be a C-RASP program"):
        positional_predicates(EXAMPLES["no_11"])


def test_a_local_predicate_is_one_line_and_wires_in_the_circuit():
    program = local(Q("1"), 2) & Q("0")
    assert listing(program) == "P1(i) := Q_1(i - 2)\nY(i) := P1(i) ∧ Q_0(i)"
    assert listing(periodic(3, 1)) == "Y(i) := [i ≡ 1 (mod 3)]"
    # a local predicate is a wire (no gate), a periodic one a constant folded away: one
    # MAJORITY gate over the five even positions' bits
    wire = to_circuit(local(Q("1"), 2), 9)
    assert not wire.gates and wire.output == 6
    circuit = to_circuit(count(periodic(2, 0) & Q("1")) > 2, 9)
    assert circuit.depth == 1 and [kind for kind, _ in circuit.gates][-1] == "MAJORITY"
    assert sorted(circuit.gates[-1][1])[:5] == [0, 2, 4, 6, 8]


def test_bad_positional_predicates_are_refused():
    with pytest.raises(ValueError, match="modulus"):
        periodic(1, 0)
    with pytest.raises(ValueError, match="residue"):
        periodic(3, 3)
    with pytest.raises(TypeError, match="modulus"):
        periodic(2.0, 0)
    with pytest.raises(ValueError, match="offset"):
        local(Q("1"), 0)
    with pytest.raises(ValueError, match="vector must be a vector over positions"):
        local(at_j(Q("1")), 1)
    with pytest.raises(TypeError, match="vector must be a Boolean vector"):
        local(count(Q("1")), 1)
    with pytest.raises(ValueError, match="periodic's param"):
        from_data([["periodic", [], 2]])
