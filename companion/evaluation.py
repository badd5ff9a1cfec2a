"""Evaluating recognizers in batches: accuracy and cross-entropy by length, logit sizes,
power-law slopes.

Strings are generated on the CPU from an explicit generator (so a seed gives the same strings on
any device) and evaluated on the model's device in chunks of at most ``POSITIONS`` positions,
which bounds memory at any length.
"""

import math

import numpy as np
import torch
from tqdm import tqdm

from companion._checks import check_int
from companion.languages import as_strings, random_strings

POSITIONS = 2**16  # strings x positions evaluated at once: small enough that a CPU works in cache


def _device(model) -> torch.device:
    return next(model.parameters()).device


def logits(model, w: torch.Tensor | str) -> torch.Tensor:
    """``model(w)`` in chunks of rows, without gradients, on the model's device: ``[B]``
    (``[1]`` for a single ``str`` such as ``"0110"``)."""
    w = as_strings(w)
    rows = max(1, POSITIONS // (w.shape[1] + 1))
    with torch.no_grad():
        return torch.cat([model(chunk.to(_device(model))).cpu()
                          for chunk in torch.split(w, rows)])


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
    accuracy = {}
    for m in tqdm(list(lengths), desc="lengths", disable=not progress, leave=False):
        w = probe_strings(batch, m, generator)
        accuracy[m] = (logits(model, w) > 0).eq(language(w)).double().mean().item()
    return accuracy


def length_batches(count: int, max_m: int, generator: torch.Generator) -> list[torch.Tensor]:
    """``count`` random strings whose lengths are uniform in ``1..max_m`` (the test of
    [chiang2022overcoming] §3.4), as one ``LongTensor[B_m, m]`` per length that occurs."""
    check_int(count, "count", minimum=1)
    check_int(max_m, "max_m", minimum=1)
    lengths = torch.randint(1, max_m + 1, (count,), generator=generator)
    return [random_strings(int(how_many), int(m), generator)
            for m, how_many in zip(*torch.unique(lengths, return_counts=True), strict=True)]


def accuracy_random_lengths(model, language, count: int, max_m: int,
                            generator: torch.Generator) -> float:
    """Accuracy on the :func:`length_batches` strings; strings of equal length are evaluated
    together."""
    batches = length_batches(count, max_m, generator)
    correct = sum(int((logits(model, w) > 0).eq(language(w)).sum()) for w in batches)
    return correct / count


def cross_entropy_bits(s: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
    """Per-string cross-entropy in bits, ``-log2 sigma(+-s)``, of logits ``s: [B]`` against
    ``label: BoolTensor[B]``: 1 bit for ``s = 0``, near 0 for a confident right answer."""
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
    curves = {name: [] for name in models}
    for m in tqdm(list(lengths), desc="lengths", disable=not progress, leave=False):
        w = random_strings(batch, m, generator)
        label = language(w)
        for name, model in models.items():
            curves[name].append(cross_entropy_bits(logits(model, w), label).mean().item())
    return curves


def largest_perfect_length(accuracy: dict[int, float]) -> int | None:
    """The largest tested length ``m`` such that every tested length up to ``m`` is perfect
    (``None`` if the shortest already fails)."""
    best = None
    for m in sorted(accuracy):
        if accuracy[m] < 1.0:
            break
        best = m
    return best


def loglog_slope(x, y) -> float:
    """Least-squares slope of ``log y`` against ``log x``: the exponent of a power law."""
    x, y = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    if x.shape != y.shape or x.size < 2:
        raise ValueError("x and y must be equally long with at least two points")
    return float(np.polyfit(x, y, 1)[0])


def log_lengths(low: int, high: int, count: int) -> list[int]:
    """About ``count`` distinct integers spread evenly on a log scale from ``low`` to ``high``."""
    check_int(low, "low", minimum=1)
    check_int(high, "high", minimum=low)
    points = np.geomspace(low, high, count)
    return sorted({int(round(p)) for p in points} | {low, high})


def mean_abs_logit(model, lengths, batch: int, generator: torch.Generator) -> list[float]:
    """Mean ``|s|`` over ``batch`` random strings of each length in ``lengths``."""
    return [logits(model, random_strings(batch, m, generator)).abs().mean().item()
            for m in lengths]

