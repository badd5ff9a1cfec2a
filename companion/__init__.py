"""Companion library of the live textbook *Transformers and Formal Languages*.

Conventions used throughout (each module's docstrings repeat the ones that matter there):

* A bit string is a row of a ``LongTensor[B, m]`` (batch first) holding 0s and 1s, without a CLS
  symbol. Models that need CLS prepend it at position 0, so the papers' length ``n`` is ``m + 1``.
  A single ``str`` such as ``"0110"`` is accepted wherever one string is.
* Self-attention in :mod:`companion.attention` uses the row convention of the textbook chapter
  (``Q = X @ W_Q``, one token per row); :mod:`companion.transformer` and
  :mod:`companion.constructions` use the papers' column convention (``q = W^Q a``).

Every module is part of the public API. :mod:`companion.plotting`, :mod:`companion.diagrams` and
:mod:`companion.tables` are loaded on first use, so that ``import companion`` does not pay for
matplotlib and pandas. The course tooling (student editions, the autograder) is a separate
package, ``course``, next to this one.
"""

import importlib

from companion import (
    attention,
    circuits,
    constructions,
    decision_trees,
    evaluation,
    exercises,
    fast_attention,
    feedforward,
    generalization,
    heads,
    languages,
    layernorm,
    layout,
    length_generalization,
    looped,
    model,
    precision,
    rasp,
    recall,
    residual,
    runtime,
    scratchpad,
    sensitivity,
    sharpness,
    stacked,
    steps,
    torch_export,
    training,
    transformer,
    verify,
)
from companion.runtime import device, scale, set_seed

_ON_FIRST_USE = ("diagrams", "plotting", "tables")


def __getattr__(name: str):
    if name in _ON_FIRST_USE:
        return importlib.import_module(f"companion.{name}")
    raise AttributeError(f"module 'companion' has no attribute {name!r}")


__all__ = [
    "attention",
    "circuits",
    "constructions",
    "decision_trees",
    "device",
    "diagrams",
    "evaluation",
    "exercises",
    "fast_attention",
    "feedforward",
    "generalization",
    "heads",
    "languages",
    "layernorm",
    "layout",
    "length_generalization",
    "looped",
    "model",
    "plotting",
    "precision",
    "rasp",
    "recall",
    "residual",
    "runtime",
    "scale",
    "scratchpad",
    "sensitivity",
    "set_seed",
    "sharpness",
    "stacked",
    "steps",
    "tables",
    "torch_export",
    "training",
    "transformer",
    "verify",
]
