"""Argument checks shared by the companion's public functions.

Each helper raises ``TypeError`` (wrong kind of object) or ``ValueError`` (right kind, wrong value)
with a message that names the argument and says what was expected.
"""

import torch


def check_int(value, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an int within ``[minimum, maximum]``; bools are refused."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_nonnegative(value, name: str) -> float:
    """``value`` as a float ``>= 0`` (an int or float; bools are refused)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return float(value)


def check_positive(value, name: str) -> float:
    """``value`` as a float ``> 0`` (an int or float; bools are refused)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return float(value)


def check_float_tensor(value, name: str, ranks: tuple[int, ...]) -> torch.Tensor:
    """``value`` as a floating-point tensor whose rank is one of ``ranks``."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if not value.is_floating_point():
        raise TypeError(f"{name} must have a floating-point dtype, got {value.dtype}")
    if value.dim() not in ranks:
        expected = " or ".join(str(r) for r in ranks)
        raise ValueError(f"{name} must have rank {expected}, got shape {tuple(value.shape)}")
    return value


def check_choice(value, name: str, choices: tuple[str, ...]) -> str:
    """``value`` as one of the strings in ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value
