"""Activations as tables: one row per named dimension, one column per position."""

import pandas as pd
import torch

from companion.languages import as_strings
from companion.transformer import Encoder


def activation_table(model, w, stage: str) -> pd.DataFrame:
    """The activations of ``model`` (an :class:`~companion.transformer.Encoder`) on one string
    ``w`` at ``stage``, in the papers' names: ``"a0"`` (embeddings), ``"c1"`` (after layer 1's
    attention and residual), ``"a1"`` (after its FFN), ``"c2"``, ... Rows are the model's
    ``layout`` names; columns are positions headed ``"i:symbol"`` (``"0:CLS"``, ``"1:0"``, ...)."""
    if not isinstance(model, Encoder):
        raise TypeError(f"model must be an Encoder, got {type(model).__name__}")
    if not isinstance(stage, str):
        raise TypeError(f"stage must be a str such as 'a0' or 'c1', got {type(stage).__name__}")
    strings = as_strings(w)
    if strings.shape[0] != 1:
        raise ValueError(f"table shows one string, got a batch of {strings.shape[0]}")
    depth = len(model.layers)
    kind, layer = stage[:1], stage[1:]
    if kind not in ("a", "c") or not (layer.isascii() and layer.isdigit()) or not (
            (kind == "a" and int(layer) <= depth) or (kind == "c" and 1 <= int(layer) <= depth)):
        raise ValueError(f"stage must be a0..a{depth} or c1..c{depth}, got {stage!r}")
    with torch.no_grad():
        _, trace = model(strings, record=True)
    values = (trace.a if kind == "a" else [None, *trace.c])[int(layer)][0]
    symbols = ["CLS", *(str(s) for s in strings[0].tolist())]
    columns = [f"{i}:{symbol}" for i, symbol in enumerate(symbols)]
    return pd.DataFrame(values.T.double().cpu().numpy(), index=model.layout.names,
                        columns=columns)
