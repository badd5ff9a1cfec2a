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
:class:`Cache` (no recomputation). :func:`forced_states` checks the same outcome in one
causal pass (teacher forcing). The companion's :class:`~companion.transformer.Encoder` has
no causal mask and reads one logit at CLS, so :class:`Decoder` reuses its layers' weights and
feed-forward networks but computes the masked attention itself.
"""

import itertools
import math

import torch
from torch import nn

from companion._checks import check_bool, check_dfa, check_dtype, check_int, check_tensor
from companion.languages import _as_permutation, _cycles
from companion.layout import Layout
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
    """What a forward pass needs from earlier positions: per layer, the keys
    ``[heads, B, N, d_hid]`` and values ``[heads, B, N, d]`` of the positions done so far, and
    the position embeddings ``[N, d]`` of all ``N`` positions."""

    def __init__(self, decoder, batch: int, length: int):
        like = decoder.embedding
        self.keys = [like.new_zeros(layer.W_K.shape[0], batch, length, layer.W_K.shape[1])
                     for layer in decoder.layers]
        self.values = [like.new_zeros(layer.W_V.shape[0], batch, length, layer.W_V.shape[1])
                       for layer in decoder.layers]
        self.positions = decoder.positions(torch.arange(length, device=like.device)).to(like)


class Decoder(nn.Module):
    """A causal decoder: ``embedding [V, d]`` rows for the ``V`` tokens (named by ``tokens``), a
    position embedding ``positions(i: LongTensor[N]) -> [N, d]``, layers
    (:class:`~companion.transformer.EncoderLayer`), and the logits ``output_weight [S, d] @ a``
    of the ``S`` tokens it writes, the token ids ``first_written, ..., first_written + S - 1``.
    ``layout`` names the ``d`` dimensions. :func:`compile_dfa` builds one."""

    def __init__(self, embedding, positions, layers, output_weight, first_written: int,
                 layout, tokens):
        super().__init__()
        self.embedding = nn.Parameter(embedding, requires_grad=False)
        self.positions, self.layout, self.tokens = positions, layout, list(tokens)
        self.layers = nn.ModuleList(layers)
        self.output_weight = nn.Parameter(output_weight, requires_grad=False)
        self.first_written = first_written

    def forward(self, tokens, start: int, cache: Cache, record: list | None = None):
        """Logits ``[B, t, S]`` for the tokens ``[B, t]`` at positions ``start, ...,
        start + t - 1``, after storing their keys and values in ``cache``; position ``i``
        attends to positions ``0, ..., i`` only (the causal mask). ``record``, a list, receives
        the stages ``[a0, c1, a1, c2, ...]`` (each ``[B, t, d]``)."""
        end = start + tokens.shape[1]
        where = cache.positions.device
        causal = (torch.arange(start, end, device=where)[:, None]
                  >= torch.arange(end, device=where)) if end > start + 1 else None
        a = self.embedding[tokens] + cache.positions[start:end]
        stages = [a]
        for layer, keys, values in zip(self.layers, cache.keys, cache.values, strict=True):
            keys[:, :, start:end] = a @ layer.W_K.transpose(1, 2).unsqueeze(1)
            values[:, :, start:end] = a @ layer.W_V.transpose(1, 2).unsqueeze(1)
            query = a @ layer.W_Q.transpose(1, 2).unsqueeze(1)  # [heads, B, t, d_hid]
            scores = query @ keys[:, :, :end].transpose(-1, -2)  # [heads, B, t, end]
            if causal is not None:  # one position sees all the keys so far
                scores = scores.masked_fill(~causal, -math.inf)
            alpha = torch.softmax(scores, dim=-1)
            c = a + (alpha @ values[:, :, :end]).sum(0)
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
    table, start, final = check_dfa(transitions, start, accepting)
    S, k = table.shape
    if S * k > MAX_PAIRS:
        raise ValueError(f"transitions: compile_dfa takes at most {MAX_PAIRS} (state, symbol) "
                         f"pairs (one FFN unit each), got {S} states x {k} symbols = {S * k}")
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
    tokens = [*(str(a) for a in range(k)), *(f"q{q}" for q in range(S)), "START"]
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
    if isinstance(generators, str) or not hasattr(generators, "__iter__"):
        raise TypeError("generators must be a list of permutations such as '(01)(234)', "
                        f"got {type(generators).__name__}")
    generators = list(generators)  # a generator expression is read once
    if not all(isinstance(g, str) for g in generators):
        raise TypeError("generators must be a list of permutations such as '(01)(234)'")
    if not generators:
        raise ValueError("generators must hold at least one permutation, got none")
    letters = [_as_permutation(_cycles(g, k, "generators"), k) for g in generators]
    states = list(itertools.permutations(range(k)))
    number = {p: q for q, p in enumerate(states)}
    transitions = [[number[tuple(g[image] for image in p)] for g in letters] for p in states]
    return transitions, 0, [0]


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


def _check_decoder(decoder) -> Decoder:
    if not isinstance(decoder, Decoder) or not hasattr(decoder, "transitions"):
        raise TypeError(f"decoder must come from compile_dfa, got {type(decoder).__name__}")
    return decoder


def decode(decoder: Decoder, w, record: bool = False):
    """Greedy decoding: the states the decoder writes, ``LongTensor[B, m]`` (state numbers),
    and its verdict ``BoolTensor[B]`` (the last state, or the start state when ``m = 0``, is
    accepting). One pass reads the prompt ``w START`` and writes ``q_1``; then ``m - 1`` steps,
    each for the whole batch, read the state written last and write the next, with the keys
    and values of earlier positions kept in a :class:`Cache`. With ``record``, also returns
    the stages ``[a0, c1, a1, c2, a2]`` at every position read, each ``[B, 2m, d]``."""
    _check_decoder(decoder)
    record = check_bool(record, "record")
    S, k = decoder.transitions.shape
    w = _as_symbols(w, k).to(decoder.embedding.device)
    B, m = w.shape
    prompt = torch.cat([w, torch.full((B, 1), k + S, dtype=torch.long, device=w.device)], 1)
    cache, chunks, written = Cache(decoder, B, max(2 * m, 1)), [], []
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


def forced_states(decoder: Decoder, w) -> torch.Tensor:
    """The states the decoder would write at each step if every earlier state it wrote were the
    automaton's (teacher forcing): ``LongTensor[B, m]``, from one causal pass over the ``2m``
    positions of ``w START q_1 ... q_{m-1}``, without ``m`` sequential steps. Because the
    decoder is causal, greedy decoding (:func:`decode`) writes exactly the automaton's states
    if and only if these equal them (:func:`run_dfa`): by induction, each step then sees the
    same sequence as here."""
    _check_decoder(decoder)
    S, k = decoder.transitions.shape
    w = _as_symbols(w, k)
    B, m = w.shape
    if m == 0:
        return w.new_zeros(B, 0)
    truth = run_dfa(decoder.transitions.tolist(), decoder.start, w)
    tokens = torch.cat([w.cpu(), torch.full((B, 1), k + S), k + truth[:, :-1]], 1)
    tokens = tokens.to(decoder.embedding.device)
    with torch.no_grad():
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
