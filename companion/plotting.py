"""The book's figures. Each function draws on a new figure (or on ``ax`` when given) and returns
the ``matplotlib.axes.Axes`` it drew on, so a chapter can add to it or save it."""

import matplotlib.pyplot as plt
import numpy as np
import torch


def _axes(ax, size=(4.5, 3.5)):
    if ax is None:
        _, ax = plt.subplots(figsize=size, layout="constrained")
    return ax


def plot_attention(A, labels=None, ax=None, title=None, decimals=3):
    """Heat map of one attention matrix ``A: [n_queries, n_keys]``, each weight printed in its cell.

    Rows are query positions (who attends), columns key positions (attended to); ``labels`` names
    the positions (the same for rows and columns).
    """
    A = torch.as_tensor(A).detach().cpu().double().numpy()
    if A.ndim != 2:
        raise ValueError(f"A must be a matrix [n_queries, n_keys], got shape {A.shape}")
    ax = _axes(ax)
    image = ax.imshow(A, cmap="Blues", vmin=0.0, vmax=1.0)
    for (i, j), weight in np.ndenumerate(A):
        ax.text(j, i, f"{weight:.{decimals}f}", ha="center", va="center",
                color="white" if weight > 0.6 else "black")
    if labels is not None:
        ax.set_xticks(range(A.shape[1]), labels[: A.shape[1]])
        ax.set_yticks(range(A.shape[0]), labels[: A.shape[0]])
    ax.set_xlabel("key position j (attended to)")
    ax.set_ylabel("query position i (attending)")
    if title:
        ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, label="attention weight $a_{ij}$")
    return ax


def plot_attention_cost(ns, counted, quadratic, linear, ax=None):
    """Log-log plot of self-attention's operation count against sequence length ``n``.

    ``counted`` are the counts measured for each ``n`` in ``ns``; ``quadratic`` and ``linear`` are
    the predicted terms (the n² part from QKᵀ and AV, the n part from the projections).
    """
    ax = _axes(ax, size=(5.5, 4))
    ax.loglog(ns, counted, "o", color="black", label="counted by PyTorch")
    ax.loglog(ns, quadratic, "-", label=r"$QK^\top$ and $AV$ (grows as $n^2$)")
    ax.loglog(ns, linear, "--", label=r"projections $XW^Q, XW^K, XW^V$ (grows as $n$)")
    ax.set_xlabel("sequence length n")
    ax.set_ylabel("floating-point operations")
    ax.legend(frameon=False)
    ax.grid(True, which="major", alpha=0.3)
    return ax


def plot_position_embedding(pe, ax=None, title=None):
    """Heat map of a position embedding ``pe: [n, d]``: positions down, dimensions across."""
    pe = torch.as_tensor(pe).detach().cpu().double().numpy()
    ax = _axes(ax, size=(5.5, 4))
    image = ax.imshow(pe, cmap="RdBu", vmin=-1.0, vmax=1.0, aspect="auto", interpolation="none")
    ax.set_xlabel("dimension j")
    ax.set_ylabel("position i")
    if title:
        ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, label="PE(i)[j]")
    return ax


def plot_logit_decay(ns, measured: dict, predicted: dict | None = None, ax=None):
    """Log-log plot of the logit's size ``|s|`` against the length ``n`` (positions with CLS).

    ``measured`` maps a label to the measured ``|s|`` at each ``n``; ``predicted`` maps a label
    to a closed-form curve at the same ``n`` (drawn as lines).
    """
    ax = _axes(ax, size=(5.5, 4))
    for (label, values), marker in zip(measured.items(), "os^v", strict=False):
        ax.loglog(ns, values, marker, markersize=4, label=label)
    for label, values in (predicted or {}).items():
        ax.loglog(ns, values, "-", color="gray", linewidth=1, label=label)
    ax.set_xlabel("n (positions, with CLS)")
    ax.set_ylabel("|s|, the logit at CLS")
    ax.legend(frameon=False)
    ax.grid(True, which="major", alpha=0.3)
    return ax


def plot_accuracy_by_length(curves: dict, ax=None, title=None):
    """Accuracy against string length ``m`` (log axis), one curve per label; ``curves`` maps a
    label to ``{m: accuracy}``."""
    ax = _axes(ax, size=(5.5, 3.5))
    for label, accuracy in curves.items():
        lengths = sorted(accuracy)
        ax.semilogx(lengths, [accuracy[m] for m in lengths], ".-", label=label)
    ax.axhline(0.5, color="gray", linewidth=0.8, linestyle=":")
    ax.set_xlabel("string length m")
    ax.set_ylabel("accuracy")
    ax.set_ylim(-0.05, 1.05)
    if title:
        ax.set_title(title)
    ax.legend(frameon=False)
    return ax
