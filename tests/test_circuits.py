import itertools
import math

import pytest
import torch

from companion import circuits
from companion.circuits import Circuit
from companion.languages import all_strings, majority, parity

FAMILIES = {
    "parity_tree": (circuits.parity_tree, parity),
    "parity_dnf": (circuits.parity_dnf, parity),
    "parity_threshold": (circuits.parity_threshold, parity),
    "majority_gate": (circuits.majority_gate, majority),
    "majority_fan_in_2": (circuits.majority_fan_in_2, majority),
}


@pytest.mark.parametrize("name", FAMILIES)
def test_families_decide_their_language_on_every_input(name):
    build, language = FAMILIES[name]
    for n in range(0, 13 if name != "parity_dnf" else 11):
        w = all_strings(n)
        assert torch.equal(build(n).evaluate(w), language(w)), (name, n)


def test_xor_circuit_is_example_5_2():
    circuit = circuits.xor_circuit()
    assert circuit.depth == 3 and circuit.size == 6
    table = {bits: circuit.evaluate("".join(map(str, bits)))
             for bits in itertools.product((0, 1), repeat=2)}
    assert table == {(0, 0): False, (0, 1): True, (1, 0): True, (1, 1): False}


def test_gate_semantics_by_brute_force():
    """Each gate kind against its definition, on every input of three bits."""
    for kind in ("AND", "OR", "MAJORITY"):
        circuit = Circuit(3)
        circuit.set_output(circuit.gate(kind, 0, 1, 2))
        for bits in itertools.product((0, 1), repeat=3):
            expected = {"AND": all(bits), "OR": any(bits), "MAJORITY": 2 * sum(bits) >= 3}[kind]
            assert circuit.evaluate("".join(map(str, bits))) == expected
    constants = Circuit(0)
    values = [constants.gate(kind) for kind in ("AND", "OR", "MAJORITY")]
    for node, expected in zip(values, (True, False, True), strict=True):
        assert bool(constants.set_output(node).evaluate(torch.zeros(1, 0, dtype=torch.long)))\
            == expected


def test_depth_and_size_growth():
    for n in (2, 8, 64, 512):
        assert circuits.parity_tree(n).depth == 3 * math.ceil(math.log2(n))
        assert circuits.parity_tree(n).obeys("NC") and circuits.majority_fan_in_2(n).obeys("NC")
        assert circuits.parity_threshold(n).depth == 4
        assert not circuits.parity_threshold(n).obeys("AC")
    assert circuits.parity_dnf(8).fan_in()["AND"] == {"gates": 2**7, "max fan-in": 8}
    for n in (1, 2, 7, 12, 33):
        # inputs, the OR, and for each odd j: two MAJORITY gates, a NOT, an AND, and the
        # |n - 2k| constants that pad "at least k" for k = j and j + 1
        padding = sum(abs(n - 2 * j) + abs(n - 2 * j - 2) for j in range(1, n + 1, 2))
        assert circuits.parity_threshold(n).size == n + 1 + 4 * ((n + 1) // 2) + padding
    assert circuits.parity_dnf(8).obeys("AC") and not circuits.parity_dnf(8).obeys("NC")
    depths = [circuits.majority_fan_in_2(4**j).depth for j in range(1, 6)]
    steps = [b - a for a, b in zip(depths, depths[1:], strict=False)]
    assert max(steps) <= 2 * min(steps)  # about the same increase per factor 4: O(log n)


def test_batched_evaluation_on_many_inputs():
    w = torch.randint(0, 2, (100_000, 64), generator=torch.Generator().manual_seed(0))
    assert torch.equal(circuits.majority_fan_in_2(64).evaluate(w), majority(w))


def test_from_spec_sorts_and_detects_cycles():
    circuit = Circuit.from_spec(["a", "b"], {"out": ("AND", ["na", "b"]), "na": ("NOT", ["a"])},
                                "out")
    assert [circuit.evaluate(s) for s in ("00", "01", "10", "11")] == [False, True, False,
                                                                        False]
    with pytest.raises(ValueError, match="cycle: g -> h -> g"):
        Circuit.from_spec(["a"], {"g": ("AND", ["a", "h"]), "h": ("OR", ["g"])}, "g")
    with pytest.raises(ValueError, match="unknown node 'z'"):
        Circuit.from_spec(["a"], {"g": ("AND", ["z"])}, "g")


def test_bad_circuits_and_inputs_are_refused():
    circuit = Circuit(2)
    with pytest.raises(ValueError, match="NOT gate has fan-in exactly 1"):
        circuit.gate("NOT", 0, 1)
    with pytest.raises(ValueError, match="earlier nodes only"):
        circuit.gate("AND", 0, 5)
    with pytest.raises(ValueError, match="kind"):
        circuit.gate("XOR", 0, 1)
    with pytest.raises(ValueError, match=r"gate inputs \[0\] appear more than once"):
        circuit.gate("MAJORITY", 0, 0, 1)
    with pytest.raises(ValueError, match="no output"):
        circuit.evaluate("01")
    circuit.set_output(circuit.gate("AND", 0, 1))
    with pytest.raises(ValueError, match="2 columns"):
        circuit.evaluate("011")
    with pytest.raises(ValueError, match="circuit_class"):
        circuit.obeys("P")


def test_formula_circuit_agrees_with_bfvp_value():
    from companion.languages import bfvp_value, random_formula

    generator = torch.Generator().manual_seed(5)
    for depth in range(0, 7):
        formula = random_formula(depth, generator)
        circuit, leaves = circuits.formula_circuit(formula)
        assert circuit.evaluate(leaves).item() == bfvp_value(formula)
        assert circuit.obeys("NC")
        nesting = max(formula[:i].count("(") - formula[:i].count(")")
                      for i in range(len(formula) + 1))
        assert circuit.depth == nesting


def test_random_split_formula_depth_bounds_and_expected_weight():
    """The formulas of the circuits chapter: every constant is a leaf of the circuit, the
    depth lies between log2(leaves) and the tail bound 4 log2(leaves) + 32, and the expected
    total weight sum 2^depth over the constants is (5/4) C(leaves + 3, 4), as derived there."""
    from companion.languages import bfvp_value, random_split_formula

    generator = torch.Generator().manual_seed(3)
    for leaves in (1, 2, 3, 10, 100, 1000):
        formula = random_split_formula(leaves, generator)
        circuit, bits = circuits.formula_circuit(formula)
        assert circuit.n_inputs == leaves
        assert circuit.evaluate(bits).item() == bfvp_value(formula)
        assert math.log2(leaves) <= circuit.depth < 4 * math.log2(leaves) + 32
    for leaves in (2, 5):
        weights = []
        for _ in range(20_000):
            depth, weight = 0, 0
            for symbol in random_split_formula(leaves, generator):
                depth += {"(": 1, ")": -1}.get(symbol, 0)
                weight += 2**depth if symbol in "01" else 0
            weights.append(weight)
        weights = torch.tensor(weights, dtype=torch.float64)
        error = 5 * weights.std() / math.sqrt(len(weights))  # five standard errors
        assert abs(weights.mean() - 1.25 * math.comb(leaves + 3, 4)) < error
    with pytest.raises(ValueError, match="leaves"):
        random_split_formula(0)


def test_packed_evaluation_agrees_with_gate_by_gate_python():
    """Random circuits of every gate kind and fan-in 0 to 70 (padded to 128), on 130 strings
    (two words of 64 and two strings more), against each gate computed in plain Python."""
    rng = torch.Generator().manual_seed(3)
    for trial in range(5):
        circuit = Circuit(12)
        for _ in range(60):
            kind = circuits.GATES[int(torch.randint(4, (1,), generator=rng))]
            fan_in = 1 if kind == "NOT" else int(torch.randint(0, 71, (1,), generator=rng))
            fan_in = min(fan_in, circuit.n_nodes)
            inputs = torch.randperm(circuit.n_nodes, generator=rng)[:fan_in].tolist()
            circuit.gate(kind, *inputs)
        circuit.set_output(circuit.n_nodes - 1)
        w = torch.randint(0, 2, (130, 12), generator=rng)
        expected = []
        for row in w.tolist():
            values = [bool(b) for b in row]
            for kind, inputs in circuit.gates:
                bits = [values[i] for i in inputs]
                values.append({"NOT": lambda b: not b[0], "AND": all, "OR": any,
                               "MAJORITY": lambda b: 2 * sum(b) >= len(b)}[kind](bits))
            expected.append(values[circuit.output])
        assert circuit.evaluate(w).tolist() == expected, trial
