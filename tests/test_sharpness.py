"""Hahn & Rofin's measures (companion.sharpness) against code nobody here wrote: the layer-norm
blow-up read by forward hooks on PyTorch's own encoder layers, the sharpness from losses those
layers compute under the same noise, the parameter norm from ``parameters_to_vector``; the
training batches against the languages' own definitions; the decisions against each model
alone; stacked sensitivity against one model at a time; and bad input."""

import collections
import itertools
import math

import pytest
import torch
import torch.nn.functional as F

from companion import model, sharpness
from companion.languages import first, majority, parity
from companion.sensitivity import average_sensitivity, sensitivity_profile

LENGTHS = [3, 5]


def stacked(tasks=("parity", "majority"), seeds=(0, 1)):
    """Untrained stacked models (tasks x LENGTHS x seeds), float64, with random layer-norm
    weights so that no factor is trivially 1."""
    grid = [(t, n, s) for t in tasks for n in LENGTHS for s in seeds]
    config = sharpness.config(max(LENGTHS), d=8, heads=2, layers=2)
    params = model.stack(config, [s for _, _, s in grid], dtype=torch.float64)
    generator = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for name, p in params.items():
            if "norm" in name and name.endswith("weight"):
                p.copy_(torch.rand(p.shape, generator=generator, dtype=p.dtype) + 0.5)
    indices = torch.tensor([list(sharpness.TASKS).index(t) for t, _, _ in grid])
    return config, {k: v.detach() for k, v in params.items()}, indices, torch.tensor(
        [n for _, n, _ in grid])


def module_of(params, config, m):
    """Model ``m`` of a stack as a plain :class:`companion.model.Model` (float64)."""
    module = model.Model(config).double()
    module.load_state_dict({name: p[m] for name, p in params.items()})
    return module


def hooked_pass(module, tokens):
    """PyTorch's own layers run on ``tokens`` (causal mask), with each layer norm's input kept
    by a forward hook: the logits and the inputs, norm1, norm2 of each layer, then the final
    norm."""
    inputs = []
    hooks = [norm.register_forward_hook(lambda mod, args, out: inputs.append(args[0]))
             for layer in module.layers for norm in (layer.norm1, layer.norm2)]
    hooks.append(module.norm.register_forward_hook(lambda mod, args, out: inputs.append(args[0])))
    n = tokens.shape[1]
    x = module.embedding(tokens) + module.position(torch.arange(n))
    mask = torch.zeros(n, n, dtype=x.dtype).masked_fill(
        torch.arange(n)[None, :] > torch.arange(n)[:, None], -math.inf)
    for layer in module.layers:
        x = layer(x, src_mask=mask)
    out = module.output(module.norm(x))
    for hook in hooks:
        hook.remove()
    return out, inputs


def test_batches_are_each_models_language_at_its_length():
    config, params, tasks, lengths = stacked(("parity", "majority", "first"))
    tokens, targets = sharpness.batch(tasks, lengths, 64, torch.Generator().manual_seed(0))
    N = max(LENGTHS)
    assert tokens.shape == targets.shape == (len(lengths), 64, N + 1)
    for m, (task, n) in enumerate(zip(tasks.tolist(), lengths.tolist(), strict=True)):
        language = {"parity": parity, "majority": majority, "first": first}[
            list(sharpness.TASKS)[task]]
        assert (tokens[m, :, n:] == sharpness.OUTPUT).all()
        assert ((tokens[m, :, :n] == 0) | (tokens[m, :, :n] == 1)).all()
        supervised = targets[m] != model.IGNORE
        assert supervised[:, n].all() and supervised.sum() == 64
        assert targets[m, :, n].tolist() == language(tokens[m, :, :n]).long().tolist()


def test_a_batch_of_every_string_holds_each_models_strings_equally_often():
    """size None: every string of the longest length, so that each model, reading its own
    first n bits, sees each of its 2**n strings 2**(N - n) times, classified by brute force."""
    config, params, tasks, lengths = stacked(("parity", "majority", "first"))
    tokens, targets = sharpness.batch(tasks, lengths, None)
    N = max(LENGTHS)
    assert tokens.shape == targets.shape == (len(lengths), 2**N, N + 1)
    for m, (task, n) in enumerate(zip(tasks.tolist(), lengths.tolist(), strict=True)):
        seen = collections.Counter(tuple(row) for row in tokens[m, :, :n].tolist())
        assert seen == {bits: 2 ** (N - n) for bits in itertools.product((0, 1), repeat=n)}
        assert (tokens[m, :, n:] == sharpness.OUTPUT).all()
        name = list(sharpness.TASKS)[task]
        for row, target in zip(tokens[m, :, :n].tolist(), targets[m, :, n].tolist(),
                               strict=True):
            ones = sum(row)
            expected = {"parity": ones % 2, "majority": int(2 * ones > n),
                        "first": row[0]}[name]
            assert target == expected
        assert ((targets[m] != model.IGNORE).sum(dim=1) == 1).all()


def test_parameter_norm_leaves_out_the_position_table():
    config, params, _, _ = stacked()
    for m in (0, 5):
        module = module_of(params, config, m)
        rest = [p for name, p in module.named_parameters() if name != "position.weight"]
        expected = torch.nn.utils.parameters_to_vector(rest).norm()
        assert sharpness.parameter_norm(params)[m].item() == pytest.approx(expected.item(),
                                                                           rel=1e-12)


def test_the_blowup_is_read_from_pytorchs_own_layer_norms():
    config, params, tasks, lengths = stacked()
    tokens, _ = sharpness.batch(tasks, lengths, 16, torch.Generator().manual_seed(1))
    measured = sharpness.blowup(params, config, tokens, lengths)
    for m in range(len(lengths)):
        module = module_of(params, config, m)
        with torch.no_grad():
            _, inputs = hooked_pass(module, tokens[m])
        n = int(lengths[m])
        product = torch.ones(tokens.shape[1], dtype=torch.float64)
        for k, x in enumerate(inputs):
            factor = 1 / torch.sqrt(x.var(dim=-1, unbiased=False) + module.norm.eps)
            reach = slice(n, n + 1) if k >= 2 * config.layers - 1 else slice(0, n + 1)
            product *= factor[:, reach].max(dim=1).values
        assert measured[m].item() == pytest.approx(product.mean().item(), rel=1e-10)


def test_sharpness_is_the_loss_increase_under_the_same_noise():
    config, params, tasks, lengths = stacked()
    tokens, targets = sharpness.batch(tasks, lengths, 32, torch.Generator().manual_seed(2))
    measured = sharpness.sharpness(params, config, tokens, targets, epsilon=0.05, draws=3,
                                   generator=torch.Generator().manual_seed(3))
    generator = torch.Generator().manual_seed(3)
    noises = [{name: None if name == "position.weight" else
               torch.randn(p.shape, generator=generator, dtype=p.dtype)
               for name, p in params.items()} for _ in range(3)]

    def loss(module, m):
        out, _ = hooked_pass(module, tokens[m])
        n = int(lengths[m])
        return F.cross_entropy(out[:, n], targets[m, :, n]).item() / math.log(2)

    for m in range(len(lengths)):
        module = module_of(params, config, m)
        with torch.no_grad():
            base = loss(module, m)
            noisy = []
            for noise in noises:
                moved = module_of(params, config, m)
                for name, p in moved.named_parameters():
                    if noise[name] is not None:
                        p += 0.05 * noise[name][m]
                noisy.append(loss(moved, m))
        assert measured[m].item() == pytest.approx(sum(noisy) / 3 - base, rel=1e-8, abs=1e-12)


def test_decisions_and_stacked_sensitivity_are_each_model_alone():
    config, params, _, lengths = stacked()
    chosen = (lengths == 5).nonzero().flatten()
    sub = {name: p[chosen] for name, p in params.items()}
    decide = sharpness.decider(sub, config)
    profiles = sensitivity_profile(decide, 5)
    averages = average_sensitivity(decide, 5)
    assert profiles.shape == (len(chosen), 32) and averages.shape == (len(chosen),)
    for k, m in enumerate(chosen.tolist()):
        module = module_of(params, config, m)

        def alone(strings, module=module):
            tokens = torch.cat([strings, torch.full_like(strings[:, :1], 2)], dim=1)
            with torch.no_grad():
                out, _ = hooked_pass(module, tokens)
            return out[:, -1, 1] > out[:, -1, 0]

        assert profiles[k].tolist() == sensitivity_profile(alone, 5).tolist()
        assert averages[k].item() == average_sensitivity(alone, 5)


def test_fit_trains_every_task_length_and_seed_in_one_stack():
    result = sharpness.fit(["first", "parity"], [2, 3], [0, 1], steps=3, size=8, d=8,
                           generator=torch.Generator().manual_seed(0), progress=False)
    assert result.tasks == ["first"] * 4 + ["parity"] * 4
    assert result.lengths.tolist() == [2, 2, 3, 3] * 2 and result.seeds == [0, 1] * 4
    assert result.losses.shape == (8, 3) and bool(torch.isfinite(result.losses).all())
    assert result.decider(3)(torch.tensor([[0, 1, 1]])).shape == (4, 1)


@pytest.mark.parametrize("call, error, message", [
    (lambda: sharpness.fit(["dyck"], [3], [0], steps=1), ValueError, "every task"),
    (lambda: sharpness.fit(["parity"], [0], [0], steps=1), ValueError, "every length"),
    (lambda: sharpness.fit([], [3], [0], steps=1), ValueError, "at least one"),
    (lambda: sharpness.config(0), ValueError, "max_length"),
    (lambda: sharpness.sharpness({}, None, None, None, epsilon=0), ValueError, "epsilon"),
    (lambda: sharpness.sharpness({}, None, None, None, draws=0), ValueError, "draws"),
])
def test_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_a_decider_for_a_length_never_fitted_is_refused():
    result = sharpness.fit(["first"], [2], [0], steps=1, size=4, d=8, progress=False)
    with pytest.raises(ValueError, match="fitted lengths"):
        result.decider(3)


def test_stacked_sensitivity_refuses_answers_of_changing_shape():
    calls = []

    def f(strings):
        calls.append(1)
        return torch.zeros(len(calls), len(strings), dtype=torch.bool)

    from companion import sensitivity
    original, sensitivity.CHUNK = sensitivity.CHUNK, 4
    try:
        with pytest.raises(ValueError, match="same leading shape"):
            sensitivity.values(f, 3)
    finally:
        sensitivity.CHUNK = original


@pytest.mark.parametrize("size", [4, 16])  # 4 random strings; 16 >= 2**3: every string
def test_measure_reads_each_model_by_its_own_language(size):
    result = sharpness.fit(["first", "parity"], [3], [0, 1], steps=2, size=8, d=8,
                           generator=torch.Generator().manual_seed(0), progress=False)
    read = sharpness.measure(result, size=size, draws=2,
                             generator=torch.Generator().manual_seed(1))
    strings = torch.tensor([[a, b, c] for a in (0, 1) for b in (0, 1) for c in (0, 1)])
    decide = result.decider(3)
    for m, task in enumerate(result.tasks):
        which = (result.lengths == 3).nonzero().flatten().tolist().index(m)
        decisions = decide(strings)[which]
        expected = {"first": first, "parity": parity}[task](strings)
        assert read["accuracy"][m].item() == (decisions == expected).double().mean().item()
        assert bool(read["fitted"][m]) == bool((decisions == expected).all())
        assert read["sensitivity"][m].item() == average_sensitivity(
            lambda w, which=which: decide(w)[which], 3)
    assert all(read[key].shape == (4,) for key in ("sharpness", "blowup", "norm"))
    if size == 16:  # the blow-up over every string of length 3, each once
        tokens = torch.cat([strings, torch.full((8, 1), sharpness.OUTPUT)], dim=1)
        exact = sharpness.blowup(result.params, result.config, tokens.expand(4, -1, -1),
                                 result.lengths)
        assert torch.equal(read["blowup"], exact)


def test_random_models_have_one_sensitivity_per_length_and_seed():
    table = sharpness.random_sensitivity([1, 2, 4], [0, 1, 2], d=8)
    assert table.shape == (3, 3)
    assert ((table >= 0) & (table <= torch.tensor([1, 2, 4])[:, None])).all()
    shape = sharpness.config(4, d=8, layers=1)
    params = {k: v.detach() for k, v in model.stack(shape, [1]).items()}
    alone = average_sensitivity(lambda w: sharpness.decider(params, shape)(w)[0], 4)
    assert table[2, 1].item() == alone
