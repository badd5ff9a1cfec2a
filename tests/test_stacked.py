"""companion.stacked: one Adam over stacked models against torch.optim.Adam on each alone."""

import torch
from torch import nn

from companion.stacked import optimize, stack_modules


def test_stacked_models_train_as_if_each_had_its_own_adam():
    """Three linear models, each with its own data and a loss of its own form, trained as one
    stack for 7 steps; each also alone with PyTorch's plain (not fused) Adam: the same
    parameters and the same losses, to rounding."""
    seeds = [4, 5, 6]
    stacked = stack_modules(lambda: nn.Linear(3, 2), seeds, dtype=torch.float64)
    data = torch.randn(7, 3, 5, 3, generator=torch.Generator().manual_seed(0),
                       dtype=torch.float64)  # [steps, models, batch, in]

    def loss_of(model, out):  # a different loss per model: gradients must not mix
        return out.pow(2).mean() if model == 0 else (out - model).abs().mean()

    def losses(step):
        out = torch.baddbmm(stacked["bias"][:, None], data[step],
                            stacked["weight"].transpose(1, 2))  # [models, batch, out]
        return torch.stack([loss_of(m, out[m]) for m in range(len(seeds))])

    reported = {}  # step -> the weights report saw

    def report(step):
        reported[step] = stacked["weight"].detach().clone()

    history = optimize(stacked, losses, 7, lr=0.05, progress=False, every=3, report=report)
    assert list(reported) == [2, 5]  # after the third and the sixth step
    assert history.shape == (3, 7) and history.dtype == torch.float64
    assert history.device.type == "cpu" and not history.requires_grad
    for m, seed in enumerate(seeds):
        torch.manual_seed(seed)
        alone = nn.Linear(3, 2).double()
        adam = torch.optim.Adam(alone.parameters(), lr=0.05, foreach=False)
        for step in range(7):
            loss = loss_of(m, alone(data[step, m]))
            assert abs(loss.item() - history[m, step].item()) < 1e-12
            adam.zero_grad()
            loss.backward()
            adam.step()
            if step in reported:  # report saw the weights after this step's update
                torch.testing.assert_close(reported[step][m], alone.weight.detach(),
                                           rtol=1e-12, atol=1e-12)
        for name, value in alone.named_parameters():
            torch.testing.assert_close(stacked[name][m], value.detach(), rtol=1e-12, atol=1e-12)


def test_stack_modules_seeds_each_model_and_leaves_the_global_state_alone():
    torch.manual_seed(0)
    before = torch.random.get_rng_state()
    stacked = stack_modules(lambda: nn.Linear(2, 2), [1, 2, 1])
    assert torch.equal(torch.random.get_rng_state(), before)
    weight = stacked["weight"]
    assert weight.shape == (3, 2, 2) and weight.requires_grad
    assert torch.equal(weight[0], weight[2]) and not torch.equal(weight[0], weight[1])
    torch.manual_seed(2)
    torch.testing.assert_close(weight[1], nn.Linear(2, 2).weight.detach())
