"""Checking computed numbers against the numbers a source prints.

A printed number carries its own precision: ``"0.769"`` claims the true value lies within
half a unit in its last place, ``[0.7685, 0.7695]``. :func:`matches_print` checks exactly that.
"""

import math
from decimal import Decimal, InvalidOperation

import torch


def _half_unit(printed: str) -> float:
    """Half a unit in the last printed place of ``printed``: ``"0.769"`` -> 0.0005,
    ``"1.5e-3"`` -> 0.00005, ``"2e5"`` -> 50000 (an exponent moves the last place)."""
    try:
        number = Decimal(printed.strip())
    except InvalidOperation:
        raise ValueError(f"printed must hold numbers such as '0.769', got {printed!r}") from None
    if not number.is_finite() or not math.isfinite(float(number)):
        raise ValueError(f"printed must hold finite numbers within float64's range, "
                         f"got {printed!r}")
    return 0.5 * 10.0 ** number.as_tuple().exponent


def matches_print(computed, printed) -> bool:
    """True when every computed number rounds to the number printed in its place.

    ``printed`` is a string such as ``"0.769"`` or a (nested) list of such strings shaped like
    ``computed`` (dimensions of size 1 aside); the precision of each comparison is read off its
    printed string.
    """
    if isinstance(computed, str) or isinstance(computed, complex) or (
            isinstance(computed, torch.Tensor) and computed.is_complex()):
        raise TypeError(f"computed must hold real numbers, got {type(computed).__name__}")
    try:
        values = torch.as_tensor(computed, dtype=torch.float64).detach().cpu()
    except (TypeError, ValueError, RuntimeError) as error:
        raise TypeError(f"computed must be a number, a tensor or a (nested) list of numbers, "
                        f"got {type(computed).__name__}") from error
    flat_printed = []

    def flatten(item) -> tuple:  # the shape of item, checked to be regular
        if isinstance(item, str):
            flat_printed.append(item)
            return ()
        if not isinstance(item, list | tuple):
            raise TypeError(f"printed must hold strings such as '0.769', got {type(item).__name__}")
        shapes = {flatten(part) for part in item}
        if len(shapes) > 1:
            raise ValueError("printed must be a regular nested list (rows of one length)")
        return (len(item), *(shapes.pop() if shapes else ()))

    shape = flatten(printed)
    if [s for s in values.shape if s != 1] != [s for s in shape if s != 1]:
        raise ValueError(f"computed has shape {list(values.shape)} but printed has shape "
                         f"{list(shape)}")
    values = values.reshape(-1)
    tolerance = torch.tensor([_half_unit(p) for p in flat_printed], dtype=torch.float64)
    target = torch.tensor([float(p) for p in flat_printed], dtype=torch.float64)
    return bool(((values - target).abs() <= tolerance * (1 + 1e-9)).all())
