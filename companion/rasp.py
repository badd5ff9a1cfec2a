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

**Positional predicates** ([huang2025formal]), the two kinds that C-RASP may gain and a
transformer with absolute positions still length-generalizes on:

* ``periodic(k, r)``: ``[i ≡ r (mod k)]``, a Boolean vector that depends on the position alone;
* ``local(P, c)``: ``P(i - c)`` (False for ``i < c``), the count ``#[j <= i, j = i - c] P(j)``
  restricted to one fixed offset ``c >= 1``, which is 0 or 1.

:func:`is_c_rasp` tells a C-RASP program (no leftmost or rightmost attention) from others, and
:func:`positional_predicates` names the kinds a C-RASP program uses.

Three places read the one graph: :func:`run` (and :func:`evaluate`) interpret it on a batch of
strings, every operation one tensor computation over the batch and the positions;
:func:`to_transformer` compiles it into a transformer with hand-set weights on named dimensions
(:func:`listing` prints the program as the papers do, one line per dimension);
:func:`to_circuit` compiles it, for one length, into a :class:`companion.circuits.Circuit`:
NOT and unbounded fan-in AND/OR gates for B-RASP, MAJORITY gates too for counts. The circuit's
depth depends on the program alone and its size grows as ``m**2`` per attention operation, the
construction behind "unique-hard attention is in AC⁰" ([hao2022formal]); counting needs
MAJORITY gates, as in [merrill2022saturated].

The input alphabet is {0, 1}, as everywhere in the companion.
"""

from dataclasses import dataclass

import torch

from companion._checks import check_bool, check_choice, check_dtype, check_int
from companion.attention import self_attention
from companion.circuits import Circuit
from companion.feedforward import feed_forward
from companion.languages import as_strings
from companion.layernorm import layer_norm
from companion.layout import Layout

SYMBOLS = ("0", "1")
MASKS = ("all", "past", "future")  # j anywhere; j < i; j > i (both strict, as in the paper)
MAX_CIRCUIT_LENGTH = 1024  # to_circuit's m: an attention operation has about m**2 gates
MAX_MODULUS = 64  # periodic's k: the compiled transformer gives it a dimension per residue used
MAX_OFFSET = 64  # local's c: the compiled transformer attends c times


class Node:
    """A node of a program: a Boolean vector (:class:`Bool`) or a count (:class:`Count`)."""


@dataclass(frozen=True, eq=False)
class Bool(Node):
    """A Boolean vector over positions, or, inside an attention operation's score and value, a
    Boolean predicate of two positions ``i`` and ``j`` (one that contains :func:`at_j`).
    Build it with :func:`Q`, :func:`at_j`, :func:`leftmost`, :func:`rightmost`, the operators
    ``~ & |`` and the comparisons of :class:`Count`, never directly.

    ``op`` is one of ``"Q"``, ``"const"``, ``"not"``, ``"and"``, ``"or"``, ``"at_j"``,
    ``"leftmost"``, ``"rightmost"``, ``"atleast0"`` (a count that is at least 0),
    ``"periodic"`` and ``"local"``."""

    op: str
    args: tuple = ()
    # the symbol of Q, the constant, the mask, the count compared, (k, r) of periodic, or the
    # offset c of local
    param: object = None
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


def periodic(modulus: int, residue: int) -> Bool:
    """``[i ≡ residue (mod modulus)]``: a periodic positional predicate ([huang2025formal]),
    ``modulus >= 2`` and ``0 <= residue < modulus``."""
    modulus = check_int(modulus, "modulus", minimum=2, maximum=MAX_MODULUS)
    residue = check_int(residue, "residue", minimum=0, maximum=modulus - 1)
    return Bool("periodic", param=(modulus, residue))


def local(vector, offset: int) -> Bool:
    """``vector`` at ``i - offset`` (False for ``i < offset``): the local count
    ``#[j <= i, j = i - offset] P(j)`` of [huang2025formal], which is 0 or 1, as a Boolean
    vector (``offset >= 1``)."""
    vector = _position_wise(vector, "vector")
    offset = check_int(offset, "offset", minimum=1, maximum=MAX_OFFSET)
    return Bool("local", (vector,), param=offset)


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


def to_data(program) -> list:
    """``program`` as plain data (lists, strings, integers, booleans and None), to save it or
    to send it from one process to another: one entry per node, each after the nodes it reads,
    the program last. An entry is ``[op, [the indices of the nodes it reads], param]`` (see
    :class:`Bool` for ``op`` and ``param``, ``[k, r]`` for ``"periodic"``; ``"atleast0"``
    reads its count); a count is
    ``["count", [[index, coefficient], ...], constant]``. :func:`from_data` builds it back."""
    order = nodes(_program(program))
    index = {id(node): k for k, node in enumerate(order)}
    data = []
    for node in order:
        if isinstance(node, Count):
            data.append(["count", [[index[id(v)], c] for v, c in node.terms], node.constant])
        elif node.op == "atleast0":
            data.append(["atleast0", [index[id(node.param)]], None])
        elif node.op == "periodic":
            data.append(["periodic", [], list(node.param)])
        else:
            data.append([node.op, [index[id(a)] for a in node.args], node.param])
    return data


def from_data(data) -> Bool:
    """The program whose :func:`to_data` is ``data``, built again with this module's own
    constructors, so that data that no program gives is refused with a ``ValueError`` or
    ``TypeError`` naming the entry."""
    if not isinstance(data, list):
        raise TypeError(f"data must be a list of entries, as to_data gives, got "
                        f"{type(data).__name__}")
    if not data:
        raise ValueError("data must hold at least one entry, the program")
    built: list[Node] = []
    for k, entry in enumerate(data):
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
                and isinstance(entry[1], list)):
            raise ValueError(f"data[{k}] must be [op, [indices], param], got {entry!r}")
        op, reads, param = entry

        def node(ref, k=k):
            return built[check_int(ref, f"data[{k}]'s index of an earlier entry", minimum=0,
                                   maximum=k - 1)]

        if op == "count":
            total = _as_count(param)
            for pair in reads:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise ValueError(f"data[{k}]: a count's term must be [index, coefficient], "
                                     f"got {pair!r}")
                total = total + check_int(pair[1], f"a coefficient in data[{k}]") * count(
                    node(pair[0]))
            built.append(total)
            continue
        arity = {"Q": 0, "const": 0, "periodic": 0, "not": 1, "at_j": 1, "atleast0": 1,
                 "local": 1, "and": 2, "or": 2, "leftmost": 3, "rightmost": 3}
        if op not in arity or len(reads) != arity[op]:
            raise ValueError(f"data[{k}] must be an op of {sorted(arity)} or 'count' with its "
                             f"number of inputs, got {op!r} reading {len(reads)}")
        args = [node(ref) for ref in reads]
        if any(isinstance(a, Count) for a in args) != (op == "atleast0"):
            raise TypeError(f"data[{k}]: {op!r} reads " + (
                "a count" if op == "atleast0" else "Boolean vectors, not counts"))
        if op == "Q":
            built.append(Q(param))
        elif op == "const":
            built.append(_as_bool(check_bool(param, f"the constant of data[{k}]"), "param"))
        elif op == "not":
            built.append(~_as_bool(args[0], "its input"))
        elif op in ("and", "or"):
            built.append(_combine(op, *args))
        elif op == "at_j":
            built.append(at_j(args[0]))
        elif op == "local":
            built.append(local(args[0], param))
        elif op == "periodic":
            if not (isinstance(param, list) and len(param) == 2):
                raise ValueError(f"data[{k}]: periodic's param must be [modulus, residue], "
                                 f"got {param!r}")
            built.append(periodic(*param))
        elif op == "atleast0":
            built.append(args[0] >= 0)
        else:
            built.append(_attention(op, param, *args))
    return _program(built[-1])


# --- Running a program, batched --------------------------------------------------------------


def _mask(mask: str, m: int, device) -> torch.Tensor:
    """``[m, m]``: whether position ``i`` (row) may attend to ``j`` (column), for the masks
    ``"all"``, ``"past"`` (``j < i``), ``"future"`` (``j > i``) and ``"causal"`` (``j <= i``,
    where a compiled count averages). Any ``m``: the mask holds ``m**2`` booleans, fewer bytes
    than the ``[B, m, m]`` scores it masks."""
    if mask == "all":
        return torch.ones(m, m, dtype=torch.bool, device=device)
    i = torch.arange(m, device=device)[:, None]
    j = torch.arange(m, device=device)[None, :]
    return {"past": torch.lt, "future": torch.gt, "causal": torch.le}[mask](j, i)


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
        elif node.op == "periodic":
            k, r = node.param
            value = (torch.arange(m, device=strings.device) % k == r).expand(batch, m)
        elif node.op == "local":
            inner, c = values[id(args[0])], node.param
            value = torch.zeros_like(inner)
            value[:, c:] = inner[:, :m - c]
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
    program = _program(program)
    values, _ = _values(program, w)
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
        if op == "periodic":  # the position is known: a constant
            return self.constant(i % node.param[0] == node.param[1])
        if op == "local":  # a wire from position i - c
            return self.at(args[0], i - node.param) if i >= node.param else self.constant(False)
        if op == "atleast0":
            return self.at_least_zero(node.param, i)
        return self.attend(node, i)

    def attend(self, node: Bool, i: int) -> int:
        """Unique-hard attention at ``i``: OR over ``j`` of (``j`` is a candidate and none
        before it in the order of search is) AND ``V(i, j)``, OR (no candidate) AND ``D(i)``.
        Depth: at most ``max(score's + 1, value's, default's) + 2``; gates: two per ``(i, j)``
        and two per ``i``."""
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
    attention operation adds at most ``2 m (m + 1)`` gates."""
    program = _program(program)
    m = check_int(m, "m", minimum=1, maximum=MAX_CIRCUIT_LENGTH)
    compiler = _CircuitCompiler(m)
    return _read_by_output(compiler.circuit.set_output(compiler.at(program, m - 1)))


def _read_by_output(circuit: Circuit) -> Circuit:
    """``circuit`` without the gates that its output does not read, directly or not (folding
    constants leaves some behind: a score made, then found to hold everywhere)."""
    n = circuit.n_inputs
    read = {circuit.output}
    for node in range(circuit.n_nodes - 1, n - 1, -1):
        if node in read:
            read.update(circuit.gates[node - n][1])
    kept, new = Circuit(n), list(range(n))
    for node, (kind, inputs) in enumerate(circuit.gates, start=n):
        new.append(kept.gate(kind, *(new[i] for i in inputs)) if node in read else -1)
    return kept.set_output(new[circuit.output])


# --- Names and listings ----------------------------------------------------------------------


def _named(program: Bool) -> dict[int, str]:
    """The nodes that get a name (and a line of the listing, and a dimension of the compiled
    transformer's residual stream), by ``id``: the symbol tests ``Q_a``, each attention and
    comparison ``P1, P2, ...``, each vector a count reads that is none of these, and the
    program itself, ``Y`` (unless it is a symbol test). A periodic predicate is named
    ``i%k=r``, a dimension the embedding writes; a local one is a line ``P``."""
    names, k = {}, 0
    counted = {id(v) for node in nodes(program) if isinstance(node, Count) for v, _ in node.terms}
    for node in nodes(program):
        if isinstance(node, Count) or node.pairwise:
            continue
        if node.op == "Q":
            names[id(node)] = f"Q_{node.param}"
        elif node.op == "periodic":
            names[id(node)] = "i%{}={}".format(*node.param)
        elif node is program:
            names[id(node)] = "Y"
        elif node.op in ("leftmost", "rightmost", "atleast0", "local") or id(node) in counted:
            k += 1
            names[id(node)] = f"P{k}"
    return names


def _leaves(node: Bool, names: dict, side: str = "i") -> list[tuple[str, str]]:
    """The named vectors an expression reads, as ``(name, side)`` with the side each is read at
    (``"i"``, or ``"j"`` under :func:`at_j`), each once, in order of first appearance. A name,
    not a node: two ``Q("1")`` objects are one vector, ``Q_1``, held in one dimension."""
    if id(node) in names:
        return [(names[id(node)], side)]
    if node.op == "const":
        return []
    inner = "j" if node.op == "at_j" else side
    return list(dict.fromkeys(leaf for a in node.args for leaf in _leaves(a, names, inner)))


def _truth(node: Bool, names: dict, assignment: dict, side: str = "i") -> bool:
    """The value of an expression when each named vector it reads has the value
    ``assignment[(name, side)]``."""
    if id(node) in names:
        return assignment[(names[id(node)], side)]
    if node.op == "const":
        return node.param
    if node.op == "at_j":
        return _truth(node.args[0], names, assignment, "j")
    values = [_truth(a, names, assignment, side) for a in node.args]
    return {"not": lambda: not values[0], "and": lambda: all(values),
            "or": lambda: any(values)}[node.op]()


def _text(node: Bool, names: dict, side: str = "i") -> str:
    if node.op == "periodic":
        return "[{} ≡ {} (mod {})]".format(side, *reversed(node.param))
    if id(node) in names:
        return f"{names[id(node)]}({side})"
    if node.op == "const":
        return "1" if node.param else "0"
    if node.op == "at_j":
        return _text(node.args[0], names, "j")
    parts = [_text(a, names, side) for a in node.args]
    parts = [f"({p})" if a.op in ("and", "or") and id(a) not in names and a.op != node.op
             else p for a, p in zip(node.args, parts, strict=True)]
    if node.op == "not":
        return f"¬{parts[0]}"
    return (" ∧ " if node.op == "and" else " ∨ ").join(parts)


def _count_text(counted: Count, names: dict) -> str:
    terms = [(c, f"#[j ≤ i] {_text(v, names, 'j')}") for v, c in counted.terms]
    text = ""
    for c, term in terms:
        sign = (" - " if c < 0 else " + ") if text else ("-" if c < 0 else "")
        text += sign + (term if abs(c) == 1 else f"{abs(c)}·{term}")
    if counted.constant or not text:
        text += (" - " if counted.constant < 0 else (" + " if text else "")) + str(
            abs(counted.constant))
    return text


def listing(program) -> str:
    """The program as the papers write it, one named vector per line, the verdict ``Y`` last:
    ``P1(i) := ◀_j [j < i, Q_1(j)] 1 : 0``, ``P2(i) := #[j ≤ i] Q_1(j) - #[j ≤ i] Q_0(j) - 1
    ≥ 0``, ``P3(i) := Q_1(i - 1)``. Each line defines the vector its dimension of
    :func:`to_transformer`'s residual stream holds."""
    program = _program(program)
    names = _named(program)
    masks = {"all": "", "past": "j < i, ", "future": "j > i, "}
    lines = []
    for node in nodes(program):
        if id(node) not in names or isinstance(node, Count) or node.op in ("Q", "periodic"):
            continue
        if node.op in ("leftmost", "rightmost"):
            score, value, default = (_text(a, names) for a in node.args)
            arrow = "◀" if node.op == "leftmost" else "▶"
            body = f"{arrow}_j [{masks[node.param]}{score}] {value} : {default}"
        elif node.op == "atleast0":
            body = f"{_count_text(node.param, names)} ≥ 0"
        elif node.op == "local":
            body = _text(node.args[0], names, f"i - {node.param}")
        else:
            body = _text(node, {k: v for k, v in names.items() if k != id(node)})
        lines.append(f"{names[id(node)]}(i) := {body}")
    if program.op in ("Q", "periodic"):
        lines.append(f"Y(i) := {_text(program, names)}")
    return "\n".join(lines)


# --- Compiling a program into a transformer --------------------------------------------------


@dataclass
class Sublayer:
    """One residual sublayer of a compiled transformer: ``x + f(x)`` with ``f`` one of

    * ``"ffn"``: :func:`~companion.feedforward.feed_forward` with ``W1 [h, d]``, ``b1 [h]``,
      ``W2 [d, h]`` (column convention);
    * ``"attention"``: :func:`~companion.attention.self_attention` with ``W_Q, W_K [d, k]``,
      ``W_V [d, d]`` (row convention), score scale 1, ``kind`` ``"leftmost_hard"``,
      ``"rightmost_hard"`` (leftmost on the reversed string) or ``"softmax"``, and ``mask``
      ``"all"``, ``"past"`` (``j < i``), ``"future"`` (``j > i``) or ``"causal"``
      (``j <= i``); the hard kinds never attend to a BOS position;
    * ``"norm"``: :func:`~companion.layernorm.layer_norm` at ``eps = 0`` of ``W1 x`` (two
      entries, ``[y, -y]``, normalized to ``±[1, -1]``), written back by ``W2 [d, 2]``.

    ``name`` says which line of the program's listing it computes."""

    kind: str
    name: str
    weights: dict
    mask: str = "all"
    attention: str = "softmax"


class RaspTransformer:
    """A transformer compiled from a program by :func:`to_transformer`: an embedding, then a
    list of :class:`Sublayer`, on a residual stream whose dimensions are named by ``layout``.

    The embedding writes ``Q_0`` or ``Q_1`` (the symbol), ``string`` (1 at each symbol of
    the string) and, for each periodic predicate ``[i ≡ r (mod k)]`` the program reads, the
    dimension ``i%k=r`` (``periodic``: name -> ``(k, r)``, ``i`` the symbol's position in the
    string); a program with counts reads a BOS symbol first, at position 0 (``bos``). Every
    named vector of :func:`listing` has its dimension, which holds 1 where the vector holds and
    0 elsewhere (and 0 at BOS)."""

    def __init__(self, layout: Layout, sublayers: list[Sublayer], bos: bool,
                 dtype=torch.float64, periodic: dict | None = None):
        self.layout, self.sublayers, self.bos, self.dtype = layout, sublayers, bos, dtype
        self.periodic = periodic or {}

    def embed(self, w) -> torch.Tensor:
        """``[B, n, d]`` for strings ``w: [B, m]`` (``n = m + 1`` with BOS, else ``m``)."""
        strings = as_strings(w)
        if strings.shape[1] == 0:
            raise ValueError("w must hold strings of length m >= 1: the verdict is read at the "
                             "last symbol")
        x = torch.zeros(*strings.shape, self.layout.d, dtype=self.dtype, device=strings.device)
        x[..., self.layout["string"]] = 1
        x[..., self.layout["Q_0"]] = (strings == 0).to(self.dtype)
        x[..., self.layout["Q_1"]] = (strings == 1).to(self.dtype)
        position = torch.arange(strings.shape[1], device=strings.device)
        for name, (k, r) in self.periodic.items():
            x[..., self.layout[name]] = (position % k == r).to(self.dtype)
        if self.bos:
            start = torch.zeros(strings.shape[0], 1, self.layout.d, dtype=self.dtype,
                                device=strings.device)
            start[..., self.layout["bos"]] = 1
            x = torch.cat([start, x], dim=1)
        return x

    def forward(self, w, record: bool = False):
        """The residual stream ``[B, n, d]`` after the last sublayer; with ``record``, the list
        of streams after the embedding and after each sublayer."""
        x = self.embed(w)
        streams = [x]
        n = x.shape[1]
        for sublayer in self.sublayers:
            W = sublayer.weights
            if sublayer.kind == "ffn":
                x = x + feed_forward(x, W["W1"], W["b1"], W["W2"])
            elif sublayer.kind == "norm":
                x = x + layer_norm(x @ W["W1"].T, eps=0) @ W["W2"].T
            else:
                x = x + self._attend(sublayer, x, n)
            streams.append(x)
        return streams if record else x

    def _attend(self, sublayer: Sublayer, x: torch.Tensor, n: int) -> torch.Tensor:
        W, device = sublayer.weights, x.device
        mask = _mask(sublayer.mask, n, device)
        if sublayer.attention == "softmax":
            return self_attention(x, W["W_Q"], W["W_K"], W["W_V"], mask, "softmax", 1.0)[0]
        if self.bos:
            mask = mask & (torch.arange(n, device=device) > 0)  # hard attention skips BOS
        if sublayer.attention == "leftmost_hard":
            return self_attention(x, W["W_Q"], W["W_K"], W["W_V"], mask, "leftmost_hard",
                                  1.0)[0]
        flipped = self_attention(x.flip(-2), W["W_Q"], W["W_K"], W["W_V"], mask.flip(0, 1),
                                 "leftmost_hard", 1.0)[0]
        return flipped.flip(-2)

    def accepts(self, w) -> torch.Tensor | bool:
        """The verdict on each string of ``w``: dimension ``Y`` at the last position is 1
        (``BoolTensor[B]``, a ``bool`` for one ``str``)."""
        verdict = self.forward(w)[:, -1, self.layout["Y"]] > 0.5
        return bool(verdict[0]) if isinstance(w, str) else verdict


class _TransformerCompiler:
    """Writes the sublayers of one program with named entries, then makes the matrices.

    Every dimension that a line's sublayers write is declared before they are written, so that
    it is there, holding 0, where no unit ever writes it: a line that is false everywhere
    (``count(False)``, ``P & ~P``), or the score ``s[α]`` of an attention for query bits α
    under which the score never holds. Weights are keyed by the names of dimensions, never by
    nodes: ``Q("1")`` written twice is the one dimension ``Q_1``."""

    def __init__(self, program: Bool):
        self.names = _named(program)
        self.bos = not is_b_rasp(program)
        self.periodic = {self.names[id(node)]: node.param for node in nodes(program)
                         if isinstance(node, Bool) and node.op == "periodic"}
        self.dims = ["string", "Q_0", "Q_1"] + (["bos"] if self.bos else []) + list(
            self.periodic)
        self.made: list[Bool] = []  # the nodes a local predicate is compiled through
        # (kind, name, {matrix: {(row, column): value}}[, options of the Sublayer])
        self.specs: list[tuple] = []

    def dim(self, name: str) -> str:
        """Declares the residual dimension ``name`` (once) and returns it."""
        if name not in self.dims:
            self.dims.append(name)
        return name

    def one_hot(self, leaves: list, prefix: str) -> tuple[dict, list[tuple[str, dict]]]:
        """Hidden units of an FFN, ``prefix[α]`` = [the leaves hold the bits α] for every α
        (1 at one α at each symbol, 0 at BOS): ReLU(1 - |α| + sum (2 α_k - 1) x_k). Returns
        the units' entries of ``W1`` and, for each unit, ``(unit, {leaf: its bit in α})``."""
        W1, units = {}, []
        for alpha in range(2 ** len(leaves)):
            bits = [(alpha >> k) & 1 for k in range(len(leaves))]
            unit = f"{prefix}[{''.join(map(str, bits)) or '-'}]"
            W1[(unit, "string")] = 1 - sum(bits)
            for (name, _), bit in zip(leaves, bits, strict=True):
                W1[(unit, name)] = 2 * bit - 1
            units.append((unit, {leaf: bool(bit) for leaf, bit in zip(leaves, bits,
                                                                         strict=True)}))
        return W1, units

    def expression(self, node: Bool, name: str) -> None:
        """One FFN: the vector ``name`` = the sum of the minterms of ``node`` over its leaves
        (at most one holds)."""
        line = self.dim(name)
        names = {k: v for k, v in self.names.items() if k != id(node)}
        hidden, units = self.one_hot(_leaves(node, names), f"{name}.minterm")
        W1, W2 = {}, {}
        for unit, bits in units:
            if _truth(node, names, bits):
                W1.update({key: v for key, v in hidden.items() if key[0] == unit})
                W2[(line, unit)] = 1
        self.specs.append(("ffn", name, {"W1": W1, "b1": {}, "W2": W2}))

    def attention(self, node: Bool, name: str) -> None:
        """Three sublayers. An FFN writes the one-hot ``x[α]`` of the named vectors read at
        ``i`` and, for each α, the score ``s[α]`` and the value ``v[α]`` that a query with
        those bits would see at this position as ``j``. A unique-hard attention with scores
        ``x(i) · s(j)``, 0 or 1, retrieves ``s`` and ``v`` from the leftmost (rightmost) ``j``
        that scores 1, or from one that scores 0 where none does, or nothing where no ``j`` is
        allowed. An FFN writes, for the α that holds, the value retrieved where its score is 1
        and the default elsewhere."""
        score, value, default = node.args
        leaves = [leaf for a in node.args for leaf in _leaves(a, self.names)]
        at_i = list(dict.fromkeys(leaf for leaf in leaves if leaf[1] == "i"))
        at_j = list(dict.fromkeys(leaf for leaf in leaves if leaf[1] == "j"))
        W1, rows = self.one_hot(at_i, f"{name}.x")
        more, columns = self.one_hot(at_j, f"{name}.j")
        W1 |= more
        alphas = [row[len(name) + 2:] for row, _ in rows]  # the bits α, as "[01]"
        for a in alphas:  # the line's dimensions, those that no unit writes included
            for part in ("x", "s", "v", "got s", "got v"):
                self.dim(f"{name}.{part}{a}")
        line = self.dim(name)
        W2 = {(row, row): 1 for row, _ in rows}
        hits = set()  # the α for which the score and the value hold at some j
        for (_, i_bits), a in zip(rows, alphas, strict=True):
            for column, j_bits in columns:
                bits = i_bits | j_bits
                scores, values = _truth(score, self.names, bits), _truth(value, self.names, bits)
                if scores:
                    W2[(f"{name}.s{a}", column)] = 1
                if values:
                    W2[(f"{name}.v{a}", column)] = 1
                if scores and values:
                    hits.add(a)
        self.specs.append(("ffn", f"{name}: x, s, v", {"W1": W1, "b1": {}, "W2": W2}))
        self.specs.append(("attention", f"{name}: attend", {
            "W_Q": {(f"{name}.x{a}", a): 1 for a in alphas},
            "W_K": {(f"{name}.s{a}", a): 1 for a in alphas},
            "W_V": {(f"{name}.{part}{a}", f"{name}.got {part}{a}"): 1
                    for a in alphas for part in "sv"}},
            {"mask": node.param, "attention": f"{node.op}_hard"}))
        W1, b1, W2 = {}, {}, {}
        for (row, i_bits), a in zip(rows, alphas, strict=True):
            found = f"{name}.got s{a}"
            if a in hits:  # x[α] AND the score and the value there
                unit = f"x{a} & s & v"
                W1 |= {(unit, row): 1, (unit, found): 1, (unit, f"{name}.got v{a}"): 1}
                b1[unit] = -2
                W2[(line, unit)] = 1
            if _truth(default, self.names, i_bits):  # x[α] AND NOT the score there
                unit = f"x{a} & not s"
                W1 |= {(unit, row): 1, (unit, found): -1}
                W2[(line, unit)] = 1
        self.specs.append(("ffn", name, {"W1": W1, "b1": b1, "W2": W2}))

    def local(self, node: Bool, name: str) -> None:
        """``P(i - c)`` by ``c`` attentions, each to the rightmost earlier position (as
        :func:`rightmost` with the mask ``"past"`` and a score that always holds); the
        intermediate vectors ``P(i - 1), ..., P(i - c + 1)`` are ``name.1``, ... ."""
        previous = node.args[0]
        for step in range(1, node.param + 1):
            shifted = rightmost("past", True, at_j(previous), False)
            self.made.append(shifted)  # kept, so that its id stays its own
            self.names[id(shifted)] = name if step == node.param else f"{name}.{step}"
            self.attention(shifted, self.names[id(shifted)])
            previous = shifted

    def comparison(self, node: Bool, name: str) -> None:
        """``L >= 0``: ``(L + 1/2) / (t + 1)`` by uniform causal attention (BOS included), its
        sign by layer normalization, the bit by an FFN. A vector counted through two nodes of
        one dimension (two ``Q("1")`` objects) gets the sum of their coefficients."""
        counted = node.param
        mean, sign, line = (self.dim(d) for d in (f"{name}.mean", f"{name}.sign", name))
        W_V = {("bos", mean): counted.constant + 0.5}
        for vector, c in counted.terms:
            key = (self.names[id(vector)], mean)
            W_V[key] = W_V.get(key, 0) + c
        self.specs.append(("attention", f"{name}: average",
                           {"W_Q": {}, "W_K": {}, "W_V": W_V},
                           {"mask": "causal", "attention": "softmax"}))
        self.specs.append(("norm", f"{name}: sign", {
            "W1": {("y", mean): 1, ("-y", mean): -1}, "W2": {(sign, "y"): 1}}))
        self.specs.append(("ffn", name, {
            "W1": {("bit", sign): 1, ("bit", "string"): 1}, "b1": {"bit": -1},
            "W2": {(line, "bit"): 1}}))

    def compile(self, program: Bool, dtype) -> RaspTransformer:
        for node in nodes(program):
            if id(node) not in self.names or isinstance(node, Count) or node.op in (
                    "Q", "periodic"):
                continue
            name = self.names[id(node)]
            if node.op in ("leftmost", "rightmost"):
                self.attention(node, name)
            elif node.op == "local":
                self.local(node, name)
            elif node.op == "atleast0":
                self.comparison(node, name)
            else:
                self.expression(node, name)
        if program.op in ("Q", "periodic"):  # Y(i) := Q_a(i), or [i ≡ r (mod k)]
            self.expression(Bool("and", (program, Bool("const", param=True))), "Y")
        layout = Layout(*self.dims)
        return RaspTransformer(layout, [self._sublayer(spec, layout, dtype)
                                        for spec in self.specs], self.bos, dtype,
                               self.periodic)

    @staticmethod
    def _sublayer(spec, layout: Layout, dtype) -> Sublayer:
        kind, name, entries, *options = spec
        options = options[0] if options else {}
        if kind == "attention":
            keys = Layout(*dict.fromkeys(["score"] + [c for _, c in entries["W_Q"]]))
            weights = {"W_Q": keys.matrix(layout, {(c, r): v for (r, c), v in
                                                   entries["W_Q"].items()}, dtype).T,
                       "W_K": keys.matrix(layout, {(c, r): v for (r, c), v in
                                                   entries["W_K"].items()}, dtype).T,
                       "W_V": layout.matrix(layout, {(c, r): v for (r, c), v in
                                                     entries["W_V"].items()}, dtype).T}
            return Sublayer(kind, name, weights, **options)
        hidden = Layout(*dict.fromkeys(r for r, _ in entries["W1"]))
        weights = {"W1": hidden.matrix(layout, entries["W1"], dtype),
                   "W2": layout.matrix(hidden, entries["W2"], dtype)}
        if kind == "ffn":
            weights["b1"] = hidden.vector(entries["b1"], dtype)
        return Sublayer(kind, name, weights, **options)


def to_transformer(program, dtype=torch.float64) -> RaspTransformer:
    """``program`` compiled into a :class:`RaspTransformer` with hand-set weights, whose
    :meth:`~RaspTransformer.accepts` gives the program's verdicts.

    Each line of :func:`listing` becomes sublayers: a Boolean expression one FFN (an OR of
    minterms); an attention operation an FFN (one-hots of the named vectors its score and
    value read at ``i`` and at ``j``), a unique-hard attention whose scores are 0 or 1 (the
    score predicate's truth table, a bilinear form of the two one-hots) and an FFN (the
    value at the chosen ``j``, or the default); a comparison of counts a softmax attention
    with causal masking, uniform over the BOS position and the string up to ``i`` (the
    average ``(L + 1/2) / (t + 1)`` of the count ``L`` at the ``t``-th symbol), a layer
    normalization at ``eps = 0`` (its sign) and an FFN (the bit); a local predicate
    ``P(i - c)`` ``c`` attentions to the previous position; a periodic predicate a dimension
    of the embedding (a position encoding of period ``k``). B-RASP needs no position
    encoding and no BOS ([yang2024masked]); counts need the BOS, as in [yang2024counting].

    Every line's dimensions are declared before any sublayer writes them (a line false
    everywhere holds 0 in its own), and weights are keyed by the names of dimensions (a symbol
    test written as several ``Q`` objects is one dimension, and a count of it sums their
    coefficients). The transformer takes strings of any length ``m >= 1``: no weight depends
    on it and nothing caps it, but each attention sublayer holds ``[B, n, n]`` scores, so
    memory grows as ``B n**2``."""
    program = _program(program)
    return _TransformerCompiler(program).compile(program, check_dtype(dtype))


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


def is_c_rasp(program) -> bool:
    """Whether ``program`` is a C-RASP program, with positional predicates or without: counts,
    comparisons, Boolean operations, symbol tests, :func:`periodic` and :func:`local`, but no
    :func:`leftmost` or :func:`rightmost` attention."""
    return not any(isinstance(node, Bool) and node.op in ("leftmost", "rightmost")
                   for node in nodes(_program(program)))


def positional_predicates(program) -> tuple:
    """The kinds of positional predicate a C-RASP program reads, a sorted tuple of
    ``"local"`` and ``"periodic"``: ``()`` for C-RASP without positions, the class that
    [huang2025formal] match with transformers without position encoding (NoPE). A program
    with leftmost or rightmost attention is refused with a ``ValueError``."""
    program = _program(program)
    if not is_c_rasp(program):
        raise ValueError("program must be a C-RASP program: it uses leftmost or rightmost "
                         "attention (B-RASP), which C-RASP does not have")
    return tuple(sorted({node.op for node in nodes(program)
                         if isinstance(node, Bool) and node.op in ("local", "periodic")}))

