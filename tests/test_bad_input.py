"""Property-based tests (Hypothesis) of the companion's contract for bad input (book/api.md,
"Errors"): every public function refuses a wrong type, shape, dtype, NaN, infinity, negative or
huge value with a ``ValueError`` or ``TypeError`` whose message names the argument, and works on
the good edge cases (the empty string, a batch of one, the size limits, NumPy scalars).

The number of examples comes from the Hypothesis profile chosen in ``conftest.py``
(``HYPOTHESIS_PROFILE=long`` for many more)."""

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

import companion.heads
from companion import (
    attention,
    circuits,
    constructions,
    evaluation,
    exercises,
    fast_attention,
    feedforward,
    languages,
    layernorm,
    layout,
    length_generalization,
    model,
    plotting,
    precision,
    recall,
    residual,
    runtime,
    scratchpad,
    stacked,
    steps,
    tables,
    torch_export,
    training,
    transformer,
    verify,
)

# --- strategies of bad values ------------------------------------------------------------------

NOT_A_NUMBER = st.one_of(st.none(), st.text(max_size=3), st.lists(st.integers(), max_size=2),
                         st.just(torch.tensor(1.0)), st.just(1j), st.booleans())
NON_FINITE = st.sampled_from([math.nan, math.inf, -math.inf, np.float64("nan"), np.inf])


def bad_ints(minimum=None, maximum=None):
    """Values that an int argument within ``[minimum, maximum]`` refuses."""
    options = [NOT_A_NUMBER, NON_FINITE, st.floats(allow_nan=False, allow_infinity=False)]
    if minimum is not None:
        options.append(st.integers(max_value=minimum - 1, min_value=minimum - 2**70))
    if maximum is not None:
        options.append(st.integers(min_value=maximum + 1, max_value=maximum + 2**70))
    return st.one_of(options)


def bad_numbers(minimum=None, maximum=None, above=None, below=None):
    """Values that a finite number argument with these bounds refuses."""
    options = [NOT_A_NUMBER, NON_FINITE]
    if minimum is not None:
        options.append(st.floats(max_value=minimum, exclude_max=True, allow_infinity=False))
    if above is not None:
        options.append(st.floats(max_value=above, allow_infinity=False, allow_nan=False))
    if maximum is not None:
        options.append(st.floats(min_value=maximum, exclude_min=True, allow_infinity=False))
    if below is not None:
        options.append(st.floats(min_value=below, allow_infinity=False, allow_nan=False))
    return st.one_of(options)


BAD_BOOLS = st.one_of(st.text(max_size=5), st.none(), st.integers(), st.floats())
BAD_GENERATORS = st.one_of(st.integers(), st.text(max_size=3))
BAD_DTYPES = st.sampled_from([None, "float32", torch.long, torch.bool, torch.int32, float])
BAD_DEVICES = st.sampled_from(["gpu", "cuda:x", "nowhere"])
BAD_STRINGS = st.one_of(
    st.text(min_size=1, max_size=5).filter(lambda s: bool(set(s) - {"0", "1"})),
    st.lists(st.integers(0, 1), max_size=3), st.none(), st.integers(),
    st.sampled_from([torch.tensor([[0.0, 1.0]]), torch.tensor([[True, False]]),
                     torch.tensor([0, 1]), torch.zeros(1, 1, 2, dtype=torch.long),
                     torch.zeros(0, 3, dtype=torch.long), torch.tensor([[0, 2, 1]]),
                     torch.tensor([[0, -1]])]))


def bad_choices(choices):
    return st.one_of(st.text(max_size=6).filter(lambda s: s not in choices), st.none(),
                     st.integers())


def _column_model():
    """A PARITY transformer whose logits are ``[B, 1]`` (a forgotten squeeze)."""

    class Column(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = constructions.parity_transformer()

        def forward(self, w):
            return self.inner(w)[:, None]

    return Column()


X = torch.randn(3, 2, dtype=torch.float64)
W = torch.randn(2, 2, dtype=torch.float64)
PARITY = constructions.parity_transformer()
TASK = recall.RecallTask(vocab_size=11, n_triggers=2, n_outputs=2, length=8)
BENCHMARK = length_generalization.Benchmark("parity_check", [0], ("standard", "scaled"), [2, 50],
                                            40, torch.ones(1, 2, 2, dtype=torch.float64))


LAYOUT = layout.Layout("a", "b")
A = torch.full((3, 3), 1 / 3)
LAYER = {name.removeprefix("encoder.layers.0."): value.detach()[None] for name, value in
         training.Recognizer("parity", d=4).named_parameters()}  # a stack of one model
RECOGNIZER_REST = {name: value.detach()[None] for name, value in
                   training.Recognizer("parity", d=4).named_parameters()
                   if not name.startswith("encoder.")}
TOKENS, TARGET = TASK.sample(2, torch.Generator().manual_seed(0))


def _encoder(position):
    """An encoder without layers whose position embedding is the function ``position``."""
    return transformer.Encoder(torch.eye(3, dtype=torch.float64), position, [],
                               torch.ones(3, dtype=torch.float64))


def _recall_step(lr):
    models = recall.RecallModels(TASK, "Reparam-Linear", device="cpu")
    tokens, target = TASK.sample(2, torch.Generator().manual_seed(0))
    models.normalized_step(models.losses(tokens, target), lr)


# (id, a function of the bad value, the argument its message must name, bad values)
CASES = [
    # languages
    ("parity", languages.parity, "w", BAD_STRINGS),
    ("first", languages.first, "w", BAD_STRINGS),
    ("majority", languages.majority, "w", BAD_STRINGS),
    ("ordered", languages.ordered, "w", BAD_STRINGS),
    ("random_strings batch", lambda v: languages.random_strings(v, 3), "batch", bad_ints(1)),
    ("random_strings m", lambda v: languages.random_strings(2, v), "m", bad_ints(0)),
    ("random_strings generator", lambda v: languages.random_strings(2, 3, v), "generator",
     BAD_GENERATORS),
    ("all_strings", languages.all_strings, "m", bad_ints(0, languages.MAX_ENUMERATED_LENGTH)),
    ("random_formula", languages.random_formula, "depth", bad_ints(0, 16)),
    ("random_split_formula", languages.random_split_formula, "leaves", bad_ints(1, 2**16)),
    ("bfvp_value", languages.bfvp_value, "formula",
     st.one_of(st.sampled_from(["", "(", "(0", "0)", "(0&)", "01", "(0&1&1)", "(¬)", "x"]),
               st.none(), st.integers())),
    ("word_problem word", languages.word_problem, "word",
     st.sampled_from(["(", "(0", "()", "(a)", "(00)", "(9)", "(٠١)", "(0²)", 5, None])),
    ("word_problem k", lambda v: languages.word_problem("(01)", v), "k", bad_ints(2, 10)),
    ("generator_permutations", lambda v: languages.generator_permutations(v, 5), "generators",
     st.sampled_from(["(01)", 5, None, [], ["(0"], ["(05)"], ["(00)"], [3], [b"(01)"]])),
    ("generator_permutations count",
     lambda v: languages.generator_permutations(v, 5, count=2), "generators",
     st.sampled_from([["(01)"], ["(01)", "(12)", "(23)"]])),
    ("generator_permutations k", lambda v: languages.generator_permutations(["(0)"], v), "k",
     bad_ints(1, 10)),
    # attention
    ("attention_weights scores", attention.attention_weights, "scores",
     st.sampled_from([torch.tensor([[math.nan, 0.0]]), torch.tensor([[math.inf, 0.0]]),
                      torch.tensor([[1, 0]]), torch.zeros(3), [[0.0]]])),
    ("attention_weights kind", lambda v: attention.attention_weights(torch.zeros(2, 2), v),
     "kind", bad_choices(attention.ATTENTION_KINDS)),
    ("attention_weights mask", lambda v: attention.attention_weights(torch.zeros(2, 2), mask=v),
     "mask", st.sampled_from([torch.ones(2, 2), torch.ones(3, 3, dtype=torch.bool), 1])),
    ("self_attention scale", lambda v: attention.self_attention(X, W, W, W, scale=v), "scale",
     bad_numbers().filter(lambda v: v is not None)),  # None: the default scale
    ("self_attention W_V", lambda v: attention.self_attention(X, W, W, v), "W_V",
     st.sampled_from([W.float(), torch.zeros(3, 2, dtype=torch.float64), W.long(), None])),
    ("future_mask n", attention.future_mask, "n", bad_ints(1, attention.MAX_POSITIONS)),
    ("future_mask strict", lambda v: attention.future_mask(3, v), "strict", BAD_BOOLS),
    ("future_mask device", lambda v: attention.future_mask(3, device=v), "device", BAD_DEVICES),
    ("attention_flops", lambda v: attention.attention_flops(v, 2, 2), "n",
     bad_ints(1, attention.MAX_POSITIONS)),
    # layer normalization and feed-forward networks
    ("layer_norm eps", lambda v: layernorm.layer_norm(X, v), "eps", bad_numbers(minimum=0)),
    ("layer_norm gamma", lambda v: layernorm.layer_norm(X, gamma=v), "gamma",
     st.sampled_from([torch.ones(3, dtype=torch.float64), torch.ones(2).long(), 1.0])),
    ("local_stretch eps", lambda v: layernorm.local_stretch(X, v), "eps", bad_numbers(minimum=0)),
    ("feed_forward W1", lambda v: feedforward.feed_forward(
        torch.zeros(1, 2, dtype=torch.float64), v, *feedforward.two_switch_network()[1:]), "W1",
     st.sampled_from([torch.zeros(3, 2), torch.zeros(3, 3, dtype=torch.float64), None])),
    ("feed_forward return_hidden", lambda v: feedforward.feed_forward(
        torch.zeros(1, 2, dtype=torch.float64), *feedforward.two_switch_network(),
        return_hidden=v), "return_hidden", BAD_BOOLS),
    ("two_switch_network", feedforward.two_switch_network, "dtype", BAD_DTYPES),
    # constructions
    ("ordered_two_heads w", companion.heads.ordered_two_heads(), "w", BAD_STRINGS),
    ("ordered_targets w", companion.heads.ordered_targets, "w", BAD_STRINGS),
    ("attention_error_bound n", companion.heads.attention_error_bound, "n",
     bad_ints(1, companion.heads.MAX_LENGTH)),
    ("parity_transformer c", constructions.parity_transformer, "c", bad_numbers(above=0)),
    ("parity_transformer layernorm", lambda v: constructions.parity_transformer(layernorm=v),
     "layernorm", BAD_BOOLS),
    ("parity_transformer eps", lambda v: constructions.parity_transformer(layernorm=True, eps=v),
     "eps", bad_numbers(minimum=0)),
    ("first_transformer c", constructions.first_transformer, "c", bad_numbers(above=0)),
    ("first_transformer eps", lambda v: constructions.first_transformer(layernorm=True, eps=v),
     "eps", bad_numbers(minimum=0)),
    ("first_transformer log_length", lambda v: constructions.first_transformer(log_length=v),
     "log_length", BAD_BOOLS),
    ("flawed_first_transformer c", constructions.flawed_first_transformer, "c",
     bad_numbers(above=0)),
    ("scaled_first_bound eps", lambda v: constructions.scaled_first_bound(True, v), "eps",
     bad_numbers(minimum=0)),
    ("with_eps", lambda v: constructions.with_eps(
        constructions.parity_transformer(layernorm=True), v), "eps", bad_numbers(minimum=0)),
    ("double_for_layernorm encoder", constructions.double_for_layernorm, "encoder",
     st.one_of(st.none(), st.integers(), st.just(constructions.rumelhart_parity(2)))),
    ("sharpen eta", lambda v: constructions.sharpen(
        constructions.parity_transformer(layernorm=True), v), "eta", bad_numbers(above=0)),
    ("rumelhart_parity", constructions.rumelhart_parity, "m", bad_ints(1, 4096)),
    # circuits
    ("Circuit", circuits.Circuit, "n_inputs", bad_ints(0)),
    ("Circuit.gate", lambda v: circuits.Circuit(2).gate("AND", v), "gate input", bad_ints()),
    ("Circuit.set_output", lambda v: circuits.Circuit(2).set_output(v), "node", bad_ints(0, 1)),
    ("parity_tree", circuits.parity_tree, "n", bad_ints(0, circuits.MAX_INPUTS)),
    ("parity_dnf", circuits.parity_dnf, "n", bad_ints(0, 16)),
    ("parity_threshold", circuits.parity_threshold, "n",
     bad_ints(0, circuits.MAX_THRESHOLD_INPUTS)),
    ("majority_fan_in_2", circuits.majority_fan_in_2, "n", bad_ints(0, circuits.MAX_INPUTS)),
    ("Circuit.from_spec gates", lambda v: circuits.Circuit.from_spec(["x"], v, "x"), "gates",
     st.sampled_from([[("g", ("NOT", ["x"]))], {"g": "NOT"}, {"g": ("NOT", ["x"], 1)}])),
    # evaluation
    ("logits model", lambda v: evaluation.logits(v, "011"), "model",
     st.sampled_from([_column_model(), constructions.rumelhart_parity(3), None, len])),
    ("accuracy_by_length language", lambda v: evaluation.accuracy_by_length(
        PARITY, v, [3], 2, torch.Generator(), progress=False), "language",
     st.sampled_from([None, "parity", lambda w: languages.parity(w)[:, None],
                      lambda w: languages.parity(w)[:1], lambda w: w.sum(dim=1)])),
    ("accuracy_by_length model", lambda v: evaluation.accuracy_by_length(
        v, languages.parity, [3], 2, torch.Generator(), progress=False), "model",
     st.just(_column_model())),
    ("accuracy_by_length lengths", lambda v: evaluation.accuracy_by_length(
        PARITY, languages.parity, v, 2, torch.Generator(), progress=False), "lengths",
     st.one_of(st.integers(), st.just([-1]), st.just([1.5]), st.just("3"))),
    ("accuracy_random_lengths model", lambda v: evaluation.accuracy_random_lengths(
        v, languages.parity, 5, 4, torch.Generator()), "model", st.just(_column_model())),
    ("accuracy_random_lengths language", lambda v: evaluation.accuracy_random_lengths(
        PARITY, v, 5, 4, torch.Generator()), "language",
     st.sampled_from([None, lambda w: languages.parity(w)[0]])),
    ("cross_entropy_bits label", lambda v: evaluation.cross_entropy_bits(torch.zeros(2), v),
     "label", st.sampled_from([[True, False], torch.tensor([0.0, 1.0]), torch.tensor([0, 1]),
                               torch.tensor([True])])),
    ("largest_perfect_length", lambda v: evaluation.largest_perfect_length({2: v}), "accuracy",
     bad_numbers(minimum=0, maximum=1)),
    ("loglog_slope x", lambda v: evaluation.loglog_slope([v, 2.0, 3.0], [1.0, 2.0, 3.0]), "x",
     bad_numbers(above=0)),
    ("loglog_slope y", lambda v: evaluation.loglog_slope([1.0, 2.0, 3.0], [v, 2.0, 3.0]), "y",
     bad_numbers(above=0)),
    ("log_lengths count", lambda v: evaluation.log_lengths(1, 100, v), "count", bad_ints(1)),
    # precision
    ("parity_guaranteed_length c", lambda v: precision.parity_guaranteed_length(
        torch.float32, v, up_to=10), "c", bad_numbers(above=0)),
    ("parity_guaranteed_length up_to", lambda v: precision.parity_guaranteed_length(
        torch.float32, up_to=v), "up_to", bad_ints(2, precision.MAX_GUARANTEED_LENGTH)),
    ("parity_rounding_bounds n", lambda v: precision.parity_rounding_bounds(v, torch.float32),
     "n", st.one_of(st.sampled_from([math.inf, math.nan, "100", 1, 0, 2.5, -3, None]))),
    ("parity_rounding_bounds c", lambda v: precision.parity_rounding_bounds(
        10, torch.float32, v), "c", bad_numbers(above=0)),
    ("unit_roundoff", precision.unit_roundoff, "dtype", BAD_DTYPES),
    ("parity_spike_probe m", lambda v: precision.parity_spike_probe(v, torch.float64, device="cpu"),
     "m", bad_ints(1)),
    # transformer
    ("sinusoidal_position_embedding", lambda v: transformer.sinusoidal_position_embedding(v, 4),
     "n", bad_ints(1, transformer.MAX_TABLE // 4)),
    ("EncoderLayer", lambda v: transformer.EncoderLayer(v, 1, 1, 1), "d",
     bad_ints(1, transformer.MAX_WIDTH)),
    ("Encoder output_bias", lambda v: transformer.Encoder(
        torch.eye(3, dtype=torch.float64), lambda n: torch.zeros(n, 3, dtype=torch.float64), [],
        torch.ones(3, dtype=torch.float64), output_bias=v), "output_bias", bad_numbers()),
    ("Encoder layernorm", lambda v: transformer.Encoder(
        torch.eye(3, dtype=torch.float64), lambda n: torch.zeros(n, 3, dtype=torch.float64), [],
        torch.ones(3, dtype=torch.float64), layernorm=v), "layernorm", BAD_BOOLS),
    ("Encoder.forward w", PARITY, "w", BAD_STRINGS),
    ("Encoder.forward record", lambda v: PARITY("01", record=v), "record", BAD_BOOLS),
    ("random_encoder std", lambda v: transformer.random_encoder(std=v), "std",
     bad_numbers(minimum=0)),
    # recall
    ("bayes_loss", recall.bayes_loss, "alpha", bad_numbers(minimum=0, below=1)),
    ("RecallTask alpha", lambda v: recall.RecallTask(alpha=v), "alpha",
     bad_numbers(minimum=0, below=1)),
    ("RecallTask.sample ood", lambda v: TASK.sample(2, ood=v), "ood", BAD_BOOLS),
    ("RecallModels init_std", lambda v: recall.RecallModels(TASK, "Origin-Linear", init_std=v,
                                                            device="cpu"),
     "init_std", bad_numbers(minimum=0)),
    ("RecallModels seeds", lambda v: recall.RecallModels(TASK, "Origin-Linear", seeds=v,
                                                         device="cpu"),
     "seed", st.sampled_from([(), (-1,), (1.5,), ("a",)])),
    ("RecallModels.forward tokens", lambda v: recall.RecallModels(
        TASK, "Reparam-Linear", device="cpu")(v), "tokens",
     st.sampled_from([torch.tensor([[0, 11]]), torch.tensor([[0, -1]]), torch.zeros(1, 2),
                      torch.zeros(2, dtype=torch.long)])),
    ("RecallModels.normalized_step lr", _recall_step, "lr", bad_numbers(minimum=0)),
    # residual stacks
    ("random_stack sigma", lambda v: residual.random_stack(2, v, d=2, draws=2), "sigma",
     bad_numbers(above=0)),
    ("random_stack depth", lambda v: residual.random_stack(v, 0.5, d=2, draws=2), "depth",
     bad_ints(1, 2**27)),
    ("signal_and_gradient W", lambda v: residual.signal_and_gradient(v, "plain"), "W",
     st.sampled_from([torch.zeros(2, 2, 0, 0, dtype=torch.float64), torch.zeros(2, 2, 2),
                      torch.zeros(2, 2, 2, 2, dtype=torch.long), None])),
    # training
    ("position_features language", lambda v: training.position_features(v, 3), "language",
     bad_choices(("first", "parity"))),
    ("position_features n", lambda v: training.position_features("parity", v), "n", bad_ints(1)),
    ("token_types w", lambda v: training.token_types("parity", v), "w", BAD_STRINGS),
    ("Recognizer eps", lambda v: training.Recognizer("parity", eps=v), "eps",
     bad_numbers(minimum=0)),
    ("Recognizer d", lambda v: training.Recognizer("parity", d=v), "d",
     st.one_of(bad_ints(1), st.sampled_from([3, 15]))),
    ("Recognizer.forward w", training.Recognizer("first"), "w", BAD_STRINGS),
    ("Grid train_lengths", lambda v: training.Grid("first", v, 1), "train_lengths",
     st.sampled_from([5, (), (2, 2), (0,), (1.5,)])),
    ("Grid variants", lambda v: training.Grid("first", (2,), 1, variants=v), "variant",
     st.sampled_from(["standard", (), ("scaled", "scaled"), ("x",)])),
    ("stack_modules seeds", lambda v: stacked.stack_modules(lambda: nn.Linear(1, 1), v),
     "seed", st.sampled_from([[], [-1], [1.5], ["a"]])),
    ("optimize params", lambda v: stacked.optimize(v, lambda step: torch.zeros(1), 1, 0.1,
                                                   progress=False),
     "params", st.sampled_from([{}, None, {"w": torch.zeros(2, 3)}, {"w": torch.zeros(())
                                                                       .requires_grad_()},
                                {"w": torch.zeros(2, 1, requires_grad=True),
                                 "b": torch.zeros(3, requires_grad=True)},
                                {"w": torch.zeros(2, 1, requires_grad=True).double()}])),
    ("optimize losses", lambda v: stacked.optimize(
        {"w": torch.zeros(2, 1, requires_grad=True)}, v, 1, 0.1, progress=False), "losses",
     st.sampled_from([None, "loss", lambda step: torch.zeros(3), lambda step: 0.5,
                      lambda step: torch.zeros(2, 1)])),
    ("optimize steps", lambda v: stacked.optimize(
        {"w": torch.zeros(2, 1, requires_grad=True)}, lambda step: torch.zeros(2), v, 0.1,
        progress=False), "steps", bad_ints(1)),
    ("optimize lr", lambda v: stacked.optimize(
        {"w": torch.zeros(2, 1, requires_grad=True)}, lambda step: torch.zeros(2), 1, v,
        progress=False), "lr", bad_numbers(above=0)),
    ("optimize every", lambda v: stacked.optimize(
        {"w": torch.zeros(2, 1, requires_grad=True)}, lambda step: torch.zeros(2), 1, 0.1,
        every=v, progress=False), "every", bad_ints(1)),
    ("optimize report", lambda v: stacked.optimize(
        {"w": torch.zeros(2, 1, requires_grad=True)}, lambda step: torch.zeros(2), 1, 0.1,
        report=v, progress=False), "report", st.sampled_from(["print", 3])),
    ("train lr", lambda v: training.train(training.Grid("first", (2,), 1), 1, 1, 1, 2, lr=v,
                                          device="cpu", progress=False),
     "lr", bad_numbers(above=0)),
    ("train seed", lambda v: training.train(training.Grid("first", (2,), 1), 1, 1, 1, 2, seed=v,
                                            device="cpu", progress=False),
     "seed", bad_ints(0)),
    # length generalization
    ("Classifier heads", lambda v: length_generalization.Classifier("parity_check", d=10,
                                                                    heads=v),
     "heads", st.one_of(bad_ints(1), st.sampled_from([3, 4]))),
    ("Classifier.forward tokens", length_generalization.Classifier("parity_check", d=4, heads=2),
     "tokens", st.sampled_from([torch.tensor([[2]]), torch.tensor([[-1]]), torch.zeros(1, 2),
                                torch.zeros(2, dtype=torch.long), "01"])),
    ("sample batch", lambda v: length_generalization.sample("parity_check", v, 3, None),
     "batch", bad_ints(1)),
    ("bootstrap_difference samples", lambda v: length_generalization.bootstrap_difference(
        [0.1, 0.2], [0.3, 0.4], v), "samples", bad_ints(1, 10**7)),
    ("summary", lambda v: length_generalization.summary(v, samples=5), "benchmarks",
     st.sampled_from([BENCHMARK, [BENCHMARK, BENCHMARK], [None]])),
    # fast attention, checking prints, runtime, layouts, export, tables
    ("attend scale", lambda v: fast_attention.attend(torch.zeros(1, 2, 2), torch.zeros(1, 2, 2),
                                                     torch.zeros(1, 2, 2), v),
     "scale", bad_numbers()),
    ("distinct_rows", fast_attention.distinct_rows, "rows",
     st.sampled_from([torch.zeros(3), torch.zeros(2, 2, 2), [[1.0]]])),
    ("matches_print", lambda v: verify.matches_print(torch.zeros(2, 2), v), "printed",
     st.sampled_from([["0", "0", "0", "0"], ["0"], [["0", "0"], ["0"]], [0.0], "x", None])),
    ("set_seed", runtime.set_seed, "seed", bad_ints(0, 2**32 - 1)),
    ("Layout", lambda v: layout.Layout("a", v), "names", st.one_of(st.integers(), st.none())),
    ("to_torch", torch_export.to_torch, "encoder", st.sampled_from([None, 1, PARITY.layers])),
    ("activation_table", lambda v: tables.activation_table(v, "01", "a0"), "model",
     st.sampled_from([None, constructions.rumelhart_parity(2)])),
    # the low-harm rows of the review (grammars and callbacks, layouts, parameter dicts, ...)
    ("as_strings name", lambda v: languages.as_strings("01", name=v), "name",
     st.sampled_from([5, None, b"w"])),
    ("random_strings size", lambda v: languages.random_strings(v, v), "batch * m",
     st.integers(10**5, 10**6)),
    ("derivable_from grammar", lambda v: languages.derivable_from("(1∧1)", v), "grammar",
     st.sampled_from([None, {"F1": 5}, {"F1": [("and", ("F1", "F9"))]}, {"F1": [("xor", ())]},
                      [("and", ("F1", "F1"))]])),
    ("parse_formula leaf", lambda v: languages.parse_formula("(1∧0)", v, max), "leaf",
     st.sampled_from([None, 5, "x"])),
    ("parse_formula combine", lambda v: languages.parse_formula("(1∧0)", bool, v), "combine",
     st.sampled_from([None, 5, "x"])),
    ("Layout.vector entries", LAYOUT.vector, "entries",
     st.sampled_from([["a"], None, {"a": "x"}, {"a": math.nan}])),
    ("Layout.matrix source", lambda v: LAYOUT.matrix(v, {}), "source",
     st.sampled_from([None, "a", 1])),
    ("Layout.matrix entries", lambda v: LAYOUT.matrix(LAYOUT, v), "entries",
     st.sampled_from([{"a": 1.0}, {("a",): 1.0}, [("a", "a")], {("a", "b"): None}])),
    ("double_for_layernorm doubled", constructions.double_for_layernorm, "encoder",
     st.just(constructions.double_for_layernorm(PARITY))),
    ("Encoder position_embedding", lambda v: _encoder(v)("01"), "position_embedding",
     st.sampled_from([lambda n: torch.zeros(n, 2, dtype=torch.float64),
                      lambda n: [[0.0] * 3] * n, lambda n: torch.zeros(n + 1, 3)])),
    ("TorchEncoder width", lambda v: torch_export.TorchEncoder(PARITY, [], v), "width",
     st.one_of(st.integers(-5, PARITY.d - 1), st.sampled_from([None, 9.5]))),
    ("TorchEncoder encoder", lambda v: torch_export.TorchEncoder(v, [], 9), "encoder",
     st.sampled_from([None, constructions.rumelhart_parity(2)])),
    ("matches_print overflow", lambda v: verify.matches_print(0.5, v), "printed",
     st.sampled_from(["1e400", "-2e309", ["1e999"]])),
    ("bootstrap_difference before", lambda v: length_generalization.bootstrap_difference(
        v, [0.1]), "before", st.sampled_from([["a"], [None], {"a": 1}])),
    ("run seeds", lambda v: length_generalization.run("parity_check", v, 1, 1, [2], 1,
                                                      progress=False), "seeds",
     st.sampled_from([5, None])),
    ("encoder_layer w", lambda v: training.encoder_layer(
        v, torch.zeros(1, 1, 2, 4), torch.zeros(1, 1, 2), torch.ones(1), 1, 1e-5), "w",
     st.sampled_from([{}, None, {"norm1.weight": torch.ones(1, 4)}])),
    ("encoder_layer heads", lambda v: training.encoder_layer(
        LAYER, torch.zeros(1, 1, 2, 4), torch.zeros(1, 1, 2), torch.ones(1), v, 1e-5), "heads",
     st.sampled_from([3, 5])),
    ("encoder_layer x", lambda v: training.encoder_layer(
        LAYER, v, torch.zeros(1, 1, 2), torch.ones(1), 1, 1e-5), "x",
     st.sampled_from([torch.zeros(1, 2, 4), torch.zeros(2, 4)])),
    ("stacked_logits_and_attention scale", lambda v: training.stacked_logits_and_attention(
        {f"encoder.layers.{layer}.{name}": value for layer in range(2)
         for name, value in LAYER.items()} | RECOGNIZER_REST,
        torch.zeros(1, 1, 2, dtype=torch.long), torch.zeros(1, 1, 2, 2), torch.zeros(1, 1, 2), v,
        1), "scale", st.sampled_from([torch.ones(2), torch.ones(1, 1)])),
    ("stacked_logits_and_attention symbols", lambda v: training.stacked_logits_and_attention(
        {f"encoder.layers.{layer}.{name}": value for layer in range(2)
         for name, value in LAYER.items()} | RECOGNIZER_REST,
        v, torch.zeros(1, 1, 2, 2), torch.zeros(1, 1, 2), 1.0, 1), "symbols",
     st.sampled_from([torch.zeros(1, 2, dtype=torch.long), None])),
    ("logits_and_attention p", lambda v: training.logits_and_attention(
        v, torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 2, 3), torch.zeros(1, 2), 1.0,
        1), "p", st.sampled_from([{}, None, LAYER])),
    ("RecallModels seeds int", lambda v: recall.RecallModels(TASK, "Origin-Linear", seeds=v,
                                                             device="cpu"),
     "seeds", st.sampled_from([5, None])),
    ("RecallModels.forward short tokens", lambda v: recall.RecallModels(
        TASK, "Reparam-Linear", device="cpu")(v), "tokens",
     st.sampled_from([torch.zeros(2, 1, dtype=torch.long), torch.zeros(1, 1, dtype=torch.long)])),
    ("RecallTask.output_word", TASK.output_word, "tokens",
     st.sampled_from([torch.zeros(2, 1, dtype=torch.long), TOKENS[0]])),
    ("estimate_gamma target", lambda v: recall.estimate_gamma(v, TASK), "target",
     st.sampled_from([None, "x", TARGET.double()])),
    ("recall.train data", lambda v: recall.train(recall.RecallModels(
        TASK, "Reparam-Linear", device="cpu"), 1, 1, 0.1, data=v, progress=False), "data",
     st.sampled_from([(TOKENS.bool(), TARGET), (TOKENS + 50, TARGET), (TOKENS - 50, TARGET)])),
    # figures
    ("plot ax", lambda v: plotting.plot_class_map(ax=v), "ax", st.sampled_from([5, "ax", [1]])),
    ("plot_accuracy_by_length", plotting.plot_accuracy_by_length, "curves",
     st.sampled_from([[0.5], {"a": [1.0, 0.5]}, None, {5: {2: 1.0}}])),
    ("plot_attention A", plotting.plot_attention, "A",
     st.sampled_from([None, [["a", "b"], ["c", "d"]]])),
    ("plot_attention labels", lambda v: plotting.plot_attention(A, labels=v), "labels",
     st.sampled_from([5, ["x"], "xyz"])),
    ("plot_attention decimals", lambda v: plotting.plot_attention(A, decimals=v), "decimals",
     bad_ints(0, 15)),
    ("plot_attention_cost", lambda v: plotting.plot_attention_cost([1, 2, 3], v, [1, 2, 3],
                                                                   [1, 2, 3]), "counted",
     st.sampled_from([[1, 2], None, "abc"])),
    ("plot_cross_entropy_by_length", lambda v: plotting.plot_cross_entropy_by_length(
        [2, 3], v), "curves", st.sampled_from([{"a": [0.5]}, {5: [0.5, 0.5]}, None])),
    ("plot_length_generalization", plotting.plot_length_generalization, "benchmarks",
     st.sampled_from([[], BENCHMARK, [None]])),
    ("plot_local_stretch", lambda v: plotting.plot_local_stretch([1, 2], v), "stretch",
     st.sampled_from([{"a": [0.5]}, None])),
    ("plot_logit_decay", lambda v: plotting.plot_logit_decay([1, 2], v), "measured",
     st.sampled_from([[[1, 2]], {"a": [1, 2, 3]}])),
    ("plot_norms_by_depth", lambda v: plotting.plot_norms_by_depth(v, "y"), "curves",
     st.sampled_from([{"a": [1.0, 2.0]}, {"a": torch.zeros(0, 3)}, None])),
    ("plot_position_embedding", plotting.plot_position_embedding, "pe",
     st.sampled_from([None, "x"])),
    ("plot_training_curves", plotting.plot_training_curves, "log", st.sampled_from([None, {}])),
    ("plot_weight_sensitivity", lambda v: plotting.plot_weight_sensitivity(
        [1, 2], v, [0.5, 0.5], "w"), "bits", st.sampled_from([[0.5], None])),
    ("show_recorded", plotting.show_recorded, "path", st.sampled_from([None, 1.5, ["a"]])),
]


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
@given(data=st.data())
def test_bad_input_is_refused_naming_the_argument(case, data):
    _, function, name, values = case
    value = data.draw(values, label=name)
    with pytest.raises((ValueError, TypeError)) as refused:
        function(value)
    assert name in str(refused.value), f"the message does not name {name!r}: {refused.value}"


# --- good edge inputs ---------------------------------------------------------------------------

BIT_STRINGS = st.text(alphabet="01", max_size=12)


@given(BIT_STRINGS)
def test_a_str_is_one_string_everywhere(w):
    batch = languages.as_strings(w)
    assert batch.shape == (1, len(w))
    for language in (languages.parity, languages.first, languages.majority, languages.ordered):
        assert language(w) == bool(language(batch)[0])
    assert evaluation.logits(PARITY, w).shape == (1,)
    assert training.Recognizer("first")(w).shape == (1,)
    assert training.token_types("parity", w or "0")[0].shape == (1, len(w or "0") + 1)
    assert circuits.parity_tree(len(w)).evaluate(w) == languages.parity(w)


@given(st.integers(1, 3), st.integers(0, 6), st.sampled_from([np.int64, np.int32, np.float64]))
def test_numpy_scalars_are_sizes(batch, m, kind):
    strings = languages.random_strings(kind(batch), kind(m), torch.Generator().manual_seed(0))
    assert strings.shape == (batch, m)
    assert circuits.Circuit(kind(m)).n_inputs == m
    assert runtime.effective_seed(kind(m)) >= 0


@given(st.floats(0, 1e3), st.sampled_from([float, np.float32, np.float64]))
def test_numpy_and_python_floats_are_numbers(eps, kind):
    x = torch.randn(2, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert torch.isfinite(layernorm.layer_norm(x, kind(eps))).all()


@given(st.floats(1, 1e6))
def test_every_positive_c_gets_a_guarantee(c):
    # exp(c) no longer overflows: c = 709, 710 and beyond give the same length as c = 1
    assert precision.parity_guaranteed_length(torch.float32, c, up_to=1000) == 914
    assert np.isfinite(precision.parity_rounding_bounds(100, torch.float32, c)["margin"])


def test_size_limits_work():
    assert languages.all_strings(0).shape == (1, 0)
    assert languages.all_strings(languages.MAX_ENUMERATED_LENGTH).shape == (2**20, 20)
    assert len(languages.random_formula(10)) > 2**10
    assert circuits.parity_dnf(16).n_inputs == 16
    assert attention.future_mask(attention.MAX_POSITIONS).shape == (8192, 8192)
    assert precision.parity_guaranteed_length(torch.float64, up_to=2) == 2


def test_empty_and_single_edge_cases_work():
    assert attention.attention_weights(torch.zeros(3, 0), "leftmost_hard").shape == (3, 0)
    rows = torch.tensor([[2**53 + 1], [2**53]])
    distinct, which = fast_attention.distinct_rows(rows)
    assert torch.equal(distinct[which], rows)  # no float32 cast merges them
    q = torch.zeros(0, 2, 4)
    assert fast_attention.attend(q, q, q, 1.0)[0].shape == (0, 2, 4)
    assert circuits.Circuit(1).gate("NOT", np.int64(0)) == 1
    empty = torch.zeros(1, 0, dtype=torch.long)
    classifier = length_generalization.Classifier("parity_check", d=4, heads=2)
    assert classifier(empty).shape == (1, 2)
    no_layers = transformer.Encoder(torch.eye(3, dtype=torch.float64),
                                    lambda n: torch.zeros(n, 3, dtype=torch.float64), [],
                                    torch.ones(3, dtype=torch.float64))
    assert torch.equal(torch_export.to_torch(no_layers)("01"), no_layers("01"))
    rows = torch.tensor([[-math.inf, -math.inf], [0.0, -math.inf]])
    assert torch.equal(attention.attention_weights(rows), torch.tensor([[0.0, 0.0], [1, 0]]))


def test_from_spec_takes_any_order_and_any_length():
    gates = {f"g{i}": ("NOT", [f"g{i + 1}" if i < 4999 else "x"]) for i in range(5000)}
    chain = circuits.Circuit.from_spec(["x"], gates, "g0")  # listed output first
    assert chain.size == 5001 and chain.depth == 5000
    assert chain.evaluate("1") is True and chain.evaluate("0") is False  # 5000 NOTs


def test_companion_exports_every_public_module():
    import companion

    for name in sorted(path.stem for path in Path(companion.__file__).parent.glob("*.py")
                       if not path.stem.startswith("_")):
        assert name in companion.__all__ and hasattr(companion, name)


def test_files_that_hold_something_else_are_refused_naming_the_path(tmp_path):
    junk = tmp_path / "junk"
    junk.write_text("{not json")
    other = tmp_path / "other.pt"
    torch.save({"a": torch.zeros(1)}, other)
    for load, path in ((length_generalization.load, junk), (training.TrainingLog.load, junk),
                       (training.TrainingLog.load, other), (plotting.show_recorded, junk)):
        with pytest.raises(ValueError, match="path"):
            load(path)


# --- the bad-input review of 2026-11-27 (its M findings, and its L findings in the new modules) --


@pytest.mark.parametrize("language", [
    lambda w: w.sum(dim=1, keepdim=True) % 2 == 1,  # [B, 1]: it broadcast against [B]
    lambda w: w.sum() % 2 == 1,  # one verdict for the whole batch
    lambda w: languages.parity("".join(map(str, w[0].tolist()))),  # a Python bool
    lambda w: languages.parity(w).double(),  # floats, not a BoolTensor
], ids=["[B, 1]", "scalar tensor", "bool", "float"])
def test_check_circuit_family_refuses_a_language_that_is_not_a_bool_tensor_B(language):
    with pytest.raises((ValueError, TypeError), match=r"language\(w\)"):
        exercises.check_circuit_family(circuits.parity_tree, language, lengths=range(0, 5),
                                       sampled_lengths=())
    assert exercises.check_circuit_family(circuits.parity_tree, languages.parity,
                                          lengths=range(0, 5), sampled_lengths=())


@pytest.mark.parametrize("value", [100.0, 1.3, -0.1, math.nan])
def test_a_benchmark_refuses_accuracies_outside_0_1(value, tmp_path):
    accuracy = torch.full((1, 2, 2), 0.5, dtype=torch.float64)
    accuracy[0, 1, 1] = value
    fields = ("parity_check", [0], ("standard", "scaled"), [2, 50], 40)
    with pytest.raises(ValueError, match=r"accuracy: expected fractions in \[0, 1\], got"):
        length_generalization.Benchmark(*fields, accuracy)
    length_generalization.Benchmark(*fields, torch.full((1, 2, 2), 0.5,
                                                        dtype=torch.float64)).save(
        tmp_path / "b.json")
    text = (tmp_path / "b.json").read_text()
    assert text.count("0.5]]]") == 1
    (tmp_path / "b.json").write_text(text.replace("0.5]]]", f"{value}]]]".replace("nan", "NaN")))
    with pytest.raises(ValueError, match="accuracy: expected fractions") as refused:
        length_generalization.load(tmp_path / "b.json")
    assert str(tmp_path / "b.json") in str(refused.value)
    with pytest.raises(TypeError, match="accuracy must have a floating-point dtype"):
        length_generalization.Benchmark(*fields, torch.ones(1, 2, 2, dtype=torch.long))


def test_parity_guaranteed_length_runs_at_its_cap_in_little_memory():
    import tracemalloc  # NumPy reports its arrays to tracemalloc

    tracemalloc.start()
    try:
        length = precision.parity_guaranteed_length(torch.float32,
                                                    up_to=precision.MAX_GUARANTEED_LENGTH)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert length == 914
    assert peak < 200 * 2**20, f"peak {peak / 2**20:.0f} MiB"  # not 16 GB


def _toy_chapter(path):
    """A notebook with one graded exercise, ``ex-a``, that has a written part."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    answer = new_code_cell("x = 1")
    answer.metadata.update(tags=["answer"], exercise="ex-a")
    cells = [new_markdown_cell("```{exercise} A\n:label: ex-a\n\nSay why.\n```"), answer]
    nbformat.write(new_notebook(cells=cells, metadata={"exercises": {"ex-a": 1},
                                                       "written": {"ex-a": 1}}), path)
    return path


def test_the_course_toolkit_takes_str_paths(tmp_path, monkeypatch):
    from course.assignments import write_editions
    from course.grade import ExerciseScore, Report, write_csv, write_written_answers

    monkeypatch.chdir(tmp_path)
    _toy_chapter(tmp_path / "toy.ipynb")
    for notebooks, out in (("toy.ipynb", "one"), (["toy.ipynb"], "list"),
                           (str(tmp_path / "toy.ipynb"), str(tmp_path / "absolute"))):
        (student,) = write_editions(notebooks, out)
        assert student == Path(out) / "student" / "toy.ipynb" and student.is_file()
        assert (Path(out) / "instructor" / "toy.ipynb").is_file()
    write_csv([Report("a.ipynb", [ExerciseScore("ex-a", 1, 1, "ok")])], "grades.csv")
    assert "ex-a" in (tmp_path / "grades.csv").read_text()
    write_written_answers([student], "toy.ipynb", "written.ipynb")
    assert (tmp_path / "written.ipynb").is_file() and (tmp_path / "written.html").is_file()
    with pytest.raises(TypeError, match="out must be a path"):
        write_editions(["toy.ipynb"], None)
    with pytest.raises(TypeError, match="notebooks must be a path"):
        write_editions([None], "out")


def test_write_editions_names_a_file_that_is_not_a_notebook(tmp_path):
    from course.assignments import write_editions

    junk = tmp_path / "junk.ipynb"
    junk.write_text("{not json")
    with pytest.raises(ValueError, match="notebooks: .* is not a Jupyter notebook") as refused:
        write_editions([junk], tmp_path / "out")
    assert str(junk) in str(refused.value)
    with pytest.raises(ValueError, match="notebooks: no such file"):
        write_editions([tmp_path / "missing.ipynb"], tmp_path / "out")
    import nbformat

    chapter = _toy_chapter(tmp_path / "toy.ipynb")
    notebook = nbformat.read(chapter, as_version=4)
    notebook.metadata.exercises = {"ex-a": math.inf}
    nbformat.write(notebook, chapter)
    with pytest.raises(ValueError, match="positive, finite points"):
        write_editions([chapter], tmp_path / "out")


def test_compile_dfa_refuses_more_pairs_than_its_ffn_holds_and_works_at_the_cap():
    with pytest.raises(ValueError, match=r"transitions: .*at most 4096 .*= 4100"):
        steps.compile_dfa([[0] * 41 for _ in range(100)], 0, [0])
    with pytest.raises(ValueError, match="transitions"):
        steps.compile_dfa(*steps.word_problem_dfa(["(01)"] * 6, k=6))  # 720 x 6 = 4320
    S = k = 64  # 4096 pairs: q -> q + a (mod S)
    table = [[(q + a) % S for a in range(k)] for q in range(S)]
    decoder = steps.compile_dfa(table, 0, [0])
    w = torch.randint(0, k, (2, 5), generator=torch.Generator().manual_seed(0))
    states, _ = steps.decode(decoder, w)
    assert torch.equal(states, steps.run_dfa(table, 0, w))


@pytest.mark.parametrize("w", ["0١", "０１", "0²", "1٠"])
def test_steps_reads_only_ascii_digits(w):
    with pytest.raises(ValueError, match="w must contain only the ASCII digits"):
        steps.decode(steps.parity_decoder(), w)
    with pytest.raises(ValueError, match="w must contain only the ASCII digits"):
        steps.run_dfa([[0, 1], [1, 0]], 0, w)


def test_steps_refuses_a_str_for_an_alphabet_beyond_ten_digits():
    table = [[a % 2 for a in range(12)] for _ in range(2)]  # 12 symbols: '11' is ambiguous
    with pytest.raises(TypeError, match="w must be a LongTensor"):
        steps.decode(steps.compile_dfa(table, 0, [1]), "11")
    assert steps.run_dfa(table, 0, "").shape == (1, 0)


@pytest.mark.parametrize("variable, value", [("BOOK_SEED", "١"), ("BOOK_SEED", "０"),
                                             ("COMPANION_THREADS", "２"),
                                             ("COMPANION_THREADS", "١")])
def test_runtime_reads_only_ascii_digits(variable, value, monkeypatch):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=variable):
        runtime.effective_seed(0) if variable == "BOOK_SEED" else runtime.threads()


def test_runtime_still_reads_ascii_integers(monkeypatch):
    monkeypatch.setenv("BOOK_SEED", "-1")
    monkeypatch.setenv("COMPANION_THREADS", " 2 ")
    assert runtime.effective_seed(0) == (-1_000_003) % 2**32 and runtime.threads() == 2


def test_scratchpad_decodes_the_empty_string():
    params = model.stack(scratchpad.config(4, 1, 1), [0, 1])
    assert scratchpad.decode(params, "", 1, 1).shape == (2, 1, 0)
    empty = torch.zeros(2, 3, 0, dtype=torch.long)
    assert scratchpad.decode(params, empty, 1, 1).shape == (2, 3, 0)


def test_chapter_variants_takes_only_an_int_course_seed_and_a_str_student():
    from course.hidden import load
    from course.variants import chapter_variants

    make = load("recall").VARIANTS
    for seed in (2.0, 2.5, "2", True, -1):
        with pytest.raises(ValueError, match="course_seed must be a non-negative integer"):
            chapter_variants(make, "recall", seed)
    with pytest.raises(TypeError, match="student must be a str"):
        chapter_variants(make, "recall", 2, 7)
    by_int, by_numpy = (chapter_variants(make, "recall", i, "ann") for i in (2, np.int64(2)))
    assert {k: v.replace for k, v in by_int.items()} == {k: v.replace
                                                         for k, v in by_numpy.items()}


def test_read_roster_takes_a_byte_order_mark_and_refuses_other_headers(tmp_path):
    from course.variants import read_roster

    roster = tmp_path / "roster.csv"
    roster.write_bytes("student,email\nann,ann@x.org\nbob,bob@x.org\n".encode("utf-8-sig"))
    assert read_roster(roster) == read_roster(str(roster)) == ["ann", "bob"]
    roster.write_bytes("ann\nbob\n".encode("utf-8-sig"))
    assert read_roster(roster) == ["ann", "bob"]
    for text in ("name,email\nann,ann@x.org\n", "Name\nann\n", "ann,ann@x.org\n"):
        roster.write_text(text)
        with pytest.raises(ValueError, match="line 1: the header must name the first column "
                                             "'student'"):
            read_roster(roster)
    roster.write_text('student,email\n"Smith, Ann",ann@x.org\n')
    with pytest.raises(ValueError, match="'Smith, Ann' is not a student name"):
        read_roster(roster)
    with pytest.raises(TypeError, match="roster must be a path"):
        read_roster(None)


def test_scratchpad_refuses_the_parameters_of_more_layers_than_layers():
    two_layers = scratchpad.config(4, 1, 2)
    one = dict(model.Model(two_layers).named_parameters())
    stacked = model.stack(two_layers, [0, 1, 2])
    tokens = scratchpad.answer_sequence("01")
    refusal = r"holds the parameters of layers 0\.\.1 .*but layers = 1"
    with pytest.raises(ValueError, match="params " + refusal):
        model.logits(one, tokens, scratchpad.config(4, 1, 1))
    with pytest.raises(ValueError, match="params " + refusal):
        model.extend(one, tokens, scratchpad.config(4, 1, 1))
    with pytest.raises(ValueError, match="params " + refusal):
        scratchpad.decode(stacked, "01", 1, 1)
    with pytest.raises(ValueError, match="params " + refusal):
        scratchpad.evaluate(stacked, [0], [2], 2, 1, 1)
    assert model.logits(one, tokens, two_layers).shape == (1, 3, 2)
    assert scratchpad.evaluate(stacked, [0], [2], 2, 1, 2).shape == (1, 3, 1)
    for layers, error in ((0, ValueError), ("2", TypeError)):
        with pytest.raises(error, match="layers"):
            scratchpad.config(4, 1, layers)


@pytest.mark.parametrize("call", [model.logits, model.extend])
def test_the_model_checks_its_tokens_and_scratchpad_its_heads(call):
    shape = scratchpad.config(4, 2, 1)
    p = dict(model.Model(shape).named_parameters())
    stacked = {name: value.detach().expand(3, *value.shape) for name, value in p.items()}
    tokens = torch.tensor([[2, 0, 1]])
    for heads, error, message in ((0, ValueError, "heads must be >= 1"),
                                  (3, ValueError, "heads must divide the model's width d = 4"),
                                  (2.0, TypeError, "heads must be an int")):
        with pytest.raises(error, match=message):
            scratchpad.decode(stacked, "01", heads, 1)
    for bad, error in ((torch.tensor([[2, 4]]), ValueError), (torch.tensor([[-1]]), ValueError),
                       (torch.zeros(1, 0, dtype=torch.long), ValueError),
                       (tokens.float(), TypeError), (tokens[0], TypeError),
                       ([[2, 0]], TypeError)):
        with pytest.raises(error, match="tokens must"):
            call(p, bad, shape)
    logits = call(p, tokens, shape)
    assert (logits if call is model.logits else logits[0]).shape == (1, 3, 2)
    batched = torch.func.vmap(lambda q, t: model.logits(q, t, shape))
    assert batched(stacked, tokens.expand(3, 1, 3)).shape == (3, 1, 3, 2)  # vmap still works


def test_word_problem_dfa_needs_generators_and_reads_a_generator_expression():
    with pytest.raises(ValueError, match="generators must hold at least one permutation"):
        steps.word_problem_dfa([])
    with pytest.raises(ValueError, match="generators must hold at least one permutation"):
        steps.word_problem_dfa(g for g in ())
    with pytest.raises(TypeError, match="generators must be a list"):
        steps.word_problem_dfa(5)
    with pytest.raises(ValueError, match=r"generators: malformed cycle '\(0x\)'"):
        steps.word_problem_dfa(["(0x)"])
    listed = steps.word_problem_dfa(["(01)", "(01234)"])
    assert steps.word_problem_dfa(g for g in ["(01)", "(01234)"]) == listed
    assert all(len(row) == 2 for row in listed[0])


def test_activation_tables_name_the_decoder_and_w():
    with pytest.raises(TypeError, match="decoder must come from compile_dfa"):
        steps.activation_table(None, "01", "a0")
    for w in ("", torch.tensor([[0, 1], [1, 0]])):
        with pytest.raises(ValueError, match="w must be one nonempty string"):
            steps.activation_table(steps.parity_decoder(), w, "a0")
    assert steps.activation_table(steps.parity_decoder(), "01", "a2").shape[1] == 4
    with pytest.raises(ValueError, match="w must be one string"):
        tables.activation_table(PARITY, torch.tensor([[0, 1], [1, 0]]), "a0")


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_steps_refuses_a_dtype_it_has_no_precision_for(dtype):
    with pytest.raises(ValueError, match="dtype must be one of"):
        steps.exact_length(dtype)
    with pytest.raises(ValueError, match="dtype must be one of"):
        steps.parity_decoder(dtype)
    assert steps.exact_length(torch.float32) == 1448


@pytest.mark.parametrize("value", ["1025", "100000", str(2**64)])
def test_companion_threads_has_a_cap(value, monkeypatch):
    monkeypatch.setenv("COMPANION_THREADS", value)
    with pytest.raises(ValueError, match="COMPANION_THREADS=.*from 1 to 1024"):
        runtime.threads()
    monkeypatch.setenv("COMPANION_THREADS", "1024")
    assert runtime.threads() == runtime.MAX_THREADS == 1024
