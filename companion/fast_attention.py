"""Softmax attention, ``softmax(scale * q k^T) v``, computed so that long strings fit and hand-set
constructions run in time linear in the length.

The model (:mod:`companion.transformer`) states the formula; this module computes the same
numbers with two savings, each exact:

1. query rows that are equal get equal attention, so each distinct query is computed once and
   its result handed to every position that holds it (hand-set constructions often have one or
   two distinct queries);
2. the scores are formed for blocks of queries of at most ``SCORE_BUDGET`` entries at a time, so
   memory grows like ``n`` rather than ``n**2``.

(The model itself skips a head whose value matrix is zero.)
"""

import torch

from companion._checks import check_float_tensor, check_number, check_same_device, check_tensor

SCORE_BUDGET = 2**24  # attention scores held at once (batch * queries * keys)


def distinct_rows(rows: torch.Tensor):
    """``(distinct, which)`` with ``rows == distinct[which]`` for ``rows: [N, d]``, or
    ``(None, None)`` when finding them would cost more than it saves (``torch.unique`` over
    many rows is slow)."""
    check_tensor(rows, "rows")
    if rows.dim() != 2:
        raise ValueError(f"rows must have shape [N, d], got {list(rows.shape)}")
    if bool((rows == rows[:1]).all()):
        return rows[:1], torch.zeros(rows.shape[0], dtype=torch.long, device=rows.device)
    if rows.shape[0] > 2**16:
        return None, None
    exact = rows.float() if rows.dtype in (torch.float16, torch.bfloat16) else rows
    distinct, which = torch.unique(exact, dim=0, return_inverse=True)
    return distinct.to(rows.dtype), which


def attend(q, k, v, scale: float, return_weights: bool = False):
    """``softmax(scale * q k^T) v`` over the last dimension of the scores.

    ``q: [B, n_q, d_k]``, ``k: [B, n, d_k]``, ``v: [B, n, d_v]``. Returns the output
    ``[B, n_q, d_v]`` and, when ``return_weights``, the attention weights ``[B, n_q, n]``
    (else ``None``).
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_float_tensor(t, name, ranks=(3,))
    check_same_device(q=q, k=k, v=v)
    B, n_q, d_k = q.shape
    if k.shape[0] != B or k.shape[2] != d_k or v.shape[:2] != k.shape[:2]:
        raise ValueError(f"q, k, v must have shapes [B, n_q, d_k], [B, n, d_k], [B, n, d_v], got "
                         f"{list(q.shape)}, {list(k.shape)}, {list(v.shape)}")
    if k.shape[1] == 0:
        raise ValueError("k must hold at least one key (n >= 1)")
    if q.dtype != k.dtype or k.dtype != v.dtype:
        raise TypeError(f"q, k, v must have one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    scale = check_number(scale, "scale")
    if B == 0:
        weights = q.new_zeros(0, n_q, k.shape[1]) if return_weights else None
        return q.new_zeros(0, n_q, v.shape[2]), weights
    distinct, which = distinct_rows(q.reshape(B * n_q, d_k))
    shared = distinct is not None and distinct.shape[0] < n_q
    rows = distinct.expand(B, -1, -1) if shared else q
    block = max(1, SCORE_BUDGET // (B * k.shape[1]))
    outputs, weights = [], []
    for start in range(0, rows.shape[1], block):
        alpha = torch.softmax(scale * (rows[:, start:start + block] @ k.transpose(1, 2)), -1)
        outputs.append(alpha @ v)
        if return_weights:
            weights.append(alpha)
    output = torch.cat(outputs, dim=1)
    alpha = torch.cat(weights, dim=1) if return_weights else None
    if shared:  # hand each position the result for its query vector
        index = which.view(B, n_q, 1)
        output = output.gather(1, index.expand(-1, -1, output.shape[-1]))
        if return_weights:
            alpha = alpha.gather(1, index.expand(-1, -1, alpha.shape[-1]))
    return output, alpha
