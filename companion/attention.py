"""Self-attention as in the textbook chapter ([selfattention2025chapter] §9.2): the row convention.

Each token is a row: ``X`` is ``[n, d]`` (or ``[B, n, d]`` for a batch), ``Q = X @ W_Q`` with
``W_Q: [d, d_k]``, and ``A[i, j]`` is how much query position ``i`` attends to key position ``j``.
(:mod:`companion.transformer` uses the papers' column convention ``q = W^Q x`` instead.)

Masks are boolean and say where attention is *allowed*, as in
``torch.nn.functional.scaled_dot_product_attention``: ``mask[i, j]`` is True when position ``i``
may attend to position ``j``. (``nn.MultiheadAttention`` uses the opposite sense.) A query row
with no allowed key gets all-zero weights, so its output is the zero vector.
"""

import math

import torch
from torch.utils.flop_counter import FlopCounterMode

from companion._checks import (
    check_bool,
    check_choice,
    check_device,
    check_float_tensor,
    check_int,
    check_number,
    check_same_device,
    check_tensor,
)

ATTENTION_KINDS = ("softmax", "leftmost_hard", "average_hard")
MAX_POSITIONS = 2**13  # future_mask and attention_flops hold n**2 entries


def future_mask(n: int, strict: bool = False, device=None) -> torch.Tensor:
    """Causal mask ``BoolTensor[n, n]``: True where position ``i`` may attend to position ``j``.

    ``j <= i`` by default (future masking, [chiang2024esslli] eq. 5.11); ``j < i`` when ``strict``
    (strict future masking, under which position 0 attends to nothing). ``n`` is at most 8192.
    """
    n = check_int(n, "n", minimum=1, maximum=MAX_POSITIONS)
    strict, device = check_bool(strict, "strict"), check_device(device)
    return torch.ones(n, n, dtype=torch.bool, device=device).tril(diagonal=-1 if strict else 0)


def _allowed(mask, scores: torch.Tensor) -> torch.Tensor:
    """``mask`` checked and broadcast to the shape of ``scores`` (all True when None)."""
    if mask is None:
        return torch.ones_like(scores, dtype=torch.bool)
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"mask must be a BoolTensor or None, got {type(mask).__name__}")
    check_tensor(mask, "mask")
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be a BoolTensor (True = may attend), got dtype {mask.dtype}")
    try:
        return mask.to(scores.device).expand_as(scores)
    except RuntimeError as error:
        raise ValueError(
            f"mask has shape {tuple(mask.shape)}, which does not broadcast to the attention "
            f"scores' shape {tuple(scores.shape)} ([..., queries, keys])"
        ) from error


def attention_weights(scores: torch.Tensor, kind: str = "softmax", mask=None) -> torch.Tensor:
    """Attention weights from ``scores: [..., n_queries, n_keys]``, row by row.

    ``kind`` is ``"softmax"`` ([selfattention2025chapter] §9.2, step 3), ``"leftmost_hard"`` (all
    weight on the leftmost maximal score, [chiang2024esslli] eq. 5.12) or ``"average_hard"``
    (weight shared equally by the maximal scores, [chiang2024esslli] eq. 5.13). Masked-out keys
    (``mask`` False) get weight 0 and do not count as maximal; so do keys with score ``-inf``.
    Returns a tensor shaped like ``scores`` whose rows sum to 1 (or are all 0 for a row with no
    allowed key). (The scores of a tensor on the ``meta`` device, which holds shapes only, are
    not checked.)
    """
    check_float_tensor(scores, "scores", ranks=tuple(range(2, 9)))
    check_choice(kind, "kind", ATTENTION_KINDS)
    if not scores.is_meta and (torch.isnan(scores).any() or torch.isposinf(scores).any()):
        raise ValueError("scores must be finite or -inf, got NaN or +inf")
    if scores.shape[-1] == 0:  # no keys: every row has no allowed key
        return torch.zeros_like(scores)
    allowed = _allowed(mask, scores) & ~torch.isneginf(scores)
    masked = scores.masked_fill(~allowed, -math.inf)
    some_allowed = allowed.any(dim=-1, keepdim=True)
    if kind == "softmax":
        weights = torch.softmax(masked, dim=-1)
    elif kind == "leftmost_hard":
        leftmost = masked.argmax(dim=-1, keepdim=True)  # argmax returns the first maximal index
        weights = torch.zeros_like(scores).scatter_(-1, leftmost, 1.0)
    else:
        is_max = (masked == masked.amax(dim=-1, keepdim=True)) & allowed
        weights = is_max.to(scores.dtype) / is_max.sum(dim=-1, keepdim=True).clamp(min=1)
    return torch.where(some_allowed, weights, torch.zeros_like(weights))


def self_attention(
    X: torch.Tensor,
    W_Q: torch.Tensor,
    W_K: torch.Tensor,
    W_V: torch.Tensor,
    mask=None,
    kind: str = "softmax",
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Single-head self-attention in the row convention of
    [selfattention2025chapter] §9.2.

    ``X: [n, d]`` or ``[B, n, d]``; ``W_Q, W_K: [d, d_k]``; ``W_V: [d, d_v]``.
    Computes ``Q = X W_Q``, ``K = X W_K``, ``V = X W_V``, the scores
    ``S = scale * Q K^T`` (``scale`` defaults to ``1 / sqrt(d_k)``), the
    weights ``A = attention_weights(S, kind, mask)`` and ``O = A V``.
    Returns ``(O, A)`` with ``O: [..., n, d_v]`` and ``A: [..., n, n]``.
    """
    check_float_tensor(X, "X", ranks=(2, 3))
    d = X.shape[-1]
    for name, W in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V)):
        check_float_tensor(W, name, ranks=(2,))
        if W.shape[0] != d:
            raise ValueError(f"{name} must have shape [d, ·] with d = {d} "
                             f"(X's last dim), got {tuple(W.shape)}")
        if W.dtype != X.dtype:
            raise TypeError(f"{name} has dtype {W.dtype} but X has "
                            f"{X.dtype}; use one dtype")
    check_same_device(X=X, W_Q=W_Q, W_K=W_K, W_V=W_V)
    if W_Q.shape[1] != W_K.shape[1]:
        raise ValueError("W_Q and W_K must have the same number of columns "
                         f"d_k, got {W_Q.shape[1]} and {W_K.shape[1]}")
    if scale is None:
        scale = 1.0 / math.sqrt(W_Q.shape[1])
    scale = check_number(scale, "scale")
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    S = scale * (Q @ K.transpose(-2, -1))
    A = attention_weights(S, kind=kind, mask=mask)
    return A @ V, A


def attention_flops(n: int, d: int, d_k: int, d_v: int | None = None) -> int:
    """Floating-point operations of one :func:`self_attention` call on ``X: [n, d]``, as counted
    by PyTorch's own ``FlopCounterMode`` (matrix products only; one multiply-add is 2 FLOPs).

    ``d_v`` defaults to ``d_k``. Use it to check the operation count predicted by hand. ``n`` is
    at most 8192. The call runs on the ``meta`` device, which holds shapes and no values, so
    counting costs no arithmetic at any size.
    """
    n = check_int(n, "n", minimum=1, maximum=MAX_POSITIONS)
    d, d_k = check_int(d, "d", minimum=1), check_int(d_k, "d_k", minimum=1)
    d_v = d_k if d_v is None else check_int(d_v, "d_v", minimum=1)
    X = torch.zeros(n, d, device="meta")
    weights = tuple(torch.zeros(d, k, device="meta") for k in (d_k, d_k, d_v))
    with FlopCounterMode(display=False) as counter:
        self_attention(X, *weights)
    return counter.get_total_flops()
