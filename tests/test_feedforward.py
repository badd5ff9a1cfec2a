import itertools

import pytest
import torch

from companion.feedforward import feed_forward, two_switch_network


def test_two_switch_network_is_xor_on_every_corner():
    corners = torch.tensor(list(itertools.product((0.0, 1.0), repeat=2)), dtype=torch.float64)
    light = feed_forward(corners, *two_switch_network()).squeeze(-1)
    expected = torch.tensor([a != b for a, b in itertools.product((0, 1), repeat=2)])
    assert torch.equal(light, expected.double())


def test_feed_forward_matches_torch_layers():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 5, 4, generator=g, dtype=torch.float64)
    up, down = torch.nn.Linear(4, 16).double(), torch.nn.Linear(16, 3).double()
    y, h = feed_forward(x, up.weight, up.bias, down.weight, down.bias, return_hidden=True)
    with torch.no_grad():
        torch.testing.assert_close(h, torch.relu(up(x)))
        torch.testing.assert_close(y, down(torch.relu(up(x))))


def test_bad_shapes_are_refused():
    W1, b1, W2, b2 = two_switch_network()
    x = torch.zeros(2, dtype=torch.float64)
    with pytest.raises(ValueError, match="x's last dim"):
        feed_forward(torch.zeros(3, dtype=torch.float64), W1, b1, W2, b2)
    with pytest.raises(ValueError, match="b1 must have shape"):
        feed_forward(x, W1, b1[:2], W2, b2)
    with pytest.raises(ValueError, match="W2 must have 3 columns"):
        feed_forward(x, W1, b1, W2[:, :2], b2)
    with pytest.raises(ValueError, match="b2 must have shape"):
        feed_forward(x, W1, b1, W2, torch.zeros(2, dtype=torch.float64))
    with pytest.raises(TypeError, match="W1 must be a torch.Tensor"):
        feed_forward(x, W1.tolist(), b1, W2, b2)
