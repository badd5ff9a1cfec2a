"""The weights of a :class:`~companion.transformer.Encoder` loaded into PyTorch's own
``nn.TransformerEncoderLayer`` stack, to check that our encoder computes what a standard
transformer computes."""

import math

import torch
from torch import nn

from companion._checks import check_int
from companion.transformer import Encoder, EncoderLayer


class TorchEncoder(nn.Module):
    """PyTorch encoder layers carrying an :class:`~companion.transformer.Encoder`'s weights;
    the embeddings are added outside and the CLS logit is read as in the encoder. Build it with
    :func:`to_torch`."""

    def __init__(self, encoder: Encoder, layers, width: int):
        super().__init__()
        if not isinstance(encoder, Encoder):
            raise TypeError(f"encoder must be an Encoder, got {type(encoder).__name__}")
        width = check_int(width, "width", minimum=encoder.d)
        if not all(isinstance(layer, nn.TransformerEncoderLayer) for layer in layers):
            raise TypeError("layers must be a list of nn.TransformerEncoderLayer")
        self.encoder, self.layers, self.width = encoder, nn.ModuleList(layers), width

    def forward(self, w) -> torch.Tensor:
        """The CLS logits ``[B]`` of the strings ``w: LongTensor[B, m]`` (or a str)."""
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


def _load_attention(attention: nn.MultiheadAttention, layer: EncoderLayer, d: int, width: int):
    """Our heads into PyTorch's: ``W^Q`` rescaled from ``1/sqrt(d)`` to ``1/sqrt(head dim)``,
    each ``W^V = U P`` split into the value projection ``P`` and the output projection ``U``."""
    heads, d_hid, _ = layer.W_Q.shape
    head_dim = width // heads
    in_proj = layer.W_Q.new_zeros(3, heads, head_dim, width)
    out_proj = layer.W_Q.new_zeros(width, heads, head_dim)
    for h in range(heads):
        in_proj[0, h, :d_hid, :d] = math.sqrt(head_dim) / math.sqrt(d) * layer.W_Q[h]
        in_proj[1, h, :d_hid, :d] = layer.W_K[h]
        U, P = _factor(layer.W_V[h], min(head_dim, d))
        in_proj[2, h, : P.shape[0], :d] = P
        out_proj[:d, h, : U.shape[1]] = U
    attention.in_proj_weight.copy_(in_proj.reshape(3 * width, width))
    attention.in_proj_bias.zero_()
    attention.out_proj.weight.copy_(out_proj.reshape(width, width))
    attention.out_proj.bias.zero_()


def _load_ffn(torch_layer: nn.TransformerEncoderLayer, layer: EncoderLayer, d: int):
    """Our FFN into ``linear1`` and ``linear2``, zero on the padding dimensions."""
    for linear in (torch_layer.linear1, torch_layer.linear2):
        linear.weight.zero_()
        linear.bias.zero_()
    torch_layer.linear1.weight[:, :d] = layer.W_F1
    torch_layer.linear1.bias.copy_(layer.b_F1)
    torch_layer.linear2.weight[:d] = layer.W_F2
    torch_layer.linear2.bias[:d] = layer.b_F2


def to_torch(encoder: Encoder) -> TorchEncoder:
    """Load ``encoder``'s weights into ``nn.TransformerEncoderLayer`` s (ReLU, no dropout).

    PyTorch's multi-head attention splits the model dimension among the heads, scales by
    ``1/sqrt(head dim)`` and concatenates heads before an output projection, where the papers
    give every head a full ``[d, d]`` value matrix and sum the heads. So each head's ``W^V`` is
    factored as ``U P`` (exact for the constructions, whose value matrices have low rank), ``W^Q``
    is rescaled, and without layer normalization the width is padded with zero dimensions to a
    multiple of the number of heads. Log-length scaling has no counterpart there.
    """
    if not isinstance(encoder, Encoder):
        raise TypeError(f"encoder must be an Encoder, got {type(encoder).__name__}")
    if encoder.log_length:
        raise ValueError("log-length scaled attention has no counterpart in nn.MultiheadAttention")
    d = encoder.d
    heads = max((layer.W_Q.shape[0] for layer in encoder.layers), default=1)
    width = d if d % heads == 0 else d + heads - d % heads
    if width != d and encoder.layernorm:
        raise ValueError(f"d = {d} is not a multiple of {heads} heads, and zero "
                         "padding would change what layer normalization computes")
    torch_layers = []
    for layer in encoder.layers:
        if layer.W_Q.shape[0] != heads or layer.W_Q.shape[1] > width // heads:
            raise ValueError(f"every layer needs {heads} heads of at most {width // heads} dims")
        torch_layer = nn.TransformerEncoderLayer(
            width, heads, dim_feedforward=layer.W_F1.shape[0], dropout=0.0, activation="relu",
            layer_norm_eps=encoder.eps, batch_first=True, norm_first=encoder.norm == "pre",
            dtype=encoder.word_embedding.dtype, device=encoder.word_embedding.device,
        )
        with torch.no_grad():
            _load_attention(torch_layer.self_attn, layer, d, width)
            _load_ffn(torch_layer, layer, d)
        if not encoder.layernorm:
            torch_layer.norm1, torch_layer.norm2 = nn.Identity(), nn.Identity()
        torch_layers.append(torch_layer)
    # Training mode with dropout 0 computes the same function; it also keeps PyTorch off its
    # fused inference path, which assumes that both layer norms exist.
    return TorchEncoder(encoder, torch_layers, width).train()
