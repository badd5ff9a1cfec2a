"""The deep random stacks of companion.residual, against closed forms that hold in every draw
and against a plain loop with autograd's answer checked by hand-written chain rule."""

import pytest
import torch

from companion.layernorm import layer_norm
from companion.residual import KINDS, random_stack, signal_and_gradient


def stack(depth=5, sigma=0.7, d=6, draws=40, seed=0):
    return random_stack(depth, sigma, d=d, draws=draws,
                        generator=torch.Generator().manual_seed(seed))


def test_layers_are_sigma_times_orthogonal():
    W = stack()
    eye = torch.eye(6, dtype=torch.float64).expand_as(W)
    torch.testing.assert_close(W.transpose(-1, -2) @ W, 0.49 * eye)


def test_orthogonal_draws_are_not_biased_toward_the_identity():
    # Haar-distributed Q has E[Q] = 0; the mean of many draws is near 0 entrywise
    W = random_stack(1, 1.0, d=4, draws=20000, generator=torch.Generator().manual_seed(1))
    assert W.mean(dim=(0, 1)).abs().max() < 0.03


def test_plain_stack_scales_every_draw_by_sigma_per_layer():
    signal, gradient = signal_and_gradient(stack(), "plain",
                                           torch.Generator().manual_seed(2))
    exact = (0.49 ** torch.arange(6.0, dtype=torch.float64)).expand(40, -1)
    torch.testing.assert_close(signal, exact)
    torch.testing.assert_close(gradient, exact)


def test_post_norm_signal_is_exactly_one():
    signal, _ = signal_and_gradient(stack(), "post-norm", torch.Generator().manual_seed(3))
    torch.testing.assert_close(signal, torch.ones_like(signal))


@pytest.mark.parametrize("kind", KINDS)
def test_against_an_explicit_chain_rule(kind):
    """Recompute one stack by a loop over layers, with Jacobians from torch.func.jacrev and
    the gradient as the product of transposed Jacobians."""
    W = stack(depth=4, draws=3)
    signal, gradient = signal_and_gradient(W, kind, torch.Generator().manual_seed(4))
    g = torch.Generator().manual_seed(4)
    x = torch.randn(3, 6, generator=g, dtype=torch.float64)
    x = x * (6 / x.square().sum(-1, keepdim=True)).sqrt()
    top = torch.randn(3, 6, generator=g, dtype=torch.float64)
    top = top * (6 / top.square().sum(-1, keepdim=True)).sqrt()
    layer = {"plain": lambda v, M: M @ v,
             "residual": lambda v, M: v + M @ v,
             "post-norm": lambda v, M: layer_norm(v + M @ v, eps=0.0),
             "pre-norm": lambda v, M: v + M @ layer_norm(v, eps=0.0)}[kind]
    for b in range(3):
        xs, jacobians = [x[b]], []
        for M in W[:, b]:
            jacobians.append(torch.func.jacrev(layer)(xs[-1], M))
            xs.append(layer(xs[-1], M))
        grads = [top[b]]
        for J in reversed(jacobians):
            grads.append(J.T @ grads[-1])
        torch.testing.assert_close(signal[b], torch.stack([v.square().sum() for v in xs]) / 6)
        torch.testing.assert_close(gradient[b], torch.stack([v.square().sum() for v in grads]) / 6)


def test_bad_arguments():
    with pytest.raises(ValueError, match="sigma must be > 0"):
        random_stack(3, 0.0)
    with pytest.raises(ValueError, match="depth must be >= 1"):
        random_stack(0, 0.5)
    with pytest.raises(TypeError, match="d must be an int"):
        random_stack(3, 0.5, d=4.0)
    with pytest.raises(ValueError, match="kind must be one of"):
        signal_and_gradient(stack(), "batch-norm")
    with pytest.raises(ValueError, match=r"W must have shape \[depth, draws, d, d\]"):
        signal_and_gradient(torch.ones(3, 4, 5, dtype=torch.float64), "plain")
