"""companion.training against PyTorch's own modules and optimizer, run one model at a time."""

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from companion.languages import all_strings, random_strings
from companion.training import (
    HEADS,
    Grid,
    Recognizer,
    TrainingLog,
    logits_and_attention,
    position_features,
    results_folder,
    stacked_parameters,
    token_types,
    train,
)


def reference(grid, model, seed=0):
    """Model ``model`` of ``grid`` as a fresh PyTorch Recognizer, float64."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(grid.seed(model, seed))
        return Recognizer(grid.language).double()


def params_of(module):
    return {name: p for name, p in module.named_parameters()}


@pytest.mark.parametrize("language", ["first", "parity"])
def test_forward_matches_torch_transformer_encoder(language):
    grid = Grid(language, (9,), runs=1, variants=("standard",))
    module = reference(grid, 0).eval()
    w = random_strings(6, 9, torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = module(w)
        ours, _ = logits_and_attention(params_of(module), *token_types(language, w), 1.0,
                                       HEADS[language])
    torch.testing.assert_close(ours, expected, rtol=1e-12, atol=1e-12)


def test_first_types_equal_positions_exactly_in_every_string():
    """FIRST's four token types with log-count logits compute what one vector per position
    computes, for every string of length 1 to 8, with both scales."""
    grid = Grid("first", (8,), runs=1)
    p = params_of(reference(grid, 0))
    for m in range(1, 9):
        w = all_strings(m)
        n = m + 1
        symbols = torch.cat([torch.full((len(w), 1), 2), w], dim=1)
        features = position_features("first", n).expand(len(w), -1, -1)
        for scale in (1.0, math.log(n)):
            with torch.no_grad():
                by_position = logits_and_attention(p, symbols, features, torch.zeros(len(w), n),
                                                   scale, 1)
                by_type = logits_and_attention(p, *token_types("first", w), scale, 1)
            for a, b in zip(by_position, by_type, strict=True):
                torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_attention_to_first_is_pytorchs_head_averaged_weight():
    """Ask PyTorch's own attention modules for their weights (averaged over heads) and sum
    CLS's weight on position 1 over the two layers. (Training mode keeps PyTorch off its fused
    fast path, which skips the attention module; dropout is 0.)"""
    grid = Grid("parity", (7,), runs=1, variants=("standard",))
    module = reference(grid, 0).train()
    weights = []
    for layer in module.encoder.layers:
        layer.self_attn.forward = _recording(layer.self_attn.forward, weights)
    w = random_strings(3, 7, torch.Generator().manual_seed(1))
    with torch.no_grad():
        module(w)
        _, ours = logits_and_attention(params_of(module), *token_types("parity", w), 1.0, 2)
    assert len(weights) == 2
    torch.testing.assert_close(ours, sum(a[:, 0, 1] for a in weights), rtol=1e-12, atol=1e-12)


def _recording(forward, weights):
    def call(*args, **kwargs):
        kwargs.update(need_weights=True, average_attn_weights=True)
        output, alpha = forward(*args, **kwargs)
        weights.append(alpha)
        return output, alpha
    return call


def test_scaled_variant_multiplies_logits_by_log_n():
    """Scaling every attention logit by log n is F.scaled_dot_product_attention's scale."""
    grid = Grid("first", (5,), runs=1)
    p = params_of(reference(grid, 0))
    w = random_strings(4, 5, torch.Generator().manual_seed(2))
    symbols, features, log_counts = token_types("parity", w)  # one type per position
    x = p["embedding.weight"][symbols] + F.linear(features[..., :1] * 0, p["position.weight"],
                                                  p["position.bias"])
    q, k, v = F.linear(x, p["encoder.layers.0.self_attn.in_proj_weight"],
                       p["encoder.layers.0.self_attn.in_proj_bias"]).chunk(3, -1)
    n = 6
    expected = F.scaled_dot_product_attention(q, k, v, scale=math.log(n) / math.sqrt(16))
    logits = math.log(n) * q @ k.transpose(-1, -2) / math.sqrt(16)
    torch.testing.assert_close(torch.softmax(logits, -1) @ v, expected)


def test_a_model_trained_in_the_grid_equals_it_trained_alone_with_torch_adam():
    """Model 3 of a grid of 8 (FIRST, standard attention), and the same model trained alone as
    a plain PyTorch Recognizer with its own torch.optim.Adam on the same strings, one string
    per step: the same parameters after two epochs."""
    grid = Grid("first", (4, 6), runs=2)
    log = train(grid, epochs=2, steps=5, test_strings=3, test_length=12, seed=7,
                dtype=torch.float64, progress=False)
    model = next(r for r in range(len(grid)) if grid.lengths[r] == 6
                 and grid.variant_of[r] == "standard" and grid.run_of[r] == 1)
    module = reference(grid, model, seed=7)
    optimizer = torch.optim.Adam(module.parameters(), lr=3e-4)
    generator = torch.Generator().manual_seed(grid.seed(model, 7))
    for _ in range(2):
        for w in random_strings(5, 6, generator):
            loss = F.binary_cross_entropy_with_logits(module(w[None]), w[None, 0].double())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        random_strings(3, 12, generator)  # the test strings of the epoch
    # One step moves a weight by up to lr = 3e-4. The key bias's gradient is 0 in exact
    # arithmetic (softmax ignores a shift shared by all logits), and Adam divides its rounding
    # noise (~1e-16) by eps = 1e-8: ~1e-12 per step. So agree to 1e-9, far below one step.
    for name, value in module.named_parameters():
        torch.testing.assert_close(log.parameters[name][model], value.detach(),
                                   rtol=1e-9, atol=1e-9)


def test_both_variants_of_a_run_start_alike_and_runs_differ():
    grid = Grid("parity", (3, 5), runs=2)
    params = stacked_parameters(grid, seed=0)
    weight = params["output.weight"]
    same = [(r, s) for r in range(len(grid)) for s in range(len(grid)) if r < s]
    for r, s in same:
        twins = (grid.lengths[r], grid.run_of[r]) == (grid.lengths[s], grid.run_of[s])
        assert torch.equal(weight[r], weight[s]) == twins


def test_log_saves_and_loads(tmp_path):
    grid = Grid("first", (3,), runs=2)
    log = train(grid, epochs=2, steps=3, test_strings=4, test_length=20, progress=False)
    log.save(tmp_path / "log.pt")
    again = TrainingLog.load(tmp_path / "log.pt")
    assert again.grid.lengths == grid.lengths and again.test_length == 20
    torch.testing.assert_close(again.accuracy, log.accuracy)
    assert again.select("accuracy", 3, "scaled").shape == (2, 2)
    assert ((log.accuracy >= 0) & (log.accuracy <= 1)).all()


def test_bad_input():
    with pytest.raises(ValueError, match="language must be one of"):
        Grid("dyck", (3,), runs=1)
    with pytest.raises(ValueError, match="every entry of train_lengths must be >= 1"):
        Grid("first", (0,), runs=1)
    with pytest.raises(ValueError, match="runs must be >= 1"):
        Grid("first", (3,), runs=0)
    with pytest.raises(ValueError, match="variant must be one of"):
        Grid("first", (3,), runs=1, variants=("sqrt",))
    grid = Grid("first", (3,), runs=1)
    with pytest.raises(ValueError, match="lr must be > 0"):
        train(grid, epochs=1, lr=0.0, progress=False)
    with pytest.raises(ValueError, match="epochs must be >= 1"):
        train(grid, epochs=0, progress=False)
    with pytest.raises(ValueError, match="no model has train length 4"):
        train(grid, epochs=1, steps=1, test_strings=1, test_length=3,
              progress=False).select("accuracy", 4, "scaled")


def test_results_stay_in_the_repository_or_beside_the_notebook(tmp_path, monkeypatch):
    """Inside the book's repository the logs go to its root's _build/results; in a folder of
    unzipped notebooks (no _toc.yml and companion/ above), under that folder, never above it."""
    root = Path(__file__).resolve().parents[1]
    assert results_folder(root / "book") == root / "_build" / "results"
    assert results_folder(str(root)) == root / "_build" / "results"
    chapters = tmp_path / "chapters"
    chapters.mkdir()
    monkeypatch.chdir(chapters)
    assert results_folder() == chapters.resolve() / "_build" / "results"
    (tmp_path / "_toc.yml").write_text("")  # a _toc.yml alone is not the repository
    assert results_folder(chapters) == chapters.resolve() / "_build" / "results"
    (tmp_path / "companion").mkdir()
    assert results_folder(chapters) == tmp_path.resolve() / "_build" / "results"
    assert not (tmp_path / "_build").exists()  # nothing is created
    with pytest.raises(TypeError, match="start"):
        results_folder(3)
