"""Formal languages over the alphabet {0, 1}, decided exactly and in batches.

A batch of strings is a ``LongTensor[B, m]`` (batch first, one string per row, no CLS symbol).
Wherever one string is expected, a ``str`` of ``'0'`` and ``'1'`` characters is accepted too, and
the answer is then a plain ``bool`` instead of a ``BoolTensor[B]``.
"""

import torch

from companion._checks import check_int

MAX_ENUMERATED_LENGTH = 24  # all_strings(24) already holds 2**24 strings of 24 symbols


def as_strings(w, name: str = "w") -> torch.Tensor:
    """Check ``w`` and return it as a ``LongTensor[B, m]`` of 0s and 1s.

    ``w`` is a ``str`` over {'0', '1'} (returned as a batch of one) or an integer tensor of
    rank 2 with ``B >= 1`` rows. Anything else raises ``TypeError`` or ``ValueError``.
    """
    if isinstance(w, str):
        bad = sorted(set(w) - {"0", "1"})
        if bad:
            raise ValueError(f"{name} must contain only '0' and '1', found {bad}")
        return torch.tensor([[int(symbol) for symbol in w]], dtype=torch.long).reshape(1, len(w))
    if not isinstance(w, torch.Tensor):
        raise TypeError(f"{name} must be a str or a LongTensor[B, m], got {type(w).__name__}")
    if w.dtype == torch.bool or w.is_floating_point() or w.is_complex():
        raise TypeError(f"{name} must have an integer dtype (torch.long), got {w.dtype}")
    if w.dim() != 2:
        raise ValueError(
            f"{name} must have shape [B, m] (batch first), got shape {tuple(w.shape)}; "
            "wrap a single string as w[None]"
        )
    if w.shape[0] == 0:
        raise ValueError(f"{name} is an empty batch (B = 0); expected at least one string")
    if w.numel() and not bool(((w == 0) | (w == 1)).all()):
        raise ValueError(f"{name} must contain only the symbols 0 and 1")
    return w.long()


def _answer(result: torch.Tensor, w) -> torch.Tensor | bool:
    """A ``bool`` for a ``str`` input, else the ``BoolTensor[B]`` itself."""
    return bool(result[0]) if isinstance(w, str) else result


def parity(w) -> torch.Tensor | bool:
    """PARITY: the strings with an odd number of 1s. ``BoolTensor[B]`` (``bool`` for a str)."""
    strings = as_strings(w)
    return _answer(strings.sum(dim=1) % 2 == 1, w)


def first(w) -> torch.Tensor | bool:
    """FIRST: the strings whose first symbol is 1 (the empty string is rejected)."""
    strings = as_strings(w)
    if strings.shape[1] == 0:
        return _answer(torch.zeros(strings.shape[0], dtype=torch.bool, device=strings.device), w)
    return _answer(strings[:, 0] == 1, w)


def majority(w) -> torch.Tensor | bool:
    """MAJORITY: the strings with strictly more 1s than 0s (a tie is rejected), as in 004 §5.2."""
    strings = as_strings(w)
    return _answer(2 * strings.sum(dim=1) > strings.shape[1], w)


def random_strings(batch: int, m: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """``batch`` strings of length ``m`` drawn uniformly from {0,1}^m: ``LongTensor[batch, m]``.

    The strings are drawn on the generator's device (the CPU when ``generator`` is None, using
    PyTorch's global generator), so a seed gives the same strings whatever device runs the model.
    """
    check_int(batch, "batch", minimum=1)
    check_int(m, "m", minimum=0)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator or None, got {type(generator).__name__}"
        )
    where = generator.device if generator is not None else torch.device("cpu")
    return torch.randint(0, 2, (batch, m), generator=generator, device=where)


def all_strings(m: int) -> torch.Tensor:
    """Every string of length ``m``, in lexicographic order: ``LongTensor[2**m, m]``.

    Row ``k`` is ``k`` written in binary with the most significant bit first. ``m`` may be at most
    24, so that the result fits comfortably in memory.
    """
    check_int(m, "m", minimum=0, maximum=MAX_ENUMERATED_LENGTH)
    numbers = torch.arange(2**m).unsqueeze(1)
    place_values = 2 ** torch.arange(m - 1, -1, -1)
    return (numbers // place_values) % 2
