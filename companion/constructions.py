"""Hand-set networks that recognize PARITY and FIRST exactly ([chiang2022overcoming] §3–5).

Every construction declares its residual stream once as a :class:`~companion.layout.Layout`
of named dimensions and writes each matrix by name, following the paper's matrices entry by
entry. The transformers map ``w: LongTensor[B, m]`` (or a str) to logits ``[B]`` and accept iff
the logit is positive; they compute in float64 unless converted with ``.to(dtype)``.

One deliberate difference from the paper's text: the paper puts ``c * sqrt(d)`` in ``W^Q`` so
that, after attention divides by ``sqrt(d)``, the attention logits are ``c`` times the keys. We
keep that meaning of ``c`` for the layer-normalized models too, whose ``d`` is doubled.
"""

import copy
import math

import torch

from companion._checks import check_bool, check_int, check_number
from companion.languages import as_strings
from companion.transformer import Encoder, EncoderLayer, Layout

PARITY_LAYOUT = Layout("is_0", "is_1", "is_cls", "i/n", "cos(i*pi)", "k/n", "1/n", "[i=k]/n", "s")
FIRST_LAYOUT = Layout("is_0", "is_1", "is_cls", "[i=1]", "[w_i=1 and i=1]", "s")
FLAWED_FIRST_LAYOUT = Layout("is_0", "is_1", "is_cls", "[i=1]", "s")
ONE = Layout("1")  # a one-dimensional query/key space


def _check_c(c) -> float:
    """``c``, the attention logit scale: a finite number > 0."""
    return check_number(c, "c", above=0)


def _word_embedding(layout: Layout) -> torch.Tensor:
    """Rows for the symbols 0, 1 and CLS: the one-hot directions is_0, is_1, is_cls."""
    return torch.stack([layout.vector({name: 1.0}) for name in ("is_0", "is_1", "is_cls")])


def _layer(layout: Layout, heads: int, d_ff: int, **weights) -> EncoderLayer:
    """An :class:`EncoderLayer` on ``layout`` with the given weights (the rest zero).
    ``weights`` maps ``W_Q``/``W_K``/``W_V`` to a list (one per head) and ``W_F1``, ``b_F1``,
    ``W_F2``, ``b_F2`` to tensors."""
    layer = EncoderLayer(layout.d, d_hid=1, heads=heads, d_ff=d_ff)
    with torch.no_grad():
        for name, value in weights.items():
            target = getattr(layer, name)
            target.copy_(torch.stack(value) if isinstance(value, list) else value)
    return layer


def _finish(layout, word_embedding, position_embedding, layers, layernorm, eps, log_length=False):
    """The encoder, with the output layer reading the dimension ``s``; with ``layernorm``, the
    negation-doubled model of §4.1 with layer normalization after every residual connection."""
    encoder = Encoder(word_embedding, position_embedding, layers, layout.vector({"s": 1.0}),
                      log_length=log_length, layout=layout)
    return double_for_layernorm(encoder, eps) if layernorm else encoder


def double_for_layernorm(encoder: Encoder, eps: float = 0.0) -> Encoder:
    """[chiang2022overcoming] §4.1: compute every value ``x`` together with ``-x`` so that layer
    normalization (switched on, with ``eps``) has zero mean to remove and only rescales the
    activations.

    Embeddings become ``[a; -a]``; ``W^Q, W^K -> [W 0]`` (times ``sqrt 2``, keeping the logit
    scale as ``d`` doubles); ``W^V -> [[W^V 0]; [-W^V 0]]``; ``W^F1 -> [W^F1 0]``;
    ``W^F2 -> [W^F2; -W^F2]`` and ``b^F2 -> [b^F2; -b^F2]``; the output reads the first half.
    """
    if not isinstance(encoder, Encoder):
        raise TypeError(f"encoder must be an Encoder, got {type(encoder).__name__}")
    eps = check_number(eps, "eps", minimum=0)
    names = encoder.layout.names
    if any(f"-{name}" in names for name in names):
        raise ValueError("encoder is already doubled (its layout names both x and -x); "
                         "double_for_layernorm doubles an encoder once")
    d = encoder.d
    both = lambda x: torch.cat([x, -x], dim=-1)  # noqa: E731
    with torch.no_grad():
        position = encoder.position_function or encoder.position_table.detach()
        doubled_position = (lambda n: both(position(n))) if callable(position) else both(position)
        layers = []
        for old in encoder.layers:
            heads, d_hid, _ = old.W_Q.shape
            new = EncoderLayer(2 * d, d_hid, heads, old.W_F1.shape[0],
                               dtype=old.W_Q.dtype).to(old.W_Q.device)
            pad = lambda W: torch.cat([W, torch.zeros_like(W)], dim=-1)  # noqa: E731
            new.W_Q.copy_(math.sqrt(2) * pad(old.W_Q))
            new.W_K.copy_(pad(old.W_K))
            new.W_V.copy_(torch.cat([pad(old.W_V), -pad(old.W_V)], dim=-2))
            new.W_F1.copy_(pad(old.W_F1))
            new.b_F1.copy_(old.b_F1)
            new.W_F2.copy_(torch.cat([old.W_F2, -old.W_F2], dim=0))
            new.b_F2.copy_(both(old.b_F2))
            layers.append(new)
        output = torch.cat([encoder.output_weight, torch.zeros_like(encoder.output_weight)])
        return Encoder(both(encoder.word_embedding), doubled_position, layers, output,
                       encoder.output_bias.item(), norm="post", layernorm=True, eps=eps,
                       log_length=encoder.log_length,
                       layout=Layout(*names, *(f"-{name}" for name in names)))


def sharpen(model: Encoder, eta: float) -> Encoder:
    """Proposition 2 of [chiang2022overcoming] (§4.2): a transformer that makes every decision
    of ``model`` and has cross-entropy at most ``eta`` bits on every string.

    ``model`` must be post-norm with layer normalization and ``eps = 0`` (``d >= 2``). The proof
    appends a layer whose attention does nothing and whose FFN, ``W^F1 = [I; -I]``,
    ``W^F2 = [-I  I]`` with ``[w, -w]`` and ``[-w, w]`` added to its rows 0 and 1 (``w``,
    ``b``: the old output layer), cancels the residual stream and writes the old logit ``s``
    and ``-s`` into dimensions 0 and 1. Layer normalization with ``eps = 0`` maps
    ``[s, -s, 0, ...]`` to ``sqrt(d/2) [sign s, -sign s, 0, ...]`` whatever ``|s|``, so the new
    output layer ``c e_0`` gives every string the logit ``+-c sqrt(d/2)`` and the cross-entropy
    ``log2(1 + exp(-c sqrt(d/2)))`` bits. The proof's ``c = -ln(2^eta - 1)/sqrt(d/2)``
    (``e^eta`` for ``eta`` in nats) is positive only for ``0 < eta < 1`` bit: a cross-entropy
    of 1 bit is a coin flip, which any correct sign beats, so ``eta >= 1`` is refused. The
    margin ``c sqrt(d/2) = ln 2 - ln(2^eta - 1)`` halves ``2^eta - 1`` and so gives every string
    exactly ``log2(1 + (2^eta - 1)/2) < eta`` bits: room for rounding, which the proof's
    equality ``c`` would leave on the bound.
    """
    if not isinstance(model, Encoder):
        raise TypeError(f"model must be an Encoder, got {type(model).__name__}")
    eta = check_number(eta, "eta", above=0, below=1)
    if not model.layernorm or model.eps != 0 or model.norm != "post":
        raise ValueError("model must be post-norm with layer normalization and eps = 0 (its "
                         "LN makes every logit the same size); got "
                         f"layernorm={model.layernorm}, eps={model.eps}, norm={model.norm!r}")
    d = model.d
    if d < 2:
        raise ValueError(f"model needs d >= 2 dimensions for s and -s, got d = {d}")
    dtype, heads = model.word_embedding.dtype, max(layer.W_Q.shape[0] for layer in model.layers)
    device = model.word_embedding.device
    eye = torch.eye(d, dtype=dtype, device=device)
    with torch.no_grad():
        w, b = model.output_weight.detach(), model.output_bias.item()
        extra = EncoderLayer(d, 1, heads, 2 * d, dtype=dtype).to(device)  # attention stays 0
        extra.W_F1.copy_(torch.cat([eye, -eye]))
        W_F2 = torch.cat([-eye, eye], dim=1)
        W_F2[0] += torch.cat([w, -w])
        W_F2[1] += torch.cat([-w, w])
        extra.W_F2.copy_(W_F2)
        extra.b_F2[0], extra.b_F2[1] = b, -b
        # the margin m of log2(1 + e^-m) = log2(1 + (2^eta - 1) / 2) < eta bits
        margin = math.log(2) - math.log(math.expm1(eta * math.log(2)))
        output = torch.zeros(d, dtype=dtype, device=device)
        output[0] = margin / math.sqrt(d / 2)
        position = model.position_function or model.position_table.detach()
        layers = [copy.deepcopy(layer) for layer in model.layers] + [extra]
        return Encoder(model.word_embedding.detach(), position, layers, output, 0.0,
                       norm="post", layernorm=True, eps=0.0, log_length=model.log_length,
                       layout=model.layout)


def with_eps(model: Encoder, eps: float) -> Encoder:
    """A copy of ``model`` whose layer normalizations use ``eps`` (the weights unchanged): the
    same construction with the ``eps > 0`` of every implementation, or with the ``eps = 0``
    of the original definition."""
    if not isinstance(model, Encoder):
        raise TypeError(f"model must be an Encoder, got {type(model).__name__}")
    eps = check_number(eps, "eps", minimum=0)
    if not model.layernorm:
        raise ValueError("model has no layer normalization, so eps would change nothing")
    changed = copy.deepcopy(model)
    changed.eps = float(eps)
    return changed


def parity_transformer(c: float = 1.0, layernorm: bool = False, eps: float = 0.0) -> Encoder:
    """The two-layer, two-head transformer of [chiang2022overcoming] §3.2 that recognizes PARITY.

    Layer 1 averages ``is_1`` into ``k/n`` and ``is_cls`` into ``1/n``; its FFN computes
    ``[i=k]/n`` with three ReLUs; layer 2's two heads attend to odd and even positions with
    logits ``-c cos(i pi)`` and ``c cos(i pi)`` and subtract what they find, so that the logit
    ``s`` is ``(-1)^(k+1) 2 tanh(c) / n^2`` for even ``n``. With ``layernorm``, §4.1's version.
    """
    c, L = _check_c(c), PARITY_LAYOUT
    layernorm, eps = check_bool(layernorm, "layernorm"), check_number(eps, "eps", minimum=0)
    hidden = Layout("k-i-1", "k-i", "k-i+1")  # each divided by n, before the ReLU

    def position_embedding(n):
        i = torch.arange(n, dtype=torch.float64)
        pe = torch.zeros(n, L.d, dtype=torch.float64)
        pe[:, L["i/n"]] = i / n
        pe[:, L["cos(i*pi)"]] = 1.0 - 2.0 * (i % 2)  # cos(i pi), exactly
        return pe

    count = _layer(
        L, heads=2, d_ff=3,
        W_V=[L.matrix(L, {("k/n", "is_1"): 1.0, ("1/n", "is_cls"): 1.0}), L.matrix(L, {})],
        W_Q=[ONE.matrix(L, {})] * 2, W_K=[ONE.matrix(L, {})] * 2,
        W_F1=hidden.matrix(L, {
            ("k-i-1", "i/n"): -1.0, ("k-i-1", "k/n"): 1.0, ("k-i-1", "1/n"): -1.0,
            ("k-i", "i/n"): -1.0, ("k-i", "k/n"): 1.0,
            ("k-i+1", "i/n"): -1.0, ("k-i+1", "k/n"): 1.0, ("k-i+1", "1/n"): 1.0,
        }),
        W_F2=L.matrix(hidden, {("[i=k]/n", "k-i-1"): 1.0, ("[i=k]/n", "k-i"): -2.0,
                               ("[i=k]/n", "k-i+1"): 1.0}),
    )
    query = ONE.matrix(L, {("1", "is_cls"): c * math.sqrt(L.d)})
    compare = _layer(
        L, heads=2, d_ff=1,
        W_Q=[query, query],
        W_K=[ONE.matrix(L, {("1", "cos(i*pi)"): -1.0}), ONE.matrix(L, {("1", "cos(i*pi)"): 1.0})],
        W_V=[L.matrix(L, {("s", "[i=k]/n"): 1.0}), L.matrix(L, {("s", "[i=k]/n"): -1.0})],
    )
    return _finish(L, _word_embedding(L), position_embedding, [count, compare], layernorm, eps)


def _marks_position_1(layout: Layout):
    """The position embedding ``n -> [n, d]`` of the FIRST constructions: ``[i=1]``."""

    def position_embedding(n):
        pe = torch.zeros(n, layout.d, dtype=torch.float64)
        if n > 1:
            pe[1, layout["[i=1]"]] = 1.0
        return pe

    return position_embedding


def _cls_attends_to_position_1(layout: Layout, c: float, values: dict) -> EncoderLayer:
    """A one-head layer in which CLS attends to position 1 with logit ``c`` (query
    ``c sqrt(d)`` on ``is_cls``, key ``[i=1]``), reading the value matrix ``values``."""
    return _layer(
        layout, heads=1, d_ff=1,
        W_Q=[ONE.matrix(layout, {("1", "is_cls"): c * math.sqrt(layout.d)})],
        W_K=[ONE.matrix(layout, {("1", "[i=1]"): 1.0})],
        W_V=[layout.matrix(layout, values)],
    )


def first_transformer(c: float = 1.0, layernorm: bool = False, eps: float = 0.0,
                      log_length: bool = False) -> Encoder:
    """The two-layer transformer of [chiang2022overcoming] §3.3 that recognizes FIRST.

    Its FFN marks position 1 when it holds a 1; layer 2 makes CLS attend to position 1 with
    logit ``c``, so ``s = e^c / (e^c + n - 1) * ([w_1 = 1] - 1/2)`` (eq. 1). With
    ``log_length`` the logits are scaled by ``log n`` (§5.3); with ``layernorm``, §4.1's version.
    """
    c, L = _check_c(c), FIRST_LAYOUT
    layernorm, eps = check_bool(layernorm, "layernorm"), check_number(eps, "eps", minimum=0)
    log_length = check_bool(log_length, "log_length")
    hidden = Layout("[w_i=1 and i=1]")
    detect = _layer(
        L, heads=1, d_ff=1,
        W_F1=hidden.matrix(L, {("[w_i=1 and i=1]", "is_0"): -1.0,
                               ("[w_i=1 and i=1]", "is_cls"): -1.0,
                               ("[w_i=1 and i=1]", "[i=1]"): 1.0}),
        W_F2=L.matrix(hidden, {("[w_i=1 and i=1]", "[w_i=1 and i=1]"): 1.0}),
    )
    look = _cls_attends_to_position_1(L, c, {("s", "[i=1]"): -0.5,
                                              ("s", "[w_i=1 and i=1]"): 1.0})
    return _finish(L, _word_embedding(L), _marks_position_1(L), [detect, look], layernorm,
                   eps, log_length)


def scaled_first_bound(layernorm: bool = False, eps: float = 0.0) -> float:
    """Proposition 3 of [chiang2022overcoming] (§5.3): a lower bound, the same at every length,
    on the size ``|s|`` of the logit of ``first_transformer(c=1, log_length=True,
    layernorm=layernorm, eps=eps)``.

    Without layer normalization the logit is ``n/(2n - 1) ([w_1 = 1] - 1/2)``, so
    ``1/4 < |s| <= 1/2`` and the bound is ``1/4``. With it, the proof writes the normalized logit
    as ``s ((1 + s^2)/6 + eps)^(-1/2)``; ``|s| > 1/4`` in the numerator and ``s^2 <= 1/4`` in the
    denominator give ``1/4 (5/24 + eps)^(-1/2)``. (That formula ignores the first layer's
    normalization, so it is not the network's logit.) The bound holds for the network at
    ``eps = 0`` and for small ``eps`` (the tests check ``1e-5`` and ``0.1``), but not for every
    ``eps > 0``: at ``eps = 1`` the scaled attention's exponent falls below 1 and the logit
    shrinks towards 0 as ``n`` grows (book errata, "Proof of Proposition 3"). Multiplying the
    output layer by ``t / bound`` puts every logit beyond ``+-t`` where the bound holds.
    """
    layernorm, eps = check_bool(layernorm, "layernorm"), check_number(eps, "eps", minimum=0)
    return 0.25 / math.sqrt(5 / 24 + eps) if layernorm else 0.25


def flawed_first_transformer(c: float = 1.0, log_length: bool = False) -> Encoder:
    """The one-layer transformer of [chiang2022overcoming] §5.2, which does not zero out the other
    positions:
    ``s = (e^c - 1)/(e^c + n - 1) ([w_1 = 1] - 1/2) + (k - n/2)/(e^c + n - 1)``; correct for
    every string of length n only when ``c > log(n - 1)``, or with ``log_length`` (§5.3)."""
    c, L = _check_c(c), FLAWED_FIRST_LAYOUT
    log_length = check_bool(log_length, "log_length")
    look = _cls_attends_to_position_1(L, c, {("s", "is_0"): -0.5, ("s", "is_1"): 0.5,
                                              ("s", "is_cls"): -0.5})
    return _finish(L, _word_embedding(L), _marks_position_1(L), [look], False, 0.0, log_length)


class RumelhartParity:
    """The two-layer step-function FFNN of Rumelhart et al. (1986) for PARITY on strings of
    length exactly ``m`` ([chiang2022overcoming] §3.1), in the column convention.

    ``W1 = ones(m, m)``, ``b1[j] = -(j + 1) + 0.5`` so that unit ``j`` is ``[k >= j + 1]``;
    ``W2[j] = (-1)^j`` (1, -1, 1, ...) and ``b2 = -0.5``. Calling it on ``w: [B, m]`` returns
    ``BoolTensor[B]``, True iff the number of 1s is odd. ``m`` is at most 4096 (``W1`` holds
    ``m**2`` numbers).
    """

    def __init__(self, m: int):
        self.m = m = check_int(m, "m", minimum=1, maximum=4096)
        j = torch.arange(m, dtype=torch.float64)
        self.W1, self.b1 = torch.ones(m, m, dtype=torch.float64), -(j + 1) + 0.5
        self.W2, self.b2 = (1.0 - 2.0 * (j % 2)).reshape(1, m), torch.tensor([-0.5])

    def hidden(self, w) -> torch.Tensor:
        """First layer ``H(W1 x + b1)``: ``[B, m]``, column ``j`` is ``[k >= j + 1]``."""
        strings = as_strings(w).cpu()  # the weights live on the CPU
        if strings.shape[1] != self.m:
            raise ValueError(f"w must have length m = {self.m}, got {strings.shape[1]}")
        return (strings.double() @ self.W1.T + self.b1 > 0).double()

    def __call__(self, w) -> torch.Tensor:
        return (self.hidden(w) @ self.W2.T + self.b2 > 0).squeeze(-1)


def rumelhart_parity(m: int) -> RumelhartParity:
    """Rumelhart et al.'s FFNN for PARITY of strings of length exactly ``m``
    ([chiang2022overcoming] §3.1)."""
    return RumelhartParity(m)
