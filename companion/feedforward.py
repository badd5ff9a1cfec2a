"""Position-wise feed-forward networks with ReLU, in the column convention ``W x``.

A network with weights ``W1: [d_ff, d]``, ``b1: [d_ff]``, ``W2: [d_out, d_ff]``, ``b2: [d_out]``
maps each vector ``x`` (the last dimension of the input) to ``W2 relu(W1 x + b1) + b2``, the form
of [selfattention2025chapter] §9.8.12 as its examples apply it.
"""

import torch

from companion._checks import check_bool, check_dtype, check_float_tensor, check_same_device


def feed_forward(x, W1, b1, W2, b2=None, return_hidden: bool = False):
    """``W2 relu(W1 x + b1) + b2`` for every vector ``x`` along the last dim of ``x: [..., d]``.

    Returns ``y: [..., d_out]``, or ``(y, h)`` with the hidden activations ``h: [..., d_ff]``
    when ``return_hidden``. ``b2`` defaults to zero.
    """
    check_float_tensor(x, "x", ranks=tuple(range(1, 9)))
    check_float_tensor(W1, "W1", ranks=(2,))
    check_float_tensor(b1, "b1", ranks=(1,))
    check_float_tensor(W2, "W2", ranks=(2,))
    return_hidden = check_bool(return_hidden, "return_hidden")
    d_ff, d = W1.shape
    if x.shape[-1] != d:
        raise ValueError(f"x's last dim must be W1's number of columns {d}, got {x.shape[-1]}")
    if b1.shape != (d_ff,):
        raise ValueError(f"b1 must have shape [{d_ff}] (W1's rows), got {tuple(b1.shape)}")
    if W2.shape[1] != d_ff:
        raise ValueError(f"W2 must have {d_ff} columns (W1's rows), got shape {tuple(W2.shape)}")
    if b2 is None:
        b2 = torch.zeros(W2.shape[0], dtype=W2.dtype, device=W2.device)
    check_float_tensor(b2, "b2", ranks=(1,))
    if b2.shape != (W2.shape[0],):
        raise ValueError(f"b2 must have shape [{W2.shape[0]}] (W2's rows), got {tuple(b2.shape)}")
    check_same_device(x=x, W1=W1, b1=b1, W2=W2, b2=b2)
    if not x.dtype == W1.dtype == W2.dtype:
        raise TypeError(f"x, W1 and W2 must have one dtype, got {x.dtype}, {W1.dtype}, "
                        f"{W2.dtype}")
    hidden = torch.relu(x @ W1.T + b1)
    y = hidden @ W2.T + b2
    return (y, hidden) if return_hidden else y


def two_switch_network(dtype=torch.float64):
    """Weights ``(W1, b1, W2, b2)`` of the three-ReLU network for the two-switch problem (XOR).

    Unit 1 fires when switch A is on, unit 2 when switch B is on, unit 3 when both are; the output
    is unit 1 + unit 2 - 2 * unit 3 ([selfattention2025chapter] §9.8.5). Each unit is scaled so
    that it outputs exactly 1 when it fires on a corner of the unit square.
    """
    check_dtype(dtype)
    W1 = torch.tensor([[2.0, 0.0], [0.0, 2.0], [2.0, 2.0]], dtype=dtype)
    b1 = torch.tensor([-1.0, -1.0, -3.0], dtype=dtype)
    W2 = torch.tensor([[1.0, 1.0, -2.0]], dtype=dtype)
    b2 = torch.zeros(1, dtype=dtype)
    return W1, b1, W2, b2
