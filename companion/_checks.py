"""Argument checks shared by the companion's public functions.

Each helper raises ``TypeError`` (wrong kind of object) or ``ValueError`` (right kind, wrong value)
with a message that names the argument and says what was expected. Strings of bits are checked by
:func:`companion.languages.as_strings`.
"""

import math
import numbers
import re

import numpy as np
import torch


def check_int(value, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an int within ``[minimum, maximum]``. Python and NumPy integers are accepted,
    and NumPy floats that hold an integer; bools are refused."""
    if isinstance(value, np.floating) and value.is_integer():
        value = int(value)
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_number(value, name: str, minimum: float | None = None, maximum: float | None = None,
                 above: float | None = None, below: float | None = None) -> float:
    """``value`` as a finite float with ``minimum <= value <= maximum`` and
    ``above < value < below`` (each bound optional). Python and NumPy numbers are accepted;
    bools, NaN and infinities are refused."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    if above is not None and value <= above:
        raise ValueError(f"{name} must be > {above}, got {value}")
    if below is not None and value >= below:
        raise ValueError(f"{name} must be < {below}, got {value}")
    return value


def check_bool(value, name: str) -> bool:
    """``value`` as a bool: ``True`` or ``False`` (or a NumPy bool), not a truthy string."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_choice(value, name: str, choices: tuple[str, ...]) -> str:
    """``value`` as one of the strings in ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_callable(value, name: str):
    """``value``, which must be callable (a function or a model)."""
    if not callable(value):
        raise TypeError(f"{name} must be callable, got {type(value).__name__}")
    return value


def check_generator(value, name: str = "generator"):
    """``value``, which must be a ``torch.Generator`` or None."""
    if value is not None and not isinstance(value, torch.Generator):
        raise TypeError(f"{name} must be a torch.Generator or None, got {type(value).__name__}")
    return value


def check_dtype(value, name: str = "dtype") -> torch.dtype:
    """``value``, which must be a floating-point ``torch.dtype``."""
    if not isinstance(value, torch.dtype) or not value.is_floating_point:
        raise TypeError(f"{name} must be a floating-point torch.dtype, got {value!r}")
    return value


def check_tensor(value, name: str) -> torch.Tensor:
    """``value``, which must be a tensor."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def check_float_tensor(value, name: str, ranks: tuple[int, ...]) -> torch.Tensor:
    """``value`` as a floating-point tensor whose rank is one of ``ranks``."""
    check_tensor(value, name)
    if not value.is_floating_point():
        raise TypeError(f"{name} must have a floating-point dtype, got {value.dtype}")
    if value.dim() not in ranks:
        expected = " or ".join(str(r) for r in ranks)
        raise ValueError(f"{name} must have rank {expected}, got shape {tuple(value.shape)}")
    return value


def check_keys(value, name: str, required) -> dict:
    """``value``, which must be a dict holding every key in ``required`` (a model's parameters
    by name, say)."""
    if not isinstance(value, dict):
        raise TypeError(f"{name} must be a dict, got {type(value).__name__}")
    missing = [key for key in required if key not in value]
    if missing:
        raise ValueError(f"{name} lacks the keys {missing[:3]}" + (
            f" and {len(missing) - 3} more" if len(missing) > 3 else ""))
    return value


def check_layers(value: dict, name: str, prefix: str, layers: int) -> dict:
    """``value``, a model's parameters by name, which must hold none of a layer beyond
    ``layers`` (names ``{prefix}{layer}.*`` with ``layer >= layers``): a smaller ``layers``
    would silently skip them."""
    found = [int(match[1]) for key in value
             if (match := re.match(re.escape(prefix) + r"(\d+)\.", key))]
    if found and max(found) >= layers:
        raise ValueError(f"{name} holds the parameters of layers 0..{max(found)} "
                         f"({prefix}{max(found)}.*), but layers = {layers}: pass the model's "
                         "number of layers")
    return value


def check_shape(value, name: str, shape: tuple[int, ...]) -> torch.Tensor:
    """``value``, which must be a tensor of exactly ``shape``."""
    check_tensor(value, name)
    if tuple(value.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {list(shape)}, got {list(value.shape)}")
    return value


def check_same_device(**tensors) -> torch.device:
    """The device shared by every tensor given by name (None entries are skipped)."""
    given = {name: t for name, t in tensors.items() if t is not None}
    devices = {name: t.device for name, t in given.items()}
    if len(set(devices.values())) > 1:
        listed = ", ".join(f"{name} on {device}" for name, device in devices.items())
        raise ValueError(f"the tensors must be on one device, got {listed}")
    return next(iter(devices.values()))


def check_device(value, name: str = "device") -> torch.device | None:
    """``value`` as a ``torch.device`` (from a device or a name such as ``"cpu"``, ``"cuda:0"``),
    or None."""
    if value is None:
        return None
    if not isinstance(value, str | torch.device):
        raise TypeError(f"{name} must be a torch.device, a device name or None, "
                        f"got {type(value).__name__}")
    try:
        chosen = torch.device(value)
    except RuntimeError as error:
        raise ValueError(f"{name} must name a torch device such as 'cpu' or 'cuda', "
                         f"got {value!r}") from error
    if chosen.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{name}={value!r} asks for CUDA, but none is available")
    return chosen


MAX_STATES, MAX_SYMBOLS = 1000, 100  # of a DFA's table


def _states(collection, name: str) -> set:
    if isinstance(collection, str | bytes) or not hasattr(collection, "__iter__"):
        raise TypeError(f"{name} must be a collection of states, got {collection!r}")
    return {check_int(q, f"each {name[:-1] if name.endswith('s') else name} state", minimum=0,
                      maximum=MAX_STATES - 1) for q in collection}


def check_tm(transitions, start, accepting, rejecting, blank):
    """``(table, start, accepting, rejecting, blank)`` after checking a one-tape Turing
    machine: ``transitions`` a dict from ``(state, symbol)`` to ``(state, symbol, move)``,
    move -1 or +1, states and symbols ints >= 0; the input is over {0, 1} and ``blank`` is
    another symbol; accepting and rejecting states are disjoint and have no transitions.
    ``table`` is the dict with plain ints."""
    if not isinstance(transitions, dict):
        raise TypeError("transitions must be a dict mapping (state, symbol) to "
                        f"(state, symbol, move), got {type(transitions).__name__}")
    blank = check_int(blank, "blank", minimum=2, maximum=MAX_SYMBOLS - 1)
    table = {}
    for key, target in transitions.items():
        if not (isinstance(key, tuple) and len(key) == 2):
            raise TypeError(f"transitions: each key must be a (state, symbol) pair, got {key!r}")
        if not (isinstance(target, tuple | list) and len(target) == 3):
            raise TypeError(f"transitions[{key!r}] must be a (state, symbol, move) triple, "
                            f"got {target!r}")
        q, a = (check_int(x, f"transitions key {key!r}", minimum=0, maximum=limit - 1)
                for x, limit in zip(key, (MAX_STATES, MAX_SYMBOLS), strict=True))
        r, b = (check_int(x, f"transitions[{key!r}]", minimum=0, maximum=limit - 1)
                for x, limit in zip(target[:2], (MAX_STATES, MAX_SYMBOLS), strict=True))
        move = check_int(target[2], f"transitions[{key!r}]'s move", minimum=-1, maximum=1)
        if move == 0:
            raise ValueError(f"transitions[{key!r}]'s move must be -1 (left) or +1 (right), "
                             "got 0")
        table[q, a] = (r, b, move)
    start = check_int(start, "start", minimum=0, maximum=MAX_STATES - 1)
    accepting, rejecting = _states(accepting, "accepting"), _states(rejecting, "rejecting")
    if accepting & rejecting:
        raise ValueError(f"accepting and rejecting states must differ, both hold "
                         f"{sorted(accepting & rejecting)}")
    halting = sorted({q for q, _ in table} & (accepting | rejecting))
    if halting:
        raise ValueError(f"transitions: the halting states {halting} must have no transitions")
    return table, start, accepting, rejecting, blank


def check_dfa(transitions, start, accepting, max_pairs: int | None = None):
    """``(table LongTensor[S, k], start, accepting BoolTensor[S])`` after checking a DFA:
    ``transitions[state][symbol]`` the next state (states ``0..S-1``, symbols ``0..k-1``),
    ``start`` a state, ``accepting`` a collection of states. At most ``MAX_STATES`` states and
    ``MAX_SYMBOLS`` symbols, and where ``max_pairs`` is given (``compile_dfa``: one FFN unit
    per pair), at most that many (state, symbol) pairs ``S * k``."""
    if not isinstance(transitions, list | tuple) or not transitions:
        raise TypeError("transitions must be a non-empty list of rows, transitions[state][symbol]")
    if not all(isinstance(row, list | tuple) for row in transitions):
        raise TypeError("transitions must be a list of rows (lists of next states)")
    S, k = len(transitions), len(transitions[0])
    check_int(S, "len(transitions)", maximum=MAX_STATES)
    check_int(k, "len(transitions[0]) (the alphabet's size)", minimum=1, maximum=MAX_SYMBOLS)
    if max_pairs is not None and S * k > max_pairs:
        raise ValueError(f"transitions: compile_dfa takes at most {max_pairs} (state, symbol) "
                         f"pairs (one FFN unit each), got {S} states x {k} symbols = {S * k}")
    for q, row in enumerate(transitions):
        if len(row) != k:
            raise ValueError(f"transitions[{q}] has {len(row)} entries, expected k = {k}")
        for a, target in enumerate(row):
            check_int(target, f"transitions[{q}][{a}]", minimum=0, maximum=S - 1)
    start = check_int(start, "start", minimum=0, maximum=S - 1)
    if isinstance(accepting, str | bytes) or not hasattr(accepting, "__iter__"):
        raise TypeError(f"accepting must be a collection of states, got {accepting!r}")
    final = torch.zeros(S, dtype=torch.bool)
    for q in accepting:
        final[check_int(q, "each accepting state", minimum=0, maximum=S - 1)] = True
    return torch.tensor(transitions, dtype=torch.long), start, final
