"""A transformer encoder whose every weight can be set by hand, in the papers' column convention.

Conventions (seed 000 §2.2, 004 §5.1):

* A string ``w: LongTensor[B, m]`` of 0s and 1s gets the symbol CLS prepended at position 0, so
  the encoder sees ``n = m + 1`` positions ``i = 0, ..., n - 1``. Symbol ids: 0, 1, and
  ``CLS = 2``.
* Vectors are columns and weights act on the left: ``q = W^Q a`` with ``W^Q: [d_hid, d]``,
  ``W^V: [d, d]``; the FFN is ``W^F2 relu(W^F1 c + b^F1) + b^F2``. (A batch stores the vectors
  as rows, so the code multiplies by transposes.)
* Attention scores are ``(K q) / sqrt(d)`` with ``d`` the model dimension (seed 000's Att),
  times ``log n`` with log-length scaling (seed 000 eq. 2); the heads' outputs are summed.
* ``norm="post"``: ``c = LN(a + att(a))``, ``a' = LN(c + ffn(c))`` (the papers' choice);
  ``norm="pre"``: ``c = a + att(LN(a))``, ``a' = c + ffn(LN(c))``, and a final LN before the
  output layer (004 eqs. 5.17-5.20). ``layernorm=False`` makes every LN the identity.
* The output is the logit ``s = W^out a^{L,0} + b^out`` at CLS; the model accepts iff ``s > 0``
  (sigmoid probability above 1/2).

Attention is computed in blocks of queries, so memory grows like ``n`` rather than ``n**2``
and strings of length 10^5 fit.
"""

import math
from dataclasses import dataclass, field

import pandas as pd
import torch
from torch import nn

from companion._checks import check_choice, check_int, check_nonnegative
from companion.languages import as_strings
from companion.layernorm import layer_norm

CLS = 2
SCORE_BUDGET = 2**24  # attention scores held at once (B * heads * queries * keys)


def sinusoidal_position_embedding(n: int, d: int) -> torch.Tensor:
    """Vaswani et al.'s position embedding (004 eq. 5.2) for positions ``0..n-1``: ``[n, d]``.

    ``PE(i)[j] = sin(i / 10000^(j/d))`` for even ``j`` and ``cos(i / 10000^((j-1)/d))`` for odd
    ``j``; it does not depend on ``n``.
    """
    check_int(n, "n", minimum=1)
    check_int(d, "d", minimum=1)
    i = torch.arange(n, dtype=torch.float64).unsqueeze(1)
    j = torch.arange(d)
    frequency = 10000.0 ** (-(j - j % 2).double() / d)
    angle = i * frequency
    return torch.where(j % 2 == 0, torch.sin(angle), torch.cos(angle))


def _distinct_rows(rows: torch.Tensor):
    """``(distinct, which)`` with ``rows == distinct[which]``, or ``(None, None)`` when finding
    them would cost more than it saves (``torch.unique`` over rows is slow for many rows)."""
    if bool((rows == rows[:1]).all()):
        return rows[:1], torch.zeros(rows.shape[0], dtype=torch.long, device=rows.device)
    if rows.shape[0] > 2**16:
        return None, None
    exact = rows if rows.dtype in (torch.float32, torch.float64) else rows.float()
    distinct, which = torch.unique(exact, dim=0, return_inverse=True)
    return distinct.to(rows.dtype), which


class Layout:
    """Named basis directions of a vector space (as tracr's ``craft`` names the residual stream).

    A construction declares its dimensions once, e.g. ``Layout("is_0", "is_1", "is_cls")``, and
    then writes vectors and matrices by name, so the code reads like the paper's matrices.
    """

    def __init__(self, *names: str):
        if len(set(names)) != len(names):
            raise ValueError(f"dimension names must be distinct, got {names}")
        self.names = list(names)
        self._index = {name: i for i, name in enumerate(names)}

    @property
    def d(self) -> int:
        return len(self.names)

    def __getitem__(self, name: str) -> int:
        if name not in self._index:
            raise KeyError(f"no dimension named {name!r}; the layout has {self.names}")
        return self._index[name]

    def vector(self, entries: dict, dtype=torch.float64) -> torch.Tensor:
        """A vector ``[d]`` that is zero except at the named entries."""
        v = torch.zeros(self.d, dtype=dtype)
        for name, value in entries.items():
            v[self[name]] = value
        return v

    def matrix(self, source: "Layout", entries: dict, dtype=torch.float64) -> torch.Tensor:
        """A matrix ``[self.d, source.d]`` mapping ``source`` vectors to ``self`` vectors
        (column convention), zero except ``entries[(row_name, column_name)]``."""
        M = torch.zeros(self.d, source.d, dtype=dtype)
        for (row, column), value in entries.items():
            M[self[row], source[column]] = value
        return M


@dataclass
class Activations:
    """What one forward pass computed: ``a[0]`` the embeddings, and for each layer ``l >= 1``
    ``c[l]`` (after attention and its residual) and ``a[l]`` (after the FFN), each
    ``[B, n, d]``, plus, when asked for, the attention weights
    ``attention[l]: [B, heads, n, n]``."""

    a: list = field(default_factory=list)
    c: list = field(default_factory=list)
    attention: list = field(default_factory=list)


class EncoderLayer(nn.Module):
    """One encoder layer: multi-head self-attention and a ReLU FFN, each with a residual."""

    def __init__(self, d: int, d_hid: int, heads: int, d_ff: int, dtype=torch.float64):
        super().__init__()
        for name, value in (("d", d), ("d_hid", d_hid), ("heads", heads), ("d_ff", d_ff)):
            check_int(value, name, minimum=1)
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

    def attention(self, x, queries: slice, scale: float, record: bool):
        """Sum over heads of ``softmax(scale * K q) V`` for the query positions ``queries``.

        ``x: [B, n, d]``. Returns ``[B, n_q, d]`` and, when ``record``, the attention weights
        ``[B, heads, n_q, n]``. A head whose ``W^V`` is zero adds nothing and is skipped unless
        its weights are recorded.
        """
        total, weights = 0.0, []
        for h in range(self.W_Q.shape[0]):
            if record or bool(self.W_V[h].any()):
                attended, alpha = self._head(h, x, queries, scale, record)
                total = total + attended
                weights.append(alpha)
        if not torch.is_tensor(total):  # every head was skipped
            total = x.new_zeros(x.shape[0], len(range(x.shape[1])[queries]), x.shape[2])
        return total, (torch.stack(weights, dim=1) if record else None)

    def _head(self, h: int, x, queries: slice, scale: float, record: bool):
        """One head's output ``[B, n_q, d]`` (and weights ``[B, n_q, n]`` when ``record``).

        Scores are computed in blocks of at most ``SCORE_BUDGET`` entries. Positions whose
        query vectors are equal get equal attention, so when the batch holds fewer distinct
        query vectors than positions, each distinct one is computed once and shared: the same
        arithmetic, done once. (Hand-set constructions often have one or two distinct queries,
        which makes them linear in n.)
        """
        q = x[:, queries] @ self.W_Q[h].T  # [B, n_q, d_hid]
        k, v = x @ self.W_K[h].T, x @ self.W_V[h].T  # [B, n, d_hid], [B, n, d]
        B, n_q, d_hid = q.shape
        distinct, which = _distinct_rows(q.reshape(B * n_q, d_hid))
        shared = distinct is not None and distinct.shape[0] < n_q
        rows = distinct.expand(B, -1, -1) if shared else q
        block = max(1, SCORE_BUDGET // (B * x.shape[1]))
        outputs, weights = [], []
        for start in range(0, rows.shape[1], block):
            alpha = torch.softmax(scale * (rows[:, start:start + block] @ k.transpose(1, 2)), -1)
            outputs.append(alpha @ v)
            if record:
                weights.append(alpha)
        output = torch.cat(outputs, dim=1)
        alpha = torch.cat(weights, dim=1) if record else None
        if shared:  # hand each position the result for its query vector
            index = which.view(B, n_q, 1)
            output = output.gather(1, index.expand(-1, -1, output.shape[-1]))
            if record:
                alpha = alpha.gather(1, index.expand(-1, -1, alpha.shape[-1]))
        return output, alpha

    def ffn(self, c):
        return torch.relu(c @ self.W_F1.T + self.b_F1) @ self.W_F2.T + self.b_F2


class Encoder(nn.Module):
    """A transformer encoder with CLS output; see the module docstring for every convention.

    ``word_embedding``: ``[3, d]``, rows for the symbols 0, 1 and CLS. ``position_embedding``:
    a function ``n -> [n, d]`` (it may depend on ``n``, like ``i/n``) or a learned table
    ``[max_n, d]``. ``layers``: :class:`EncoderLayer` s of model dimension ``d``.
    ``output_weight: [d]`` and ``output_bias`` give the logit at CLS. The weights are frozen
    unless ``requires_grad``. ``layout`` names the ``d`` dimensions for :meth:`table`.
    """

    def __init__(self, word_embedding, position_embedding, layers, output_weight,
                 output_bias=0.0, norm="post", layernorm=False, eps=0.0, log_length=False,
                 requires_grad=False, layout: Layout | None = None):
        super().__init__()
        d = word_embedding.shape[-1]
        if word_embedding.shape != (3, d):
            raise ValueError(f"word_embedding must have shape [3, d] (symbols 0, 1, CLS), "
                             f"got {tuple(word_embedding.shape)}")
        check_choice(norm, "norm", ("post", "pre"))
        check_nonnegative(eps, "eps")
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
        for index, layer in enumerate(layers):
            if not isinstance(layer, EncoderLayer):
                raise TypeError(f"layers[{index}] must be an EncoderLayer")
            layer.check_shapes(d, f"layers[{index}]")
        if output_weight.shape != (d,):
            raise ValueError(f"output_weight must have shape [{d}], "
                             f"got {tuple(output_weight.shape)}")
        self.d, self.norm, self.layernorm, self.eps = d, norm, layernorm, float(eps)
        self.log_length = log_length
        self.word_embedding = nn.Parameter(word_embedding.clone())
        self.layers = nn.ModuleList(layers)
        self.output_weight = nn.Parameter(output_weight.clone())
        self.output_bias = nn.Parameter(torch.as_tensor(output_bias, dtype=word_embedding.dtype))
        self.requires_grad_(requires_grad)  # hand-set weights are frozen unless asked otherwise
        if layout is not None and layout.d != d:
            raise ValueError(f"layout names {layout.d} dimensions but d = {d}")
        self.layout = layout or Layout(*(f"dim {j}" for j in range(d)))

    def LN(self, x):
        return layer_norm(x, self.eps) if self.layernorm else x

    def embed(self, w) -> torch.Tensor:
        """``a^0``: word plus position embeddings of CLS + ``w``, ``[B, n, d]``."""
        strings = as_strings(w).to(self.word_embedding.device)
        cls = torch.full((strings.shape[0], 1), CLS, dtype=torch.long, device=strings.device)
        symbols = torch.cat([cls, strings], dim=1)
        n = symbols.shape[1]
        if self.position_function is not None:
            positions = self.position_function(n).to(self.word_embedding)
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
        per head and string, so only for short strings). Without ``record`` the last layer is
        computed at CLS only.
        """
        record = record or record_attention
        for index, layer in enumerate(self.layers):
            layer.check_shapes(self.d, f"layers[{index}]")
        a = self.embed(w)
        n = a.shape[1]
        scale = (math.log(n) if self.log_length else 1.0) / math.sqrt(self.d)
        trace = Activations(a=[a]) if record else None
        for index, layer in enumerate(self.layers):
            last = index == len(self.layers) - 1
            queries = slice(0, 1) if last and not record else slice(0, n)
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

    def table(self, w: str, stage: str) -> pd.DataFrame:
        """The activations of one string at ``stage`` (``"a0"``, ``"c1"``, ``"a1"``, ...,
        in the papers' names) as a table: one row per named dimension, one column per
        position, headed by its symbol."""
        strings = as_strings(w)
        if strings.shape[0] != 1:
            raise ValueError(f"table shows one string, got a batch of {strings.shape[0]}")
        kind, layer = stage[:1], stage[1:]
        if kind not in ("a", "c") or not layer.isdigit() or not (
                (kind == "a" and int(layer) <= len(self.layers))
                or (kind == "c" and 1 <= int(layer) <= len(self.layers))):
            raise ValueError(f"stage must be a0..a{len(self.layers)} or c1..c{len(self.layers)}, "
                             f"got {stage!r}")
        with torch.no_grad():
            _, trace = self(strings, record=True)
        values = (trace.a if kind == "a" else [None, *trace.c])[int(layer)][0]
        symbols = ["CLS", *(str(s) for s in strings[0].tolist())]
        columns = [f"{i}:{symbol}" for i, symbol in enumerate(symbols)]
        return pd.DataFrame(values.T.double().cpu().numpy(), index=self.layout.names,
                            columns=columns)


class TorchEncoder(nn.Module):
    """An :class:`Encoder`'s weights loaded into PyTorch's own ``nn.TransformerEncoderLayer``
    stack; embeddings are added outside and the CLS logit is read as in :class:`Encoder`.
    Build it with :func:`to_torch`."""

    def __init__(self, encoder: "Encoder", layers, width: int):
        super().__init__()
        self.encoder, self.layers, self.width = encoder, nn.ModuleList(layers), width

    def forward(self, w) -> torch.Tensor:
        x = self.encoder.embed(w)
        x = torch.cat([x, x.new_zeros(*x.shape[:2], self.width - x.shape[2])], dim=-1)
        for layer in self.layers:
            x = layer(x)
        final = x[:, 0, : self.encoder.d]
        if self.encoder.norm == "pre":
            final = self.encoder.LN(final)
        return final @ self.encoder.output_weight + self.encoder.output_bias


def _factor(W: torch.Tensor, rank: int):
    """``W = U @ P`` with ``U: [d, rank]``, ``P: [rank, d]`` (exact when rank(W) <= rank)."""
    U, S, Vh = torch.linalg.svd(W)
    if bool((S[rank:] > 1e-12 * max(1.0, float(S[0]))).any()):
        raise ValueError(f"a value matrix has rank above the head dimension {rank}")
    return U[:, :rank] * S[:rank], Vh[:rank]


def to_torch(encoder: Encoder) -> TorchEncoder:
    """Load ``encoder``'s weights into ``nn.TransformerEncoderLayer`` s (ReLU, no dropout).

    PyTorch's multi-head attention splits the model dimension among the heads, scales by
    ``1/sqrt(head dim)`` and concatenates heads before an output projection, where the papers
    give every head a full ``[d, d]`` value matrix and sum the heads. So each head's ``W^V`` is
    factored as ``U P`` (exact for the constructions, whose value matrices have low rank), ``W^Q``
    is rescaled, and without layer normalization the width is padded with zero dimensions to a
    multiple of the number of heads. Log-length scaling has no counterpart there.
    """
    if encoder.log_length:
        raise ValueError("log-length scaled attention has no counterpart in nn.MultiheadAttention")
    heads = max(layer.W_Q.shape[0] for layer in encoder.layers)
    width = encoder.d if encoder.d % heads == 0 else encoder.d + heads - encoder.d % heads
    if width != encoder.d and encoder.layernorm:
        raise ValueError(f"d = {encoder.d} is not a multiple of {heads} heads, and zero "
                         "padding would change what layer normalization computes")
    head_dim = width // heads
    dtype = encoder.word_embedding.dtype
    torch_layers = []
    for layer in encoder.layers:
        H, d_hid, d = layer.W_Q.shape
        if H != heads or d_hid > head_dim:
            raise ValueError(f"every layer needs {heads} heads of at most {head_dim} dims")
        torch_layer = nn.TransformerEncoderLayer(
            width, heads, dim_feedforward=layer.W_F1.shape[0], dropout=0.0, activation="relu",
            layer_norm_eps=encoder.eps, batch_first=True, norm_first=encoder.norm == "pre",
            dtype=dtype,
        )
        q_scale = math.sqrt(head_dim) / math.sqrt(encoder.d)
        in_proj = torch.zeros(3, heads, head_dim, width, dtype=dtype)
        out_proj = torch.zeros(width, heads, head_dim, dtype=dtype)
        with torch.no_grad():
            for h in range(heads):
                in_proj[0, h, :d_hid, :d] = q_scale * layer.W_Q[h]
                in_proj[1, h, :d_hid, :d] = layer.W_K[h]
                U, P = _factor(layer.W_V[h], min(head_dim, d))
                in_proj[2, h, : P.shape[0], :d] = P
                out_proj[:d, h, : U.shape[1]] = U
            attention = torch_layer.self_attn
            attention.in_proj_weight.copy_(in_proj.reshape(3 * width, width))
            attention.in_proj_bias.zero_()
            attention.out_proj.weight.copy_(out_proj.reshape(width, width))
            attention.out_proj.bias.zero_()
            ffn_in = torch.zeros(layer.W_F1.shape[0], width, dtype=dtype)
            ffn_in[:, :d] = layer.W_F1
            ffn_out = torch.zeros(width, layer.W_F1.shape[0], dtype=dtype)
            ffn_out[:d] = layer.W_F2
            bias_out = torch.zeros(width, dtype=dtype)
            bias_out[:d] = layer.b_F2
            torch_layer.linear1.weight.copy_(ffn_in)
            torch_layer.linear1.bias.copy_(layer.b_F1)
            torch_layer.linear2.weight.copy_(ffn_out)
            torch_layer.linear2.bias.copy_(bias_out)
        if not encoder.layernorm:
            torch_layer.norm1, torch_layer.norm2 = nn.Identity(), nn.Identity()
        torch_layers.append(torch_layer)
    # Training mode with dropout 0 computes the same function; it also keeps PyTorch off its
    # fused inference path, which assumes that both layer norms exist.
    return TorchEncoder(encoder, torch_layers, width).train()
