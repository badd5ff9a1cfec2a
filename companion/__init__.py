"""Companion library of the live textbook *Transformers and Formal Languages*.

Conventions used throughout (each module's docstrings repeat the ones that matter there):

* A bit string is a row of a ``LongTensor[B, m]`` (batch first) holding 0s and 1s, without a CLS
  symbol. Models that need CLS prepend it at position 0, so the papers' length ``n`` is ``m + 1``.
  A single ``str`` such as ``"0110"`` is accepted wherever one string is.
* Self-attention in :mod:`companion.attention` uses the row convention of the textbook chapter
  (``Q = X @ W_Q``, one token per row); :mod:`companion.transformer` and
  :mod:`companion.constructions` use the papers' column convention (``q = W^Q a``).
"""

from companion import (
    attention,
    circuits,
    constructions,
    evaluation,
    exercises,
    feedforward,
    languages,
    layernorm,
    plotting,
    precision,
    runtime,
    transformer,
    verify,
)
from companion.runtime import device, scale, set_seed

__all__ = [
    "attention",
    "circuits",
    "constructions",
    "device",
    "evaluation",
    "exercises",
    "feedforward",
    "languages",
    "layernorm",
    "plotting",
    "precision",
    "runtime",
    "scale",
    "set_seed",
    "transformer",
    "verify",
]
