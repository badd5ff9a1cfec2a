"""B-RASP and C-RASP: two small languages of attention, embedded in Python, run batched, and
compiled into circuits.

A program is a graph of immutable nodes built with Python's operators and a few constructors
named as in the papers. Positions are counted from 0 here (the papers count from 1); a program's
verdict on a string ``w`` of length ``m >= 1`` is its value at the last position, ``m - 1``.

**B-RASP** ([yang2024masked]) computes Boolean vectors, one bit per position:

* ``Q("0")``, ``Q("1")``: the input's symbol tests, ``Q_a(i) = [w_i = a]``;
* ``~P``, ``P & R``, ``P | R``, and the constants ``True`` and ``False``: position-wise Boolean
  operations;
* ``leftmost(mask, score, value, default)`` and ``rightmost(...)``: attention, written
  ``◀_j [M(i,j), S(i,j)] V(i,j) : D(i)`` in the paper. For each position ``i`` it takes, among
  the positions ``j`` allowed by the mask (``"all"``; ``"past"``, ``j < i``; ``"future"``,
  ``j > i``) where the score predicate ``S(i, j)`` holds, the leftmost (or rightmost) one, and
  returns ``V(i, j)`` there, or ``D(i)`` where there is none. ``S`` and ``V`` are Boolean
  combinations of vectors at ``i`` (written as they are) and at ``j`` (written ``at_j(P)``).

**C-RASP** ([yang2024counting]) adds counts, integer vectors:

* ``count(P)``: ``#[j <= i] P(j)``, the number of positions up to ``i`` where ``P`` holds;
* ``C + D``, ``C - D``, ``k * C``, ``C + k`` with integer constants ``k``;
* ``C < D``, ``C <= D``, ``C > D``, ``C >= D``: comparisons, which give Boolean vectors back.

Three places read the one graph: :func:`run` (and :func:`evaluate`) interpret it on a batch of
strings, every operation one tensor computation over the batch and the positions;
:func:`to_circuit` compiles it, for one length, into a :class:`companion.circuits.Circuit`:
NOT and unbounded fan-in AND/OR gates for B-RASP, MAJORITY gates too for counts. The circuit's
depth depends on the program alone and its size grows as ``m**2`` per attention operation, the
construction behind "unique-hard attention is in AC⁰" ([hao2022formal]); counting needs
MAJORITY gates, as in [merrill2022saturated].

The input alphabet is {0, 1}, as everywhere in the companion.
"""

from dataclasses import dataclass

import torch

from companion._checks import check_choice, check_int
from companion.circuits import Circuit
from companion.languages import as_strings

SYMBOLS = ("0", "1")
MASKS = ("all", "past", "future")  # j anywhere; j < i; j > i (both strict, as in the paper)
MAX_CIRCUIT_LENGTH = 1024  # to_circuit's m: an attention operation has about m**2 gates


class Node:
    """A node of a program: a Boolean vector (:class:`Bool`) or a count (:class:`Count`)."""

    __slots__ = ()


@dataclass(frozen=True, eq=False)
class Bool(Node):
    """A Boolean vector over positions, or, inside an attention operation's score and value, a
    Boolean predicate of two positions ``i`` and ``j`` (one that contains :func:`at_j`).
    Build it with :func:`Q`, :func:`at_j`, :func:`leftmost`, :func:`rightmost`, the operators
    ``~ & |`` and the comparisons of :class:`Count`, never directly.

    ``op`` is one of ``"Q"``, ``"const"``, ``"not"``, ``"and"``, ``"or"``, ``"at_j"``,
    ``"leftmost"``, ``"rightmost"`` and ``"atleast0"`` (a count that is at least 0)."""

    op: str
    args: tuple = ()
    param: object = None  # the symbol of Q, the constant, the mask, or the count compared
    pairwise: bool = False  # whether it depends on j (then it is a score or a value)

    def __invert__(self) -> "Bool":
        return Bool("not", (self,), pairwise=self.pairwise)

    def __and__(self, other) -> "Bool":
        return _combine("and", self, other)

    def __rand__(self, other) -> "Bool":
        return _combine("and", other, self)

    def __or__(self, other) -> "Bool":
        return _combine("or", self, other)

    def __ror__(self, other) -> "Bool":
        return _combine("or", other, self)

    def __bool__(self):
        raise TypeError("a program's Boolean vector has no truth value in Python: combine "
                        "vectors with ~, & and | (not `not`, `and`, `or`)")


def _as_bool(value, name: str) -> Bool:
    """A :class:`Bool`, or a Python ``True``/``False`` as a constant vector."""
    if isinstance(value, bool):
        return Bool("const", param=value)
    if not isinstance(value, Bool):
        raise TypeError(f"{name} must be a Boolean vector of a program (or True or False), "
                        f"got {type(value).__name__}")
    return value


def _combine(op: str, left, right) -> Bool:
    left, right = _as_bool(left, "each operand"), _as_bool(right, "each operand")
    return Bool(op, (left, right), pairwise=left.pairwise or right.pairwise)


def _position_wise(value, name: str) -> Bool:
    value = _as_bool(value, name)
    if value.pairwise:
        raise ValueError(f"{name} must be a vector over positions, but it depends on j "
                         "(at_j is for an attention operation's score and value)")
    return value


def Q(symbol: str) -> Bool:  # noqa: N802 - the papers' name
    """The symbol test ``Q_a(i) = [w_i = a]`` for ``symbol`` ``"0"`` or ``"1"``."""
    return Bool("Q", param=check_choice(symbol, "symbol", SYMBOLS))


def at_j(vector) -> Bool:
    """``vector`` read at the attended position ``j``, in a score or a value."""
    return Bool("at_j", (_position_wise(vector, "vector"),), pairwise=True)


def _attention(op: str, mask: str, score, value, default) -> Bool:
    check_choice(mask, "mask", MASKS)
    score, value = _as_bool(score, "score"), _as_bool(value, "value")
    default = _position_wise(default, "default")
    return Bool(op, (score, value, default), param=mask)


def leftmost(mask: str, score, value, default) -> Bool:
    """``◀_j [M(i,j), S(i,j)] V(i,j) : D(i)``: at each ``i``, ``value`` at the leftmost ``j``
    allowed by ``mask`` where ``score`` holds, else ``default`` ([yang2024masked])."""
    return _attention("leftmost", mask, score, value, default)


def rightmost(mask: str, score, value, default) -> Bool:
    """``▶_j [M(i,j), S(i,j)] V(i,j) : D(i)``: as :func:`leftmost`, at the rightmost ``j``."""
    return _attention("rightmost", mask, score, value, default)


@dataclass(frozen=True, eq=False)
class Count(Node):
    """A C-RASP count: ``sum_k c_k * #[j <= i] P_k(j) + constant``, kept in this linear form
    (``terms`` pairs each counted vector with its integer coefficient). Build it with
    :func:`count` and ``+ - *`` with integers; compare counts with ``< <= > >=``."""

    terms: tuple = ()
    constant: int = 0

    def _plus(self, other, sign: int) -> "Count":
        other = _as_count(other)
        coefficients = dict(self.terms)
        for vector, c in other.terms:
            coefficients[vector] = coefficients.get(vector, 0) + sign * c
        return Count(tuple((v, c) for v, c in coefficients.items() if c),
                     self.constant + sign * other.constant)

    def __add__(self, other) -> "Count":
        return self._plus(other, 1)

    def __radd__(self, other) -> "Count":
        return self._plus(other, 1)

    def __sub__(self, other) -> "Count":
        return self._plus(other, -1)

    def __rsub__(self, other) -> "Count":
        return _as_count(other)._plus(self, -1)

    def __neg__(self) -> "Count":
        return Count()._plus(self, -1)

    def __mul__(self, k) -> "Count":
        k = check_int(k, "a count's factor")
        return Count(tuple((v, c * k) for v, c in self.terms if c * k), self.constant * k)

    __rmul__ = __mul__

    def __ge__(self, other) -> Bool:  # C >= D: C - D >= 0
        return Bool("atleast0", param=self - _as_count(other))

    def __le__(self, other) -> Bool:
        return _as_count(other) >= self

    def __gt__(self, other) -> Bool:  # counts are integers: C > D is C - D - 1 >= 0
        return self - 1 >= other

    def __lt__(self, other) -> Bool:
        return _as_count(other) - 1 >= self

    def __eq__(self, other):
        raise TypeError("counts are compared with < <= > >= only: C equals D is "
                        "(C <= D) & (D <= C)")

    __ne__ = __eq__
    __hash__ = object.__hash__

    def __bool__(self):
        raise TypeError("a count has no truth value in Python: compare counts with < <= > >=")


def _as_count(value) -> Count:
    if isinstance(value, Count):
        return value
    return Count((), check_int(value, "a count or an integer constant"))


def count(vector) -> Count:
    """``#[j <= i] P(j)``: at each position ``i``, how many positions up to ``i`` (itself
    included) ``vector`` holds at ([yang2024counting])."""
    return Count(((_position_wise(vector, "vector"), 1),))


def _program(program) -> Bool:
    if isinstance(program, Count):
        raise TypeError("program must be a Boolean vector (a count gives no verdict: compare "
                        "it, as in count(Q('1')) > count(Q('0')))")
    return _position_wise(program, "program")


def _inputs(node: Node) -> tuple:
    """The nodes ``node`` reads."""
    if isinstance(node, Count):
        return tuple(vector for vector, _ in node.terms)
    return (node.param,) if node.op == "atleast0" else node.args


def nodes(root: Node) -> list[Node]:
    """Every node ``root`` reads, directly or not, and ``root`` itself, each after the nodes
    it reads (a topological order)."""
    if not isinstance(root, Node):
        raise TypeError(f"root must be a node of a program, got {type(root).__name__}")
    order, seen, stack = [], set(), [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
        elif id(node) not in seen:
            seen.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(_inputs(node))
                         if id(child) not in seen)
    return order


# --- Running a program, batched --------------------------------------------------------------


def _mask(mask: str, m: int, device) -> torch.Tensor:
    """``[m, m]``: whether position ``i`` (row) may attend to ``j`` (column)."""
    i = torch.arange(m, device=device)[:, None]
    j = torch.arange(m, device=device)[None, :]
    return {"all": torch.ones(m, m, dtype=torch.bool, device=device),
            "past": j < i, "future": j > i}[mask]


def _attend(op: str, mask: torch.Tensor, score: torch.Tensor, value: torch.Tensor,
            default: torch.Tensor) -> torch.Tensor:
    """Unique-hard attention on ``[B, m, m]`` (or broadcastable) score and value predicates."""
    candidates = mask & score
    m = candidates.shape[-1]
    found = candidates.any(dim=-1)
    if op == "leftmost":
        chosen = candidates.to(torch.uint8).argmax(dim=-1)  # the first of the largest
    else:
        chosen = m - 1 - candidates.flip(-1).to(torch.uint8).argmax(dim=-1)
    value = value.expand(candidates.shape)
    return torch.where(found, value.gather(-1, chosen.unsqueeze(-1)).squeeze(-1), default)


def _values(root: Node, w) -> tuple[dict, torch.Tensor]:
    """The value of every node ``root`` reads, by ``id``, on the strings ``w``."""
    strings = as_strings(w)
    if strings.shape[1] == 0:
        raise ValueError("w must hold strings of length m >= 1: a program's verdict is its "
                         "value at the last position")
    batch, m = strings.shape
    values: dict[int, torch.Tensor] = {}  # id(node) -> [B, m], or [B, m, m] when pairwise

    def at(node, pairwise: bool) -> torch.Tensor:
        """The node's value, as ``[B, m, 1]`` (at i) where a pairwise one is being made."""
        value = values[id(node)]
        return value.unsqueeze(-1) if pairwise and not node.pairwise else value

    for node in nodes(root):
        if isinstance(node, Count):
            total = torch.full((batch, m), node.constant, dtype=torch.long, device=strings.device)
            for vector, c in node.terms:
                total = total + c * values[id(vector)].long().cumsum(dim=1)
            values[id(node)] = total
            continue
        pairwise, args = node.pairwise, node.args
        if node.op == "Q":
            value = strings == int(node.param)
        elif node.op == "const":
            value = torch.full((batch, m), node.param, dtype=torch.bool, device=strings.device)
        elif node.op == "not":
            value = ~values[id(args[0])]
        elif node.op in ("and", "or"):
            left, right = at(args[0], pairwise), at(args[1], pairwise)
            value = left & right if node.op == "and" else left | right
        elif node.op == "at_j":
            value = values[id(args[0])].unsqueeze(1)  # [B, 1, m]: the value at j
        elif node.op == "atleast0":
            value = values[id(node.param)] >= 0
        else:
            score, value_at, default = (at(a, True) for a in args)
            value = _attend(node.op, _mask(node.param, m, strings.device), score, value_at,
                            values[id(args[2])])
        values[id(node)] = value
    return values, strings


def evaluate(vector, w) -> torch.Tensor:
    """The values of a vector or a count at every position of each string of ``w``
    (``LongTensor[B, m]`` or one ``str``, ``m >= 1``): ``BoolTensor[B, m]`` for a Boolean
    vector, ``LongTensor[B, m]`` for a count."""
    if not isinstance(vector, Count):
        vector = _position_wise(vector, "vector")
    values, _ = _values(vector, w)
    return values[id(vector)]


def run(program, w) -> torch.Tensor | bool:
    """The program's verdict on each string of ``w``: its value at the last position,
    ``BoolTensor[B]`` (a ``bool`` for one ``str``). ``w`` is a ``LongTensor[B, m]`` of 0s and
    1s with ``m >= 1``."""
    values, _ = _values(_program(program), w)
    verdict = values[id(program)][:, -1]
    return bool(verdict[0]) if isinstance(w, str) else verdict


# --- Compiling a program into a circuit ------------------------------------------------------


class _CircuitCompiler:
    """Compiles one program, for strings of length ``m``, into one circuit, a node at a time:
    a vector at position ``i`` and a score or value at ``(i, j)`` are made when first read, so
    the circuit holds only what its output reads. Constants are folded (``P & True`` is ``P``,
    ``NOT True`` is ``False``): a score that always holds makes an attention operation a wire."""

    def __init__(self, m: int):
        self.m = m
        self.circuit = Circuit(m)
        self.made: dict[tuple, int] = {}  # (id(node), i, j or None) -> its circuit node
        self.known: dict[int, bool] = {}  # circuit node -> its value, for constants
        self.constants: dict[bool, list[int]] = {True: [], False: []}
        self.copies: dict[int, list[int]] = {}  # node -> distinct nodes with its value

    def constant(self, value: bool, k: int = 0) -> int:
        """The ``k``-th distinct constant node of ``value`` (AND() is 1, OR() is 0)."""
        pool = self.constants[value]
        while len(pool) <= k:
            pool.append(self.circuit.gate("AND" if value else "OR"))
            self.known[pool[-1]] = value
        return pool[k]

    def gate(self, kind: str, *inputs: int) -> int:
        """A NOT, AND or OR gate, folded where its inputs decide it, reading each distinct
        input once (``P & P`` is ``P``)."""
        if kind == "NOT":
            (node,) = inputs
            if node in self.known:
                return self.constant(not self.known[node])
            return self.circuit.gate("NOT", node)
        deciding = kind == "OR"  # the input value that decides the gate
        kept = []
        for node in dict.fromkeys(inputs):
            if node not in self.known:
                kept.append(node)
            elif self.known[node] == deciding:
                return self.constant(deciding)
        if len(kept) <= 1:
            return kept[0] if kept else self.constant(not deciding)
        return self.circuit.gate(kind, *kept)

    def copy(self, node: int, k: int) -> int:
        """The ``k``-th distinct node holding ``node``'s value (0: ``node``; then AND(node)):
        a gate reads a node once, so a weight ``c`` is ``c`` distinct copies."""
        made = self.copies.setdefault(node, [node])
        while len(made) <= k:
            made.append(self.circuit.gate("AND", node))
        return made[k]

    def at(self, node: Bool, i: int, j: int | None = None) -> int:
        """The circuit node of ``node`` at position ``i`` (and ``j``, for a score or value)."""
        key = (id(node), i, j if node.pairwise else None)
        if key not in self.made:
            self.made[key] = self.make(node, i, j)
        return self.made[key]

    def make(self, node: Bool, i: int, j: int | None) -> int:
        op, args = node.op, node.args
        if op == "Q":
            return i if node.param == "1" else self.gate("NOT", i)
        if op == "const":
            return self.constant(node.param)
        if op == "not":
            return self.gate("NOT", self.at(args[0], i, j))
        if op in ("and", "or"):
            return self.gate(op.upper(), *(self.at(a, i, j) for a in args))
        if op == "at_j":
            return self.at(args[0], j)
        if op == "atleast0":
            return self.at_least_zero(node.param, i)
        return self.attend(node, i)

    def attend(self, node: Bool, i: int) -> int:
        """Unique-hard attention at ``i``: OR over ``j`` of (``j`` is a candidate and none
        before it in the order of search is) AND ``V(i, j)``, OR (no candidate) AND ``D(i)``.
        Depth: the score's, then at most 4; gates: at most 3 per ``(i, j)``."""
        score, value, default = node.args
        allowed = {"all": range(self.m), "past": range(i), "future": range(i + 1, self.m)}
        order = list(allowed[node.param])
        if node.op == "rightmost":
            order.reverse()
        candidates = [self.at(score, i, j) for j in order]
        passed = [self.gate("NOT", c) for c in candidates]  # j is not a candidate
        chosen = [self.gate("AND", c, *passed[:k], self.at(value, i, j))
                  for k, (c, j) in enumerate(zip(candidates, order, strict=True))]
        none = self.gate("AND", *passed, self.at(default, i))
        return self.gate("OR", *chosen, none)

    def at_least_zero(self, counted: Count, i: int) -> int:
        """``sum_k c_k #[j <= i] P_k(j) + constant >= 0`` at ``i``, as one MAJORITY gate.

        A term with ``c < 0`` is ``|c| * NOT P(j) - |c|``; so the condition reads
        ``S >= T`` with ``S`` a sum of ``N`` input bits (each counted vector's bits up to ``i``,
        ``|c|`` distinct copies each; constant bits go into ``T``) and ``T`` an integer.
        MAJORITY (at least half of its inputs) with ``a`` constant 1s and ``b`` constant 0s
        more holds iff ``2 S >= N - a + b``; ``b - a = 2 T - N`` makes that ``S >= T``."""
        inputs, uses, threshold = [], {}, -counted.constant
        for vector, c in counted.terms:
            for j in range(i + 1):
                bit = self.at(vector, j)
                if c < 0:
                    bit, threshold = self.gate("NOT", bit), threshold - c
                if bit in self.known:
                    threshold -= abs(c) * self.known[bit]
                    continue
                for _ in range(abs(c)):
                    uses[bit] = uses.get(bit, -1) + 1
                    inputs.append(self.copy(bit, uses[bit]))
        if threshold <= 0:
            return self.constant(True)
        if threshold > len(inputs):
            return self.constant(False)
        surplus = 2 * threshold - len(inputs)  # b - a
        padding = ([self.constant(False, k) for k in range(surplus)] if surplus > 0 else
                   [self.constant(True, k) for k in range(-surplus)])
        return self.circuit.gate("MAJORITY", *inputs, *padding)


def to_circuit(program, m: int) -> Circuit:
    """``program`` compiled into a :class:`~companion.circuits.Circuit` on ``m`` input bits
    (``1 <= m <= MAX_CIRCUIT_LENGTH``) whose output is the program's verdict: NOT and
    unbounded fan-in AND/OR gates for B-RASP (an AC⁰ circuit, [hao2022formal]), MAJORITY
    gates for each comparison of counts (TC⁰). Its depth is bounded by the program alone; an
    attention operation adds at most about ``3 m**2`` gates (half that with a mask)."""
    program = _program(program)
    m = check_int(m, "m", minimum=1, maximum=MAX_CIRCUIT_LENGTH)
    compiler = _CircuitCompiler(m)
    return compiler.circuit.set_output(compiler.at(program, m - 1))


# --- Example programs ------------------------------------------------------------------------


def _previous(vector: Bool) -> Bool:
    """``vector`` at ``i - 1`` (False at 0): the rightmost strictly-past position is ``i - 1``."""
    return rightmost("past", True, at_j(vector), False)


def _somewhere(vector: Bool) -> Bool:
    """Whether ``vector`` holds at some position (read at the last one, the whole string)."""
    return leftmost("all", at_j(vector), True, False)


def _first() -> Bool:
    return leftmost("all", True, at_j(Q("1")), False)


def _no_10() -> Bool:
    one_before = rightmost("past", at_j(Q("1")), True, False)
    return ~_somewhere(Q("0") & one_before)


def _no_11() -> Bool:
    return ~_somewhere(Q("1") & _previous(Q("1")))


def _dyck1_depth2() -> Bool:
    """0 opens and 1 closes, depth at most 2: the string starts with 0 and ends with 1, holds
    no 000 or 111, and its 00s and 11s alternate, starting with a 00 and ending with a 11."""
    zero, one = Q("0"), Q("1")
    opens_twice = zero & _previous(zero)  # a 00 ends here
    closes_twice = one & _previous(one)  # a 11 ends here
    either = opens_twice | closes_twice
    last_was_00 = rightmost("past", at_j(either), at_j(opens_twice), False)
    out_of_turn = (opens_twice & last_was_00) | (closes_twice & ~last_was_00)
    three = (opens_twice & _previous(opens_twice)) | (closes_twice & _previous(closes_twice))
    ends_open = rightmost("all", at_j(either), at_j(opens_twice), False)
    starts_with_0 = leftmost("all", True, at_j(zero), False)
    return starts_with_0 & one & ~ends_open & ~_somewhere(out_of_turn | three)


def _majority() -> Bool:
    return count(Q("1")) > count(Q("0"))


def _dyck1() -> Bool:
    """0 opens and 1 closes: no prefix closes more than it opens, and the whole is balanced."""
    opened, closed = count(Q("0")), count(Q("1"))
    dipped = count(closed > opened) > 0
    return ~dipped & (opened <= closed) & (closed <= opened)


# name -> program; the languages they recognize are defined in the chapter and the tests
EXAMPLES = {
    "first": _first(),
    "ends_in_1": Q("1"),
    "no_10": _no_10(),
    "no_11": _no_11(),
    "dyck1_depth2": _dyck1_depth2(),
    "majority": _majority(),
    "dyck1": _dyck1(),
}


def is_b_rasp(program) -> bool:
    """Whether ``program`` is a B-RASP program (no counts): its circuit is then in AC⁰."""
    return not any(isinstance(node, Count) or node.op == "atleast0"
                   for node in nodes(_program(program)))

