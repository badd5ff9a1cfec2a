"""How many heads one attention layer needs: ORDERED with two ([vandoornmalen2026order]).

ORDERED is the language of the strings with no 1 before a 0, ``0^a 1^b``
(:func:`companion.languages.ordered`, the language of Chapter 5's ``no_10``).
[vandoornmalen2026order] (Theorem 1) prove that one softmax attention layer with two heads and an
output ReLU network computes it at every length, with weights that do not depend on the length,
and that no such layer with one head does. :func:`ordered_two_heads` builds their two-head layer
(§3.1) from the companion's :class:`~companion.transformer.EncoderLayer`, with named dimensions.

Their conventions, not the CLS encoder's: the positions of ``w: LongTensor[B, n]`` are
``i = 1, ..., n`` (no CLS, so ``n`` is the string's length); position ``i`` holding the bit
``x_i`` is embedded as ``(i, i^2, x_i)`` (§3.1), the same vector at every length; the scores are
``<K a_i, Q a_n> / sqrt(d)`` (eq. 1); and the layer is read at the last position ``n``, where a
causal mask would change nothing.

Head 1 scores position ``i`` with ``i n - x_i n^2`` and head 2 with ``x_i n^2 - i n`` (§3.1), so
head 1 attends to the last 0 (``i0``; position ``n`` if there is none) and head 2 to the first 1
(``i1``; position 1 if there is none), each with a margin of at least ``n`` over every other
position (eqs. 10-11, and the text after them for the constant strings). Each head reads the
position and the bit it attends to: ``i0*``, ``x_n*`` and ``i1*``, ``x_1*`` (§3.1's names). A
string is ordered iff it is constant or ``i1 = i0 + 1``. The paper states the output network's
tests, not its weights; the network here is our own, six ReLUs in one hidden layer:

* ``T`` is 1 when ``d = i1* - 1 - i0*`` is within 1/4 of 0 and 0 from 3/4 away on (a trapezoid of
  four ReLUs of ``d``): ``d = 0`` for an ordered string with both symbols, ``d <= -2`` for an
  unordered one, ``d = -n`` for a constant one;
* ``G`` is 1 when ``s = (n - i0*) + (i1* - 1) + (x_1* - x_n*)`` is at most 1/4 and 0 from 3/4 on
  (two ReLUs of ``s``): ``s = 0`` for a constant string and ``s >= 1`` for any other, whose
  heads read a 1 (head 2) and a 0 (head 1);
* the logit is ``T + G - 1/2``, positive iff the string is ordered.

When each of the four attention outputs is within 1/16 of what it approximates, ``T`` and ``G``
are exactly 0 or 1 and never both 1, so the logit is exactly ``1/2`` on ordered strings and
``-1/2`` on the others. Each head puts weight at most ``e^-n`` on any other position, so the
outputs are within ``n (n - 1) / 2 * e^-n`` (:func:`attention_error_bound`), below 1/16 for
every ``n >= 6``.
"""

import math

import torch
from torch import nn

from companion._checks import check_bool, check_int
from companion.languages import as_strings
from companion.layout import Layout
from companion.transformer import EncoderLayer

#: The residual stream at a position: its embedding ``(i, i^2, x_i)``, what the heads read, and
#: the logit ``y`` that the output network writes.
ORDERED_LAYOUT = Layout("i", "i^2", "x_i", "i0*", "x_n*", "i1*", "x_1*", "y")
#: The four attention outputs, in this order in :func:`ordered_targets`.
READ = ("i0*", "x_n*", "i1*", "x_1*")
#: Longest string: ``n^2`` must be an integer that float64 holds exactly.
MAX_LENGTH = 2**26


class LastPositionLayer(nn.Module):
    """One :class:`~companion.transformer.EncoderLayer` read at the last position: ``c = a_n +
    attention(a)_n`` and ``logit = y(c + ffn(c))``, where ``a_i`` is the embedding of position
    ``i`` (``word_embedding[x_i] + position_embedding(n)[i - 1]``) and ``y`` the layout's
    dimension ``"y"``. Without layer normalization; the weights are frozen."""

    def __init__(self, layout: Layout, word_embedding: torch.Tensor, position_embedding,
                 layer: EncoderLayer):
        super().__init__()
        self.layout, self.position_embedding = layout, position_embedding
        self.word_embedding = nn.Parameter(word_embedding.clone(), requires_grad=False)
        self.layer = layer.requires_grad_(False)

    def embed(self, w) -> torch.Tensor:
        """The embeddings ``a: [B, n, d]`` of the strings ``w`` (``LongTensor[B, n]``, n >= 1)."""
        strings = as_strings(w).to(self.word_embedding.device)
        n = strings.shape[1]
        if not 1 <= n <= MAX_LENGTH:
            raise ValueError(f"w must have between 1 and 2**26 symbols, got {n}")
        return self.word_embedding[strings] + self.position_embedding(n).to(self.word_embedding)

    def readout(self, w) -> torch.Tensor:
        """The residual stream at the last position after the layer, ``[B, d]``: the
        embedding, what the heads read and the logit, in the layout's dimensions."""
        a = self.embed(w)
        n = a.shape[1]
        attended, _ = self.layer.attention(a, slice(n - 1, n), 1 / math.sqrt(self.layout.d))
        c = a[:, n - 1:] + attended
        return (c + self.layer.ffn(c))[:, 0]

    def forward(self, w) -> torch.Tensor:
        """The logits ``[B]`` (float64), positive where the layer accepts."""
        return self.readout(w)[:, self.layout["y"]]


def _positions(n: int) -> torch.Tensor:
    """``(i, i^2)`` for ``i = 1..n`` in the dimensions of :data:`ORDERED_LAYOUT`: ``[n, d]``."""
    i = torch.arange(1, n + 1, dtype=torch.float64)
    pe = torch.zeros(n, ORDERED_LAYOUT.d, dtype=torch.float64)
    pe[:, ORDERED_LAYOUT["i"]], pe[:, ORDERED_LAYOUT["i^2"]] = i, i * i
    return pe


def ordered_two_heads() -> LastPositionLayer:
    """The one-layer, two-head transformer of [vandoornmalen2026order] §3.1 for ORDERED, with
    this module's output network (see the module docstring). Maps ``w: LongTensor[B, n]``
    (``n >= 1``, or a str) to logits ``[B]``: ``1/2`` on ordered strings, ``-1/2`` on the others,
    up to the attention error."""
    L = ORDERED_LAYOUT
    score = Layout("position", "bit")  # head h's score: <key, query>, query (n, -n^2) at n
    root_d = math.sqrt(L.d)  # eq. 1 divides scores by sqrt(d); the query carries it
    query = score.matrix(L, {("position", "i"): root_d, ("bit", "i^2"): -root_d})
    hidden = Layout("d+3/4", "d+1/4", "d-1/4", "d-3/4", "3/4-s", "1/4-s")
    d = {"i1*": 1.0, "i0*": -1.0}  # d = i1* - 1 - i0*; the -1 goes into the biases
    s = {"i": 1.0, "i0*": -1.0, "i1*": 1.0, "x_1*": 1.0, "x_n*": -1.0}  # s = ... - 1
    layer = EncoderLayer(L.d, d_hid=score.d, heads=2, d_ff=hidden.d)
    with torch.no_grad():
        layer.W_Q.copy_(torch.stack([query, query]))
        layer.W_K.copy_(torch.stack([  # §3.1: i n - x_i n^2 and x_i n^2 - i n
            score.matrix(L, {("position", "i"): 1.0, ("bit", "x_i"): 1.0}),
            score.matrix(L, {("position", "i"): -1.0, ("bit", "x_i"): -1.0})]))
        layer.W_V.copy_(torch.stack([
            L.matrix(L, {("i0*", "i"): 1.0, ("x_n*", "x_i"): 1.0}),
            L.matrix(L, {("i1*", "i"): 1.0, ("x_1*", "x_i"): 1.0})]))
        rows = {"d+3/4": (d, 1, -1 + 0.75), "d+1/4": (d, 1, -1 + 0.25),
                "d-1/4": (d, 1, -1 - 0.25), "d-3/4": (d, 1, -1 - 0.75),
                "3/4-s": (s, -1, 1 + 0.75), "1/4-s": (s, -1, 1 + 0.25)}
        for unit, (inputs, sign, bias) in rows.items():
            for name, weight in inputs.items():
                layer.W_F1[hidden[unit], L[name]] = sign * weight
            layer.b_F1[hidden[unit]] = bias
        # T = 2 (d+3/4 - d+1/4 - d-1/4 + d-3/4) and G = 2 (3/4-s - 1/4-s), all after ReLU
        layer.W_F2.copy_(L.matrix(hidden, {
            ("y", "d+3/4"): 2.0, ("y", "d+1/4"): -2.0, ("y", "d-1/4"): -2.0,
            ("y", "d-3/4"): 2.0, ("y", "3/4-s"): 2.0, ("y", "1/4-s"): -2.0}))
        layer.b_F2[L["y"]] = -0.5
    words = torch.stack([L.vector({}), L.vector({"x_i": 1.0})])  # the bits 0 and 1
    return LastPositionLayer(L, words, _positions, layer)


def ordered_targets(w) -> torch.Tensor:
    """What the four attention outputs approximate, ``[B, 4]`` in the order of :data:`READ`:
    the position of the last 0 (``n`` if none) and its bit, the position of the first 1 (1 if
    none) and its bit, positions counted from 1 (float64)."""
    strings = as_strings(w)
    n = strings.shape[1]
    if n < 1:
        raise ValueError("w must have at least one symbol")
    i = torch.arange(1, n + 1, device=strings.device)
    last_zero = torch.where(strings == 0, i, 0).max(dim=1).values
    i0 = torch.where(last_zero > 0, last_zero, n)
    first_one = torch.where(strings == 1, i, n + 1).min(dim=1).values
    i1 = torch.where(first_one <= n, first_one, 1)
    bits = strings.gather(1, torch.stack([i0, i1], dim=1) - 1)  # x at i0 and at i1
    return torch.stack([i0, bits[:, 0], i1, bits[:, 1]], dim=1).double()


def _readings(layer: LastPositionLayer, w) -> torch.Tensor:
    """What ``layer``'s heads read at the last position, ``[B, 4]`` in the order of
    :data:`READ`."""
    if not isinstance(layer, LastPositionLayer):
        raise TypeError(f"layer must be a LastPositionLayer, got {type(layer).__name__}")
    return layer.readout(w)[:, [layer.layout[name] for name in READ]]


def reading_error(layer: LastPositionLayer, w) -> torch.Tensor:
    """Each string's largest distance between what ``layer``'s heads read (the dimensions
    :data:`READ`) and :func:`ordered_targets`: ``[B]``, float64."""
    read = _readings(layer, w)
    return (read - ordered_targets(w).to(read)).abs().max(dim=1).values


def attention_error_bound(n: int) -> float:
    """``n (n - 1) / 2 * e^-n``: how far, at most, each attention output of
    :func:`ordered_two_heads` is from its target on strings of length ``n``. Every other position
    has a score at least ``n`` below the target's (eqs. 10-11; for the constant strings, the
    text after them), so weight at most ``e^-n``, and the distances to the target sum to at most
    ``n (n - 1) / 2``."""
    n = check_int(n, "n", minimum=1, maximum=MAX_LENGTH)
    return n * (n - 1) / 2 * math.exp(-n)


def printed_output_test(layer: LastPositionLayer, w, as_printed: bool = True) -> torch.Tensor:
    """The output network's tests as [vandoornmalen2026order] §3.1 states them, applied to what
    ``layer``'s heads read (``BoolTensor[B]``, True for "ordered"): if
    ``|i0* - 1| + |i1* - n| < 0.2``, the string is taken to be constant and ordered iff
    ``x_1*`` and ``x_n*`` are close (here: within 1/2); otherwise ordered iff
    ``|i1* - 1 - i0*| < 0.2``. The heads give ``i0* ~ n`` and ``i1* ~ 1`` on a constant string
    (as §3.1 says one sentence earlier), so ``as_printed=False`` tests
    ``|i0* - n| + |i1* - 1| < 0.2`` instead."""
    as_printed = check_bool(as_printed, "as_printed")
    i0, x_n, i1, x_1 = _readings(layer, w).unbind(dim=1)
    n = as_strings(w).shape[1]
    near, far = (1, n) if as_printed else (n, 1)
    constant = (i0 - near).abs() + (i1 - far).abs() < 0.2
    return torch.where(constant, (x_1 - x_n).abs() < 0.5, (i1 - 1 - i0).abs() < 0.2)
