"""A deep stack of random linear layers: how the size of the signal and of the gradient changes
with depth, with and without residual connections and layer normalization
([selfattention2025chapter] §9.9; keys of book/references.bib).

Each of ``depth`` layers maps a vector ``x: [d]`` to (``W`` the layer's ``[d, d]`` matrix, ``LN``
layer normalization with ``eps = 0``)

* ``"plain"``: ``W x`` (the stack of §9.9.1);
* ``"residual"``: ``x + W x``;
* ``"post-norm"``: ``LN(x + W x)``;
* ``"pre-norm"``: ``x + W LN(x)``.

``W`` is ``sigma`` times a random orthogonal matrix, so a plain layer multiplies every vector's
norm by exactly ``sigma``, as in §9.9.1's "each derivative is 0.5". Every quantity is computed
for ``draws`` independent stacks at once, as one batch.
"""

import torch

from companion._checks import (
    check_choice,
    check_generator,
    check_int,
    check_number,
    check_tensor,
)
from companion.layernorm import layer_norm

KINDS = ("plain", "residual", "post-norm", "pre-norm")


def random_stack(depth: int, sigma: float, d: int = 16, draws: int = 1000,
                 generator: torch.Generator | None = None) -> torch.Tensor:
    """``depth`` layers for each of ``draws`` stacks: ``[depth, draws, d, d]``, each matrix
    ``sigma`` times an orthogonal matrix drawn uniformly (the Q of a Gaussian matrix's QR
    decomposition, with its signs fixed), float64. ``depth * draws * d**2`` is at most
    ``2**27``."""
    depth, d = check_int(depth, "depth", minimum=1), check_int(d, "d", minimum=2)
    draws, sigma = check_int(draws, "draws", minimum=1), check_number(sigma, "sigma", above=0)
    check_generator(generator)
    if depth * draws * d * d > 2**27:
        raise ValueError(f"depth * draws * d**2 must be <= 2**27 (1 GiB of float64), got depth "
                         f"= {depth}, draws = {draws}, d = {d}")
    gaussian = torch.randn(depth, draws, d, d, generator=generator, dtype=torch.float64)
    q, r = torch.linalg.qr(gaussian)
    return sigma * q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)


def _layer(x: torch.Tensor, W: torch.Tensor, kind: str) -> torch.Tensor:
    """One layer of ``kind`` applied to ``x: [draws, d]`` with ``W: [draws, d, d]``."""
    def times_W(v):
        return (W @ v.unsqueeze(-1)).squeeze(-1)

    if kind == "plain":
        return times_W(x)
    if kind == "residual":
        return x + times_W(x)
    if kind == "post-norm":
        return layer_norm(x + times_W(x), eps=0.0)
    return x + times_W(layer_norm(x, eps=0.0))


def signal_and_gradient(W: torch.Tensor, kind: str, generator: torch.Generator | None = None):
    """Push a random input through the stacks ``W: [depth, draws, d, d]`` of layers of ``kind``,
    then backpropagate (with autograd) a random gradient from the top.

    Returns ``(signal, gradient)``, each ``[draws, depth + 1]``, both divided by ``d``:
    ``signal[:, l]`` is ``|x_l|^2 / d`` after ``l`` layers, from an input with
    ``|x_0|^2 / d = 1``; ``gradient[:, L]`` is ``|g|^2 / d`` for the gradient that has passed
    back through the top ``L`` layers, from a top gradient with ``|g|^2 / d = 1``. (The layers
    are independent draws, so the top ``L`` layers are a stack of depth ``L`` like any other.)
    """
    check_choice(kind, "kind", KINDS)
    check_tensor(W, "W")
    check_generator(generator)
    if not W.is_floating_point():
        raise TypeError(f"W must have a floating-point dtype, got {W.dtype}")
    if W.dim() != 4 or W.shape[-1] != W.shape[-2] or min(W.shape) < 1 or W.shape[-1] < 2:
        raise ValueError(f"W must have shape [depth, draws, d, d] with d >= 2, "
                         f"got {tuple(W.shape)}")
    depth, draws, d, _ = W.shape

    def unit_rms(v):  # rows rescaled to |v|^2 / d = 1
        return v * (d / v.square().sum(dim=-1, keepdim=True)).sqrt()

    shape = (draws, d)

    def draw():  # on the generator's device (the CPU), then where W lives
        return unit_rms(torch.randn(shape, generator=generator, dtype=W.dtype).to(W.device))

    x = draw().requires_grad_()
    xs = [x]
    for layer in W:
        xs.append(_layer(xs[-1], layer, kind))
    for x_l in xs[:-1]:
        x_l.retain_grad()
    top = draw()
    (xs[-1] * top).sum().backward()  # the gradient of x_depth . top is top itself
    signal = torch.stack([x_l.detach().square().sum(-1) for x_l in xs], dim=1) / d
    gradient = torch.stack([top.square().sum(-1)]
                           + [x_l.grad.square().sum(-1) for x_l in reversed(xs[:-1])], dim=1)
    return signal, gradient / d
