"""Activations as tables: one row per named dimension, one column per position."""

import pandas as pd
import torch

from companion._checks import check_int
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
        raise ValueError(f"w must be one string (the table shows one), got a batch of "
                         f"{strings.shape[0]}")
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


def latex_table(frame: pd.DataFrame, one_page: int = 30) -> str:
    """``frame`` as a LaTeX table with booktabs rules: a centred ``tabular``, kept on one page,
    if it has at most ``one_page`` rows, else a ``longtable``, whose header is repeated on every
    page it runs onto. Each column's values are written as pandas writes them in the HTML (by
    ``Series.to_string``, so with the same digits); labels and text are escaped for LaTeX;
    numeric columns are set flush right."""
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    if frame.empty:
        raise ValueError("frame must have at least one row and one column")
    one_page = check_int(one_page, "one_page", minimum=0)
    columns = [frame.iloc[:, j] for j in range(frame.shape[1])]
    written = pd.DataFrame(
        [[cell.strip() for cell in column.to_string(index=False, header=False).split("\n")]
         for column in columns], index=range(len(columns))).T
    written.index, written.columns = frame.index, frame.columns
    align = "l" * frame.index.nlevels + "".join(
        "r" if pd.api.types.is_numeric_dtype(column) else "l" for column in columns)
    styler = (written.style.format(escape="latex")
              .format_index(escape="latex", axis=0).format_index(escape="latex", axis=1))
    if hasattr(styler, "format_index_names"):  # pandas 3; before it, names are not escaped
        styler = (styler.format_index_names(escape="latex", axis=0)
                  .format_index_names(escape="latex", axis=1))
    long = len(frame) > one_page
    latex = styler.to_latex(environment="longtable" if long else None, hrules=True,
                            column_format=align, multicol_align="c", multirow_align="naive")
    # a row that starts with "[" would be read as the optional argument of the "\\" before it
    latex = latex.replace("\\\\\n[", "\\\\\n{}[")
    return latex if long else "\\begin{center}\n" + latex + "\\end{center}\n"


def typeset_tables() -> None:
    """From now on, every DataFrame this notebook displays carries a LaTeX table
    (:func:`latex_table`) beside its HTML: the book's PDF prints that table, while the HTML
    book and JupyterLab show the HTML. Does nothing outside IPython."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["text/latex"].for_type(pd.DataFrame, latex_table)
