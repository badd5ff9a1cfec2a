"""Layer normalization of [ba2016layer], exact at ``eps = 0``.

``layer_norm(x) = gamma * (x - mean(x)) / sqrt(var(x) + eps) + beta`` over the last dimension,
with the biased variance ``mean((x - mean(x))**2)`` of [chiang2024esslli] eq. 5.16 (keys of
book/references.bib), as ``F.layer_norm`` computes it. With ``eps = 0`` a constant vector
(variance 0) has no normalization; it raises instead of returning NaN.
"""

import torch

from companion._checks import check_float_tensor, check_number, check_same_device


def _normalize(x: torch.Tensor, eps: float, check: bool = False) -> torch.Tensor:
    """``(x - mean) / sqrt(var + eps)`` over the last dimension; with ``check``, refuse a
    variance of 0 at ``eps = 0`` (a constant vector, or one whose variance underflows) rather
    than return NaN."""
    centered = x - x.mean(dim=-1, keepdim=True)
    variance = (centered * centered).mean(dim=-1, keepdim=True)
    if check and eps == 0 and bool((variance == 0).any()):
        raise ValueError("layer_norm with eps = 0 got a constant vector in x (variance 0); "
                         "its normalization is undefined")
    return centered * torch.rsqrt(variance + eps)


def layer_norm(x: torch.Tensor, eps: float = 1e-5, gamma=None, beta=None) -> torch.Tensor:
    """Normalize ``x: [..., d]`` over its last dimension; ``gamma``, ``beta``: ``[d]`` or None."""
    check_float_tensor(x, "x", ranks=tuple(range(1, 9)))
    eps = check_number(eps, "eps", minimum=0)
    d = x.shape[-1]
    for name, param in (("gamma", gamma), ("beta", beta)):
        if param is not None:
            check_float_tensor(param, name, ranks=(1,))
            if param.shape[0] != d:
                raise ValueError(f"{name} must have shape [{d}] (x's last dim), "
                                 f"got {tuple(param.shape)}")
    check_same_device(x=x, gamma=gamma, beta=beta)
    y = _normalize(x, eps, check=True)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y


def local_stretch(x: torch.Tensor, eps: float) -> torch.Tensor:
    """How much ``layer_norm(., eps)`` (no gamma, beta) stretches small changes near each row of
    ``x: [B, d]``: the largest singular value of its Jacobian there, ``[B]``. Its supremum over
    all ``x`` is the Lipschitz constant, ``1/sqrt(eps)``, infinite at ``eps = 0``."""
    check_float_tensor(x, "x", ranks=(2,))
    eps = check_number(eps, "eps", minimum=0)
    _normalize(x, eps, check=True)
    jacobians = torch.func.vmap(torch.func.jacrev(lambda row: _normalize(row, eps)))(x)
    return torch.linalg.matrix_norm(jacobians, ord=2)
