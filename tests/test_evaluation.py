import math

import pytest
import torch

from companion import evaluation
from companion.constructions import first_transformer, flawed_first_transformer
from companion.languages import first


def test_probe_strings_include_the_extremes():
    w = evaluation.probe_strings(5, 7, torch.Generator().manual_seed(0))
    assert w.shape == (7, 7)
    assert w[0].sum() == 0 and w[1].sum() == 7


def test_accuracy_finds_where_the_flawed_transformer_breaks():
    """The flawed FIRST transformer's logit is
    s = ((e^c - 1)([w_1 = 1] - 1/2) + k - n/2) / (e^c + n - 1) ([chiang2022overcoming] §5.2),
    so it errs exactly where k - n/2 > (e^c - 1)/2 with w_1 = 0, or k - n/2 <= -(e^c - 1)/2
    with w_1 = 1 (then s <= 0 rejects): such strings exist iff n - 1 >= e^c, so with c = 2
    every length m = n - 1 <= 7 is perfect for any sample."""
    c, batch = 2.0, 50
    model = flawed_first_transformer(c=c)
    accuracy = evaluation.accuracy_by_length(model, first, range(1, 40), batch=batch,
                                             generator=torch.Generator().manual_seed(1),
                                             progress=False)
    replay = torch.Generator().manual_seed(1)  # the same probe strings, length by length
    for m in range(1, 40):
        w = evaluation.probe_strings(batch, m, replay)
        n, k = m + 1, w.sum(dim=1)
        margin = (math.exp(c) - 1) / 2
        wrong = torch.where(w[:, 0] == 1, k - n / 2 <= -margin, k - n / 2 > margin)
        assert abs(accuracy[m] - (1 - wrong.double().mean().item())) < 1e-12, m
    largest = evaluation.largest_perfect_length(accuracy)
    assert largest is not None and largest >= 7 and accuracy[largest + 1] < 1.0


def test_largest_perfect_length_stops_at_the_first_failure():
    assert evaluation.largest_perfect_length({1: 1.0, 2: 1.0, 3: 0.9, 4: 1.0}) == 2
    assert evaluation.largest_perfect_length({1: 0.5}) is None


def test_logits_in_chunks_equal_one_call(monkeypatch):
    model = first_transformer()
    w = torch.randint(0, 2, (37, 11), generator=torch.Generator().manual_seed(2))
    whole = evaluation.logits(model, w)
    monkeypatch.setattr(evaluation, "POSITIONS", 30)  # chunks of two strings
    assert torch.equal(evaluation.logits(model, w), whole)


def test_loglog_slope_recovers_exponents():
    x = [10.0, 100.0, 1000.0]
    assert evaluation.loglog_slope(x, [3 / v**2 for v in x]) == pytest.approx(-2.0)
    with pytest.raises(ValueError, match="two points"):
        evaluation.loglog_slope([1.0], [1.0])


def test_log_lengths_are_distinct_and_span_the_range():
    lengths = evaluation.log_lengths(1, 1000, 10)
    assert lengths[0] == 1 and lengths[-1] == 1000 and lengths == sorted(set(lengths))


def test_accuracy_random_lengths_counts_every_string():
    g = torch.Generator().manual_seed(3)
    assert evaluation.accuracy_random_lengths(first_transformer(), first, 200, 30, g) == 1.0
    flawed = flawed_first_transformer(c=0.5)  # wrong on some strings already at n = 4
    assert 0.5 < evaluation.accuracy_random_lengths(flawed, first, 200, 30, g) < 1.0


def test_logits_accept_a_str_and_refuse_other_symbols():
    # FIRST's logit for a string starting with 1 is positive, with 0 negative; the str must
    # give the very numbers of the tensor it stands for.
    model = first_transformer()
    s = evaluation.logits(model, "0110")
    assert s.shape == (1,)
    assert torch.equal(s, evaluation.logits(model, torch.tensor([[0, 1, 1, 0]])))
    assert s.item() < 0 < evaluation.logits(model, "1001").item()
    with pytest.raises(ValueError, match="w must contain only"):
        evaluation.logits(model, "0120")
    with pytest.raises(TypeError, match="w must be a str"):
        evaluation.logits(model, [0, 1])


def test_cross_entropy_bits_is_binary_cross_entropy_in_bits():
    import torch.nn.functional as F

    s = torch.tensor([-30.0, -1.0, 0.0, 0.5, 40.0], dtype=torch.float64)
    label = torch.tensor([True, False, True, True, False])
    expected = F.binary_cross_entropy_with_logits(s, label.double(), reduction="none")
    torch.testing.assert_close(evaluation.cross_entropy_bits(s, label), expected / math.log(2))
    assert evaluation.cross_entropy_bits(torch.zeros(1), torch.tensor([True])).item() == 1.0
    with pytest.raises(ValueError, match="same shape"):
        evaluation.cross_entropy_bits(s, label[:3])


def test_cross_entropy_by_length_shows_every_model_the_same_strings():
    """Two copies of a model get identical curves; FIRST's curve is its closed form: every
    string's logit is +-e^c/(2(e^c + n - 1)) (eq. 1 of Chiang & Cholak)."""
    models = {"a": first_transformer(), "b": first_transformer()}
    lengths = [1, 5, 50]
    curves = evaluation.cross_entropy_by_length(models, first, lengths, 30,
                                                torch.Generator().manual_seed(0), progress=False)
    assert curves["a"] == curves["b"] and len(curves["a"]) == 3
    for m, bits in zip(lengths, curves["a"], strict=True):
        margin = math.e / (2 * (math.e + m))
        assert bits == pytest.approx(math.log2(1 + math.exp(-margin)), rel=1e-12)


def test_length_batches_cover_count_strings_of_allowed_lengths():
    batches = evaluation.length_batches(500, 7, torch.Generator().manual_seed(0))
    assert sum(len(w) for w in batches) == 500
    lengths = [w.shape[1] for w in batches]
    assert lengths == sorted(set(lengths)) and set(lengths) == set(range(1, 8))
