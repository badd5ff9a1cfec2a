"""A transformer encoder whose every weight can be set by hand, in the papers' column convention.

Conventions ([chiang2022overcoming] §2.2, [chiang2024esslli] §5.1; keys of book/references.bib):

* A string ``w: LongTensor[B, m]`` of 0s and 1s gets the symbol CLS prepended at position 0, so
  the encoder sees ``n = m + 1`` positions ``i = 0, ..., n - 1``. Symbol ids: 0, 1, and
  ``CLS = 2``.
* Vectors are columns and weights act on the left: ``q = W^Q a`` with ``W^Q: [d_hid, d]``,
  ``W^V: [d, d]``; the FFN is ``W^F2 relu(W^F1 c + b^F1) + b^F2``. (A batch stores the vectors
  as rows, so the code multiplies by transposes.)
* Attention scores are ``(K q) / sqrt(d)`` with ``d`` the model dimension, times ``log n`` with
  log-length scaling ([chiang2022overcoming] eq. 2); the heads' outputs are summed.
* ``norm="post"``: ``c = LN(a + att(a))``, ``a' = LN(c + ffn(c))`` (the papers' choice);
  ``norm="pre"``: ``c = a + att(LN(a))``, ``a' = c + ffn(LN(c))``, and a final LN before the
  output layer ([chiang2024esslli] eqs. 5.17-5.20). ``layernorm=False`` makes every LN the identity.
* The output is the logit ``s = W^out a^{L,0} + b^out`` at CLS; the model accepts iff ``s > 0``
  (sigmoid probability above 1/2).

The page reads as the equations; :func:`companion.fast_attention.attend` computes
``softmax(scale K q) V`` with the savings that make long strings fit, and
:mod:`companion.torch_export` loads the same weights into PyTorch's own encoder layers.
"""

import math
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn import functional as F

from companion._checks import (
    check_bool,
    check_choice,
    check_dtype,
    check_float_tensor,
    check_generator,
    check_int,
    check_number,
)
from companion.fast_attention import attend
from companion.languages import as_strings
from companion.layernorm import layer_norm
from companion.layout import Layout

CLS = 2
MAX_WIDTH = 4096  # d, d_hid and d_ff of a layer (W_V alone holds heads * d**2 numbers)
MAX_TABLE = 2**27  # numbers in one sinusoidal position table (1 GiB in float64)


def sinusoidal_position_embedding(n: int, d: int) -> torch.Tensor:
    """Vaswani et al.'s position embedding for positions ``0..n-1``: ``[n, d]``
    ([chiang2024esslli] eq. 5.2).

    ``PE(i)[j] = sin(i / 10000^(j/d))`` for even ``j`` and ``cos(i / 10000^((j-1)/d))`` for odd
    ``j``; it does not depend on ``n``. ``n * d`` is at most ``2**27``.
    """
    n, d = check_int(n, "n", minimum=1), check_int(d, "d", minimum=1)
    if n * d > MAX_TABLE:
        raise ValueError(f"n * d must be <= 2**27 (the table's size), got n = {n}, d = {d}")
    i = torch.arange(n, dtype=torch.float64).unsqueeze(1)
    j = torch.arange(d)
    frequency = 10000.0 ** (-(j - j % 2).double() / d)
    angle = i * frequency
    return torch.where(j % 2 == 0, torch.sin(angle), torch.cos(angle))


@dataclass
class Activations:
    """What one forward pass computed: ``a[0]`` the embeddings, and for each layer
    ``l = 1, ..., L`` the lists' entries ``c[l - 1]`` (after attention and its residual) and
    ``a[l]`` (after the FFN), each ``[B, n, d]``, plus, when asked for, the attention weights
    ``attention[l - 1]: [B, heads, n, n]``."""

    a: list = field(default_factory=list)
    c: list = field(default_factory=list)
    attention: list = field(default_factory=list)


class EncoderLayer(nn.Module):
    """One encoder layer's weights: ``heads`` attention heads and a ReLU FFN (zeros until set).
    ``d``, ``d_hid`` and ``d_ff`` are at most 4096, ``heads`` at most 64."""

    def __init__(self, d: int, d_hid: int, heads: int, d_ff: int, dtype=torch.float64):
        super().__init__()
        d, d_hid, d_ff = (check_int(value, name, minimum=1, maximum=MAX_WIDTH)
                          for name, value in (("d", d), ("d_hid", d_hid), ("d_ff", d_ff)))
        heads, dtype = check_int(heads, "heads", minimum=1, maximum=64), check_dtype(dtype)
        zeros = lambda *shape: nn.Parameter(torch.zeros(*shape, dtype=dtype))  # noqa: E731
        self.W_Q, self.W_K = zeros(heads, d_hid, d), zeros(heads, d_hid, d)
        self.W_V = zeros(heads, d, d)
        self.W_F1, self.b_F1 = zeros(d_ff, d), zeros(d_ff)
        self.W_F2, self.b_F2 = zeros(d, d_ff), zeros(d)

    def check_shapes(self, d: int, where: str = "layer"):
        """Raise ValueError naming the first weight whose shape does not fit model dimension d."""
        heads, d_hid, _ = self.W_Q.shape
        d_ff = self.W_F1.shape[0]
        expected = {"W_Q": (heads, d_hid, d), "W_K": (heads, d_hid, d), "W_V": (heads, d, d),
                    "W_F1": (d_ff, d), "b_F1": (d_ff,), "W_F2": (d, d_ff), "b_F2": (d,)}
        for name, shape in expected.items():
            if tuple(getattr(self, name).shape) != shape:
                raise ValueError(f"{where}.{name} must have shape {list(shape)} for d = {d}, "
                                 f"got {list(getattr(self, name).shape)}")

    def attention(self, x, queries: slice, scale: float, record: bool = False):
        """``sum_h softmax(scale * K_h q_h) V_h`` at the query positions ``queries``.

        ``x: [B, n, d]``. Returns ``[B, n_q, d]`` and, when ``record``, the attention weights
        ``[B, heads, n_q, n]`` (else ``None``).
        """
        x_q = x[:, queries]
        outputs, weights = [], []
        for W_Q, W_K, W_V in zip(self.W_Q, self.W_K, self.W_V, strict=True):
            if not record and not W_V.any():
                continue  # a head whose values are zero adds nothing
            output, alpha = attend(x_q @ W_Q.T, x @ W_K.T, x @ W_V.T, scale, record)
            outputs.append(output)
            weights.append(alpha)
        total = sum(outputs) if outputs else torch.zeros_like(x_q)
        return total, (torch.stack(weights, dim=1) if record else None)

    def ffn(self, c):
        """``W^F2 relu(W^F1 c + b^F1) + b^F2`` at every position of ``c: [..., d]``."""
        hidden = torch.relu(F.linear(c, self.W_F1, self.b_F1))  # F.linear(x, W, b) = x W^T + b
        return F.linear(hidden, self.W_F2, self.b_F2)


class Encoder(nn.Module):
    """A transformer encoder with CLS output; see the module docstring for every convention.

    ``word_embedding``: ``[3, d]``, rows for the symbols 0, 1 and CLS. ``position_embedding``:
    a function ``n -> [n, d]`` (it may depend on ``n``, like ``i/n``) or a learned table
    ``[max_n, d]``. ``layers``: :class:`EncoderLayer` s of model dimension ``d``.
    ``output_weight: [d]`` and ``output_bias`` give the logit at CLS. The weights are frozen
    unless ``requires_grad``. ``layout`` names the ``d`` dimensions, for
    :func:`companion.tables.activation_table`.
    """

    def __init__(self, word_embedding, position_embedding, layers, output_weight,
                 output_bias=0.0, norm="post", layernorm=False, eps=0.0, log_length=False,
                 requires_grad=False, layout: Layout | None = None):
        super().__init__()
        check_float_tensor(word_embedding, "word_embedding", ranks=(2,))
        d, dtype = word_embedding.shape[-1], word_embedding.dtype
        if word_embedding.shape != (3, d):
            raise ValueError(f"word_embedding must have shape [3, d] (symbols 0, 1, CLS), "
                             f"got {tuple(word_embedding.shape)}")
        check_choice(norm, "norm", ("post", "pre"))
        eps = check_number(eps, "eps", minimum=0)
        output_bias = check_number(output_bias, "output_bias")
        layernorm = check_bool(layernorm, "layernorm")
        log_length = check_bool(log_length, "log_length")
        if isinstance(position_embedding, torch.Tensor):
            if position_embedding.dim() != 2 or position_embedding.shape[1] != d:
                raise ValueError(f"a position table must have shape [max_n, {d}], "
                                 f"got {tuple(position_embedding.shape)}")
            self.position_table = nn.Parameter(position_embedding.clone())
            self.position_function = None
        elif callable(position_embedding):
            self.position_table, self.position_function = None, position_embedding
        else:
            raise TypeError("position_embedding must be a function n -> [n, d] or a tensor")
        if not isinstance(layers, list | tuple | nn.ModuleList):
            raise TypeError(f"layers must be a list of EncoderLayers, got {type(layers).__name__}")
        for index, layer in enumerate(layers):
            if not isinstance(layer, EncoderLayer):
                raise TypeError(f"layers[{index}] must be an EncoderLayer")
            layer.check_shapes(d, f"layers[{index}]")
            if layer.W_Q.dtype != dtype:
                raise TypeError(f"layers[{index}] has dtype {layer.W_Q.dtype} but word_embedding "
                                f"has {dtype}; use one dtype")
        check_float_tensor(output_weight, "output_weight", ranks=(1,))
        if output_weight.shape != (d,):
            raise ValueError(f"output_weight must have shape [{d}], "
                             f"got {tuple(output_weight.shape)}")
        if layout is not None and not isinstance(layout, Layout):
            raise TypeError(f"layout must be a Layout or None, got {type(layout).__name__}")
        if layout is not None and layout.d != d:
            raise ValueError(f"layout names {layout.d} dimensions but d = {d}")
        self.d, self.norm, self.layernorm, self.eps = d, norm, layernorm, eps
        self.log_length = log_length
        self.word_embedding = nn.Parameter(word_embedding.clone())
        self.layers = nn.ModuleList(layers)
        self.output_weight = nn.Parameter(output_weight.clone())
        self.output_bias = nn.Parameter(torch.as_tensor(output_bias, dtype=word_embedding.dtype))
        # hand-set weights are frozen unless asked otherwise
        self.requires_grad_(check_bool(requires_grad, "requires_grad"))
        self.layout = layout or Layout(*(f"dim {j}" for j in range(d)))

    def LN(self, x):
        """Layer normalization over the last dimension, or the identity without ``layernorm``."""
        return layer_norm(x, self.eps) if self.layernorm else x

    def embed(self, w) -> torch.Tensor:
        """``a^0``: word plus position embeddings of CLS + ``w``, ``[B, n, d]``."""
        strings = as_strings(w).to(self.word_embedding.device)
        cls = torch.full((strings.shape[0], 1), CLS, dtype=torch.long, device=strings.device)
        symbols = torch.cat([cls, strings], dim=1)
        n = symbols.shape[1]
        if self.position_function is not None:
            positions = self.position_function(n)
            if not isinstance(positions, torch.Tensor) or positions.shape != (n, self.d):
                got = list(positions.shape) if isinstance(positions, torch.Tensor) else \
                    type(positions).__name__
                raise ValueError(f"position_embedding(n) must return a tensor [n, d] = "
                                 f"[{n}, {self.d}], got {got}")
            positions = positions.to(self.word_embedding)
        else:
            if n > self.position_table.shape[0]:
                raise ValueError(f"w has n = {n} positions (with CLS) but the learned position "
                                 f"table has only {self.position_table.shape[0]}")
            positions = self.position_table[:n]
        return self.word_embedding[symbols] + positions

    def forward(self, w, record: bool = False, record_attention: bool = False):
        """Logits ``[B]`` for the strings ``w`` (``LongTensor[B, m]`` or a str).

        With ``record``, returns ``(logits, Activations)`` with every layer's activations at
        every position; ``record_attention`` also keeps the attention weights (``n**2`` numbers
        per head and string, so only for short strings). Without ``record``, the last layer
        that mixes positions (nonzero values) and every layer after it are computed at CLS only,
        which is all the logit needs.
        """
        record_attention = check_bool(record_attention, "record_attention")
        record = check_bool(record, "record") or record_attention
        for index, layer in enumerate(self.layers):
            layer.check_shapes(self.d, f"layers[{index}]")
        a = self.embed(w)
        n = a.shape[1]
        scale = (math.log(n) if self.log_length else 1.0) / math.sqrt(self.d)
        trace = Activations(a=[a]) if record else None
        mixing = [index for index, layer in enumerate(self.layers) if layer.W_V.any()]
        cls_from = mixing[-1] if mixing else 0  # from here on, only CLS reaches the logit
        for index, layer in enumerate(self.layers):
            queries = slice(0, 1) if index >= cls_from and not record else slice(0, n)
            if self.norm == "post":
                attended, alpha = layer.attention(a, queries, scale, record_attention)
                c = self.LN(a[:, queries] + attended)
                a = self.LN(c + layer.ffn(c))
            else:
                attended, alpha = layer.attention(self.LN(a), queries, scale, record_attention)
                c = a[:, queries] + attended
                a = c + layer.ffn(self.LN(c))
            if record:
                trace.c.append(c)
                trace.a.append(a)
                if record_attention:
                    trace.attention.append(alpha)
        final = a[:, 0] if self.norm == "post" else self.LN(a[:, 0])
        logits = final @ self.output_weight + self.output_bias
        return (logits, trace) if record else logits


def random_encoder(d: int = 6, heads: int = 1, layers: int = 2, d_hid: int = 3, d_ff: int = 8,
                   max_n: int = 64, std: float = 1.0, generator: torch.Generator | None = None,
                   **options) -> Encoder:
    """An :class:`Encoder` whose weights, embeddings (a learned table of ``max_n`` positions)
    and output layer are independent normal draws with standard deviation ``std``, from
    ``generator``; ``options`` go to :class:`Encoder` (``norm``, ``layernorm``, ``eps``, ...).
    With random weights every query differs, so nothing is shared and attention costs
    ``n**2``: a model for comparisons with PyTorch and for benchmarks."""
    max_n = check_int(max_n, "max_n", minimum=1)
    std, generator = check_number(std, "std", minimum=0), check_generator(generator)

    def draw(*shape):
        return torch.randn(*shape, generator=generator, dtype=torch.float64) * std

    stack = []
    for _ in range(check_int(layers, "layers", minimum=1)):
        layer = EncoderLayer(d, d_hid, heads, d_ff)
        with torch.no_grad():
            for parameter in layer.parameters():
                parameter.copy_(draw(*parameter.shape))
        stack.append(layer)
    return Encoder(draw(3, d), draw(max_n, d), stack, draw(d), float(draw(1)), **options)
