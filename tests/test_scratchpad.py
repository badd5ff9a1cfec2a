"""Learning PARITY with and without a scratchpad: the sequences against brute force, greedy
decoding against a plain loop and against teacher forcing, evaluation against each model run
alone, and bad input (the model itself is tests/test_model.py's)."""

import itertools

import pytest
import torch

from companion.languages import all_strings, parity, random_strings
from companion.length_generalization import bootstrap_difference
from companion.model import Model, logits, stack
from companion.scratchpad import (
    CONDITIONS,
    IGNORE,
    STATE,
    Outcome,
    answer_sequence,
    config,
    decode,
    evaluate,
    filler_sequence,
    running_parities,
    scratchpad_sequence,
    summary,
    targets,
    train,
)

HEADS, LAYERS = 2, 2
SHAPE = config(16, HEADS, LAYERS)


def model(seed=0):
    """A float64 model of the chapter's shape (width 16) with its parameters by name."""
    torch.manual_seed(seed)
    module = Model(SHAPE).double()
    return module, dict(module.named_parameters())


def test_teacher_forced_targets_are_the_running_parities():
    for m in range(9):
        w = all_strings(m)
        tokens, target = targets(w, "scratchpad")
        for row, sequence, wanted in zip(w.tolist(), tokens.tolist(), target.tolist(),
                                         strict=True):
            prefix_parities = [sum(row[:j]) % 2 for j in range(1, m + 1)]
            expected = [STATE]
            for bit, p in zip(row, prefix_parities, strict=True):
                expected += [bit, STATE + p]
            assert sequence == expected
            assert wanted[1::2] == prefix_parities and set(wanted[0::2]) <= {IGNORE}
        assert torch.equal(running_parities(w), tokens[:, 2::2] - STATE)
        assert torch.equal(scratchpad_sequence(w), tokens)


def test_answer_only_targets_one_position():
    for m in range(1, 8):
        w = all_strings(m)
        tokens, target = targets(w, "answer only")
        assert tokens.shape == target.shape == (2**m, 2 * m + 1)
        assert torch.equal(tokens[:, :m + 1], answer_sequence(w))
        assert torch.equal(target[:, m].bool(), parity(w))
        others = torch.cat([target[:, :m], target[:, m + 1:]], dim=1)
        assert (others == IGNORE).all()


def test_filler_targets_one_position_of_the_scratchpad_layout():
    for m in range(1, 8):
        w = all_strings(m)
        tokens, target = targets(w, "filler")
        for row, sequence in zip(w.tolist(), tokens.tolist(), strict=True):
            expected = [STATE]
            for bit in row:
                expected += [bit, STATE]
            assert sequence == expected
        assert torch.equal(filler_sequence(w), tokens)
        assert torch.equal(target[:, 2 * m - 1].bool(), parity(w))
        others = torch.cat([target[:, :2 * m - 1], target[:, 2 * m:]], dim=1)
        assert (others == IGNORE).all()


def greedy_by_loop(params, w):
    """Greedy decoding of one model, one string at a time, recomputing every prefix."""
    written = []
    for row in w.tolist():
        tokens = [STATE]
        for bit in row:
            tokens.append(bit)
            scores = logits(params, torch.tensor([tokens]), SHAPE)
            tokens.append(STATE + int(scores[0, -1].argmax()))
        written.append(tokens[2::2])
    return torch.tensor(written) - STATE


def test_decode_equals_a_plain_greedy_loop_and_its_own_teacher_forcing():
    stacked = stack(SHAPE, [1, 2], dtype=torch.float64)
    w = torch.stack([random_strings(5, 6, torch.Generator().manual_seed(s)) for s in (8, 9)])
    with torch.no_grad():
        written = decode(stacked, w, HEADS, LAYERS)
        for index in range(2):
            alone = {name: value[index] for name, value in stacked.items()}
            assert torch.equal(written[index], greedy_by_loop(alone, w[index]))
            # fed its own written parities in one pass, it predicts them again
            tokens = torch.full((5, 13), STATE)
            tokens[:, 1::2], tokens[:, 2::2] = w[index], STATE + written[index]
            predicted = logits(alone, tokens, SHAPE)[:, 1::2].argmax(-1)
            assert torch.equal(predicted, written[index])


def test_greedy_decoding_is_right_exactly_when_teacher_forcing_is():
    """A decoder that writes its current bit (attention and feed-forward outputs zero, the
    output layer reads the bit's embedding) on every string of length 6: greedy decoding
    writes the running parities exactly when, fed them, it predicts every one of them."""
    _, params = model()
    with torch.no_grad():
        for name, value in params.items():
            if name.endswith(("out_proj.weight", "out_proj.bias", "linear2.weight",
                              "linear2.bias", "output.bias")):
                value.zero_()
        params["embedding.weight"][:2, :2] = torch.tensor([[1.0, -1.0], [-1.0, 1.0]])
        params["embedding.weight"][:2, 2:] = 0.0
        params["output.weight"].zero_()
        params["output.weight"][:, :2] = torch.tensor([[1.0, -1.0], [-1.0, 1.0]])
        w = all_strings(6)
        tokens, target = targets(w, "scratchpad")
        forced = logits(params, tokens, SHAPE)[:, 1::2].argmax(-1)
        greedy = decode({k: v[None] for k, v in params.items()}, w, HEADS, LAYERS)[0]
    assert torch.equal(greedy, w)  # it writes its bit
    forced_right = (forced == target[:, 1::2]).all(dim=1)
    greedy_right = (greedy == running_parities(w)).all(dim=1)
    assert torch.equal(forced_right, greedy_right)
    assert int(greedy_right.sum()) == 2  # w_1 .. w_5 all 0: 000000 and 000001


def test_train_and_summary():
    outcome = train([3, 4], steps=3, max_train_length=3, lengths=[2, 5], batch=4,
                    test_batch=6, d=8, heads=2, layers=1, device="cpu", progress=False)
    assert isinstance(outcome, Outcome) and outcome.variants == CONDITIONS
    assert outcome.accuracy.shape == (2, 3, 2) and outcome.train_loss.shape == (2, 3, 3)
    assert ((outcome.accuracy * 6).round() == outcome.accuracy * 6).all()
    column = outcome.accuracy[:, :, 1].double()
    for baseline in ("answer only", "filler"):
        table = summary(outcome, generator=torch.Generator().manual_seed(0), baseline=baseline)
        assert list(table.index) == [2, 5] and list(table["trained"]) == [True, False]
        assert table.loc[5, "filler"] == pytest.approx(column[:, 1].mean().item())
        mean, low, high = bootstrap_difference(column[:, CONDITIONS.index(baseline)],
                                               column[:, 2],
                                               generator=torch.Generator().manual_seed(0))
        assert table.loc[5, "difference"] == pytest.approx(mean)
        assert (table.loc[5, "low"], table.loc[5, "high"]) == pytest.approx((low, high))


def test_evaluate_reads_each_condition_where_it_answers():
    """Each model's accuracy from :func:`evaluate` against the model run alone: answer only at
    ``w_m``'s position of its sequence, the filler at ``w_m``'s of its own, the scratchpad by
    greedy decoding."""
    modules = [model(seed)[0] for seed in (5, 6, 7)]
    params = {name: torch.stack([dict(m.named_parameters())[name] for m in modules]).detach()
              for name in dict(modules[0].named_parameters())}
    m = 5
    accuracy = evaluate(params, [11], [m], 40, HEADS, LAYERS)
    w = random_strings(40, m, torch.Generator().manual_seed(13))  # seed + 2
    alone = {name: value[2] for name, value in params.items()}
    sequences = (answer_sequence(w), filler_sequence(w)[:, :-1], None)
    for c, (sequence, module) in enumerate(zip(sequences, modules, strict=True)):
        if sequence is None:
            said = decode({k: v[None] for k, v in alone.items()}, w, HEADS, LAYERS)[0, :, -1]
        else:
            with torch.no_grad():
                said = module(sequence)[:, -1].argmax(-1)
        assert round(40 * accuracy[0, c, 0].item()) == int((said == w.sum(1) % 2).sum()), c


@pytest.mark.slow
def test_the_scratchpad_is_learned_and_answer_only_is_not():
    outcome = train([0, 1], steps=150, max_train_length=12, lengths=[12, 24], device="cpu",
                    progress=False)
    assert (outcome.accuracy[:, 2, 0] > 0.95).all()
    assert (outcome.accuracy[:, :2, 0] < 0.75).all()  # answer only and the filler
    assert (outcome.train_loss[:, 2, -10:].mean(dim=1) < 0.1).all()


@pytest.mark.parametrize(("kwargs", "error"), [
    (dict(seeds="01"), TypeError), (dict(seeds=[]), ValueError), (dict(seeds=[1, 1]), ValueError),
    (dict(seeds=[-1]), ValueError), (dict(steps=0), ValueError), (dict(lengths=[0]), ValueError),
    (dict(max_train_length=1.5), TypeError), (dict(lr=0.0), ValueError),
    (dict(d=10, heads=4), ValueError), (dict(batch=True), TypeError)])
def test_bad_training_arguments(kwargs, error):
    arguments = dict(seeds=[0], steps=1, max_train_length=2, lengths=[2], progress=False)
    with pytest.raises(error, match=next(iter(kwargs)) if "heads" not in kwargs else "d"):
        train(**{**arguments, **kwargs})


def test_bad_input_elsewhere():
    _, params = model()
    stacked = {k: v[None] for k, v in params.items()}
    with pytest.raises(ValueError, match="condition"):
        targets("01", "chain")
    with pytest.raises(ValueError, match="w"):
        running_parities("012")
    with pytest.raises(ValueError, match="ids"):
        Model(SHAPE)(torch.tensor([[0, 4]]))
    with pytest.raises(TypeError, match="tokens"):
        Model(SHAPE)(torch.tensor([[0.0, 1.0]]))
    with pytest.raises(ValueError, match="d must be a multiple"):
        config(10, 4)
    with pytest.raises(ValueError, match="w must be"):
        decode(stacked, torch.zeros(2, 1, 3, dtype=torch.long), HEADS, LAYERS)
    with pytest.raises(ValueError, match="w"):
        decode(stacked, torch.full((1, 3), 2), HEADS, LAYERS)
    with pytest.raises(ValueError, match="params lacks"):
        logits({}, torch.zeros(1, 1, dtype=torch.long), SHAPE)
    with pytest.raises(ValueError, match="params must stack"):
        evaluate(stacked, [0], [2], 2, HEADS, LAYERS)
    with pytest.raises(TypeError, match="result"):
        summary("not an outcome")
    outcome = train([0], steps=1, max_train_length=1, lengths=[1], batch=1, test_batch=1, d=8,
                    heads=2, layers=1, device="cpu", progress=False)
    with pytest.raises(ValueError, match="baseline must be one of"):
        summary(outcome, baseline="scratchpad")


def test_decode_takes_one_string_for_every_model():
    _, params = model()
    stacked = {k: torch.stack([v, v]) for k, v in params.items()}
    written = decode(stacked, "0110", HEADS, LAYERS)
    assert written.shape == (2, 1, 4) and torch.equal(written[0], written[1])
    assert set(itertools.chain.from_iterable(written[0].tolist())) <= {0, 1}


def test_training_under_a_float64_default_dtype():
    """The chapters set float64 as the default dtype; the models still train in float32."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        outcome = train([0], steps=2, max_train_length=2, lengths=[3], batch=2, test_batch=3,
                        d=8, heads=2, layers=1, device="cpu", progress=False)
    finally:
        torch.set_default_dtype(default)
    assert outcome.accuracy.shape == (1, 3, 1) and torch.isfinite(outcome.train_loss).all()


def test_the_figure_has_two_titled_panels():
    import matplotlib.pyplot as plt

    from companion.plotting import plot_scratchpad

    outcome = train([0, 3], steps=2, max_train_length=2, lengths=[2, 4], batch=2,
                    test_batch=3, d=8, heads=2, layers=1, device="cpu", progress=False)
    axes = plot_scratchpad(outcome)
    assert [ax.get_title() for ax in axes] == ["accuracy by test length", "training loss"]
    for ax in axes:  # the conditions differ in line style, not only in colour
        styles = {line.get_label(): line.get_linestyle() for line in ax.get_lines()
                  if line.get_label() in CONDITIONS}
        assert len(set(styles.values())) == len(CONDITIONS)
    plt.close(axes[0].figure)
    with pytest.raises(TypeError, match="outcome"):
        plot_scratchpad("outcome")
