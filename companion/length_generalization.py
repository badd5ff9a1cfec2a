"""A second length-generalization benchmark, standing in for the translation experiment of
[chiang2022overcoming] Table 1 (keys of book/references.bib): the regular tasks of
[deletang2023chomsky], trained on strings of length at most 40 and scored by the mean accuracy
over test lengths 41 to 500, with standard and with log-length scaled attention.

Tasks (inputs are token ids, the answer one class):

* ``even_pairs``: bits; class 1 iff the number of unequal neighbours (``01`` or ``10``) is odd,
  that is iff the first and last bits differ;
* ``parity_check``: bits; class 1 iff the number of 1s is odd (PARITY);
* ``cycle_navigation``: moves 0 (stay), 1 (right), 2 (left) on a cycle of 5 states from 0; the
  class is the final state;
* ``modular_arithmetic``: numbers 0-4 at even positions, operators ``+ - *`` (ids 5, 6, 7)
  between them, an odd length; the class is the value mod 5, multiplications first.

The model is the book's one small transformer, :class:`companion.model.Model`, with the
read-out of [deletang2023chomsky] §4: a learned embedding of the tokens and of an output
token (id ``vocab``) appended after the input, the fixed sinusoidal position embedding, pre-norm
``nn.TransformerEncoderLayer`` s attending in both directions, no final layer norm, and a
linear output, one logit per class, read at the output token, the last position
(:func:`config`). The models of one task (seeds x variants) are trained together by
:func:`companion.model.train`, the scaled variant with its attention logits multiplied by
``log n``.
"""

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from companion import model as core
from companion import runtime
from companion._checks import (
    check_choice,
    check_device,
    check_generator,
    check_int,
    check_number,
    check_tensor,
)
from companion.training import SCORE_BUDGET, VARIANTS


@dataclass(frozen=True)
class Task:
    """A task's number of input tokens and of classes."""

    vocab: int
    classes: int


TASKS = {"even_pairs": Task(2, 2), "parity_check": Task(2, 2), "cycle_navigation": Task(3, 5),
         "modular_arithmetic": Task(8, 5)}
PLUS, MINUS, TIMES = 5, 6, 7


def sample(task: str, batch: int, length: int, generator: torch.Generator):
    """``batch`` random inputs of ``task`` with ``length`` tokens (modular arithmetic: the
    largest odd length not above it) and their classes: ``(LongTensor[B, length],
    LongTensor[B])``."""
    check_choice(task, "task", tuple(TASKS))
    batch, length = check_int(batch, "batch", minimum=1), check_int(length, "length", minimum=1)
    check_generator(generator)
    if task == "modular_arithmetic":
        return _arithmetic(batch, length - 1 + length % 2, generator)
    tokens = torch.randint(TASKS[task].vocab, (batch, length), generator=generator)
    if task == "even_pairs":
        return tokens, (tokens[:, 1:] != tokens[:, :-1]).sum(dim=1) % 2
    if task == "parity_check":
        return tokens, tokens.sum(dim=1) % 2
    return tokens, torch.where(tokens == 2, -1, tokens).sum(dim=1) % 5


def _arithmetic(batch: int, length: int, generator: torch.Generator):
    numbers = torch.randint(5, (batch, length // 2 + 1), generator=generator)
    operators = torch.randint(PLUS, TIMES + 1, (batch, length // 2), generator=generator)
    tokens = torch.empty(batch, length, dtype=torch.long)
    tokens[:, ::2], tokens[:, 1::2] = numbers, operators
    # a product of terms accumulates until a + or - starts the next term, whose sign it sets
    value = torch.zeros(batch, dtype=torch.long)
    term = numbers[:, 0].clone()
    for j in range(operators.shape[1]):
        op, x = operators[:, j], numbers[:, j + 1]
        value = torch.where(op == TIMES, value, value + term)
        term = torch.where(op == TIMES, term * x, torch.where(op == PLUS, x, -x)) % 5
    return tokens, (value + term) % 5


def config(task: str, d: int = 64, heads: int = 4,
           layers: int = 2) -> core.Config:
    """The shape of task's model (a companion.model.Config): d wide,
    heads heads, layers layers, attention in both directions, fixed
    sinusoidal positions, no final layer norm, one logit per class, and the
    task's tokens and output token (this docstring is plain text: the book
    prints the function)."""
    check_choice(task, "task", tuple(TASKS))
    return core.Config(vocab=TASKS[task].vocab + 1,
                       outputs=TASKS[task].classes, d=d, heads=heads,
                       layers=layers, positions="sinusoidal", causal=False,
                       final_norm=False)


class Classifier(core.Model):
    """One model in plain PyTorch, standard attention: forward(tokens),
    tokens a LongTensor[B, L] of the task's ids, gives the class logits
    [B, classes] read at the output token, appended at position L (so
    n = L + 1)."""

    def __init__(self, task: str, d: int = 64, heads: int = 4, layers: int = 2):
        super().__init__(config(task, d, heads, layers))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Class logits [B, classes] of tokens (L = 0 allowed)."""
        _check_tokens(tokens, self.config.vocab - 1)
        return super().forward(with_output_token(tokens, self.config.vocab - 1))[:, -1]


def _check_tokens(tokens, vocab: int) -> None:
    """``tokens`` must be a ``LongTensor[B, L]`` of ids ``0..vocab-1``."""
    check_tensor(tokens, "tokens")
    if tokens.is_floating_point() or tokens.dtype == torch.bool or tokens.dim() != 2:
        raise TypeError(f"tokens must be a LongTensor[B, L], got dtype {tokens.dtype} and "
                        f"shape {list(tokens.shape)}")
    if bool(((tokens < 0) | (tokens >= vocab)).any()):
        raise ValueError(f"tokens must hold ids 0..{vocab - 1} (the task's input tokens)")


def with_output_token(tokens: torch.Tensor, output_token: int) -> torch.Tensor:
    """``tokens: LongTensor[..., L]`` followed by ``output_token``: ``[..., L + 1]``."""
    output = torch.full((*tokens.shape[:-1], 1), output_token, dtype=tokens.dtype,
                        device=tokens.device)
    return torch.cat([tokens, output], dim=-1)


@dataclass
class Benchmark:
    """The outcome for one task: ``accuracy[seed, variant, length]`` on ``lengths``, each entry
    the fraction (in [0, 1]) of that length's test strings classified correctly.
    ``score[seed, variant]`` is its mean over the lengths above ``max_train_length`` (the
    protocol's test score), ``in_distribution[seed, variant]`` over the others."""

    task: str
    seeds: list
    variants: tuple
    lengths: list
    max_train_length: int
    accuracy: torch.Tensor

    def __post_init__(self):
        check_choice(self.task, "task", tuple(TASKS))
        for name in ("seeds", "variants", "lengths"):
            if not isinstance(getattr(self, name), list | tuple):
                raise TypeError(f"{name} must be a list, got {type(getattr(self, name)).__name__}")
        check_int(self.max_train_length, "max_train_length", minimum=1)
        check_tensor(self.accuracy, "accuracy")
        shape = (len(self.seeds), len(self.variants), len(self.lengths))
        if tuple(self.accuracy.shape) != shape:
            raise ValueError(f"accuracy has shape {tuple(self.accuracy.shape)}, expected "
                             f"{shape} (seeds, variants, lengths)")
        if not self.accuracy.is_floating_point():
            raise TypeError(f"accuracy must have a floating-point dtype, got "
                            f"{self.accuracy.dtype}")
        outside = ~((self.accuracy >= 0) & (self.accuracy <= 1))  # NaN too
        if not self.accuracy.is_meta and bool(outside.any()):
            raise ValueError(f"accuracy: expected fractions in [0, 1], got "
                             f"{self.accuracy[outside][0].item()}")

    def _mean(self, longer: bool) -> torch.Tensor:
        columns = [i for i, length in enumerate(self.lengths)
                   if (length > self.max_train_length) == longer]
        if not columns:
            raise ValueError(f"no length is {'above' if longer else 'at most'} "
                             f"max_train_length = {self.max_train_length}")
        return self.accuracy[..., columns].mean(dim=-1)

    @property
    def chance(self) -> float:
        """One over the number of classes: the expected accuracy of a uniformly random guess."""
        return 1 / TASKS[self.task].classes

    @property
    def score(self) -> torch.Tensor:
        return self._mean(longer=True)

    @property
    def in_distribution(self) -> torch.Tensor:
        return self._mean(longer=False)

    def save(self, path) -> None:
        """Write this outcome to ``path`` as JSON, to be read back by :func:`load`."""
        fields = {"task": self.task, "seeds": list(self.seeds), "variants": list(self.variants),
                  "lengths": list(self.lengths), "max_train_length": self.max_train_length,
                  "accuracy": self.accuracy.tolist()}
        Path(path).write_text(json.dumps(fields) + "\n", encoding="utf-8")


def load(path) -> Benchmark:
    """The :class:`Benchmark` that :meth:`Benchmark.save` wrote to ``path`` (accuracy in
    float64)."""
    expected = {"task", "seeds", "variants", "lengths", "max_train_length", "accuracy"}
    try:
        fields = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"path {path} does not hold a saved Benchmark (JSON): {error}") from None
    if not isinstance(fields, dict) or set(fields) != expected:
        raise ValueError(f"path {path} does not hold a saved Benchmark: expected the fields "
                         f"{sorted(expected)}")
    try:
        accuracy = torch.tensor(fields["accuracy"], dtype=torch.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path}: accuracy must be a nested list of numbers") from error
    try:
        return Benchmark(fields["task"], fields["seeds"], tuple(fields["variants"]),
                         fields["lengths"], fields["max_train_length"], accuracy)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def run(task: str, seeds, steps: int, batch: int, lengths, test_batch: int,
        max_train_length: int = 40, lr: float = 1e-3, d: int = 64, heads: int = 4,
        layers: int = 2, device=None, progress: bool = True) -> Benchmark:
    """Train one :class:`Classifier` per seed and variant on ``task`` for ``steps`` Adam steps
    of ``batch`` strings, each step's length uniform in ``1..max_train_length``; then test each
    on ``test_batch`` fresh strings of every length in ``lengths`` (those above
    ``max_train_length`` make the score, the others measure in-distribution accuracy). Both
    variants of a seed start from the same weights and see the same strings."""
    check_choice(task, "task", tuple(TASKS))
    if isinstance(seeds, str) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds must be a list of ints, got {type(seeds).__name__}")
    seeds = [check_int(seed, "every seed", minimum=0, maximum=2**63 - 2) for seed in seeds]
    lengths = list(lengths)
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError("seeds must name at least one seed, each once")
    if not lengths:
        raise ValueError("lengths must name at least one test length")
    for name, value in (("steps", steps), ("batch", batch), ("test_batch", test_batch),
                        ("max_train_length", max_train_length), ("d", d), ("heads", heads),
                        ("layers", layers)):
        check_int(value, name, minimum=1)
    for length in lengths:
        check_int(length, "every length", minimum=1)
    check_number(lr, "lr", above=0)
    if d % heads:
        raise ValueError(f"d must be a multiple of heads, got d = {d} and heads = {heads}")
    device = check_device(device) or runtime.device()
    models = [(seed, variant) for seed in seeds for variant in VARIANTS]
    shape = config(task, d, heads, layers)
    params = core.stack(shape, [seed for seed, _ in models], device=device)
    scaled = [variant == "scaled" for _, variant in models]
    output_token = TASKS[task].vocab
    forward = core.stacked_logits(shape)
    draw_length = torch.Generator().manual_seed(seeds[0])
    data = {seed: torch.Generator().manual_seed(seed + 1) for seed in seeds}

    def batches(length, size):  # one batch per seed, shared by its variants: [models, B, L]
        drawn = {seed: sample(task, size, length, data[seed]) for seed in seeds}
        tokens = torch.stack([drawn[seed][0] for seed, _ in models])
        labels = torch.stack([drawn[seed][1] for seed, _ in models])
        n = tokens.shape[-1] + 1
        scale = torch.tensor([math.log(n) if s else 1.0 for s in scaled], device=device)
        return with_output_token(tokens, output_token).to(device), labels.to(device), scale

    def training_batch(step):  # the label at the output token, the last position
        length = int(torch.randint(1, max_train_length + 1, (1,), generator=draw_length))
        tokens, labels, scale = batches(length, batch)
        targets = torch.full_like(tokens, core.IGNORE)
        targets[..., -1] = labels
        return tokens, targets, 0, scale

    core.train(params, shape, training_batch, steps, lr, progress, task)
    correct = torch.zeros(len(models), len(lengths))
    with torch.no_grad():
        for column, length in enumerate(lengths):
            tokens, labels, scale = batches(length, test_batch)
            # strings in chunks, so that the attention logits held at once stay within budget
            chunk = max(1, SCORE_BUDGET // (len(models) * heads * (length + 1) ** 2))
            for start in range(0, test_batch, chunk):
                part = slice(start, start + chunk)
                predicted = forward(params, tokens[:, part], scale, at=-1)[:, :, 0].argmax(dim=-1)
                correct[:, column] += (predicted == labels[:, part]).sum(dim=1).cpu()
    accuracy = (correct / test_batch).reshape(len(seeds), len(VARIANTS), len(lengths))
    return Benchmark(task, seeds, VARIANTS, lengths, max_train_length, accuracy)


def bootstrap_difference(before, after, samples: int = 1000,
                         generator: torch.Generator | None = None):
    """The mean of ``after - before`` over paired runs (``[runs]`` each) and a 95% percentile
    bootstrap interval for it, resampling the runs with replacement: ``(mean, low, high)``.
    ``samples`` is at most ``10**7``."""
    try:
        before = torch.as_tensor(before, dtype=torch.float64).cpu()
        after = torch.as_tensor(after, dtype=torch.float64).cpu()
    except (TypeError, ValueError, RuntimeError) as error:
        raise TypeError(f"before and after must be sequences of numbers: {error}") from None
    if before.dim() != 1 or before.shape != after.shape or len(before) < 1:
        raise ValueError("before and after must be equally long 1-d sequences of runs, got "
                         f"shapes {tuple(before.shape)} and {tuple(after.shape)}")
    difference = after - before
    samples = check_int(samples, "samples", minimum=1, maximum=10**7)
    check_generator(generator)
    picks = torch.randint(len(difference), (samples, len(difference)), generator=generator)
    means = difference[picks].mean(dim=1).numpy()
    low, high = np.percentile(means, [2.5, 97.5])
    return float(difference.mean()), float(low), float(high)


def summary(benchmarks, samples: int = 1000, generator: torch.Generator | None = None):
    """A table with one row per :class:`Benchmark` (index: task), in fractions: ``chance``;
    the mean over seeds of the accuracy on the training lengths (``fit``) and of the ``score``,
    each for standard (``std``) then scaled attention; the ``best`` seed's standard score (the
    statistic of [deletang2023chomsky] §4: the maximum over seeds); and the mean paired
    ``difference`` scaled minus standard of the score with the ends ``low``, ``high`` of its 95%
    bootstrap interval (:func:`bootstrap_difference` with ``samples`` and ``generator``)."""
    import pandas as pd  # on first use only, like companion.tables

    if isinstance(benchmarks, str | bytes) or not hasattr(benchmarks, "__iter__"):
        raise TypeError(f"benchmarks must be an iterable of Benchmarks, got "
                        f"{type(benchmarks).__name__}")
    benchmarks = list(benchmarks)
    tasks = [result.task if isinstance(result, Benchmark) else None for result in benchmarks]
    if None in tasks or len(set(tasks)) != len(tasks):
        raise ValueError(f"benchmarks must be Benchmarks of distinct tasks, got {tasks}")
    rows = {}
    for result in benchmarks:
        fit, score = result.in_distribution.double(), result.score.double()
        mean, low, high = bootstrap_difference(score[:, 0], score[:, 1], samples, generator)
        rows[result.task] = {
            "chance": result.chance, "fit std": fit[:, 0].mean().item(),
            "fit scaled": fit[:, 1].mean().item(), "score std": score[:, 0].mean().item(),
            "score scaled": score[:, 1].mean().item(), "best std": score[:, 0].max().item(),
            "difference": mean, "low": low, "high": high}
    return pd.DataFrame.from_dict(rows, orient="index")
