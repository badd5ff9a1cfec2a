"""Sensitivity of Boolean functions on {0,1}^n, exactly, over all 2^n strings.

A string ``x`` is *sensitive* at position ``i`` for ``f`` when flipping its bit ``i`` changes
``f(x)``; its sensitivity ``s(f, x)`` counts those positions, and the *average sensitivity* of
``f`` is the mean of ``s(f, x)`` over all ``2^n`` strings. PARITY is sensitive everywhere
(average ``n``), MAJORITY on the strings near a tie (average ``Theta(sqrt n)``), FIRST at its
first position only (average 1). Average sensitivity is the measure by which [hahn2024sensitive]
explain why transformers find sensitive functions hard to learn, and by which
[kozachinskiy2026parity] prove that one layer cannot compute PARITY.

``f`` is anything that maps a ``LongTensor[B, n]`` of bit strings to a ``BoolTensor[B]``: a
language of :mod:`companion.languages`, a circuit's ``evaluate``, a model's decisions. It is
called once per chunk of :data:`CHUNK` strings of :func:`companion.languages.all_strings` (no
Python loop over strings), and each string's neighbours are read from the values by index:
flipping bit ``i`` of row ``k`` gives row ``k XOR 2^(n-1-i)``.
"""

import torch

from companion._checks import check_callable, check_int
from companion.languages import MAX_ENUMERATED_LENGTH, all_strings

#: Strings handed to ``f`` at once.
CHUNK = 2**16


def values(f, n: int) -> torch.Tensor:
    """``f`` on every string of length ``n``, in :func:`companion.languages.all_strings` order:
    ``BoolTensor[..., 2^n]`` (on the CPU), the leading dimensions those of ``f``'s answers (none
    for one function; ``[models]`` when ``f`` decides for a stack of models at once). ``n`` is
    at most 20."""
    check_callable(f, "f")
    n = check_int(n, "n", minimum=0, maximum=MAX_ENUMERATED_LENGTH)
    strings = all_strings(n)
    parts = []
    for start in range(0, len(strings), CHUNK):
        chunk = strings[start:start + CHUNK]
        out = f(chunk)
        if not isinstance(out, torch.Tensor) or out.dtype != torch.bool:
            got = f"dtype {out.dtype}" if isinstance(out, torch.Tensor) else type(out).__name__
            raise TypeError(f"f must return a BoolTensor[..., B], one decision per string, "
                            f"got {got}")
        if out.dim() == 0 or out.shape[-1] != len(chunk) or (
                parts and out.shape[:-1] != parts[0].shape[:-1]):
            raise ValueError(f"f must return one decision per string, shape [..., "
                             f"{len(chunk)}] (the same leading shape for every chunk), got "
                             f"{list(out.shape)}")
        parts.append(out.cpu())
    return torch.cat(parts, dim=-1)


def sensitivity_profile(f, n: int) -> torch.Tensor:
    """Each string's sensitivity ``s(f, x)``, the number of positions whose flip changes
    ``f(x)``: ``LongTensor[..., 2^n]`` in :func:`companion.languages.all_strings` order (the
    leading dimensions as in :func:`values`), for ``n <= 20``."""
    return profile_of_values(values(f, n))


def profile_of_values(decided: torch.Tensor) -> torch.Tensor:
    """:func:`sensitivity_profile` from a function's values already computed by :func:`values`
    (``BoolTensor[..., 2^n]``), so that what needs both evaluates the function once."""
    n = decided.shape[-1].bit_length() - 1
    rows = torch.arange(decided.shape[-1])
    flips = [decided != decided[..., rows ^ (1 << (n - 1 - i))] for i in range(n)]
    return torch.stack(flips).sum(dim=0) if flips else torch.zeros_like(decided, dtype=torch.long)


def average_sensitivity(f, n: int):
    """The mean of :func:`sensitivity_profile` over all ``2^n`` strings of length ``n``
    (``n <= 20``): ``n`` for PARITY, 1 for FIRST. A float, or a ``DoubleTensor[...]`` (one
    average per model) when ``f`` decides for a stack of models."""
    mean = sensitivity_profile(f, n).double().mean(dim=-1)
    return mean.item() if mean.dim() == 0 else mean
