"""Intermediate steps: a causal decoder that writes down the state of a finite automaton as it
reads, one state per input symbol ([merrill2024expressive]; [chiang2024esslli] §5.2.3).

The decoder's sequence is the prompt ``w_1 ... w_m START`` followed by the states it writes,
``q_1 ... q_m``, with ``q_j = delta(q_{j-1}, w_j)``: position ``m + j`` holds ``q_j`` (``START``
stands for ``q_0``) and is where the decoder computes ``q_{j+1}``. Positions count from 0, so
``w_j`` sits at position ``j - 1``. The token ids are the symbols ``0..k-1``, then the states
(``k + q``), then ``START``.

Two layers of :class:`~companion.transformer.EncoderLayer` (one head each, the column
convention ``q = W^Q a``, no layer normalization, so ``c = a + att(a)``, ``a' = c + ffn(c)``):

1. every query finds ``START`` (its key is ``is_start``) and copies START's position ``m``;
2. at position ``i = m + j`` the query ``C (i - m, 1)`` meets the keys ``(2 i', -i'^2)``: the
   score ``C (2 i' j - i'^2) = C (j^2 - (i' - j)^2)`` is largest at ``i' = j``, where
   ``w_{j+1}`` is, and at least ``C`` smaller anywhere else; the head copies that symbol.
   The FFN has one ReLU per (state, symbol) pair, ``relu([q_j = q] + [w_{j+1} = a] - 1)``,
   which writes a 1 into ``next=delta(q, a)``; the output layer reads ``next``.

The attention scores are not scaled by ``1/sqrt(d)``, and ``C = 1024``, so every other
position's weight, at most ``exp(-C)``, underflows to exactly 0: the attention is hard. The
scores are integers times ``C`` of size below ``2 C N^2`` (``N = 2m`` the last position), so
all is exact while ``8 m^2`` fits the significand (:func:`exact_length`: 2^53 in float64,
2^24 in float32). Beyond that the gap ``C`` between neighbouring positions can be rounded
away, which happens once the scores ``C j^2`` reach ``C 2^24`` in float32, near ``j = 4096``.

:func:`decode` runs greedy decoding for a whole batch: one pass over the prompt (a causal mask),
then one step per written state, with the keys and values of earlier positions kept in a
:class:`Cache` (no recomputation; only the few rows that later steps read).
:func:`forced_states` checks the same outcome in one causal pass (teacher forcing). The
companion's :class:`~companion.transformer.Encoder` has no causal mask and reads one logit at
CLS, so :class:`Decoder` reuses its layers' weights and feed-forward networks but computes the
masked attention itself.

:func:`compile_tm` builds a decoder of the same kind that runs a one-tape Turing machine, one
move per written token, with a layer-norm hash to find the head's cell (its docstring has the
construction).

:func:`compile_circuit` builds a decoder that evaluates a Boolean circuit one gate per written
token, at a precision that does not grow with the circuit ([li2024chain] Thm. 3.3; its
docstring has the construction).
"""

import itertools
import math

import torch
from torch import nn

from companion._checks import (
    check_bool,
    check_dfa,
    check_dtype,
    check_int,
    check_tensor,
    check_tm,
)
from companion.circuits import Circuit
from companion.languages import as_strings, generator_permutations
from companion.layernorm import layer_norm
from companion.layout import Layout
from companion.precision import at_precision
from companion.runtime import using_threads
from companion.transformer import MAX_WIDTH, EncoderLayer

SCALE = 1024.0  # C: the score gap between the retrieved position and any other
SCORE_BUDGET = 2**22  # attention scores held at once by Decoder.run
MAX_PAIRS = MAX_WIDTH
"""The most (state, symbol) pairs of :func:`compile_dfa`, one FFN unit each."""
SIGNIFICAND_BITS = {torch.float64: 53, torch.float32: 24, torch.float16: 11, torch.bfloat16: 8}
"""The dtypes a decoder computes in, each with the bits of its significand."""


def _check_float(dtype) -> torch.dtype:
    """``dtype``, one of the dtypes of :data:`SIGNIFICAND_BITS`."""
    if check_dtype(dtype) not in SIGNIFICAND_BITS:
        raise ValueError(f"dtype must be one of {list(SIGNIFICAND_BITS)}, got {dtype}")
    return dtype


class Cache:
    """What a forward pass needs from earlier positions, and no more: per layer, the keys and
    values of the positions done so far, and the position embeddings ``[N, d]`` of all ``N``
    positions.

    Only the rows that later steps read are kept. A score ``q . k`` sums ``q_r k_r`` over the
    rows ``r`` of the query/key space, and a row on which ``W^Q`` or ``W^K`` is zero (in every
    head) adds exact zeros, so the keys keep the ``r_K`` rows on which both are nonzero in some
    head: ``keys [heads, B, r_K, N]`` (positions last, so that ``query @ keys`` reads them in
    place). A value ``W^V a`` is ``d`` wide but zero off the ``r_V`` rows that ``W^V`` writes
    (``m`` in an automaton's first layer, the ``in=a`` in its second), so the values keep
    those, ``values [heads, B, N, r_V]``, and the attention's result is added back on them.
    The sums are over the same nonzero terms as with whole rows, so the results are the same
    (where a sum rounds, as the uniform average before ``START`` does, only the order of its
    terms may differ), while a step costs ``O(B N (r_K + r_V))`` in attention instead of
    ``O(B N d)`` (S5's decoder: ``d = 249``; ``r_K`` and ``r_V`` are 1 in the first layer, 2
    in the second). ``weights[n]`` holds layer ``n``'s ``(W_Q, W_K, W_V)`` cut to those rows,
    and ``value_rows[n]`` the rows; both are found once, here, not at every step."""

    def __init__(self, decoder, batch: int, length: int):
        like = decoder.embedding
        self.weights, self.value_rows, self.keys, self.values = [], [], [], []
        for layer in decoder.layers:
            W_Q, W_K, W_V = layer.W_Q, layer.W_K, layer.W_V  # [heads, rows, d]
            key_rows = ((W_Q != 0).any(-1) & (W_K != 0).any(-1)).any(0).nonzero()[:, 0]
            value_rows = (W_V != 0).any(-1).any(0).nonzero()[:, 0]
            self.weights.append((W_Q[:, key_rows], W_K[:, key_rows], W_V[:, value_rows]))
            self.value_rows.append(value_rows)
            self.keys.append(like.new_zeros(len(W_K), batch, len(key_rows), length))
            self.values.append(like.new_zeros(len(W_V), batch, length, len(value_rows)))
        self.positions = decoder.positions(torch.arange(length, device=like.device)).to(like)


class LayerNormHash(nn.Module):
    """The layer-norm hash of [merrill2024expressive] §3 as a sublayer: for each of ``g`` pairs
    of scalars ``(u, v)`` read from the residual stream by ``W_in [g, 2, d]``, the layer
    normalization of ``[u, v, -u, -v]``, written back by ``W_out [d, g, 4]`` and added (a layer
    normalization of a projection of the residual stream: their projected pre-norm). The
    result is ``[x, 1, -x, -1] / sqrt((x^2 + 1) / 2)`` with ``x = u / v`` for ``v > 0``,
    whatever the common scale of ``u`` and ``v``, and two hashes have the inner product
    ``4 (x y + 1) / sqrt((x^2 + 1)(y^2 + 1))``, which is 4 exactly when ``x = y``. Its ``eps``
    is the dtype's smallest normal number, so that ``(0, 0)`` hashes to the zero vector."""

    def __init__(self, W_in, W_out):
        super().__init__()
        self.W_in = nn.Parameter(W_in, requires_grad=False)
        self.W_out = nn.Parameter(W_out, requires_grad=False)

    def forward(self, a):
        """``a [..., d]`` plus the hashes of its ``g`` pairs, written where ``W_out`` says."""
        uv = torch.einsum("gkd,...d->...gk", self.W_in, a)
        z = torch.cat([uv, -uv], dim=-1)  # [u, v, -u, -v]
        hashed = layer_norm(z, eps=torch.finfo(a.dtype).tiny)
        return a + torch.einsum("dgk,...gk->...d", self.W_out, hashed)


class Decoder(nn.Module):
    """A causal decoder: ``embedding [V, d]`` rows for the ``V`` tokens (named by ``tokens``), a
    position embedding ``positions(i: LongTensor[N]) -> [N, d]``, layers
    (:class:`~companion.transformer.EncoderLayer`), and the logits ``output_weight [S, d] @ a``
    of the ``S`` tokens it writes, the token ids ``first_written, ..., first_written + S - 1``.
    ``layout`` names the ``d`` dimensions. ``hashes`` maps a layer's index to a
    :class:`LayerNormHash` applied to the residual stream just before that layer's attention.
    :func:`compile_dfa` and :func:`compile_tm` build one."""

    def __init__(self, embedding, positions, layers, output_weight, first_written: int,
                 layout, tokens, hashes: dict | None = None):
        super().__init__()
        self.embedding = nn.Parameter(embedding, requires_grad=False)
        self.positions, self.layout, self.tokens = positions, layout, list(tokens)
        self.layers = nn.ModuleList(layers)
        self.hashes = nn.ModuleDict({str(n): h for n, h in (hashes or {}).items()})
        self.output_weight = nn.Parameter(output_weight, requires_grad=False)
        self.first_written = first_written

    def forward(self, tokens, start: int, cache: Cache, record: list | None = None,
                attention: list | None = None):
        """Logits ``[B, t, S]`` for the tokens ``[B, t]`` at positions ``start, ...,
        start + t - 1``, after storing their keys and values in ``cache``; position ``i``
        attends to positions ``0, ..., i`` only (the causal mask). ``record``, a list, receives
        the stages ``[a0, c1, a1, c2, ...]`` (each ``[B, t, d]``); ``attention``, a list, each
        layer's weights ``[heads, B, t, start + t]``."""
        end = start + tokens.shape[1]
        where = cache.positions.device
        causal = (torch.arange(start, end, device=where)[:, None]
                  >= torch.arange(end, device=where)) if end > start + 1 else None
        a = self.embedding[tokens] + cache.positions[start:end]
        stages = [a]
        for n, (layer, keys, values) in enumerate(zip(self.layers, cache.keys, cache.values,
                                                      strict=True)):
            if str(n) in self.hashes:
                a = self.hashes[str(n)](a)
            W_Q, W_K, W_V = cache.weights[n]  # cut to the rows that are read (see Cache)
            keys[..., start:end] = W_K.unsqueeze(1) @ a.transpose(1, 2)  # [heads, B, r_K, t]
            values[:, :, start:end] = a @ W_V.transpose(1, 2).unsqueeze(1)  # [heads, B, t, r_V]
            query = a @ W_Q.transpose(1, 2).unsqueeze(1)  # [heads, B, t, r_K]
            scores = query @ keys[..., :end]  # [heads, B, t, end]
            if causal is not None:  # one position sees all the keys so far
                scores = scores.masked_fill(~causal, -math.inf)
            alpha = torch.softmax(scores, dim=-1)
            if attention is not None:
                attention.append(alpha)
            mixed = (alpha @ values[:, :, :end]).sum(0)  # [B, t, r_V]
            c = a.index_add(-1, cache.value_rows[n], mixed)  # added on the value rows
            a = c + layer.ffn(c)
            stages += [c, a]
        if record is not None:
            record.append(stages)
        return a @ self.output_weight.T

    def run(self, tokens, start: int, cache: Cache, record: list | None = None):
        """The greedy choice ``[B, t]`` (0 for the first written token, ...) at each of the
        positions ``start, ..., start + t - 1`` of ``tokens [B, t]``: :meth:`forward` on blocks
        of positions small enough that at most ``2**22`` scores are held at once."""
        B, t = tokens.shape
        heads = max(layer.W_Q.shape[0] for layer in self.layers)
        block = max(1, SCORE_BUDGET // (heads * B * (start + t)))
        return torch.cat([self(tokens[:, i:i + block], start + i, cache, record).argmax(-1)
                          for i in range(0, t, block)], dim=1)


def compile_dfa(transitions, start: int, accepting, dtype=torch.float64) -> Decoder:
    """A :class:`Decoder` that writes the states of the DFA ``transitions[state][symbol]``
    (states ``0..S-1``, symbols ``0..k-1``) from state ``start``; ``accepting`` lists the
    accepting states. The construction, its layout and its precision are in the module
    docstring; :func:`decode` runs it. Its FFN has one unit per (state, symbol) pair, so
    ``S * k`` is at most :data:`MAX_PAIRS` (4096)."""
    table, start, final = check_dfa(transitions, start, accepting, max_pairs=MAX_PAIRS)
    S, k = table.shape
    pairs = list(itertools.product(range(S), range(k)))
    L = Layout(*(f"sym={a}" for a in range(k)), *(f"state={q}" for q in range(S)),
               "is_start", "1", "i", "i^2", "m",
               *(f"in={a}" for a in range(k)), *(f"next={q}" for q in range(S)))
    hid = Layout("i-m", "1")  # the query/key space
    pair = Layout(*(f"q={q},a={a}" for q, a in pairs))
    embedding = torch.stack([*(L.vector({f"sym={a}": 1}) for a in range(k)),
                             *(L.vector({f"state={q}": 1}) for q in range(S)),
                             L.vector({"is_start": 1, f"state={start}": 1})])

    def positions(i):
        pe = torch.zeros(len(i), L.d, dtype=torch.float64, device=i.device)
        pe[:, L["1"]], pe[:, L["i"]], pe[:, L["i^2"]] = 1.0, i.double(), i.double() ** 2
        return pe

    find_start = EncoderLayer(L.d, d_hid=2, heads=1, d_ff=1)
    fetch = EncoderLayer(L.d, d_hid=2, heads=1, d_ff=len(pairs))
    with torch.no_grad():
        find_start.W_Q[0] = hid.matrix(L, {("1", "1"): SCALE})
        find_start.W_K[0] = hid.matrix(L, {("1", "is_start"): 1.0})
        find_start.W_V[0] = L.matrix(L, {("m", "i"): 1.0})
        fetch.W_Q[0] = hid.matrix(L, {("i-m", "i"): SCALE, ("i-m", "m"): -SCALE,
                                      ("1", "1"): SCALE})
        fetch.W_K[0] = hid.matrix(L, {("i-m", "i"): 2.0, ("1", "i^2"): -1.0})
        fetch.W_V[0] = L.matrix(L, {(f"in={a}", f"sym={a}"): 1.0 for a in range(k)})
        fetch.W_F1.copy_(pair.matrix(L, {entry: 1.0 for q, a in pairs for entry in (
            (f"q={q},a={a}", f"state={q}"), (f"q={q},a={a}", f"in={a}"))}))
        fetch.b_F1.fill_(-1.0)
        fetch.W_F2.copy_(L.matrix(pair, {(f"next={int(table[q, a])}", f"q={q},a={a}"): 1.0
                                         for q, a in pairs}))
    output_weight = torch.stack([L.vector({f"next={q}": 1.0}) for q in range(S)])
    tokens = [*(str(a) for a in range(k)), *(f"s{q}" for q in range(S)), "START"]
    decoder = Decoder(embedding, positions, [find_start, fetch], output_weight, k, L, tokens)
    decoder.transitions, decoder.start, decoder.accepting = table, start, final
    return decoder.to(_check_float(dtype))


def parity_decoder(dtype=torch.float64) -> Decoder:
    """PARITY as a two-state DFA: state = the parity so far, start 0, accept 1."""
    return compile_dfa([[0, 1], [1, 0]], start=0, accepting=[1], dtype=dtype)


def word_problem_dfa(generators=("(01)", "(01234)"), k: int = 5):
    """The word problem of ``S_k`` over the letters ``generators`` (permutations in cycle
    notation, applied left to right as in :func:`companion.languages.word_problem`) as a DFA
    ``(transitions, start, accepting)``: a state is the product so far, one of the ``k!``
    permutations (state 0 the identity), and it accepts the identity."""
    k = check_int(k, "k", minimum=1, maximum=6)
    letters = generator_permutations(generators, k)
    states = list(itertools.permutations(range(k)))
    number = {p: q for q, p in enumerate(states)}
    transitions = [[number[tuple(g[image] for image in p)] for g in letters] for p in states]
    return transitions, 0, [0]


MOVES = (-1, 0, 1)
"""The head's moves a Turing-machine decoder writes: left, stay (only where a left move at cell
0 is refused, or the machine has halted) and right."""
MAX_TM_POSITIONS = 4096
"""The most positions (prompt and moves) a :func:`compile_tm` decoder is built for."""


def tm_scale(max_positions: int) -> float:
    """``C = R (N + 1) (N^2 + 1)^2``: the factor of the hash scores in :func:`compile_tm` for
    ``N = max_positions``, so that every score gap is at least ``R = SCALE = 1024``."""
    return SCALE * (max_positions + 1) * (max_positions**2 + 1) ** 2


def tm_bits(max_positions: int) -> float:
    """``log2(4 C / R)``: the bits of significand that resolve the scores of a
    :func:`compile_tm` decoder for ``N = max_positions`` (of size about ``4 C``) to within its
    gap ``R``; a dtype should have a few more (:data:`TM_MARGIN_BITS`)."""
    return math.log2(4 * tm_scale(max_positions) / SCALE)


TM_MARGIN_BITS = 4
"""The bits that :func:`compile_tm` asks of a dtype beyond :func:`tm_bits`: the hash and the
inner products round too."""


def tm_max_positions(dtype=torch.float64) -> int:
    """The largest ``max_positions`` that :func:`compile_tm` builds in ``dtype`` without
    ``allow_rounding``: the largest ``N <= MAX_TM_POSITIONS`` with ``tm_bits(N) +
    TM_MARGIN_BITS`` bits of significand, or 1 where not even ``N = 2`` has them."""
    bits = SIGNIFICAND_BITS[_check_float(dtype)]
    return max((N for N in range(2, MAX_TM_POSITIONS + 1)
                if tm_bits(N) + TM_MARGIN_BITS <= bits), default=1)


def compile_tm(transitions, start: int, accepting, rejecting, blank: int = 2,
               max_positions: int = 512, dtype=torch.float64,
               allow_rounding: bool = False) -> Decoder:
    """A :class:`Decoder` that runs a one-tape Turing machine, writing one move per step
    ([merrill2024expressive] §3; [perez2021attention]).

    ``transitions`` maps ``(state, symbol)`` to ``(state', symbol', move)``, move -1 (left)
    or +1 (right); the input is over {0, 1}, ``blank`` fills the rest of the tape, and the head
    starts on cell 0 in state ``start``. A move left at cell 0 stays there; a halting state
    (``accepting`` or ``rejecting``) or a missing transition ends the run, and the decoder then
    writes the same move, ``(q, a, 0)``, for ever. The sequence is ``w START`` and then the moves
    ``(q_s, b_s, d_s)``, each a token: ``q_s`` the state after step ``s``, ``b_s`` the symbol it
    wrote, ``d_s`` in :data:`MOVES`. The decoder is built for sequences of up to
    ``max_positions`` positions (at most :data:`MAX_TM_POSITIONS`).

    Two layers of :class:`~companion.transformer.EncoderLayer` and a :class:`LayerNormHash`:

    1. uniform causal attention averages the moves and the START flag: position ``i`` gets
       ``h/(i+1)`` and ``1/(i+1)``, ``h`` the head's cell, the sum of the moves so far; the FFN
       forms each position's cell key ``(u, v)``, ``(c/(i+1), 1/(i+1))`` for a move that wrote
       cell ``c = h - d``, ``(j, 1)`` for the input symbol on cell ``j`` and ``(0, 0)`` for
       START, and ``i`` for the moves (recency);
    2. the layer-norm hash turns ``(h/(i+1), 1/(i+1))`` and the cell keys into unit vectors
       whose inner product is 4 exactly for the same cell; the head's query meets them with
       scores ``C (hash . hash) + R i`` for a move (the latest write to the cell wins) and
       ``C (4 - delta)`` for START, ``delta = 1 / (N^2 + 1)^2``, above any other cell and below
       the head's own (a blank, never written), with :func:`tm_scale` ``C``; the FFN applies the
       transition to (the current state, the symbol read), one ReLU per pair, and a second for
       a left move that would leave cell 0 (read from the hash: its second entry is
       ``sqrt(2)`` exactly at cell 0, at most 1 elsewhere).

    Every score gap is at least ``R = 1024``, so every weight but the largest is below
    ``e^-1024`` times it and underflows to 0, while the scores, of size about ``4 C``, must be
    resolved to well within ``R``: :func:`tm_bits` bits of significand. ``compile_tm`` refuses
    a ``dtype`` that lacks them with :data:`TM_MARGIN_BITS` to spare (float64 holds ``N`` up to
    675, float32 to 11: :func:`tm_max_positions`), and one whose range does not hold ``C``
    (float16), unless ``allow_rounding``, which builds the decoder anyway, to study where
    rounding breaks it.
    """
    table, start, accepting, rejecting, blank = check_tm(transitions, start, accepting,
                                                         rejecting, blank)
    N = check_int(max_positions, "max_positions", minimum=2, maximum=MAX_TM_POSITIONS)
    dtype, allow_rounding = _check_float(dtype), check_bool(allow_rounding, "allow_rounding")
    if 4 * tm_scale(N) > torch.finfo(dtype).max:
        raise ValueError(f"dtype: the scores of a decoder for max_positions = {N} reach "
                         f"{4 * tm_scale(N):.3g}, beyond the largest {dtype} "
                         f"({torch.finfo(dtype).max:.3g})")
    if N > tm_max_positions(dtype) and not allow_rounding:
        raise ValueError(f"max_positions: a decoder for {N} positions needs about "
                         f"{tm_bits(N):.0f} + {TM_MARGIN_BITS} bits of significand, and "
                         f"{dtype} has {SIGNIFICAND_BITS[dtype]}; use fewer positions or "
                         "float64, or pass allow_rounding=True to study the errors")
    states = {start} | accepting | rejecting | {q for q, _ in table} | {
        r for r, _, _ in table.values()}
    symbols = {0, 1, blank} | {a for _, a in table} | {b for _, b, _ in table.values()}
    S, G = max(states) + 1, max(symbols) + 1
    moves = list(itertools.product(range(S), range(G), MOVES))
    width = 2 * G + S + 21 + len(moves)  # the layout below: one dimension per move token
    if width > MAX_WIDTH:
        raise ValueError(f"transitions: {S} states x {G} tape symbols make {len(moves)} move "
                         f"tokens and a model dimension of {width}, above {MAX_WIDTH}")
    L = Layout(*(f"holds={a}" for a in range(G)), *(f"state={q}" for q in range(S)),
               "is_input", "is_start", "is_move", "move", "right", "left", "1", "i",
               "h/(i+1)", "1/(i+1)", "key_u", "key_v", "recency",
               *(f"q_hash{k}" for k in range(4)), *(f"k_hash{k}" for k in range(4)),
               *(f"read={a}" for a in range(G)), *(f"next={t}" for t in range(len(moves))))
    index = {move: t for t, move in enumerate(moves)}
    embedding = torch.stack([
        *(L.vector({f"holds={a}": 1, "is_input": 1}) for a in (0, 1)),
        L.vector({f"holds={blank}": 1, "is_start": 1, f"state={start}": 1}),
        *(L.vector({"is_move": 1, f"state={q}": 1, f"holds={b}": 1, "move": d,
                    "right": float(d == 1), "left": float(d == -1)}) for q, b, d in moves)])

    def positions(i):
        pe = torch.zeros(len(i), L.d, dtype=torch.float64, device=i.device)
        pe[:, L["1"]], pe[:, L["i"]] = 1.0, i.double()
        return pe

    count = EncoderLayer(L.d, d_hid=1, heads=1, d_ff=6)  # scores 0: the uniform average
    units = Layout("d/(i+1) right", "d/(i+1) left", "j", "1/(i+1) move", "input", "i move")
    hashed = LayerNormHash(torch.zeros(2, 2, L.d), torch.zeros(L.d, 2, 4))
    read = EncoderLayer(L.d, d_hid=5, heads=1, d_ff=2 * S * G)
    hid = Layout("x0", "x1", "x2", "x3", "const")
    pairs = Layout(*(f"{kind} q={q},a={a}" for q in range(S) for a in range(G)
                     for kind in ("go", "stay")))
    C, R, lin = tm_scale(N), SCALE, 1 / (math.sqrt(2) - 1)
    with torch.no_grad():
        count.W_V[0] = L.matrix(L, {("h/(i+1)", "move"): 1.0, ("key_u", "move"): 1.0,
                                    ("1/(i+1)", "is_start"): 1.0})
        count.W_F1.copy_(units.matrix(L, {
            ("d/(i+1) right", "1/(i+1)"): 1.0, ("d/(i+1) right", "right"): 1.0,
            ("d/(i+1) left", "1/(i+1)"): 1.0, ("d/(i+1) left", "left"): 1.0,
            ("j", "i"): 1.0, ("j", "is_input"): N, ("1/(i+1) move", "1/(i+1)"): 1.0,
            ("1/(i+1) move", "is_move"): 1.0, ("input", "is_input"): 1.0,
            ("i move", "i"): 1.0, ("i move", "is_move"): N}))
        count.b_F1.copy_(units.vector({"d/(i+1) right": -1.0, "d/(i+1) left": -1.0, "j": -N,
                                       "1/(i+1) move": -1.0, "i move": -N}))
        count.W_F2.copy_(L.matrix(units, {
            ("key_u", "d/(i+1) right"): -1.0, ("key_u", "d/(i+1) left"): 1.0,
            ("key_u", "j"): 1.0, ("key_v", "1/(i+1) move"): 1.0, ("key_v", "input"): 1.0,
            ("recency", "i move"): 1.0}))
        for g, (u, v) in enumerate([("h/(i+1)", "1/(i+1)"), ("key_u", "key_v")]):
            hashed.W_in[g, 0, L[u]], hashed.W_in[g, 1, L[v]] = 1.0, 1.0
            for k in range(4):
                hashed.W_out[L[f"{'qk'[g]}_hash{k}"], g, k] = 1.0
        read.W_Q[0] = hid.matrix(L, {**{(f"x{k}", f"q_hash{k}"): C for k in range(4)},
                                     ("const", "1"): 1.0})
        read.W_K[0] = hid.matrix(L, {**{(f"x{k}", f"k_hash{k}"): 1.0 for k in range(4)},
                                     ("const", "is_start"): 4 * C - R * (N + 1),
                                     ("const", "recency"): R})
        read.W_V[0] = L.matrix(L, {(f"read={a}", f"holds={a}"): 1.0 for a in range(G)})
        W1, b1, W2 = {}, {}, {}
        for q, a in itertools.product(range(S), range(G)):
            go, stay = f"go q={q},a={a}", f"stay q={q},a={a}"
            r, b, d = table.get((q, a), (q, a, 0))  # halted or stuck: the same move for ever
            W1 |= {(go, f"state={q}"): 1.0, (go, f"read={a}"): 1.0}
            b1[go] = -1.0
            W2[f"next={index[r, b, d]}", go] = 1.0
            if d == -1:  # at cell 0, stay instead: lin * (q_hash1 - 1) is 1 there, <= 0 elsewhere
                W1 |= {(stay, f"state={q}"): 1.0, (stay, f"read={a}"): 1.0,
                       (stay, "q_hash1"): lin}
                b1[stay] = -2.0 - lin
                W2 |= {(f"next={index[r, b, -1]}", stay): -1.0,
                       (f"next={index[r, b, 0]}", stay): 1.0}
        read.W_F1.copy_(pairs.matrix(L, W1))
        read.b_F1.copy_(pairs.vector(b1))
        read.W_F2.copy_(L.matrix(pairs, W2))
    output_weight = torch.stack([L.vector({f"next={t}": 1.0}) for t in range(len(moves))])
    tokens = ["0", "1", "START", *(f"(q{q},{b},{d:+d})" for q, b, d in moves)]
    decoder = Decoder(embedding, positions, [count, read], output_weight, 3, L, tokens,
                      hashes={1: hashed})
    decoder.machine = {"transitions": table, "start": start, "accepting": accepting,
                       "rejecting": rejecting, "blank": blank}
    decoder.moves, decoder.max_positions = torch.tensor(moves, dtype=torch.long), N
    decoder.halting = torch.tensor([q in accepting | rejecting for q in range(S)])
    decoder.final = torch.tensor([q in accepting for q in range(S)])
    return decoder.to(dtype)


_X, _Y, _B = 3, 4, 2  # marks, and the blank
TM_EXAMPLES = {
    # Mark a 0 as X, run right to the first 1, mark it Y, run back to the X, repeat; accept
    # when only Ys are left. States: 0 start, 1 right, 2 back, 3 check the Ys, 5 accept.
    "0^n 1^n": ({(0, 0): (1, _X, 1), (0, _Y): (3, _Y, 1), (0, _B): (5, _B, 1),
                 (1, 0): (1, 0, 1), (1, _Y): (1, _Y, 1), (1, 1): (2, _Y, -1),
                 (2, 0): (2, 0, -1), (2, _Y): (2, _Y, -1), (2, _X): (0, _X, 1),
                 (3, _Y): (3, _Y, 1), (3, _B): (5, _B, 1)}, 0, [5], [6]),
    # Blank the first symbol, carry it (state 1 or 2) to the last, compare (3 or 4), blank
    # that too and go back (5); accept (6) when nothing is left. A mismatch has no
    # transition: the run is stuck, and rejected.
    "palindromes": ({(0, 0): (1, _B, 1), (0, 1): (2, _B, 1), (0, _B): (6, _B, 1),
                     (1, 0): (1, 0, 1), (1, 1): (1, 1, 1), (1, _B): (3, _B, -1),
                     (2, 0): (2, 0, 1), (2, 1): (2, 1, 1), (2, _B): (4, _B, -1),
                     (3, 0): (5, _B, -1), (3, _B): (6, _B, 1),
                     (4, 1): (5, _B, -1), (4, _B): (6, _B, 1),
                     (5, 0): (5, 0, -1), (5, 1): (5, 1, -1), (5, _B): (0, _B, 1)},
                    0, [6], [7]),
    # Binary increment, least significant bit first: 1s become 0s until a 0 or the end
    # becomes 1; it accepts every string, and the tape holds w + 1.
    "increment": ({(0, 1): (0, 0, 1), (0, 0): (1, 1, 1), (0, _B): (1, 1, 1)}, 0, [1], []),
}
"""Turing machines for :func:`compile_tm`, name -> ``(transitions, start, accepting,
rejecting)``, blank 2: two languages that are not regular and a function."""


def _one_run(decoder, w, name: str = "w"):
    """``(input [1, m], written moves [1, t, 3])`` of a machine's decoder on one string."""
    if not isinstance(decoder, Decoder) or not hasattr(decoder, "machine"):
        raise TypeError(f"decoder must come from compile_tm, got {type(decoder).__name__}")
    x = _as_symbols(w, 2)
    if x.shape[0] != 1:
        raise ValueError(f"{name} must be one string (a batch of 1), got {x.shape[0]}")
    written, _ = decode(decoder, x)
    return x.cpu(), written.cpu()


def tm_trace(decoder: Decoder, w):
    """One run of a machine's decoder (:func:`compile_tm`) on the string ``w``, as a pandas
    table with a row per move the decoder wrote: the cell the head was on, the symbol it read
    there, the state, symbol and move the decoder wrote, and the tape after the move, with the
    head's cell in brackets and the blank as ``_``. Only the input comes from ``w``; the cells,
    the symbols read and the tape are replayed from the written moves, as the decoder's own
    attention finds them (a move left at cell 0 stays there)."""
    import pandas as pd  # only when a table is asked for

    x, written = _one_run(decoder, w)
    blank = decoder.machine["blank"]
    tape, cell, rows = dict(enumerate(x[0].tolist())), 0, []
    for state, symbol, move in written[0].tolist():
        read, tape[cell] = tape.get(cell, blank), symbol
        row = {"cell": cell, "reads": read, "state": state, "writes": symbol, "move": move}
        cell = max(cell + move, 0)
        shown = ["_" if tape.get(c, blank) == blank else str(tape[c])
                 for c in range(max(*tape, cell) + 1)]
        shown[cell] = f"[{shown[cell]}]"
        rows.append(row | {"tape after": "".join(shown)})
    table = pd.DataFrame(rows, columns=["cell", "reads", "state", "writes", "move",
                                        "tape after"])
    table.index = pd.RangeIndex(1, len(rows) + 1, name="move")
    return table


def tm_attention(decoder: Decoder, w):
    """Where a machine's decoder reads the tape: the attention weights of its second layer,
    whose query is the head's cell, at each position that computes a move, over the positions
    before it, as a pandas table (a row per move ``s``, computed at position ``m + s - 1``; a
    column per position ``"i:token"``). Each row puts its weight on the latest move that wrote
    the head's cell, or on the input symbol there, or on START for a blank never written: one
    causal pass over ``w START`` and the moves the decoder wrote."""
    import pandas as pd  # only when a table is asked for

    x, written = _one_run(decoder, w)
    m, t = x.shape[1], written.shape[1]
    index = (decoder.moves[None] == written[0][:, None]).all(-1).int().argmax(1)
    tokens = torch.cat([x[0], torch.tensor([2]), decoder.first_written + index[:-1]])
    weights = []
    with torch.no_grad():
        decoder(tokens[None].to(decoder.embedding.device), 0,
                Cache(decoder, 1, len(tokens)), attention=weights)
    rows = weights[1][0, 0, m:m + t].double().cpu().numpy()
    labels = [f"{i}:{decoder.tokens[k]}" for i, k in enumerate(tokens.tolist())]
    moves = [f"{s + 1}: {decoder.tokens[decoder.first_written + k]}"
             for s, k in enumerate(index.tolist())]
    return pd.DataFrame(rows, index=pd.Index(moves, name="move"), columns=labels)


def run_tm(transitions, start: int, accepting, rejecting, w, blank: int = 2,
           steps: int | None = None):
    """The moves of the machine on each string of ``w`` by direct simulation (a dict for the
    tape, one string at a time): the reference that :func:`decode` is checked against.
    Returns ``(moves LongTensor[B, t, 3], accepts BoolTensor[B])`` as :func:`decode` does: a
    run ends at a halting state or a missing transition, or when it writes the same staying
    move twice, and then repeats ``(q, a, 0)``. ``t`` is ``steps``, or by default the longest
    run's moves; without ``steps`` a run that has not ended after ``10**5`` moves raises
    ``ValueError``."""
    table, start, accepting, rejecting, blank = check_tm(transitions, start, accepting,
                                                         rejecting, blank)
    limit = 10**5 if steps is None else check_int(steps, "steps", minimum=0)
    runs, accepts = [], []
    for word in _as_symbols(w, 2).tolist():
        tape, state, head, moves = dict(enumerate(word)), start, 0, []
        while len(moves) < limit and state not in accepting | rejecting and (
                state, tape.get(head, blank)) in table:
            state, written, move = table[state, tape.get(head, blank)]
            tape[head], move = written, 0 if head == 0 and move == -1 else move
            moves.append((state, written, move))
            head += move
            if move == 0 and moves[-2:-1] == moves[-1:]:
                break  # the same staying move twice: a loop at cell 0
        else:
            if steps is None and len(moves) == limit:
                raise ValueError(f"w: a run did not end within {limit} moves; pass steps")
        runs.append((moves, (state, tape.get(head, blank), 0)))
        accepts.append(state in accepting)
    t = max((len(moves) for moves, _ in runs), default=0) if steps is None else limit
    padded = [moves + [end] * (t - len(moves)) for moves, end in runs]
    return (torch.tensor(padded, dtype=torch.long).reshape(len(runs), t, 3),
            torch.tensor(accepts, dtype=torch.bool))


CIRCUIT_QUERY = SCALE / 2
"""A circuit decoder's query entries: a position that differs from the one sought in ``b``
address bits scores ``-2 b CIRCUIT_QUERY``, so at most ``-SCALE``, whose ``exp`` is 0."""
MAX_FAN_IN = 64  # a circuit decoder has one head per input of its widest gate
MAX_CIRCUIT_NODES = 2**20
CIRCUIT_EXPONENT_BITS = 5
"""The exponent bits a circuit decoder needs: its largest weight, 512, must be a number."""


def circuit_bits(max_fan_in: int) -> int:
    """The significand bits a circuit decoder with gates of fan-in up to ``max_fan_in`` needs:
    its largest positive pre-activation is ``max_fan_in + 1``, an integer, and integers up to
    ``2**p`` are numbers of ``p`` bits, so ``p = ceil(log2(max_fan_in + 1))`` (at least 1)."""
    fan_in = check_int(max_fan_in, "max_fan_in", minimum=1, maximum=MAX_FAN_IN)
    return fan_in.bit_length()  # ceil(log2(f + 1)) for f >= 1


def compile_circuit(circuit: Circuit, bits: int | None = None,
                    exponent_bits: int = CIRCUIT_EXPONENT_BITS,
                    allow_fewer_bits: bool = False) -> Decoder:
    """A :class:`Decoder` that evaluates ``circuit`` one gate per step ([li2024chain] Thm. 3.3,
    our construction): the prompt is ``BOS x_1 ... x_n``; position 0 holds BOS and position
    ``v >= 1`` the value of node ``v - 1`` (inputs first, then the gates in the circuit's
    order), and the step at position ``j`` writes the token of position ``j + 1``, so the steps
    at positions ``n, ..., N - 1`` write the gates' values. One layer, one head per input of
    the widest gate (``H`` heads), no layer normalization:

    * *addresses*: position ``j`` carries its ``L = ceil(log2(N + 1))`` address bits as signs
      ``s_b(j) = +-1`` (``N`` the circuit's nodes), and the ``L``-bit addresses of the inputs of
      the gate it computes, one per head; a gate with fewer than ``H`` inputs points the
      spare heads at BOS, whose value is 0. The circuit is written into the position
      embedding, so a family of circuits gives a family of decoders (non-uniform, as in
      [li2024chain]).
    * *attention*: head ``h``'s query at position ``i`` pairs with a key ``(s(j), 1)`` as
      ``C sum_b (t_b s_b(j) - 1)`` with ``t`` the address sought and ``C = 512``: exactly 0 at
      the position sought and ``-2 C`` times the number of differing bits elsewhere. Any
      rounding keeps 0 at 0 and the rest at most ``-1024`` (rounding is monotone, ``-1024`` is
      a number), whose ``exp`` flushes to 0: the weights are exactly one-hot, at any
      precision with 5 exponent bits, whether sums round once or after every addition. The
      head copies the value found into ``in=h``.
    * *FFN*: every gate is a threshold of ``S = sum_h in=h``: AND of ``f`` inputs is
      ``S >= f``, OR is ``S >= 1``, MAJORITY is ``2 S >= f``, NOT is ``S <= 0``. With the
      threshold ``t`` and a flag ``neg`` (NOT) in the position embedding, four ReLUs write
      ``out = [S >= t]`` or ``[S <= 0]``: ``relu(S - t + 1 - 2 neg) - relu(S - t - 2 neg)
      + relu(1 - S - 2 + 2 neg) - relu(-S - 2 + 2 neg)``, all integers of size at most
      ``H + 1``, exact at :func:`circuit_bits` significand bits. The output layer's logits
      are ``(1 - out, out)``.

    With ``bits``, the decoder computes at ``bits`` significand bits and ``exponent_bits``
    exponent bits (:func:`companion.precision.at_precision`); fewer bits than
    :func:`circuit_bits` or fewer than 5 exponent bits raise ``ValueError`` unless
    ``allow_fewer_bits``. Without it, the decoder computes in float64, where the same
    argument makes it exact. :func:`decode` runs it."""
    if not isinstance(circuit, Circuit):
        raise TypeError(f"circuit must be a companion.circuits.Circuit, "
                        f"got {type(circuit).__name__}")
    circuit._check_output()
    if circuit.n_nodes > MAX_CIRCUIT_NODES:
        raise ValueError(f"circuit has {circuit.n_nodes} nodes; a circuit decoder takes at "
                         f"most {MAX_CIRCUIT_NODES}")
    fan_ins = [len(inputs) for _, inputs in circuit.gates]
    H = max([1, *fan_ins])
    if H > MAX_FAN_IN:
        raise ValueError(f"circuit has a gate of fan-in {H}; a circuit decoder has one head per "
                         f"input and at most {MAX_FAN_IN} heads")
    allow_fewer_bits = check_bool(allow_fewer_bits, "allow_fewer_bits")
    if bits is not None:
        bits = check_int(bits, "bits", minimum=1, maximum=53)
        exponent_bits = check_int(exponent_bits, "exponent_bits", minimum=2, maximum=11)
        need = circuit_bits(H)
        if not allow_fewer_bits and (bits < need or exponent_bits < CIRCUIT_EXPONENT_BITS):
            raise ValueError(f"bits: this circuit's decoder needs {need} significand bits and "
                             f"{CIRCUIT_EXPONENT_BITS} exponent bits, got {bits} and "
                             f"{exponent_bits} (pass allow_fewer_bits=True to run it anyway)")
    n, N = circuit.n_inputs, circuit.n_nodes
    L_bits = max(1, N.bit_length())  # addresses of the positions 0..N
    L = Layout("value", *(f"s{b}" for b in range(L_bits)),
               *(f"h{h}:t{b}" for h in range(H) for b in range(L_bits)),
               "t", "neg", "1", *(f"in={h}" for h in range(H)), "out")
    hid = Layout(*(f"{sign}{b}" for b in range(L_bits) for sign in "+-"))
    unit = Layout("u1", "u2", "u3", "u4")
    embedding = torch.stack([L.vector({"value": 0}), L.vector({"value": 1}), L.vector({})])

    def signs(j: int) -> list[float]:
        return [1.0 if j >> b & 1 else -1.0 for b in range(L_bits)]

    table = torch.zeros(N + 1, L.d, dtype=torch.float64)
    table[:, L["1"]] = 1.0
    for j in range(N + 1):
        table[j, L["s0"]:L["s0"] + L_bits] = torch.tensor(signs(j))
        if n <= j < N:  # position j computes node j, the gate j - n
            kind, inputs = circuit.gates[j - n]
            targets = [node + 1 for node in inputs] + [0] * (H - len(inputs))
            for h, target in enumerate(targets):
                start = L[f"h{h}:t0"]
                table[j, start:start + L_bits] = torch.tensor(signs(target))
            f = len(inputs)
            table[j, L["t"]] = {"AND": f, "OR": 1, "MAJORITY": (f + 1) // 2, "NOT": 0}[kind]
            table[j, L["neg"]] = float(kind == "NOT")

    def positions(i):
        return table.to(i.device)[i]

    layer = EncoderLayer(L.d, d_hid=hid.d, heads=H, d_ff=unit.d)
    with torch.no_grad():
        for h in range(H):
            layer.W_Q[h] = hid.matrix(L, {entry: value for b in range(L_bits) for entry, value in
                                          (((f"+{b}", f"h{h}:t{b}"), CIRCUIT_QUERY),
                                           ((f"-{b}", "1"), -CIRCUIT_QUERY))})
            layer.W_K[h] = hid.matrix(L, {entry: 1.0 for b in range(L_bits) for entry in
                                          ((f"+{b}", f"s{b}"), (f"-{b}", "1"))})
            layer.W_V[h] = L.matrix(L, {(f"in={h}", "value"): 1.0})
        S = {f"in={h}": 1.0 for h in range(H)}
        minus_S = {name: -1.0 for name in S}
        layer.W_F1.copy_(unit.matrix(L, {
            **{("u1", name): v for name, v in {**S, "t": -1.0, "1": 1.0, "neg": -2.0}.items()},
            **{("u2", name): v for name, v in {**S, "t": -1.0, "neg": -2.0}.items()},
            **{("u3", name): v for name, v in {**minus_S, "1": -1.0, "neg": 2.0}.items()},
            **{("u4", name): v for name, v in {**minus_S, "1": -2.0, "neg": 2.0}.items()}}))
        layer.W_F2.copy_(L.matrix(unit, {("out", "u1"): 1.0, ("out", "u2"): -1.0,
                                         ("out", "u3"): 1.0, ("out", "u4"): -1.0}))
    output_weight = torch.stack([L.vector({"1": 1.0, "out": -1.0}), L.vector({"out": 1.0})])
    decoder = Decoder(embedding, positions, [layer], output_weight, 0, L, ["0", "1", "BOS"])
    decoder.circuit, decoder.max_fan_in = circuit, H
    if bits is not None:
        decoder = at_precision(decoder, bits, exponent_bits)
    return decoder


def circuit_attention(decoder: Decoder, x) -> torch.Tensor:
    """The attention weights of a circuit's decoder on one input ``x`` (a str or
    ``LongTensor[1, n]``) at the positions that compute the gates: ``[heads, gates, N]``, ``N``
    the circuit's nodes; row ``g`` holds what each head of the step that writes gate ``g``
    reads (its inputs, or BOS for a spare head) among the positions ``0..N-1`` (BOS, the
    inputs, every gate but the last). One causal pass over ``BOS x`` and the gates' values
    as the decoder writes them."""
    if not isinstance(decoder, Decoder) or not hasattr(decoder, "circuit"):
        raise TypeError(f"decoder must come from compile_circuit, got {type(decoder).__name__}")
    written, _ = decode(decoder, x)
    x = as_strings(x, "x")
    if x.shape[0] != 1:
        raise ValueError(f"x must be one input (a batch of 1), got {x.shape[0]}")
    circuit = decoder.circuit
    tokens = torch.cat([torch.full((1, 1), 2, dtype=torch.long), x.cpu(), written[:, :-1].cpu()],
                       1).to(decoder.embedding.device)
    weights = []
    with torch.no_grad():
        decoder(tokens, 0, Cache(decoder, 1, circuit.n_nodes + 1), attention=weights)
    n = circuit.n_inputs
    return weights[0][:, 0, n:n + len(circuit.gates)]


def _decode_circuit(decoder: Decoder, x):
    """:func:`decode` for a circuit's decoder: the prompt ``BOS x`` in one pass, which writes
    the first gate's value, then one step per further gate for the whole batch."""
    circuit = decoder.circuit
    x = as_strings(x, "w").to(decoder.embedding.device)
    if x.shape[1] != circuit.n_inputs:
        raise ValueError(f"w must have {circuit.n_inputs} columns (the circuit's inputs), got "
                         f"{x.shape[1]}")
    B, n = x.shape
    gates = len(circuit.gates)
    prompt = torch.cat([torch.full((B, 1), 2, dtype=torch.long, device=x.device), x], 1)
    cache, written = Cache(decoder, B, circuit.n_nodes + 1), []
    with torch.no_grad():
        if gates:
            written.append(decoder.run(prompt, 0, cache)[:, -1])
        for position in range(n + 1, n + gates):
            written.append(decoder.run(written[-1][:, None], position, cache)[:, -1])
    values = torch.cat([x, *(w[:, None] for w in written)], 1)  # every node's value
    return values[:, n:], values[:, circuit.output].bool()


def _as_symbols(w, k: int) -> torch.Tensor:
    """``w`` (a ``LongTensor[B, m]``, or a str of the ASCII digits 0..k-1 where ``k <= 10``)
    checked against the alphabet 0..k-1."""
    if isinstance(w, str):
        if k > 10 and w:
            raise TypeError(f"w must be a LongTensor[B, m] for an alphabet of {k} symbols (a "
                            "str holds one digit per symbol, so at most 10), got a str")
        if not all(ch in "0123456789"[:k] for ch in w):
            raise ValueError(f"w must contain only the ASCII digits 0..{k - 1}, got {w!r}")
        return torch.tensor([[int(ch) for ch in w]], dtype=torch.long).reshape(1, len(w))
    check_tensor(w, "w")
    if w.dtype == torch.bool or w.is_floating_point() or w.is_complex():
        raise TypeError(f"w must have an integer dtype (torch.long), got {w.dtype}")
    if w.dim() != 2 or w.shape[0] == 0:
        raise ValueError(f"w must have shape [B, m] with B >= 1, got {tuple(w.shape)}")
    if w.numel() and not bool(((w >= 0) & (w < k)).all()):
        raise ValueError(f"w must contain only the symbols 0..{k - 1}")
    return w.long()


def _check_decoder(decoder, machine: bool = False) -> Decoder:
    """``decoder``, from :func:`compile_dfa` (or, where ``machine``, also :func:`compile_tm`)."""
    if isinstance(decoder, Decoder) and (hasattr(decoder, "transitions") or machine and (
            hasattr(decoder, "machine") or hasattr(decoder, "circuit"))):
        return decoder
    made = "compile_dfa, compile_tm or compile_circuit" if machine else "compile_dfa"
    raise TypeError(f"decoder must come from {made}, got {type(decoder).__name__}")


def decode(decoder: Decoder, w, record: bool = False, max_steps: int | None = None):
    """Greedy decoding: the states the decoder writes, ``LongTensor[B, m]`` (state numbers),
    and its verdict ``BoolTensor[B]`` (the last state, or the start state when ``m = 0``, is
    accepting). One pass reads the prompt ``w START`` and writes ``q_1``; then ``m - 1`` steps,
    each for the whole batch, read the state written last and write the next, with the keys
    and values of earlier positions kept in a :class:`Cache`. With ``record``, also returns
    the stages ``[a0, c1, a1, c2, a2]`` at every position read, each ``[B, 2m, d]``.

    For a Turing machine's decoder (:func:`compile_tm`) it returns the moves written,
    ``LongTensor[B, t, 3]`` (state, symbol written, move), and the verdict, ``True`` where
    the machine accepts within ``max_steps`` steps. After a halting state or a missing
    transition the decoder writes ``(q, a, 0)`` for ever. A run *ends* at a halting state, or
    when it writes the same staying move twice: after a missing transition (so a run needs
    ``m`` positions plus the moves :func:`run_tm` counts if it halts, and two more if it gets
    stuck), or on a loop at cell 0, which never halts, and is rejected. Decoding stops when
    every run has ended or after ``max_steps`` moves; with ``None``, a run that has not ended
    within the decoder's ``max_positions`` raises ``ValueError``. ``t`` is the number of steps
    decoded; a run that ended earlier repeats ``(q, a, 0)``.

    It computes on :func:`companion.runtime.threads` CPU threads (one, unless
    ``COMPANION_THREADS`` says otherwise: each step is a few small operations, which a second
    thread slows down on a busy machine) and leaves PyTorch's setting as it found it."""
    _check_decoder(decoder, machine=True)
    if hasattr(decoder, "circuit"):
        if record or max_steps is not None:
            raise ValueError("record, max_steps: a circuit's decoder writes one value per gate "
                             "and records nothing")
        with using_threads():
            return _decode_circuit(decoder, w)
    if hasattr(decoder, "machine"):
        if record:
            raise ValueError("record: only a DFA's decoder (compile_dfa) records its stages")
        with using_threads():
            return _decode_tm(decoder, w, max_steps)
    if max_steps is not None:
        raise ValueError("max_steps: a DFA's decoder writes one state per symbol; max_steps "
                         "is for a Turing machine's (compile_tm)")
    record = check_bool(record, "record")
    with using_threads():
        return _decode_dfa(decoder, w, record)


def _decode_dfa(decoder: Decoder, w, record: bool):
    """:func:`decode` for an automaton's decoder: the prompt in one pass, then one step per
    state for the whole batch."""
    S, k = decoder.transitions.shape
    w = _as_symbols(w, k).to(decoder.embedding.device)
    B, m = w.shape
    prompt = torch.cat([w, torch.full((B, 1), k + S, dtype=torch.long, device=w.device)], 1)
    cache, written = Cache(decoder, B, max(2 * m, 1)), []
    chunks = [] if record else None  # the stages, kept only when asked for
    with torch.no_grad():
        if m:
            written.append(decoder.run(prompt, 0, cache, chunks)[:, -1])
        for position in range(m + 1, 2 * m):
            token = (k + written[-1])[:, None]
            written.append(decoder.run(token, position, cache, chunks)[:, -1])
    states = torch.stack(written, 1) if m else w.new_zeros(B, 0)
    last = states[:, -1] if m else torch.full((B,), decoder.start, device=w.device)
    verdict = decoder.accepting.to(w.device)[last]
    if not record:
        return states, verdict
    empty = [decoder.embedding.new_zeros(B, 0, decoder.layout.d)] * (1 + 2 * len(decoder.layers))
    stages = [torch.cat([chunk[s] for chunk in chunks], 1) if chunks else empty[s]
              for s in range(len(empty))]
    return states, verdict, stages


def _decode_tm(decoder: Decoder, w, max_steps: int | None):
    """:func:`decode` for a Turing machine's decoder: the prompt in one pass, then one step
    per move for the whole batch, until every run has halted or is stuck (it wrote the same
    move, staying, twice) or ``max_steps`` moves are written."""
    w = _as_symbols(w, 2).to(decoder.embedding.device)
    B, m = w.shape
    room = decoder.max_positions - m  # moves that fit: move s is computed at position m+s-1
    if room < 1:
        raise ValueError(f"w: strings of length {m} need a decoder with max_positions above "
                         f"{m}, got {decoder.max_positions}")
    if max_steps is not None:
        max_steps = check_int(max_steps, "max_steps", minimum=0)
        if max_steps > room:
            raise ValueError(f"max_steps: {max_steps} moves after a prompt of {m + 1} tokens "
                             f"need more than the decoder's max_positions "
                             f"({decoder.max_positions}); compile with a larger one")
    limit = room if max_steps is None else max_steps
    moves, halting = decoder.moves.to(w.device), decoder.halting.to(w.device)

    def ended():  # per run: halted, or stuck (the same staying move twice)
        last = moves[written[-1]]
        stuck = ((written[-1] == written[-2]) & (last[:, 2] == 0) if len(written) > 1
                 else torch.zeros_like(halting[last[:, 0]]))
        return halting[last[:, 0]] | stuck

    tokens = torch.cat([w, torch.full((B, 1), 2, dtype=torch.long, device=w.device)], 1)
    cache, written = Cache(decoder, B, max(m + limit, 1)), []
    with torch.no_grad():
        while len(written) < limit:
            start = 0 if not written else m + len(written)
            written.append(decoder.run(tokens, start, cache)[:, -1])
            if bool(ended().all()):
                break
            tokens = decoder.first_written + written[-1][:, None]
    if max_steps is None and limit and not bool(ended().all()):
        raise ValueError(f"w: a run did not halt within the decoder's max_positions "
                         f"({decoder.max_positions}); compile with a larger one, or pass "
                         "max_steps")
    steps = moves[torch.stack(written, 1)] if written else w.new_zeros(B, 0, 3)
    state = steps[:, -1, 0] if written else torch.full((B,), decoder.machine["start"],
                                                      device=w.device)
    return steps, decoder.final.to(w.device)[state]


def forced_states(decoder: Decoder, w) -> torch.Tensor:
    """The states the decoder would write at each step if every earlier state it wrote were the
    automaton's (teacher forcing): ``LongTensor[B, m]``, from one causal pass over the ``2m``
    positions of ``w START q_1 ... q_{m-1}``, without ``m`` sequential steps. Because the
    decoder is causal, greedy decoding (:func:`decode`) writes exactly the automaton's states
    if and only if these equal them (:func:`run_dfa`): by induction, each step then sees the
    same sequence as here. Like :func:`decode`, it computes on
    :func:`companion.runtime.threads` CPU threads."""
    _check_decoder(decoder)
    S, k = decoder.transitions.shape
    w = _as_symbols(w, k)
    B, m = w.shape
    if m == 0:
        return w.new_zeros(B, 0)
    truth = run_dfa(decoder.transitions.tolist(), decoder.start, w)
    tokens = torch.cat([w.cpu(), torch.full((B, 1), k + S), k + truth[:, :-1]], 1)
    tokens = tokens.to(decoder.embedding.device)
    with torch.no_grad(), using_threads():
        return decoder.run(tokens, 0, Cache(decoder, B, 2 * m))[:, m:]


def run_dfa(transitions, start: int, w) -> torch.Tensor:
    """The DFA's states after each symbol of ``w``, ``LongTensor[B, m]``, by table lookup: the
    reference that :func:`decode` is checked against (batched; a loop over positions)."""
    table, start, _ = check_dfa(transitions, start, [])
    w = _as_symbols(w, table.shape[1]).cpu()
    state = torch.full((w.shape[0],), start, dtype=torch.long)
    states = []
    for j in range(w.shape[1]):
        state = table[state, w[:, j]]
        states.append(state)
    return torch.stack(states, 1) if states else w.new_zeros(w.shape[0], 0)


def exact_length(dtype) -> int:
    """The largest ``m`` up to which the decoder in ``dtype`` computes exactly.

    The fetching head's scores are ``C (2 i' j - i'^2)``, integers of size below ``2 N^2`` (the
    last position ``N = 2m``, ``j < m``) times the power of two ``C``: all are exact while
    ``8 m^2 <= 2^p`` (``p`` the significand's bits: 53 in float64, 24 in float32, 11 in
    float16, 8 in bfloat16) and ``8 m^2 C`` does not overflow. Then each attention weight is
    exactly 0 or 1 and every activation an exact integer."""
    dtype = _check_float(dtype)
    limit = min(2 ** SIGNIFICAND_BITS[dtype], int(torch.finfo(dtype).max / SCALE))
    return math.isqrt(limit // 8)


def activation_table(decoder: Decoder, w, stage: str):
    """The activations of one string's decoding at ``stage`` (``"a0"``, ``"c1"``, ``"a1"``,
    ``"c2"``, ``"a2"``) as a pandas table: a row per named dimension, a column per position
    headed ``"position:token"``."""
    import pandas as pd  # only when a table is asked for

    _check_decoder(decoder)
    stages = ["a0"] + [f"{kind}{n}" for n in range(1, len(decoder.layers) + 1)
                       for kind in ("c", "a")]
    if stage not in stages:
        raise ValueError(f"stage must be one of {stages}, got {stage!r}")
    states, _, recorded = decode(decoder, w, record=True)
    if states.shape != (1, states.shape[1]) or states.shape[1] == 0:
        raise ValueError(f"w must be one nonempty string (the table shows one), got shape "
                         f"{tuple(states.shape)}")
    k, m = decoder.transitions.shape[1], states.shape[1]
    tokens = [*_as_symbols(w, k)[0].tolist(), len(decoder.tokens) - 1,
              *(k + q for q in states[0, :-1].tolist())]
    values = recorded[stages.index(stage)][0].T
    columns = [f"{i}:{decoder.tokens[t]}" for i, t in enumerate(tokens[:2 * m])]
    return pd.DataFrame(values.double().cpu().numpy(), index=decoder.layout.names,
                        columns=columns)
