"""Evaluating recognizers in batches: accuracy and cross-entropy by length, logit sizes,
power-law slopes.

Strings are generated on the CPU from an explicit generator (so a seed gives the same strings on
any device) and evaluated on the model's device in chunks of at most ``POSITIONS`` positions,
which bounds memory at any length.
"""

import math
from collections.abc import Iterable

import numpy as np
import torch
from tqdm import tqdm

from companion._checks import (
    check_callable,
    check_generator,
    check_int,
    check_number,
    check_shape,
    check_tensor,
)
from companion.languages import as_strings, random_strings

POSITIONS = 2**16  # strings x positions evaluated at once: small enough that a CPU works in cache


def _device(model) -> torch.device:
    """The device of ``model``'s parameters (the CPU when it has none)."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module mapping strings to logits [B], "
                        f"got {type(model).__name__}")
    parameter = next(model.parameters(), None)
    return parameter.device if parameter is not None else torch.device("cpu")


def _chunk_logits(model, chunk: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``model(chunk)`` on the CPU, checked to be one logit per string."""
    return check_shape(model(chunk.to(device)), "model(w)", (chunk.shape[0],)).cpu()


def logits(model, w: torch.Tensor | str) -> torch.Tensor:
    """``model(w)`` in chunks of rows, without gradients, on the model's device: ``[B]``
    (``[1]`` for a single ``str`` such as ``"0110"``). A model whose output is not ``[B]``
    (such as ``[B, 1]``) is refused."""
    device, w = _device(model), as_strings(w)
    rows = max(1, POSITIONS // (w.shape[1] + 1))
    with torch.no_grad():
        return torch.cat([_chunk_logits(model, chunk, device) for chunk in torch.split(w, rows)])


def _labels(language, w: torch.Tensor) -> torch.Tensor:
    """``language(w)``, checked to be a ``BoolTensor[B]``."""
    labels = check_shape(check_callable(language, "language")(w), "language(w)",
                         (w.shape[0],))
    if labels.dtype != torch.bool:
        raise TypeError(f"language(w) must be a BoolTensor, got dtype {labels.dtype}")
    return labels


def _lengths(lengths) -> list[int]:
    """``lengths`` as a list of ints >= 0."""
    if isinstance(lengths, str) or not isinstance(lengths, Iterable):
        raise TypeError(f"lengths must be a sequence of ints, got {type(lengths).__name__}")
    return [check_int(m, "every length in lengths", minimum=0) for m in lengths]


def probe_strings(batch: int, m: int, generator: torch.Generator) -> torch.Tensor:
    """``batch`` random strings of length ``m`` plus the two extremes, all 0s and all 1s:
    ``LongTensor[batch + 2, m]``."""
    strings = random_strings(batch, m, generator)
    zeros = torch.zeros(1, m, dtype=torch.long, device=strings.device)
    return torch.cat([zeros, 1 - zeros, strings])


def accuracy_by_length(model, language, lengths, batch: int, generator: torch.Generator,
                       progress: bool = True) -> dict[int, float]:
    """Fraction of :func:`probe_strings` of each length ``m`` in ``lengths`` that ``model``
    (accepting iff its logit is positive) classifies as ``language`` does."""
    check_int(batch, "batch", minimum=1)
    check_callable(language, "language")
    accuracy = {}
    for m in tqdm(_lengths(lengths), desc="lengths", disable=not progress, leave=False):
        w = probe_strings(batch, m, generator)
        accuracy[m] = (logits(model, w) > 0).eq(_labels(language, w)).double().mean().item()
    return accuracy


def length_batches(count: int, max_m: int, generator: torch.Generator) -> list[torch.Tensor]:
    """``count`` random strings whose lengths are uniform in ``1..max_m`` (the test of
    [chiang2022overcoming] §3.4), as one ``LongTensor[B_m, m]`` per length that occurs."""
    check_int(count, "count", minimum=1)
    max_m = check_int(max_m, "max_m", minimum=1)
    check_generator(generator)
    lengths = torch.randint(1, max_m + 1, (count,), generator=generator)
    return [random_strings(int(how_many), int(m), generator)
            for m, how_many in zip(*torch.unique(lengths, return_counts=True), strict=True)]


def accuracy_random_lengths(model, language, count: int, max_m: int,
                            generator: torch.Generator) -> float:
    """Accuracy on the :func:`length_batches` strings; strings of equal length are evaluated
    together."""
    check_callable(language, "language")
    batches = length_batches(count, max_m, generator)
    correct = sum(int((logits(model, w) > 0).eq(_labels(language, w)).sum()) for w in batches)
    return correct / count


def cross_entropy_bits(s: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
    """Per-string cross-entropy in bits, ``-log2 sigma(+-s)``, of logits ``s: [B]`` against
    ``label: BoolTensor[B]``: 1 bit for ``s = 0``, near 0 for a confident right answer."""
    check_tensor(s, "s")
    check_tensor(label, "label")
    if not s.is_floating_point():
        raise TypeError(f"s must be a floating-point tensor of logits, got dtype {s.dtype}")
    if label.dtype != torch.bool:
        raise TypeError(f"label must be a BoolTensor, got dtype {label.dtype}")
    if s.shape != label.shape:
        raise ValueError(f"s and label must have the same shape, got {tuple(s.shape)} and "
                         f"{tuple(label.shape)}")
    signed = torch.where(label.to(s.device), s, -s)
    return -torch.nn.functional.logsigmoid(signed) / math.log(2)


def cross_entropy_by_length(models: dict, language, lengths, batch: int,
                            generator: torch.Generator, progress: bool = True) -> dict:
    """Mean cross-entropy in bits per string of each model in ``models`` (a dict name ->
    recognizer) on ``batch`` random strings of each length ``m`` in ``lengths``; every model
    sees the same strings. Returns ``{name: [bits at each m]}``."""
    check_int(batch, "batch", minimum=1)
    if not isinstance(models, dict):
        raise TypeError(f"models must be a dict name -> recognizer, got {type(models).__name__}")
    check_callable(language, "language")
    curves = {name: [] for name in models}
    for m in tqdm(_lengths(lengths), desc="lengths", disable=not progress, leave=False):
        w = random_strings(batch, m, generator)
        label = _labels(language, w)
        for name, model in models.items():
            curves[name].append(cross_entropy_bits(logits(model, w), label).mean().item())
    return curves


def largest_perfect_length(accuracy: dict[int, float]) -> int | None:
    """The largest tested length ``m`` such that every tested length up to ``m`` is perfect
    (``None`` if the shortest already fails). Accuracies must lie in [0, 1]."""
    if not isinstance(accuracy, dict):
        raise TypeError(f"accuracy must be a dict length -> accuracy, "
                        f"got {type(accuracy).__name__}")
    for m, value in accuracy.items():
        check_int(m, "every length in accuracy", minimum=0)
        check_number(value, f"accuracy[{m}]", minimum=0, maximum=1)
    best = None
    for m in sorted(accuracy):
        if accuracy[m] < 1.0:
            break
        best = m
    return best


def loglog_slope(x, y) -> float:
    """Least-squares slope of ``log y`` against ``log x``: the exponent of a power law.
    ``x`` and ``y`` are equally long sequences of finite numbers > 0, ``x`` with at least two
    distinct values."""
    points = []
    for name, values in (("x", x), ("y", y)):
        if isinstance(values, str) or not isinstance(values, Iterable):
            raise TypeError(f"{name} must be a sequence of numbers, got {type(values).__name__}")
        values = values.tolist() if isinstance(values, torch.Tensor | np.ndarray) else values
        points.append([check_number(v, f"every {name}", above=0) for v in values])
    x, y = points
    if len(x) != len(y) or len(x) < 2:
        raise ValueError("x and y must be equally long with at least two points")
    if len(set(x)) < 2:
        raise ValueError("x must take at least two distinct values")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def log_lengths(low: int, high: int, count: int) -> list[int]:
    """About ``count`` distinct integers spread evenly on a log scale from ``low`` to ``high``."""
    low = check_int(low, "low", minimum=1)
    high = check_int(high, "high", minimum=low)
    count = check_int(count, "count", minimum=1)
    points = np.geomspace(low, high, count)
    return sorted({int(round(p)) for p in points} | {low, high})


def mean_abs_logit(model, lengths, batch: int, generator: torch.Generator) -> list[float]:
    """Mean ``|s|`` over ``batch`` random strings of each length in ``lengths``."""
    return [logits(model, random_strings(batch, m, generator)).abs().mean().item()
            for m in _lengths(lengths)]

