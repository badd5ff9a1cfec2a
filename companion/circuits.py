"""Boolean circuits ([chiang2024esslli] §5.2.2): construction, batched evaluation, depth, size,
class rules.

A :class:`Circuit` has ``n`` input nodes ``0..n-1`` followed by gates, each of which reads
earlier nodes only, so a circuit built gate by gate is acyclic by construction; circuits given
by name in any order (:meth:`Circuit.from_spec`) are sorted and checked for cycles. Gate kinds:

* ``NOT`` (fan-in exactly 1); ``AND`` and ``OR`` with any fan-in (fan-in 0: AND is 1, OR is 0);
* ``MAJORITY`` with any fan-in, 1 iff **at least half** of its inputs are 1
  ([chiang2024esslli] Def. 5.6). Note that the *language* MAJORITY asks for strictly more 1s
  than 0s.

Depth is the length of the longest path from an input to the output; size is the number of
nodes, inputs included ([chiang2024esslli] Example 5.4).
"""

from collections.abc import Sequence

import torch

from companion._checks import check_choice, check_int
from companion.languages import as_strings, parse_formula

GATES = ("NOT", "AND", "OR", "MAJORITY")  # the kinds of gate a circuit may use
MAX_INPUTS = 2**16  # inputs of the families of linear size (parity_tree, majority_...)
MAX_THRESHOLD_INPUTS = 1024  # parity_threshold's size is quadratic in n
CLASSES = ("NC", "AC", "TC")
EVALUATION_CHUNK = 2**22
"""The 64-bit words :meth:`Circuit.evaluate` gathers at once (32 MB)."""


class Circuit:
    """A Boolean circuit on ``n_inputs`` inputs, built with :meth:`gate` and :meth:`set_output`."""

    def __init__(self, n_inputs: int):
        self.n_inputs = check_int(n_inputs, "n_inputs", minimum=0)
        self.gates: list[tuple[str, tuple[int, ...]]] = []
        self.output: int | None = None

    @property
    def n_nodes(self) -> int:
        return self.n_inputs + len(self.gates)

    def gate(self, kind: str, *inputs: int) -> int:
        """Add a gate reading the given earlier nodes; return its node number."""
        check_choice(kind, "kind", GATES)
        if kind == "NOT" and len(inputs) != 1:
            raise ValueError(f"a NOT gate has fan-in exactly 1, got {len(inputs)} inputs")
        if not all(type(node) is int for node in inputs):  # the check's slow path
            inputs = tuple(check_int(node, "every gate input") for node in inputs)
        if inputs and not 0 <= min(inputs) <= max(inputs) < self.n_nodes:
            node = next(node for node in inputs if not 0 <= node < self.n_nodes)
            raise ValueError(f"gate input {node} is not an existing node "
                             f"(0..{self.n_nodes - 1}); a gate may read earlier nodes only")
        if len(set(inputs)) != len(inputs):
            repeated = sorted({node for node in inputs if inputs.count(node) > 1})
            raise ValueError(f"gate inputs {repeated} appear more than once; a circuit is a "
                             "graph, so a gate reads each node at most once (to count a value "
                             "twice, give it a second node)")
        self.gates.append((kind, tuple(inputs)))
        return self.n_nodes - 1

    def set_output(self, node: int) -> "Circuit":
        """Make ``node`` the circuit's output; returns the circuit."""
        self.output = check_int(node, "node", minimum=0, maximum=self.n_nodes - 1)
        return self

    @classmethod
    def from_spec(cls, inputs: Sequence[str], gates: dict, output: str) -> "Circuit":
        """A circuit from named nodes: ``gates`` maps a name to ``(kind, [input names])`` in any
        order. Raises ``ValueError`` for a cycle, an unknown name or a bad fan-in. The gates are
        sorted depth-first with an explicit stack, so chains of any length work."""
        if not isinstance(gates, dict):
            raise TypeError(f"gates must be a dict name -> (kind, [input names]), "
                            f"got {type(gates).__name__}")
        for name, gate in gates.items():
            if not isinstance(gate, tuple | list) or len(gate) != 2:
                raise ValueError(f"gates[{name!r}] must be a pair (kind, [input names]), "
                                 f"got {gate!r}")
        names = {name: i for i, name in enumerate(inputs)}
        if len(names) != len(inputs) or set(names) & set(gates):
            raise ValueError("node names must be distinct")
        circuit = cls(len(inputs))
        for root in [*gates, output]:
            path, on_path, stack = [], set(), [(root, 0)]  # (name, its sources done)
            while stack:
                name, done = stack.pop()
                if name in names:
                    continue
                if name not in gates:
                    raise ValueError(f"unknown node {name!r}")
                sources = gates[name][1]
                if done == 0:
                    if name in on_path:
                        cycle = [*path[path.index(name):], name]
                        raise ValueError(f"the circuit has a cycle: {' -> '.join(cycle)}")
                    path.append(name)
                    on_path.add(name)
                if done < len(sources):
                    stack += [(name, done + 1), (sources[done], 0)]
                else:
                    names[name] = circuit.gate(gates[name][0], *(names[s] for s in sources))
                    on_path.remove(path.pop())
        return circuit.set_output(names[output])

    def _check_output(self):
        if self.output is None:
            raise ValueError("the circuit has no output node; call set_output")

    def evaluate(self, bits) -> torch.Tensor:
        """Values of the output for a batch ``bits: [B, n]`` of 0/1 inputs (or one str):
        ``BoolTensor[B]``. The batch is packed 64 strings to a word, and the gates evaluated a
        level at a time (the gates of one depth, kind and fan-in up to a power of two
        together), each level one gather and a bitwise reduction (a sum, for MAJORITY), in
        chunks of at most :data:`EVALUATION_CHUNK` words."""
        self._check_output()
        x = as_strings(bits, "bits").bool()
        if x.shape[1] != self.n_inputs:
            raise ValueError(f"bits must have {self.n_inputs} columns (the circuit's inputs), "
                             f"got {x.shape[1]}")
        batch = x.shape[0]
        # every node's values (a row of words each), then a constant 1 and a constant 0 that
        # pad the inputs of a gate
        values = torch.zeros(self.n_nodes + 2, (batch + 63) // 64, dtype=torch.long,
                             device=x.device)
        values[:self.n_inputs] = _pack(x.T)
        values[self.n_nodes] = -1  # every bit set
        for kind, gates, inputs, fan_in in self._levels(x.device):
            step = max(1, EVALUATION_CHUNK // (values.shape[1] * max(1, inputs.shape[1])))
            for start in range(0, len(gates), step):
                read = values[inputs[start:start + step]]  # [gates, padded fan-in, words]
                if kind == "MAJORITY":
                    ones = torch.stack([((read >> k) & 1).sum(dim=1) for k in range(64)], -1)
                    value = _pack((2 * ones >= fan_in[start:start + step, None, None])
                                  .flatten(-2))
                elif kind == "NOT":
                    value = ~read[:, 0]
                else:
                    value = _reduce(read, torch.bitwise_and if kind == "AND"
                                    else torch.bitwise_or)
                values[gates[start:start + step]] = value
        result = _unpack(values[self.output], batch)
        return bool(result[0]) if isinstance(bits, str) else result

    def _levels(self, device) -> list[tuple]:
        """``(kind, gate nodes, inputs [G, F], fan-ins [G])`` for each group of gates of one
        depth and kind with fan-in up to one power of two; the inputs are padded with the
        constant that leaves the gate's value alone (1 for AND, 0 for OR and MAJORITY)."""
        depths = self.depths()
        groups: dict[tuple, list[int]] = {}
        for index, (kind, inputs) in enumerate(self.gates):
            node = self.n_inputs + index
            width = 1 << max(len(inputs) - 1, 0).bit_length()
            groups.setdefault((depths[node], kind, width), []).append(node)
        levels = []
        for (_, kind, width), nodes in sorted(groups.items()):
            pad = self.n_nodes if kind == "AND" else self.n_nodes + 1
            inputs = [self.gates[node - self.n_inputs][1] for node in nodes]
            padded = [list(i) + [pad] * (width - len(i)) for i in inputs]
            levels.append((kind, torch.tensor(nodes, device=device),
                           torch.tensor(padded, dtype=torch.long, device=device).view(
                               len(nodes), width),
                           torch.tensor([len(i) for i in inputs], device=device)))
        return levels

    def depths(self) -> list[int]:
        """Depth of every node: 0 for inputs and constants, else 1 + the deepest input."""
        depth = [0] * self.n_inputs
        for _, inputs in self.gates:
            depth.append(1 + max((depth[i] for i in inputs), default=-1))
        return depth

    @property
    def depth(self) -> int:
        """Length of the longest path from an input to the output."""
        self._check_output()
        return self.depths()[self.output]

    @property
    def size(self) -> int:
        """Number of nodes, inputs included."""
        return self.n_nodes

    def fan_in(self) -> dict:
        """Largest fan-in per gate kind, and how many gates of each kind there are."""
        stats = {}
        for kind, inputs in self.gates:
            count, largest = stats.get(kind, (0, 0))
            stats[kind] = (count + 1, max(largest, len(inputs)))
        return {kind: {"gates": count, "max fan-in": largest}
                for kind, (count, largest) in sorted(stats.items())}

    def obeys(self, circuit_class: str) -> bool:
        """Whether every gate is allowed in ``"NC"`` (fan-in at most 2, no MAJORITY), ``"AC"``
        (no MAJORITY) or ``"TC"`` (anything). Depth and size bounds concern families."""
        check_choice(circuit_class, "circuit_class", CLASSES)
        if circuit_class == "TC":
            return True
        if any(kind == "MAJORITY" for kind, _ in self.gates):
            return False
        return circuit_class == "AC" or all(len(inputs) <= 2 for _, inputs in self.gates)


def _pack(bits: torch.Tensor) -> torch.Tensor:
    """``BoolTensor[..., B]`` as ``LongTensor[..., ceil(B / 64)]``, bit k of word w holding
    entry ``64 w + k`` (the bits past ``B`` are 0)."""
    padded = torch.nn.functional.pad(bits.long(), (0, -bits.shape[-1] % 64))
    words = padded.view(*bits.shape[:-1], padded.shape[-1] // 64, 64) << torch.arange(
        64, device=bits.device)
    return words.sum(dim=-1)  # distinct bits: the sum is their OR (bit 63 wraps to the sign)


def _unpack(words: torch.Tensor, batch: int) -> torch.Tensor:
    """The first ``batch`` bits of ``words: LongTensor[..., W]`` as ``BoolTensor[..., batch]``."""
    bits = (words.unsqueeze(-1) >> torch.arange(64, device=words.device)) & 1
    return bits.flatten(-2)[..., :batch].bool()


def _reduce(read: torch.Tensor, combine) -> torch.Tensor:
    """``read: [G, F, W]`` combined over F (a power of two; a gate of fan-in 0 is padded to 1)
    by halving it."""
    while read.shape[1] > 1:
        half = read.shape[1] // 2
        read = combine(read[:, :half], read[:, half:])
    return read[:, 0]


# --- Circuit families -------------------------------------------------------------------------


def _xor(circuit: Circuit, a: int, b: int) -> int:
    """``(a OR b) AND NOT (a AND b)``: four fan-in-2 gates, depth 3 above its inputs."""
    either = circuit.gate("OR", a, b)
    both = circuit.gate("AND", a, b)
    return circuit.gate("AND", either, circuit.gate("NOT", both))


def xor_circuit() -> Circuit:
    """[chiang2024esslli] Example 5.2: XOR of two inputs, with depth 3 and size 6."""
    circuit = Circuit(2)
    return circuit.set_output(_xor(circuit, 0, 1))


def parity_tree(n: int) -> Circuit:
    """PARITY of ``n`` bits as a balanced tree of XOR gadgets: fan-in 2, depth
    ``3 ceil(log2 n)``; ``n`` is at most 2**16, as for the other families of linear size."""
    n = check_int(n, "n", minimum=0, maximum=MAX_INPUTS)
    circuit, layer = Circuit(n), list(range(n))
    if n == 0:
        return circuit.set_output(circuit.gate("OR"))  # the empty string has no 1s
    while len(layer) > 1:
        pairs = [_xor(circuit, a, b) for a, b in zip(layer[::2], layer[1::2], strict=False)]
        layer = pairs + ([layer[-1]] if len(layer) % 2 else [])
    return circuit.set_output(layer[0])


def parity_dnf(n: int) -> Circuit:
    """PARITY of ``n`` bits as an OR of ``2^(n-1)`` ANDs, one per odd-weight input (a DNF),
    over the inputs and their negations: unbounded fan-in, depth 2 above the NOT gates."""
    n = check_int(n, "n", minimum=0, maximum=16)
    circuit = Circuit(n)
    negated = [circuit.gate("NOT", i) for i in range(n)]
    terms = []
    for assignment in range(2**n):
        ones = [(assignment >> (n - 1 - i)) & 1 for i in range(n)]
        if sum(ones) % 2 == 1:
            terms.append(circuit.gate("AND", *(i if one else negated[i]
                                               for i, one in enumerate(ones))))
    return circuit.set_output(circuit.gate("OR", *terms))


def _at_least(circuit: Circuit, inputs: Sequence[int], k: int) -> int:
    """One MAJORITY gate computing ``[at least k of inputs are 1]``, padded with ``|n - 2k|``
    constant nodes of its own (a gate reads each node once, so each constant is a new node)."""
    n = len(inputs)
    ones = [circuit.gate("AND") for _ in range(n - 2 * k)]  # AND() is the constant 1
    zeros = [circuit.gate("OR") for _ in range(2 * k - n)]  # OR() is the constant 0
    return circuit.gate("MAJORITY", *inputs, *ones, *zeros)


def parity_threshold(n: int) -> Circuit:
    """PARITY of ``n`` bits in constant depth with MAJORITY gates: ``[count = j]`` is
    ``[count >= j] AND NOT [count >= j + 1]``, and PARITY is the OR over odd ``j``. Depth 4;
    size quadratic in ``n``, mostly the constants that pad the MAJORITY gates; ``n`` is at most
    1024."""
    n = check_int(n, "n", minimum=0, maximum=MAX_THRESHOLD_INPUTS)
    circuit = Circuit(n)
    inputs = list(range(n))
    exactly = [circuit.gate("AND", _at_least(circuit, inputs, j),
                            circuit.gate("NOT", _at_least(circuit, inputs, j + 1)))
               for j in range(1, n + 1, 2)]
    return circuit.set_output(circuit.gate("OR", *exactly))


def majority_gate(n: int) -> Circuit:
    """The language MAJORITY (more 1s than 0s) with one MAJORITY gate: "at least half of the
    ``n`` inputs and one constant 0" is "more than half of the inputs"."""
    n = check_int(n, "n", minimum=0, maximum=MAX_INPUTS)
    circuit = Circuit(n)
    return circuit.set_output(circuit.gate("MAJORITY", *range(n), circuit.gate("OR")))


def _full_adder(circuit: Circuit, a: int, b: int, c: int) -> tuple[int, int]:
    """Sum and carry bits of ``a + b + c`` with fan-in-2 gates."""
    half = _xor(circuit, a, b)
    carry = circuit.gate("OR", circuit.gate("AND", a, b), circuit.gate("AND", half, c))
    return _xor(circuit, half, c), carry


def _count(circuit: Circuit, bits: Sequence[int]) -> list[int]:
    """The number of 1s among ``bits`` in binary (least significant first), with fan-in 2:
    a carry-save (Wallace) tree, O(log n) rounds of full adders, then a ripple-carry addition
    of the last two rows over O(log n) bit positions."""
    columns = [list(bits)]
    while any(len(column) > 2 for column in columns):
        reduced = [[] for _ in range(len(columns) + 1)]
        for weight, column in enumerate(columns):
            whole = len(column) - len(column) % 3
            for i in range(0, whole, 3):
                total, carry = _full_adder(circuit, *column[i:i + 3])
                reduced[weight].append(total)
                reduced[weight + 1].append(carry)
            reduced[weight].extend(column[whole:])
        columns = reduced if reduced[-1] else reduced[:-1]
    result, carry = [], None
    for column in columns:
        column = column + ([carry] if carry is not None else [])
        if len(column) == 3:
            total, carry = _full_adder(circuit, *column)
        elif len(column) == 2:
            total, carry = _xor(circuit, *column), circuit.gate("AND", *column)
        else:
            total, carry = (column[0] if column else circuit.gate("OR")), None
        result.append(total)
    return result + ([carry] if carry is not None else [])


def _at_least_constant(circuit: Circuit, number: list[int], t: int) -> int:
    """``[number >= t]`` for a binary ``number`` (least significant first) and a constant
    ``t``, rippling from the low bits: a 1 in ``t`` needs the bit, a 0 accepts it."""
    width = max(len(number), t.bit_length())
    number = number + [circuit.gate("OR")] * (width - len(number))
    result = circuit.gate("AND")  # the empty prefixes are equal
    for i, bit in enumerate(number):
        result = circuit.gate("AND" if (t >> i) & 1 else "OR", bit, result)
    return result


def majority_fan_in_2(n: int) -> Circuit:
    """The language MAJORITY with fan-in-2 gates only: count the 1s in binary (a carry-save
    tree of full adders) and compare the count with ``floor(n/2) + 1``. Depth O(log n),
    size O(n)."""
    n = check_int(n, "n", minimum=0, maximum=MAX_INPUTS)
    circuit = Circuit(n)
    count = _count(circuit, list(range(n)))
    return circuit.set_output(_at_least_constant(circuit, count, n // 2 + 1))


def formula_circuit(formula: str) -> tuple[Circuit, torch.Tensor]:
    """A Boolean formula as a fan-in-2 circuit: one input per constant of the formula (in
    order) and one gate per connective, so its depth is the formula's nesting depth.
    Returns the circuit and the formula's constants as its input ``[1, leaves]``."""
    leaves, gates = [], []

    def leaf(bit):
        leaves.append(int(bit))
        return ("input", len(leaves) - 1)

    def combine(op, operands):
        gates.append((op.upper(), operands))
        return ("gate", len(gates) - 1)

    root = parse_formula(formula, leaf, combine)
    circuit = Circuit(len(leaves))

    def node(ref):
        kind, index = ref
        return index if kind == "input" else len(leaves) + index

    for op, operands in gates:  # operands always precede the gate that combines them
        circuit.gate(op, *(node(ref) for ref in operands))
    circuit.set_output(node(root))
    return circuit, torch.tensor([leaves], dtype=torch.long).reshape(1, len(leaves))
