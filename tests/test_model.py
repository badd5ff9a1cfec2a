"""The book's one small transformer (companion.model) against code nobody here wrote: PyTorch's
own encoder layers for every position encoding they can express (none, learned, sinusoidal,
ALiBi as a float mask), rotary embeddings against a complex-number rotation written here;
causality, the key-value cache, stacked models against each model alone, the training loop
against one Adam per model, and bad input."""

import math

import pytest
import torch
from torch import nn

from companion import model
from companion.model import POSITIONS, Config, Model, alibi_bias, extend, logits, rotate
from companion.transformer import sinusoidal_position_embedding

HEADS, LAYERS, D = 2, 2, 8


def built(positions, causal=True, seed=0, **kwargs):
    """A float64 :class:`Model` and its parameters by name."""
    torch.manual_seed(seed)
    config = Config(vocab=5, outputs=3, d=D, heads=HEADS, layers=LAYERS, positions=positions,
                    causal=causal, max_length=16, **kwargs)
    module = Model(config).double()
    return config, module, dict(module.named_parameters())


def tokens_for(seed, batch=3, n=7):
    return torch.randint(5, (batch, n), generator=torch.Generator().manual_seed(seed))


def pytorch_reference(module, tokens, positions, causal):
    """The same model run by PyTorch's own modules: the embedding (plus a position vector), each
    ``nn.TransformerEncoderLayer`` called with a float mask (causal ``-inf`` above the
    diagonal, and ALiBi's per-head bias as a ``[B * heads, n, n]`` mask), the final norm and the
    output layer."""
    n = tokens.shape[1]
    x = module.embedding(tokens)
    if positions == "learned":
        x = x + module.position(torch.arange(n))
    if positions == "sinusoidal":
        x = x + sinusoidal_position_embedding(n, D)
    i = torch.arange(n)
    mask = torch.zeros(n, n, dtype=x.dtype)
    if causal:
        mask = mask.masked_fill(i[None, :] > i[:, None], -math.inf)
    if positions == "alibi":
        slopes = 2.0 ** -torch.arange(HEADS, dtype=x.dtype)
        per_head = -slopes[:, None, None] * (i[:, None] - i[None, :]).abs() + mask
        mask = per_head.repeat(tokens.shape[0], 1, 1)
    for layer in module.layers:
        x = layer(x, src_mask=mask)
    return module.output(module.norm(x))


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("positions", ["none", "learned", "sinusoidal", "alibi"])
def test_the_model_is_pytorchs_own_encoder_layers(positions, causal):
    config, module, params = built(positions, causal)
    tokens = tokens_for(1)
    with torch.no_grad():
        torch.testing.assert_close(logits(params, tokens, config),
                                   pytorch_reference(module, tokens, positions, causal),
                                   rtol=1e-10, atol=1e-10)


def rope_by_complex_numbers(x, first=0):
    """Rotary embedding written another way: coordinates ``k`` and ``k + d/2`` as one complex
    number, multiplied by ``exp(i * position * 10000^(-2k/d))``."""
    half = x.shape[-1] // 2
    z = torch.complex(x[..., :half], x[..., half:])
    position = torch.arange(first, first + x.shape[-2], dtype=torch.float64)
    frequency = 10000.0 ** (-2 * torch.arange(half, dtype=torch.float64) / (2 * half))
    angle = position[:, None] * frequency
    z = z * torch.polar(torch.ones_like(angle), angle)
    return torch.cat([z.real, z.imag], dim=-1)


def test_rotary_embedding_is_a_rotation_by_position_and_scores_depend_on_the_offset():
    x = torch.randn(2, 3, 6, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(rotate(x, 5), rope_by_complex_numbers(x, 5))
    q, k = x[:1, :1, :1], x[:1, :1, 1:2]  # one query and one key vector
    scores = [(rotate(q, i) * rotate(k, j)).sum() for i, j in ((3, 1), (10, 8), (2, 0))]
    torch.testing.assert_close(torch.stack(scores), scores[0].expand(3))


def test_the_rope_model_is_attention_over_rotated_queries_and_keys():
    """The rope model against a plain computation of its first layer's attention with the
    queries and keys rotated by complex numbers, the rest by PyTorch's modules."""
    config, module, params = built("rope", causal=True)
    tokens = tokens_for(3, n=6)
    with torch.no_grad():
        x = module.embedding(tokens)
        n = tokens.shape[1]
        mask = torch.full((n, n), -math.inf, dtype=x.dtype).triu(1)
        for layer in module.layers:
            y = layer.norm1(x)
            q, k, v = (u.reshape(3, n, HEADS, -1).transpose(1, 2) for u in nn.functional.linear(
                y, layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias).chunk(3, -1))
            q, k = rope_by_complex_numbers(q), rope_by_complex_numbers(k)
            weights = (q @ k.transpose(-1, -2) / math.sqrt(D // HEADS) + mask).softmax(-1)
            x = x + layer.self_attn.out_proj((weights @ v).transpose(1, 2).reshape(3, n, D))
            x = x + layer.linear2(torch.relu(layer.linear1(layer.norm2(x))))
        expected = module.output(module.norm(x))
        torch.testing.assert_close(logits(params, tokens, config), expected, rtol=1e-10,
                                   atol=1e-10)


@pytest.mark.parametrize("positions", POSITIONS)
def test_a_causal_model_reads_no_later_token(positions):
    config, _, params = built(positions)
    tokens = tokens_for(4, n=9)
    changed = tokens.clone()
    changed[:, 5:] = (changed[:, 5:] + 1) % 5
    with torch.no_grad():
        before, after = logits(params, tokens, config), logits(params, changed, config)
    torch.testing.assert_close(before[:, :5], after[:, :5], rtol=0, atol=1e-12)
    assert (before[:, 5:] - after[:, 5:]).abs().max() > 1e-6


@pytest.mark.parametrize("positions", POSITIONS)
def test_the_key_value_cache_gives_the_same_logits(positions):
    config, _, params = built(positions)
    tokens = tokens_for(5, n=9)
    with torch.no_grad():
        whole = logits(params, tokens, config)
        first, keys, values = extend(params, tokens[:, :4], config)
        rest, keys, values = extend(params, tokens[:, 4:], config, keys, values)
    torch.testing.assert_close(torch.cat([first, rest], dim=1), whole, rtol=1e-10, atol=1e-12)
    assert keys.shape == (LAYERS, 3, HEADS, 9, D // HEADS)


@pytest.mark.parametrize("positions", POSITIONS)
def test_an_offset_reads_the_positions_after_it(positions):
    """Tokens read at offset ``first`` give the logits of the last positions of a longer
    sequence, for a causal model whose earlier tokens cannot change them: the position
    encodings that depend on the position (learned, sinusoidal, RoPE) see it moved; none and
    ALiBi (which reads only distances) are the same at every offset."""
    config, _, params = built(positions)
    tokens = tokens_for(8, n=6)
    with torch.no_grad():
        moved = logits(params, tokens, config, first=5)
        alone = logits(params, tokens, config)
        if positions in ("learned", "sinusoidal"):  # a position vector added: a shifted table
            shifted = dict(params)
            if positions == "learned":
                shifted["position.weight"] = params["position.weight"][5:]
                torch.testing.assert_close(moved, logits(shifted, tokens, config), rtol=1e-12,
                                           atol=1e-12)
            assert (moved - alone).abs().max() > 1e-6
        elif positions == "rope":  # rotation by position: scores depend on differences only
            torch.testing.assert_close(moved, alone, rtol=1e-9, atol=1e-9)
        else:
            torch.testing.assert_close(moved, alone, rtol=0, atol=0)
    if positions == "learned":  # 16 positions: offset 11 reaches position 16
        with pytest.raises(ValueError, match="beyond the 16 positions"):
            logits(params, tokens, config, first=11)


@pytest.mark.parametrize("positions", ["none", "learned", "rope"])
def test_a_scale_on_the_attention_logits_is_a_scaled_query(positions):
    """Scaling every attention logit by s is scaling each layer's queries (their weights and
    bias) by s; stacked, each model takes its own factor."""
    config, _, params = built(positions)
    tokens = tokens_for(9, n=8)
    scaled = dict(params)
    for layer in range(LAYERS):
        for kind in ("weight", "bias"):
            name = f"layers.{layer}.self_attn.in_proj_{kind}"
            factor = torch.ones_like(params[name])
            factor[:D] = 2.5  # the query rows
            scaled[name] = params[name] * factor
    with torch.no_grad():
        expected = logits(scaled, tokens, config)
        torch.testing.assert_close(logits(params, tokens, config, scale=2.5), expected,
                                   rtol=1e-10, atol=1e-12)
        stacked = {name: torch.stack([value, value]) for name, value in params.items()}
        both = model.stacked_logits(config)(stacked, torch.stack([tokens, tokens]),
                                            torch.tensor([1.0, 2.5], dtype=torch.float64))
    torch.testing.assert_close(both[0], logits(params, tokens, config), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(both[1], expected, rtol=1e-10, atol=1e-12)


def test_without_a_final_norm_the_model_has_none():
    config, module, params = built("none", final_norm=False)
    assert not hasattr(module, "norm") and "norm.weight" not in params
    tokens = tokens_for(10)
    with torch.no_grad():
        x = module.embedding(tokens)
        mask = torch.triu(torch.full((7, 7), -math.inf, dtype=x.dtype), 1)
        for layer in module.layers:
            x = layer(x, src_mask=mask)
        torch.testing.assert_close(module(tokens), module.output(x), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("positions", POSITIONS)
def test_stacked_models_equal_each_model_alone(positions):
    config, _, _ = built(positions)
    seeds = [5, 6, 7]
    stacked = model.stack(config, seeds, dtype=torch.float64)
    tokens = torch.stack([tokens_for(seed) for seed in seeds])
    with torch.no_grad():
        together = model.stacked_logits(config)(stacked, tokens)
        for index, seed in enumerate(seeds):
            torch.manual_seed(seed)
            alone = Model(config).double()
            torch.testing.assert_close(together[index], alone(tokens[index]), rtol=1e-10,
                                       atol=1e-10)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("positions", POSITIONS)
def test_logits_at_some_positions_are_those_of_the_whole_pass(positions, causal):
    """``at``: the last layer at a few positions of each string only, the same logits there,
    for one model and for stacked models (or one int for every string)."""
    config, _, params = built(positions, causal)
    tokens = tokens_for(8, n=9)
    at = torch.tensor([[7, 2, 2, 0], [1, 8, 3, 3], [0, 0, 5, 6]])
    with torch.no_grad():
        whole = logits(params, tokens, config)
        torch.testing.assert_close(logits(params, tokens, config, at=at),
                                   whole.gather(1, at[..., None].expand(-1, -1, config.outputs)),
                                   rtol=1e-10, atol=1e-12)
        seeds = [5, 6, 7]
        stacked = model.stack(config, seeds, dtype=torch.float64)
        each = torch.stack([tokens_for(seed, n=9) for seed in seeds])
        forward = model.stacked_logits(config)
        whole = forward(stacked, each)
        chosen = torch.randint(9, (3, 3, 2), generator=torch.Generator().manual_seed(4))
        picked = whole.gather(2, chosen[..., None].expand(-1, -1, -1, config.outputs))
        torch.testing.assert_close(forward(stacked, each, at=chosen), picked, rtol=1e-10,
                                   atol=1e-12)
        torch.testing.assert_close(forward(stacked, each, at=-2), whole[:, :, -2:-1],
                                   rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("layers", [1, 2])
def test_losses_where_each_model_supervises_its_own_positions(layers):
    """:func:`model.stacked_losses` runs each model's last layer only where its targets are
    (here a different position for each model, and for one model one or two positions on each
    string): each model's mean cross-entropy there, computed by PyTorch's cross-entropy from
    the model's whole pass."""
    config = Config(vocab=5, outputs=3, d=D, heads=HEADS, layers=layers, positions="learned",
                    max_length=16)
    seeds = [1, 2, 3]
    stacked = model.stack(config, seeds, dtype=torch.float64)
    tokens = torch.stack([tokens_for(seed, batch=4, n=8) for seed in seeds])
    classes = torch.randint(3, (3, 4, 8), generator=torch.Generator().manual_seed(9))
    targets = torch.full_like(tokens, model.IGNORE)
    targets[0, :, 6] = classes[0, :, 6]
    targets[1, :, 2] = classes[1, :, 2]
    targets[2, :2, 1], targets[2, 1:, 7] = classes[2, :2, 1], classes[2, 1:, 7]
    losses = model.stacked_losses(stacked, config, tokens, targets)
    for index, seed in enumerate(seeds):
        torch.manual_seed(seed)
        alone = Model(config).double()
        expected = nn.functional.cross_entropy(alone(tokens[index]).flatten(0, 1),
                                               targets[index].flatten(),
                                               ignore_index=model.IGNORE)
        assert losses[index].item() == pytest.approx(expected.item(), rel=1e-12)


def test_supervised_positions_keep_every_target_and_only_those():
    """Random targets, some strings with none: each string's supervised positions are among
    ``at``, in order, the rest of ``at`` unsupervised; every position held, or none, gives
    None."""
    rng = torch.Generator().manual_seed(3)
    targets = torch.randint(2, (4, 6, 9), generator=rng)
    targets[torch.rand(4, 6, 9, generator=rng) < 0.7] = model.IGNORE
    targets[0, 0] = model.IGNORE
    at, kept = model.supervised_positions(targets)
    k = int((targets != model.IGNORE).sum(dim=-1).max())
    assert at.shape == kept.shape == (4, 6, k) and k < 9
    for string, positions, values in zip(targets.flatten(0, 1), at.flatten(0, 1),
                                         kept.flatten(0, 1), strict=True):
        held = (string != model.IGNORE).nonzero().flatten()
        assert positions[:len(held)].tolist() == held.tolist()
        assert values[:len(held)].tolist() == string[held].tolist()
        assert (values[len(held):] == model.IGNORE).all()
    everywhere = torch.zeros(2, 3, 5, dtype=torch.long)
    everywhere[0, 1, :4] = model.IGNORE
    nowhere = torch.full((2, 3, 5), model.IGNORE)
    for targets in (everywhere, nowhere):
        at, same = model.supervised_positions(targets)
        assert at is None and same is targets


def test_training_stacked_models_equals_training_each_alone():
    """:func:`model.train` on three stacked models against a plain loop, one Adam per model,
    each on its own batches: the same losses and the same parameters after 5 steps."""
    config = Config(vocab=4, outputs=2, d=8, heads=2, layers=1, positions="learned",
                    max_length=8)
    seeds = [1, 2, 3]
    draws = [[(tokens_for(100 * s + step, batch=4, n=6) % 4,
               torch.randint(2, (4, 6), generator=torch.Generator().manual_seed(s + step)))
              for step in range(5)] for s in seeds]
    for draw in draws:  # positions left out of the loss
        for _, target in draw:
            target[:, :2] = model.IGNORE

    def batches(step):
        return (torch.stack([draw[step][0] for draw in draws]),
                torch.stack([draw[step][1] for draw in draws]))

    stacked = model.stack(config, seeds, dtype=torch.float64)
    losses = model.train(stacked, config, batches, steps=5, lr=1e-2, progress=False)
    for index, seed in enumerate(seeds):
        torch.manual_seed(seed)
        alone = Model(config).double()
        optimizer = torch.optim.Adam(alone.parameters(), lr=1e-2)
        for step, (tokens, target) in enumerate(draws[index]):
            loss = nn.functional.cross_entropy(alone(tokens).flatten(0, 1), target.flatten(),
                                               ignore_index=model.IGNORE)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            # the losses come back in the parameters' dtype, float64 here
            assert losses[index, step].item() == pytest.approx(loss.item() / math.log(2),
                                                               rel=1e-12)
        for name, value in alone.named_parameters():
            torch.testing.assert_close(stacked[name][index].detach(), value.detach(),
                                       rtol=1e-9, atol=1e-10)


def test_alibi_bias():
    bias = alibi_bias(5, 3, dtype=torch.float64)
    assert bias.shape == (3, 5, 5)
    assert torch.isinf(bias[:, 0, 1:]).all() and bias[0, 4, 1] == -3.0
    assert bias[2, 4, 0] == -1.0 and (bias.diagonal(dim1=1, dim2=2) == 0).all()
    both_ways = alibi_bias(4, 2, causal=False, dtype=torch.float64)
    assert both_ways[0, 0, 3] == both_ways[0, 3, 0] == -3.0
    press = alibi_bias(3, 4, slopes="press", dtype=torch.float64)
    assert press[:, 1, 0].tolist() == [-(2.0 ** (-2 * h)) for h in range(1, 5)]


def test_alibi_bias_checks_dtype_device_and_its_size():
    with pytest.raises(TypeError, match="dtype must be a floating-point"):
        alibi_bias(3, 2, dtype=torch.long)
    with pytest.raises((TypeError, ValueError), match="device"):
        alibi_bias(3, 2, device="float32")
    with pytest.raises(TypeError, match="device"):
        alibi_bias(3, 2, device=0.5)
    with pytest.raises(ValueError, match="n must be <= 8192, got 30000"):
        alibi_bias(30000, 2)
    with pytest.raises(ValueError, match=r"heads \* n \* n must be at most"):
        alibi_bias(8192, 1000)
    with pytest.raises(ValueError, match="slopes"):
        alibi_bias(3, 2, slopes="gentle")


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    (dict(positions="relative"), ValueError, "positions must be one of"),
    (dict(positions=None), ValueError, "positions"),
    (dict(heads=0), ValueError, "heads must be >= 1"),
    (dict(heads=3), ValueError, "d must be a multiple of heads"),
    (dict(heads=2.0), TypeError, "heads must be an int"),
    (dict(d=6, heads=2, positions="rope"), ValueError, "even width per head"),
    (dict(causal=1), TypeError, "causal"),
    (dict(max_length=0), ValueError, "max_length"),
    (dict(vocab=0), ValueError, "vocab"),
    (dict(d_ff=0), ValueError, "d_ff"),
    (dict(alibi_slopes="flat"), ValueError, "alibi_slopes")])
def test_a_config_refuses_what_no_model_has(kwargs, error, message):
    arguments = dict(vocab=4, outputs=2, d=8, heads=2)
    with pytest.raises(error, match=message):
        Config(**{**arguments, **kwargs})


def test_bad_input_to_the_model():
    config, module, params = built("learned")
    for bad, error in ((torch.tensor([[2, 5]]), ValueError), (torch.tensor([[-1]]), ValueError),
                       (torch.zeros(1, 0, dtype=torch.long), ValueError),
                       (torch.zeros(1, 2), TypeError), (torch.zeros(3, dtype=torch.long),
                                                        TypeError), ([[2, 0]], TypeError)):
        with pytest.raises(error, match="tokens must"):
            logits(params, bad, config)
    with pytest.raises(ValueError, match="beyond the 16 positions"):
        module(torch.zeros(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match="params lacks"):
        logits({}, torch.zeros(1, 1, dtype=torch.long), config)
    with pytest.raises(TypeError, match="config must be a Config"):
        logits(params, torch.zeros(1, 1, dtype=torch.long), "learned")
    with pytest.raises(TypeError, match="config must be a Config"):
        Model(None)
    one_layer = Config(vocab=5, outputs=3, d=D, heads=HEADS, layers=1, positions="learned",
                       max_length=16)
    with pytest.raises(ValueError, match=r"params holds the parameters of layers 0\.\.1"):
        logits(params, torch.zeros(1, 2, dtype=torch.long), one_layer)
    with pytest.raises(ValueError, match="causal"):
        extend(params, torch.zeros(1, 2, dtype=torch.long),
               Config(vocab=5, outputs=3, d=D, heads=HEADS, layers=LAYERS, causal=False))
    for bad, error in ((torch.tensor([[2.0]] * 2), TypeError), (torch.tensor([1]), ValueError),
                       (torch.tensor([[1]] * 3), ValueError), (torch.tensor([[3]] * 2), ValueError),
                       (torch.tensor([[0], [-1]]), ValueError),
                       (torch.zeros(2, 0, dtype=torch.long), ValueError), (1, TypeError),
                       (torch.tensor([[1]] * 2, device="meta"), ValueError)):
        with pytest.raises(error, match="at must"):
            logits(params, torch.zeros(2, 3, dtype=torch.long), config, at=bad)
    stacked = model.stack(config, [0, 1])
    forward = model.stacked_logits(config)
    for bad, error in ((torch.tensor([[1], [1]]), ValueError),
                       (torch.tensor([[[0]], [[3]]]), ValueError),
                       (3, ValueError), (-4, ValueError), (True, TypeError), (1.0, TypeError)):
        with pytest.raises(error, match="at must"):
            forward(stacked, torch.zeros(2, 1, 3, dtype=torch.long), at=bad)
    with pytest.raises(ValueError, match="batches must give"):
        model.train(stacked, config, lambda step: (torch.zeros(3, 1, 2, dtype=torch.long),) * 2,
                    steps=1, progress=False)
    with pytest.raises(TypeError, match="batches"):
        model.train(stacked, config, None, steps=1)
