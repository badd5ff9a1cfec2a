import math

import pytest
import torch
import torch.nn.functional as F

from companion.layernorm import layer_norm


@pytest.mark.parametrize("eps", [0.0, 1e-5, 0.3])
def test_matches_torch_layer_norm(eps):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 7, 9, generator=g, dtype=torch.float64)
    gamma = torch.randn(9, generator=g, dtype=torch.float64)
    beta = torch.randn(9, generator=g, dtype=torch.float64)
    torch.testing.assert_close(layer_norm(x, eps), F.layer_norm(x, (9,), eps=eps))
    torch.testing.assert_close(layer_norm(x, eps, gamma, beta),
                               F.layer_norm(x, (9,), gamma, beta, eps=eps))


def test_exact_at_eps_zero():
    x = torch.tensor([1.0, -1.0, 3.0, -3.0], dtype=torch.float64)  # mean 0, variance 5
    expected = x / 5**0.5
    assert torch.equal(layer_norm(x, eps=0.0), expected)
    y = layer_norm(torch.randn(100, 12, dtype=torch.float64), eps=0.0)
    torch.testing.assert_close(y.mean(-1), torch.zeros(100, dtype=torch.float64))
    torch.testing.assert_close(y.var(-1, unbiased=False), torch.ones(100, dtype=torch.float64))


def test_bad_arguments():
    x = torch.randn(3, 4, dtype=torch.float64)
    with pytest.raises(ValueError, match="eps must be >= 0"):
        layer_norm(x, eps=-1e-5)
    with pytest.raises(TypeError, match="eps must be a number"):
        layer_norm(x, eps="small")
    with pytest.raises(ValueError, match="gamma must have shape"):
        layer_norm(x, gamma=torch.ones(5, dtype=torch.float64))
    with pytest.raises(TypeError, match="x must have a floating-point dtype"):
        layer_norm(torch.ones(3, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="constant vector"):
        layer_norm(torch.ones(2, 4, dtype=torch.float64), eps=0.0)


@pytest.mark.parametrize("eps", [0.0, 1e-5, 0.3])
def test_local_stretch_is_the_jacobian_norm_of_torch_layer_norm(eps):
    """Against PyTorch's F.layer_norm differentiated one row at a time, and the closed form:
    the Jacobian of x -> (x - mean)/sqrt(var + eps) has largest singular value
    1/sqrt(var + eps) (on the directions orthogonal to the ones vector and to x - mean)."""
    from companion.layernorm import local_stretch

    g = torch.Generator().manual_seed(1)
    x = torch.randn(6, 5, generator=g, dtype=torch.float64) * torch.logspace(-3, 1, 6)[:, None]
    stretch = local_stretch(x, eps)
    for row, measured in zip(x, stretch, strict=True):
        J = torch.autograd.functional.jacobian(lambda r: F.layer_norm(r, (5,), eps=eps), row)
        assert measured == pytest.approx(torch.linalg.matrix_norm(J, ord=2).item(), rel=1e-9)
        variance = row.var(unbiased=False).item()
        assert measured == pytest.approx(1 / math.sqrt(variance + eps), rel=1e-9)


def test_local_stretch_refuses_a_constant_vector_at_eps_zero():
    from companion.layernorm import local_stretch

    with pytest.raises(ValueError, match="constant vector"):
        local_stretch(torch.ones(2, 4, dtype=torch.float64), 0.0)
    with pytest.raises(ValueError, match="constant vector"):  # the variance underflows to 0
        layer_norm(torch.tensor([1e-200, 0.0], dtype=torch.float64), eps=0.0)
    assert torch.isfinite(local_stretch(torch.ones(2, 4, dtype=torch.float64), 1e-5)).all()
