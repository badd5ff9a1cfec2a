"""The regular tasks of Deletang et al. against brute-force definitions, the classifier against
PyTorch's own encoder, and the paired bootstrap."""

import itertools
import math

import pytest
import torch

from companion import length_generalization, model
from companion.length_generalization import (
    TASKS,
    Benchmark,
    Classifier,
    bootstrap_difference,
    config,
    load,
    run,
    sample,
    summary,
)
from companion.transformer import sinusoidal_position_embedding


def evaluate_as_python(tokens):
    """Modular arithmetic by Python's evaluation of the written expression (products first)."""
    text = "".join(str(t) if t < 5 else "+-*"[t - 5] for t in tokens)
    return eval(text) % 5  # noqa: S307 -- digits and + - * only


@pytest.mark.parametrize("task", list(TASKS))
def test_labels_match_the_definitions(task):
    tokens, labels = sample(task, 500, 9, torch.Generator().manual_seed(0))
    assert tokens.shape == (500, 9) and labels.shape == (500,)
    assert tokens.min() >= 0 and tokens.max() < TASKS[task].vocab
    for row, label in zip(tokens.tolist(), labels.tolist(), strict=True):
        if task == "even_pairs":
            expected = sum(a != b for a, b in itertools.pairwise(row)) % 2
            assert expected == int(row[0] != row[-1])
        elif task == "parity_check":
            expected = sum(row) % 2
        elif task == "cycle_navigation":
            expected = sum({0: 0, 1: 1, 2: -1}[a] for a in row) % 5
        else:
            expected = evaluate_as_python(row)
        assert label == expected


def test_modular_arithmetic_has_odd_length_and_alternates():
    tokens, _ = sample("modular_arithmetic", 50, 10, torch.Generator().manual_seed(1))
    assert tokens.shape[1] == 9
    assert (tokens[:, ::2] < 5).all() and (tokens[:, 1::2] >= 5).all()


def test_the_classifier_is_pytorchs_own_encoder_read_at_the_output_token():
    """The classifier against PyTorch's modules called as they are: the embedding plus the
    sinusoids, each ``nn.TransformerEncoderLayer`` without a mask (attention both ways), no
    final norm, the output layer at the output token; the scaled variant differs."""
    module = Classifier("cycle_navigation", d=16, heads=2, layers=2).double()
    tokens, _ = sample("cycle_navigation", 4, 11, torch.Generator().manual_seed(2))
    symbols = length_generalization.with_output_token(tokens, 3)
    with torch.no_grad():
        x = module.embedding(symbols) + sinusoidal_position_embedding(12, 16).double()
        for layer in module.layers:
            x = layer(x)
        expected = module.output(x[:, -1])
        torch.testing.assert_close(module(tokens), expected, rtol=1e-10, atol=1e-10)
        params = dict(module.named_parameters())
        scaled = model.logits(params, symbols, config("cycle_navigation", 16, 2, 2),
                              scale=math.log(12))[:, -1]
    assert not torch.allclose(scaled, expected)
    assert not hasattr(module, "norm")


def test_run_shapes_scores_and_chunked_testing(monkeypatch):
    arguments = dict(seeds=[3, 4], steps=2, batch=4, lengths=[5, 7, 9], test_batch=8,
                     max_train_length=6, d=16, heads=2, layers=1, device="cpu", progress=False)
    result = run("even_pairs", **arguments)
    assert result.accuracy.shape == (2, 2, 3)
    assert ((result.accuracy >= 0) & (result.accuracy <= 1)).all()
    assert torch.equal(result.in_distribution, result.accuracy[..., 0])
    assert torch.equal(result.score, result.accuracy[..., 1:].mean(dim=-1))
    # testing one string at a time gives the same counts as testing all at once
    monkeypatch.setattr(length_generalization, "SCORE_BUDGET", 1)
    assert torch.equal(run("even_pairs", **arguments).accuracy, result.accuracy)


def test_bootstrap_interval_contains_the_mean_and_is_a_point_for_constant_differences():
    mean, low, high = bootstrap_difference([0.5, 0.6, 0.4], [0.6, 0.7, 0.5])
    assert math.isclose(mean, 0.1) and math.isclose(low, 0.1) and math.isclose(high, 0.1)
    g = torch.Generator().manual_seed(5)
    mean, low, high = bootstrap_difference(torch.zeros(30), torch.randn(30, generator=g),
                                           generator=g)
    assert low <= mean <= high and low < 0 < high


def test_summary_reads_the_accuracies_of_each_task():
    # three seeds, two variants, lengths 10 and 40 (fit) then 60 and 100 (score)
    accuracy = torch.tensor([[[1.0, 0.9, 0.5, 0.3], [1.0, 0.8, 0.6, 0.4]],
                             [[0.8, 0.8, 0.7, 0.5], [0.6, 0.6, 0.7, 0.7]],
                             [[0.9, 0.7, 0.2, 0.2], [0.9, 0.9, 0.3, 0.3]]],
                            dtype=torch.float64)
    result = Benchmark("cycle_navigation", [0, 1, 2], ("standard", "scaled"),
                       [10, 40, 60, 100], 40, accuracy)
    table = summary([result], samples=200, generator=torch.Generator().manual_seed(0))
    same = summary({result.task: result}.values(), samples=200,
                   generator=torch.Generator().manual_seed(0))
    assert same.equals(table), "any iterable of benchmarks, as the appendix passes"
    row = table.loc["cycle_navigation"]
    assert math.isclose(row["chance"], 1 / 5)
    assert math.isclose(row["fit std"], (0.95 + 0.8 + 0.8) / 3)
    assert math.isclose(row["fit scaled"], (0.9 + 0.6 + 0.9) / 3)
    assert math.isclose(row["score std"], (0.4 + 0.6 + 0.2) / 3)
    assert math.isclose(row["score scaled"], (0.5 + 0.7 + 0.3) / 3)
    assert math.isclose(row["best std"], 0.6)
    # every seed's scaled score is 0.1 above its standard one: a point interval at 0.1
    for column in ("difference", "low", "high"):
        assert math.isclose(row[column], 0.1)


def test_a_saved_benchmark_loads_as_it_was(tmp_path):
    accuracy = torch.rand(2, 2, 3, generator=torch.Generator().manual_seed(4),
                          dtype=torch.float64)
    saved = Benchmark("parity_check", [7, 8], ("standard", "scaled"), [5, 9, 12], 9, accuracy)
    saved.save(tmp_path / "parity.json")
    loaded = load(tmp_path / "parity.json")
    assert loaded.task == "parity_check" and loaded.seeds == [7, 8]
    assert loaded.variants == ("standard", "scaled") and loaded.lengths == [5, 9, 12]
    assert loaded.max_train_length == 9
    assert torch.equal(loaded.accuracy, accuracy) and torch.equal(loaded.score, saved.score)
    (tmp_path / "short.json").write_text('{"task": "parity_check"}')
    with pytest.raises(ValueError, match="does not hold a saved Benchmark"):
        load(tmp_path / "short.json")
    text = (tmp_path / "parity.json").read_text()
    (tmp_path / "shape.json").write_text(text.replace('"lengths": [5, 9, 12]',
                                                      '"lengths": [5, 9]'))
    with pytest.raises(ValueError, match=r"accuracy has shape \(2, 2, 3\), expected"):
        load(tmp_path / "shape.json")


def test_bad_input():
    with pytest.raises(ValueError, match="task must be one of"):
        sample("dyck", 2, 3, torch.Generator())
    with pytest.raises(ValueError, match="length must be >= 1"):
        sample("parity_check", 2, 0, torch.Generator())
    with pytest.raises(ValueError, match="seeds must name at least one seed"):
        run("parity_check", [], 1, 1, [3], 1, progress=False)
    with pytest.raises(ValueError, match="lr must be > 0"):
        run("parity_check", [0], 1, 1, [3], 1, lr=-1.0, progress=False)
    with pytest.raises(ValueError, match="d must be a multiple of heads"):
        run("parity_check", [0], 1, 1, [3], 1, d=10, heads=4, progress=False)
    with pytest.raises(ValueError, match="no length is above max_train_length"):
        _ = run("parity_check", [0], 1, 1, [3], 1, d=8, heads=2, layers=1,
                progress=False).score
    with pytest.raises(ValueError, match="equally long"):
        bootstrap_difference([1.0, 2.0], [1.0])
