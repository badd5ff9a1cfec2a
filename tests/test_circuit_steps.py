"""A circuit evaluated one gate per step, at fixed precision; the fixed-precision executor; the
Ehrenfeucht–Haussler rank. Outside references: ``Circuit.evaluate``, a gate-by-gate simulation
written here, PyTorch's own bfloat16/float16/float32 conversions, and a top-down rank
recursion written here."""

import pytest
import torch

from companion import circuits, rasp
from companion.constructions import parity_transformer
from companion.decision_trees import eh_rank, tree_depth
from companion.languages import all_strings, parity, random_formula, random_strings
from companion.precision import Format, at_precision, round_to
from companion.steps import (
    circuit_bits,
    compile_circuit,
    decode,
    parity_decoder,
)


def simulate(circuit, x):
    """Every gate's value, gate by gate in plain Python: ``[B, gates]``."""
    rows = []
    for bits in x.tolist():
        values = list(bits)
        for kind, inputs in circuit.gates:
            read = [values[i] for i in inputs]
            values.append(int({"NOT": lambda r: not r[0], "AND": all, "OR": any,
                               "MAJORITY": lambda r: 2 * sum(r) >= len(r)}[kind](read)))
        rows.append(values[circuit.n_inputs:])
    return torch.tensor(rows, dtype=torch.long).reshape(len(rows), len(circuit.gates))


def random_circuit(n, gates, generator):
    """A random circuit nobody designed: each gate of a random kind reads random earlier
    nodes (NOT one, the others 0 to 4), the output a random node."""
    circuit = circuits.Circuit(n)
    for _ in range(gates):
        kind = circuits.GATES[int(torch.randint(4, (1,), generator=generator))]
        fan_in = 1 if kind == "NOT" else int(torch.randint(5, (1,), generator=generator))
        fan_in = min(fan_in, circuit.n_nodes)
        inputs = torch.randperm(circuit.n_nodes, generator=generator)[:fan_in].tolist()
        circuit.gate(kind, *inputs)
    return circuit.set_output(int(torch.randint(circuit.n_nodes, (1,), generator=generator)))


def families():
    yield "xor", circuits.xor_circuit()
    for n in (1, 2, 5, 8):
        yield f"parity_tree({n})", circuits.parity_tree(n)
    for n in (3, 6):
        yield f"majority_fan_in_2({n})", circuits.majority_fan_in_2(n)
        yield f"majority_gate({n})", circuits.majority_gate(n)
    yield "parity_threshold(5)", circuits.parity_threshold(5)


@pytest.mark.parametrize("name,circuit", list(families()), ids=lambda v: v if isinstance(
    v, str) else "")
def test_families_are_exact_on_every_input_at_their_bits(name, circuit):
    x = all_strings(circuit.n_inputs)
    need = circuit_bits(max([1, *(len(i) for _, i in circuit.gates)]))
    for decoder in (compile_circuit(circuit), compile_circuit(circuit, bits=need)):
        written, verdict = decode(decoder, x)
        assert torch.equal(written, simulate(circuit, x))
        assert torch.equal(verdict, circuit.evaluate(x))


def test_random_circuits_and_formulas_are_exact():
    generator = torch.Generator().manual_seed(69)
    for trial in range(60):
        n = int(torch.randint(1, 7, (1,), generator=generator))
        circuit = random_circuit(n, int(torch.randint(0, 25, (1,), generator=generator)),
                                 generator)
        x = all_strings(n)
        bits = circuit_bits(max([1, *(len(i) for _, i in circuit.gates)]))
        written, verdict = decode(compile_circuit(circuit, bits=bits), x)
        assert torch.equal(written, simulate(circuit, x)), trial
        assert torch.equal(verdict, circuit.evaluate(x)), trial
    for depth in range(1, 6):
        circuit, leaves = circuits.formula_circuit(random_formula(depth, generator))
        x = torch.cat([leaves, random_strings(50, leaves.shape[1], generator=generator)])
        written, verdict = decode(compile_circuit(circuit, bits=2), x)
        assert torch.equal(verdict, circuit.evaluate(x))


def test_long_parity_tree_at_two_bits():
    circuit = circuits.parity_tree(64)  # hundreds of gates, the same two bits
    x = random_strings(20, 64, generator=torch.Generator().manual_seed(1))
    written, verdict = decode(compile_circuit(circuit, bits=2), x)
    assert written.shape == (20, len(circuit.gates))
    assert torch.equal(verdict, parity(x))


def test_circuit_bits_is_the_bit_length_of_the_largest_integer():
    for fan_in in range(1, 65):
        p = circuit_bits(fan_in)
        assert 2**p >= fan_in + 1 > 2 ** (p - 1)  # integers to fan_in + 1 fit, not with p - 1


def test_bad_circuit_input_is_refused():
    with pytest.raises(TypeError, match="circuit"):
        compile_circuit("x1 & x2")
    with pytest.raises(ValueError, match="output"):
        compile_circuit(circuits.Circuit(2))
    with pytest.raises(ValueError, match="fan-in"):
        compile_circuit(circuits.majority_gate(65))
    with pytest.raises(ValueError, match="bits"):
        compile_circuit(circuits.majority_gate(5), bits=2)
    with pytest.raises(ValueError, match="bits"):
        compile_circuit(circuits.xor_circuit(), bits=4, exponent_bits=4)
    compile_circuit(circuits.majority_gate(5), bits=2, allow_fewer_bits=True)
    decoder = compile_circuit(circuits.xor_circuit())
    with pytest.raises(ValueError, match="columns"):
        decode(decoder, "101")
    with pytest.raises(ValueError, match="record"):
        decode(decoder, "10", record=True)
    with pytest.raises(ValueError, match="circuit_bits|max_fan_in"):
        circuit_bits(0)


def test_round_to_agrees_with_pytorchs_formats():
    """Against PyTorch's conversions: float64 to float32 directly; bfloat16 and float16 from
    float32 inputs (PyTorch rounds float64 to them twice, through float32), on the numbers
    above each format's smallest normal one (PyTorch keeps subnormals; our formats flush)."""
    for seed in range(8):
        generator = torch.Generator().manual_seed(seed)
        x = torch.randn(10**5, dtype=torch.float64, generator=generator) * 100
        assert torch.equal(round_to(x, Format(24, 8)), x.to(torch.float32).double())
        single = x.float().double()
        for fmt, dtype in ((Format(8, 8), torch.bfloat16), (Format(11, 5), torch.float16)):
            normal = single.abs() >= fmt.smallest
            assert torch.equal(round_to(single, fmt)[normal],
                               single.to(dtype).double()[normal]), (seed, dtype)


def test_round_to_flushes_and_saturates():
    fmt = Format(11, 5)
    values = torch.tensor([1e-6, -1e-6, 1e6, -1e6, float("-inf"), 0.0], dtype=torch.float64)
    assert round_to(values, fmt).tolist() == [0.0, 0.0, 65504.0, -65504.0, float("-inf"), 0.0]
    assert fmt.smallest == 2.0**-14 and fmt.largest == 65504.0
    with pytest.raises(TypeError, match="x"):
        round_to(values.float(), fmt)
    with pytest.raises(ValueError, match="bits"):
        Format(0)


def test_at_precision_rounds_a_copy():
    model = parity_transformer()
    w = all_strings(8)
    exact = model(w)
    at_float64 = at_precision(model, 53, 11)(w)  # float64's own format: softmax computed in
    assert torch.allclose(at_float64, exact, rtol=1e-9, atol=0)  # three steps, so not bitwise
    coarse = at_precision(model, 3)
    assert not bool(((coarse(w) > 0) == parity(w)).all())  # 3 bits cannot count to 8
    assert torch.equal(model(w), exact)  # the model itself is unchanged
    with pytest.raises(TypeError, match="float64"):
        at_precision(model.float(), 8)
    with pytest.raises(ValueError, match="bits"):
        at_precision(model, 54)
    with pytest.raises(TypeError, match="forward"):
        at_precision(42, 8)


def test_rasp_transformers_and_decoders_run_at_precision():
    program = rasp.EXAMPLES["majority"]
    w = all_strings(6)
    rounded = at_precision(rasp.to_transformer(program), 4)
    assert torch.equal(rounded.accepts(w), rasp.run(program, w))
    states, verdict = decode(at_precision(parity_decoder(), 8), random_strings(
        5, 12, generator=torch.Generator().manual_seed(2)))
    assert states.shape == (5, 12)


def top_down_rank(table: tuple) -> int:
    """The rank by the definition, on a truth table indexed by the bits as a binary number."""
    if len(set(table)) == 1:
        return 0
    n = len(table).bit_length() - 1
    best = n + 1
    for i in range(n):
        zero = tuple(v for index, v in enumerate(table) if not index >> i & 1)
        one = tuple(v for index, v in enumerate(table) if index >> i & 1)
        r0, r1 = top_down_rank(zero), top_down_rank(one)
        best = min(best, r0 + 1 if r0 == r1 else max(r0, r1))
    return best


def test_rank_against_the_definition_on_random_functions():
    generator = torch.Generator().manual_seed(5)
    for n in range(1, 5):
        for _ in range(12):
            table = torch.randint(2, (2**n,), generator=generator).bool()

            def f(x, table=table):
                return table[(x.flip(1) << torch.arange(x.shape[1])).sum(1)]

            assert eh_rank(f, n) == top_down_rank(tuple(table.tolist()))
            assert eh_rank(f, n) <= tree_depth(f, n) <= n


def test_rank_of_known_functions():
    for n in range(1, 9):
        assert eh_rank(parity, n) == n
        assert eh_rank(lambda x: x.bool().all(1), n) == 1  # AND: a decision list
        assert eh_rank(lambda x: x[:, 0] == x[:, 0], n) == 0
    with pytest.raises(ValueError, match="n"):
        eh_rank(parity, 13)
    with pytest.raises(TypeError, match="f"):
        eh_rank("parity", 3)
    with pytest.raises(ValueError, match="BoolTensor"):
        eh_rank(lambda x: x.sum(1), 3)



def test_each_step_reads_its_gates_inputs():
    from companion.steps import circuit_attention

    circuit = random_circuit(4, 12, torch.Generator().manual_seed(3))
    weights = circuit_attention(compile_circuit(circuit, bits=3), "1011")
    for g, (_, inputs) in enumerate(circuit.gates):
        read = sorted(weights[:, g].nonzero()[:, 1].tolist())
        spare = weights.shape[0] - len(inputs)  # spare heads read BOS, position 0
        assert read == sorted([0] * spare + [node + 1 for node in inputs])
        assert set(weights[:, g].sum(1).tolist()) == {1.0}  # one-hot: exactly 1 and 0s
