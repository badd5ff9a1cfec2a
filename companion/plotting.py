"""The book's figures. Each function draws on a new figure (or on ``ax`` when given) and returns
the ``matplotlib.axes.Axes`` it drew on, so a chapter can add to it or save it; :func:`show`
displays a figure as the book does, and :func:`show_recorded` displays one recorded from an
executed notebook."""

import base64
import html
import io
import itertools
import json
import os

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from companion._checks import check_int, check_number

# The smallest text a figure shows a reader, in CSS pixels (1 pt = 4/3 px): :func:`show` never
# lets a panel shrink below the size at which its smallest text is this large.
SMALLEST_TEXT_PX = 10


def show(figure) -> None:
    """Display ``figure`` (a ``Figure``, or the axes a plotting function returned) in a notebook
    as the book shows its figures, and close it.

    Each panel (an axes, with its color bar) becomes an SVG image of its own, and the panels
    are laid out in a row that wraps: side by side on a wide screen, one under another on a
    phone. No panel shrinks below the width at which its smallest text is ``SMALLEST_TEXT_PX``
    CSS pixels tall (each image carries that text's size in points as ``data-font-pt``, which
    the book's browser check reads). The whole figure goes along as a PDF, which the book's
    LaTeX build prints. A legend or title of the whole figure would belong to no panel: put it
    in a panel (``ax.legend``, ``ax.set_title``)."""
    from IPython.display import display

    figure = _figure_of(figure)
    if figure.legends or figure._suptitle is not None or figure.texts:
        raise ValueError("show() lays a figure out panel by panel: give the legend or title "
                         "to one of its axes (ax.legend, ax.set_title), not to the figure")
    renderer = figure.canvas.get_renderer()
    figure.draw_without_rendering()
    # The layout is settled: the drawings below (each panel's SVG, the PDF) keep it instead
    # of running the layout engine again, which costs more than drawing.
    figure.set_layout_engine("none")
    images = [_panel_image(figure, parts, region, renderer)
              for parts, region in _panels(figure, renderer)]
    # Auto margins centre the panels; unlike justify-content: center, they never push a panel
    # out of reach on the left when the row is too narrow for it.
    page = ('<div class="figure-panels" style="display: flex; flex-wrap: wrap; '
            'align-items: flex-start; gap: 4px; overflow-x: auto">'
            + "".join(images) + "</div>")
    pdf = io.BytesIO()
    figure.savefig(pdf, format="pdf", metadata={"CreationDate": None})
    display({"text/html": page, "application/pdf": base64.b64encode(pdf.getvalue()).decode(),
             "text/plain": repr(figure)}, raw=True)
    plt.close(figure)


# The parts of a bundle that show() displays and show_recorded() displays again.
RECORDED_FORMATS = ("text/html", "application/pdf", "text/plain")


def show_recorded(path) -> None:
    """Display again a figure that :func:`show` displayed in an executed notebook and that was
    saved as JSON (its MIME bundle: ``text/html``, ``application/pdf``, ``text/plain``). The
    appendix *Reproducing at full scale* shows the full-scale runs' figures this way;
    ``tools/full_figures.py`` records them from ``make full``'s executed chapters."""
    from IPython.display import display

    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a file path, got {type(path).__name__}")
    expected = f"path must hold a figure bundle recorded from show() (a JSON object with a " \
               f"'text/html' string), not {path}"
    with open(path, encoding="utf-8") as file:
        try:
            bundle = json.load(file)
        except json.JSONDecodeError as error:
            raise ValueError(f"{expected}: {error}") from None
    if not isinstance(bundle, dict) or not isinstance(bundle.get("text/html"), str):
        raise ValueError(expected)
    display({kind: bundle[kind] for kind in RECORDED_FORMATS if kind in bundle}, raw=True)


def _figure_of(figure) -> Figure:
    if isinstance(figure, Figure):
        return figure
    axes = np.ravel(np.asarray(figure, dtype=object))
    if axes.size and hasattr(axes[0], "figure") and isinstance(axes[0].figure, Figure):
        return axes[0].figure
    raise TypeError(f"figure must be a matplotlib Figure or Axes, got {type(figure).__name__}")


def _panels(figure: Figure, renderer) -> list[tuple[list[Axes], Bbox]]:
    """Each visible axes with its color bars, and their box (display pixels) with labels."""
    colorbars = [ax for ax in figure.axes if hasattr(ax, "_colorbar")]
    panels = []
    for ax in figure.axes:
        if ax in colorbars or not ax.get_visible():
            continue
        own = [bar for bar in colorbars if ax in np.ravel(bar._colorbar.mappable.axes)]
        parts = [ax, *own]
        panels.append((parts, Bbox.union([part.get_tightbbox(renderer) for part in parts])))
    return panels


def _panel_image(figure: Figure, parts: list[Axes], region: Bbox, renderer) -> str:
    """One panel of ``figure`` (the axes ``parts``) as an ``<img>`` holding an SVG of its
    ``region``, drawn with the other axes hidden (they lie outside it, and cost time)."""
    inches = region.padded(4).transformed(figure.dpi_scale_trans.inverted())
    svg = io.BytesIO()
    others = [ax for ax in figure.axes if ax not in parts and ax.get_visible()]
    for ax in others:
        ax.set_visible(False)
    try:
        figure.savefig(svg, format="svg", bbox_inches=inches, metadata={"Date": None})
    finally:
        for ax in others:
            ax.set_visible(True)
    sizes = [text.get_fontsize() for text in figure.findobj(Text)
             if text.get_visible() and text.get_text().strip()
             and region.overlaps(text.get_window_extent(renderer))]
    points = min(sizes, default=10.0)
    width, height = inches.width * 96, inches.height * 96  # CSS pixels: 96 per inch
    narrowest = width * min(1.0, SMALLEST_TEXT_PX / (points * 96 / 72))
    titles = [ax.get_title() for ax in figure.axes
              if ax.get_title() and region.overlaps(ax.get_window_extent(renderer))]
    source = "data:image/svg+xml;base64," + base64.b64encode(svg.getvalue()).decode()
    return (f'<img src="{source}" alt="{html.escape(titles[0] if titles else "a panel")}" '
            f'width="{width:.0f}" height="{height:.0f}" data-font-pt="{points:g}" '
            f'style="flex: 1 1 {narrowest:.0f}px; min-width: {narrowest:.0f}px; '
            f'max-width: {width:.0f}px; height: auto; margin: 0 auto">')


def _axes(ax, size=(4.5, 3.5)):
    """``ax``, checked to be a matplotlib ``Axes``, or new axes of ``size`` (inches) if None."""
    if ax is None:
        _, ax = plt.subplots(figsize=size, layout="constrained")
    elif not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
    return ax


def _numbers(values, name: str, ranks=(1,), length: int | None = None) -> np.ndarray:
    """``values`` (a tensor, array or nested list of real numbers) as a float64 array whose
    rank is one of ``ranks`` and, if ``length`` is given, with ``length`` rows."""
    try:
        array = torch.as_tensor(values).detach().cpu().double().numpy()
    except (TypeError, ValueError, RuntimeError, NotImplementedError) as error:
        raise TypeError(f"{name} must hold real numbers (a list, array or tensor), "
                        f"got {type(values).__name__}") from error
    if array.ndim not in ranks:
        expected = " or ".join(map(str, ranks))
        raise ValueError(f"{name} must have rank {expected}, got shape {list(array.shape)}")
    if length is not None and len(array) != length:
        raise ValueError(f"{name} must have one entry per point ({length}), got {len(array)}")
    return array


def _curves(curves, name: str, length: int | None = None) -> dict:
    """``curves``, a dict from a str label to a curve, with each curve checked by
    :func:`_numbers` (``length`` points) and returned as an array."""
    if not isinstance(curves, dict):
        raise TypeError(f"{name} must be a dict from a label to its values, "
                        f"got {type(curves).__name__}")
    for label in curves:
        if not isinstance(label, str):
            raise TypeError(f"{name} must have str labels as keys, got {label!r}")
    return {label: _numbers(values, f"{name}[{label!r}]", length=length)
            for label, values in curves.items()}


def _heat_map(values, ax, size, labels: tuple[str, str, str], title=None, **imshow):
    """Draw ``values: [rows, columns]`` as an image with a color bar; ``labels`` are the x-axis,
    y-axis and color-bar labels. Returns the axes and the values as a NumPy array."""
    ax = _axes(ax, size=size)
    image = ax.imshow(values, **imshow)
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    if title:
        ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, label=labels[2])
    return ax


def plot_attention(A, labels=None, ax=None, title=None, decimals=3):
    """Heat map of one attention matrix ``A: [n_queries, n_keys]``, each weight printed in its cell.

    Rows are query positions (who attends), columns key positions (attended to); ``labels`` names
    the positions (the same for rows and columns).
    """
    A = _numbers(A, "A", ranks=(2,))
    if not bool(((A >= -1e-9) & (A <= 1 + 1e-9)).all()):
        raise ValueError("A must hold attention weights in [0, 1]")
    decimals = check_int(decimals, "decimals", minimum=0, maximum=15)
    if labels is not None and (isinstance(labels, str) or not hasattr(labels, "__len__")
                               or len(labels) < max(A.shape)):
        raise ValueError(f"labels must name the {max(A.shape)} positions, got {labels!r}")
    axis_labels = ("key position j (attended to)", "query position i (attending)",
                   "attention weight $a_{ij}$")
    ax = _heat_map(A, ax, (4.5, 3.5), axis_labels, title, cmap="Blues", vmin=0.0, vmax=1.0)
    for (i, j), weight in np.ndenumerate(A):
        ax.text(j, i, f"{weight:.{decimals}f}", ha="center", va="center",
                color="white" if weight > 0.6 else "black")
    if labels is not None:
        ax.set_xticks(range(A.shape[1]), labels[: A.shape[1]])
        ax.set_yticks(range(A.shape[0]), labels[: A.shape[0]])
    return ax


def plot_attention_cost(ns, counted, quadratic, linear, ax=None):
    """Log-log plot of self-attention's operation count against sequence length ``n``.

    ``counted`` are the counts measured for each ``n`` in ``ns``; ``quadratic`` and ``linear`` are
    the predicted terms (the n² part from QKᵀ and AV, the n part from the projections).
    """
    ns = _numbers(ns, "ns")
    counted, quadratic, linear = (_numbers(values, name, length=len(ns)) for name, values in
                                  (("counted", counted), ("quadratic", quadratic),
                                   ("linear", linear)))
    ax = _axes(ax, size=(4.6, 3.6))
    ax.loglog(ns, counted, "o", color="black", label="counted by PyTorch")
    ax.loglog(ns, quadratic, "-", label=r"$QK^\top$ and $AV$ (grows as $n^2$)")
    ax.loglog(ns, linear, "--", label=r"projections $XW^Q, XW^K, XW^V$ (grows as $n$)")
    ax.set_xlabel("sequence length $n$")
    ax.set_ylabel("floating-point operations")
    ax.legend(frameon=False)
    ax.grid(True, which="major", alpha=0.3)
    return ax


def plot_position_embedding(pe, ax=None, title=None):
    """Heat map of a position embedding ``pe: [n, d]``: positions down, dimensions across."""
    return _heat_map(_numbers(pe, "pe", ranks=(2,)), ax, (4.6, 3.6),
                     ("dimension j", "position i", "PE(i)[j]"), title, cmap="RdBu", vmin=-1.0,
                     vmax=1.0, aspect="auto", interpolation="none")


def plot_logit_decay(ns, measured: dict, predicted: dict | None = None, ax=None):
    """Log-log plot of the logit's size ``|s|`` against the length ``n`` (positions with CLS).

    ``measured`` maps a label to the measured ``|s|`` at each ``n``; ``predicted`` maps a label
    to a closed-form curve at the same ``n`` (drawn as lines).
    """
    ns = _numbers(ns, "ns")
    measured = _curves(measured, "measured", len(ns))
    predicted = _curves(predicted or {}, "predicted", len(ns))
    ax = _axes(ax, size=(4.6, 3.6))
    for (label, values), marker in zip(measured.items(), "os^v", strict=False):
        ax.loglog(ns, values, marker, markersize=4, label=label)
    for label, values in predicted.items():
        ax.loglog(ns, values, "-", color="gray", linewidth=1, label=label)
    ax.set_xlabel("$n$ (positions, with CLS)")
    ax.set_ylabel("$|s|$, the logit at CLS")
    ax.legend(frameon=False)
    ax.grid(True, which="major", alpha=0.3)
    return ax


def plot_accuracy_by_length(curves: dict, ax=None, title=None):
    """Accuracy against string length ``m`` (log axis), one curve per label; ``curves`` maps a
    label to ``{m: accuracy}``. Curves that coincide stay visible: each later one is drawn
    thinner, dashed differently and with smaller markers, on top of the earlier ones."""
    if not isinstance(curves, dict) or not all(
            isinstance(label, str) and isinstance(accuracy, dict)
            for label, accuracy in curves.items()):
        raise TypeError("curves must be a dict from a str label to {m: accuracy}")
    ax = _axes(ax, size=(4.6, 3.5))
    styles = [("-", "o", 3.5, 6), ("--", "s", 2.2, 4), (":", "^", 1.4, 3), ("-.", "v", 1, 2)]
    for (label, accuracy), (line, marker, width, size) in zip(
            curves.items(), itertools.cycle(styles)):
        lengths = sorted(accuracy)
        ax.semilogx(lengths, [accuracy[m] for m in lengths], linestyle=line, marker=marker,
                    linewidth=width, markersize=size, label=label)
    ax.axhline(0.5, color="gray", linewidth=0.8, linestyle=":")
    ax.set_xlabel("string length $m$")
    ax.set_ylabel("accuracy")
    ax.set_ylim(-0.05, 1.05)
    if title:
        ax.set_title(title)
    ax.legend(frameon=False)
    return ax


def plot_steps_precision(right, marks: dict, zoom: tuple, axes=None):
    """Two panels of a decoder's accuracy step by step: ``right[j]`` (1-d, real) is the
    fraction of strings whose state ``q_{j+1}``, computed at position ``m + j``, is right
    (:mod:`companion.steps`). *every step*: ``j`` on a linear axis, with a dotted vertical
    line at each step of ``marks`` (label -> ``j``); *near the first error*: the steps
    ``zoom = (first, last)``, one marker each. Returns the two axes."""
    right = _numbers(right, "right")
    if not isinstance(marks, dict) or not all(
            isinstance(k, str) and isinstance(j, int) for k, j in marks.items()):
        raise TypeError("marks must be a dict from a str label to an int step j")
    if (not isinstance(zoom, tuple) or len(zoom) != 2 or
            not all(isinstance(j, int) for j in zoom) or not 0 <= zoom[0] < zoom[1] < len(right)):
        raise ValueError(f"zoom must be a pair of steps (first, last) with 0 <= first < last < "
                         f"{len(right)}, got {zoom!r}")
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(9, 3.4), layout="constrained")
    every, near = [_axes(ax) for ax in np.ravel(np.asarray(axes, dtype=object))]
    every.plot(np.arange(len(right)), right, color="C0")
    for n, (label, j) in enumerate(marks.items()):
        every.axvline(j, color=f"C{n + 1}", linewidth=1, linestyle=":", label=f"{label} ({j})")
    steps = np.arange(zoom[0], zoom[1] + 1)
    near.plot(steps, right[steps], color="C0", marker="o", markersize=3)
    for ax, title in ((every, "every step"), (near, "near the first error")):
        ax.set(title=title, xlabel="step $j$ (state $q_{j+1}$)", ylabel="accuracy",
               ylim=(-0.05, 1.05))
    every.legend(frameon=False, loc="lower left")
    return every, near


_GATE_LABELS = {"AND": "∧", "OR": "∨", "NOT": "¬", "MAJORITY": "MAJ"}


def plot_circuit(circuit, ax=None, input_names=None, title=None):
    """Draw a :class:`~companion.circuits.Circuit` as in 004: inputs at the bottom, each gate
    one row above its deepest input, the output (highlighted) at the top."""
    from companion.circuits import Circuit  # the figures load no model code until asked

    if not isinstance(circuit, Circuit) or circuit.output is None or not circuit.n_nodes:
        raise ValueError("circuit must be a Circuit with nodes and an output (set_output)")
    if input_names is not None and len(input_names) != circuit.n_inputs:
        raise ValueError(f"input_names must name the {circuit.n_inputs} inputs, "
                         f"got {len(input_names)}")
    depth = circuit.depths()
    layers: dict[int, list[int]] = {}
    for node, level in enumerate(depth):
        layers.setdefault(level, []).append(node)
    position = {}
    for level, nodes in layers.items():
        for rank, node in enumerate(nodes):
            position[node] = ((rank + 1) / (len(nodes) + 1), level)
    ax = _axes(ax, size=(4, 1 + 0.9 * max(depth)))
    for node, (_, inputs) in enumerate(circuit.gates, start=circuit.n_inputs):
        for source in inputs:
            (x0, y0), (x1, y1) = position[source], position[node]
            ax.annotate("", xy=(x1, y1 - 0.18), xytext=(x0, y0 + 0.18),
                        arrowprops=dict(arrowstyle="->", color="gray", lw=0.8))
    names = input_names or [f"$w_{{{i}}}$" for i in range(circuit.n_inputs)]
    for node, (x, y) in position.items():
        label = names[node] if node < circuit.n_inputs else _GATE_LABELS[
            circuit.gates[node - circuit.n_inputs][0]]
        face = "gold" if node == circuit.output else "white"
        ax.text(x, y, label, ha="center", va="center", fontsize=11,
                bbox=dict(boxstyle="circle", facecolor=face, edgecolor="black"))
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.6, max(depth) + 0.6)
    ax.set_yticks(range(max(depth) + 1))
    ax.set_ylabel("depth")
    ax.set_xticks([])
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    if title:
        ax.set_title(title)
    return ax


def plot_circuit_reads(reads, circuit, ax=None, title=None):
    """What each step of a circuit's decoder reads: ``reads [gates, N]`` (the attention
    weights of :func:`companion.steps.circuit_attention`, summed over heads) as a heat map, a
    row per gate (named by its kind) and a column per position that a step can read (BOS,
    the inputs ``w_i``, every gate ``g_j`` but the last)."""
    from companion.circuits import Circuit  # the figures load no model code until asked

    if not isinstance(circuit, Circuit):
        raise TypeError(f"circuit must be a Circuit, got {type(circuit).__name__}")
    n, gates = circuit.n_inputs, len(circuit.gates)
    reads = _numbers(reads, "reads", ranks=(2,))
    if reads.shape != (gates, circuit.n_nodes):
        raise ValueError(f"reads must have shape [{gates}, {circuit.n_nodes}] for this "
                         f"circuit, got {list(reads.shape)}")
    ax = _heat_map(reads, ax, (4.5, 3.2), ("position read", "step (gate written)",
                                          "attention weight"), title, cmap="Blues",
                   vmin=0.0, vmax=max(1.0, float(reads.max())))
    columns = ["BOS", *(f"$w_{{{i}}}$" for i in range(n)), *(f"$g_{{{j}}}$"
                                                            for j in range(gates - 1))]
    ax.set_xticks(range(len(columns)), columns)
    ax.set_yticks(range(gates), [f"$g_{{{j}}}$ {kind}" for j, (kind, _)
                                 in enumerate(circuit.gates)])
    return ax


def plot_tm_attention(table, ax=None, title=None):
    """Where a Turing machine's decoder reads the tape: the table of
    :func:`companion.steps.tm_attention` (a row per move, a column per position ``"i:token"``)
    as a heat map, moves down and positions across, each labelled by its number."""
    import pandas as pd

    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be the DataFrame of steps.tm_attention, "
                        f"got {type(table).__name__}")
    weights = _numbers(table.to_numpy(dtype=float, copy=True), "table", ranks=(2,))
    ax = _heat_map(weights, ax, (4.5, 3.5), ("position read", "move written",
                                            "attention weight"), title, cmap="Blues",
                   vmin=0.0, vmax=1.0)
    rows, columns = weights.shape
    step = max(1, columns // 12)  # at most a dozen numbers on an axis
    ax.set_xticks(range(0, columns, step))
    ax.set_yticks(range(0, rows, max(1, rows // 12)),
                  [str(s + 1) for s in range(0, rows, max(1, rows // 12))])
    return ax


def plot_class_map(ax=None):
    """The circuit classes as nested regions (after [chiang2024esslli] Fig. 5.2, assuming TC0 !=
    NC1), with example languages and where transformers sit: softmax transformers in TC0 when
    their numbers have O(log n) bits [merrill2023parallelism]."""
    from matplotlib.patches import FancyBboxPatch

    ax = _axes(ax, size=(4.6, 4.4))
    classes = [("NC$^1$", 0.0, 1.0, "#eeeeee"), ("TC$^0$", 0.14, 0.84, "#dbe9f6"),
               ("AC$^0$", 0.28, 0.68, "#b7d4ea")]
    for label, inset, height, color in classes:
        ax.add_patch(FancyBboxPatch((inset, 0), 1 - 2 * inset, height,
                                    boxstyle="round,pad=0.01,rounding_size=0.03",
                                    facecolor=color, edgecolor="black", linewidth=1))
        ax.text(1 - inset - 0.02, height - 0.03, label, fontsize=12, ha="right", va="top")
    examples = [(0.42, 0.915, "BFVP, W(S$_5$):\nNC$^1$-complete"),
                (0.47, 0.76, "PARITY, MAJORITY;\nsoftmax transformers\n"
                              "with $O(\\log n)$-bit numbers"),
                (0.5, 0.47, "FIRST"), (0.5, 0.22, "unique-hard\nattention\ntransformers")]
    for x, y, text in examples:
        ax.text(x, y, text, ha="center", va="center", fontsize=10)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.05)
    ax.axis("off")
    return ax


def plot_loss_curves(steps, losses, names, target: float = 0.0, ax=None, title=None,
                     styles=None):
    """Loss curves of several models, as in Figure 1 of the in-context recall paper:
    ``losses: [records, K]`` (nats) at ``steps``, model ``k`` called ``names[k]``. Models with
    the same name (several seeds) are drawn as their mean with a band from min to max. The
    y-axis shows the loss above ``target`` (0, or the Bayes loss) on a log scale, where values
    below ``1e-8`` (float64 rounding, in practice) are drawn at ``1e-8``. ``styles``
    maps names to line properties (``{"color": "C0", "linestyle": "--"}``), so that one model
    looks the same in every panel."""
    ax = _axes(ax)
    losses = torch.as_tensor(losses).detach().cpu().double()
    target = check_number(target, "target")
    if losses.dim() != 2 or len(names) != losses.shape[1] or len(steps) != losses.shape[0]:
        raise ValueError(f"losses must be [records, K] with len(steps) = records and "
                         f"len(names) = K, got losses {list(losses.shape)}, {len(steps)} steps "
                         f"and {len(names)} names")
    excess = (losses - target).clamp_min(1e-8).numpy()
    for name in dict.fromkeys(names):
        columns = [k for k, other in enumerate(names) if other == name]
        curve = excess[:, columns]
        (line,) = ax.plot(steps, curve.mean(axis=1), label=name,
                          **(styles or {}).get(name, {}))
        if len(columns) > 1:
            ax.fill_between(steps, curve.min(axis=1), curve.max(axis=1),
                            color=line.get_color(), alpha=0.2)
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel("loss - Bayes loss (nats)" if target else "loss (nats)")
    ax.legend()
    if title:
        ax.set_title(title)
    return ax


def plot_cross_entropy_by_length(ns, curves: dict, ax=None, title=None, log_x=False):
    """Cross-entropy in bits per string against the length ``n`` (positions, with CLS), one
    curve per label of ``curves`` (label -> bits at each ``n``), as in Figure 2 of
    [chiang2022overcoming]; a label starting with "no layer norm" is drawn in red, as there.
    Each curve has its own line style and marker, so that one lying on another stays visible."""
    ns = _numbers(ns, "ns")
    curves = _curves(curves, "curves", len(ns))
    ax = _axes(ax, size=(4.6, 3.5))
    styles = [("-", "o"), ("--", "s"), (":", "^"), ("-.", "v")]
    for (label, bits), (line, marker) in zip(curves.items(), itertools.cycle(styles)):
        color = "C3" if label.startswith("no layer norm") else None
        ax.plot(ns, bits, linestyle=line, marker=marker, markersize=3.5, markerfacecolor="none",
                label=label, color=color)
    if log_x:
        ax.set_xscale("log")
    ax.axhline(1.0, color="gray", linewidth=0.8, linestyle=":")
    ax.set_ylim(-0.03, 1.08)
    ax.set_xlabel("$n$ (positions, with CLS)")
    ax.set_ylabel("cross-entropy (bits per string)")
    if title:
        ax.set_title(title)
    ax.legend(frameon=False)
    return ax


def plot_weight_sensitivity(values, bits, accuracy, name: str, axes=None):
    """Cross-entropy (bits per string) and accuracy against the value of one weight, as in
    Figure 3 of [chiang2022overcoming]; ``name`` labels the weight, a dotted line marks 1.
    Draws on two axes (new ones unless ``axes`` is given) and returns them."""
    values = _numbers(values, "values")
    bits, accuracy = _numbers(bits, "bits", length=len(values)), _numbers(
        accuracy, "accuracy", length=len(values))
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(9, 3.2), layout="constrained")
    panels = [_axes(ax) for ax in np.ravel(np.asarray(axes, dtype=object))]
    if len(panels) != 2:
        raise ValueError(f"axes must be two Axes, got {len(panels)}")
    for ax, ys, label in zip(panels, (bits, accuracy),
                             ("cross-entropy (bits per string)", "accuracy"), strict=True):
        ax.plot(values, ys, ".-", markersize=3)
        ax.axvline(1.0, color="gray", linewidth=0.8, linestyle=":")
        ax.set_xlabel(name)
        ax.set_ylabel(label)
    return axes


def plot_norms_by_depth(curves: dict, ylabel: str, predicted: dict | None = None, ax=None,
                        title=None):
    """Squared norms against depth on a log scale, as computed by
    :func:`companion.residual.signal_and_gradient`: ``curves`` maps a label to
    ``[draws, depth + 1]`` (drawn as the mean over draws, with a band between the 10th and 90th
    percentiles); ``predicted`` maps a label to a closed form at each depth (dashed)."""
    if not isinstance(curves, dict):
        raise TypeError(f"curves must be a dict from a label to [draws, depth + 1], "
                        f"got {type(curves).__name__}")
    curves = {label: torch.from_numpy(_numbers(values, f"curves[{label!r}]", ranks=(2,)))
              for label, values in curves.items()}
    if any(values.shape[0] == 0 for values in curves.values()):
        raise ValueError("curves must hold at least one draw per label")
    ax = _axes(ax, size=(4.5, 3.5))
    for label, values in curves.items():
        depths = np.arange(values.shape[1])
        low, high = torch.quantile(values, torch.tensor([0.1, 0.9]).double(), dim=0)
        (line,) = ax.plot(depths, values.mean(dim=0), ".-", markersize=3, label=label)
        ax.fill_between(depths, low, high, color=line.get_color(), alpha=0.15)
    for label, values in (predicted or {}).items():
        ax.plot(np.arange(len(values)), values, "--", color="black", linewidth=0.8, zorder=3,
                label=label)
    ax.set_yscale("log")
    ax.set_xlabel("depth $L$ (layers)")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(frameon=False)
    return ax


def plot_local_stretch(distances, stretch: dict, ax=None):
    """Log-log plot of layer normalization's local stretch
    (:func:`companion.layernorm.local_stretch`) against the distance of the input from a
    constant vector, one curve per label of ``stretch`` (label -> stretch at each distance)."""
    distances = _numbers(distances, "distances")
    stretch = _curves(stretch, "stretch", len(distances))
    ax = _axes(ax, size=(4.6, 3.5))
    for label, values in stretch.items():
        ax.loglog(distances, values, ".-", markersize=3, label=label)
    ax.set_xlabel("standard deviation of the input\n(its distance from a constant vector)")
    ax.set_ylabel("largest local stretch")
    ax.legend(frameon=False)
    return ax


def plot_training_curves(log, axes=None):
    """Figure 4 of [chiang2022overcoming] from a :class:`companion.training.TrainingLog`: test
    cross-entropy (bits per string), test accuracy and the attention weight on the first symbol,
    by epoch (rows), for each variant (columns: standard, scaled attention), one curve per train
    length: the mean over runs, with a band of one standard error of the mean. Every panel is
    titled with its quantity and its variant ("accuracy, scaled attention"), so that a caption
    can name it wherever the panels stand, and the panels of one quantity share their y-range.
    Returns the ``[3, variants]`` array of axes."""
    from companion.training import TrainingLog

    if not isinstance(log, TrainingLog):
        raise TypeError(f"log must be a TrainingLog, got {type(log).__name__}")
    grid = log.grid
    if axes is None:
        _, axes = plt.subplots(3, len(grid.variants), figsize=(4.5 * len(grid.variants), 8),
                               sharex=True, squeeze=False, layout="constrained")
    rows = (("cross_entropy", "cross-entropy (bits)", "cross-entropy"),
            ("accuracy", "accuracy", "accuracy"),
            ("attention_to_first", "attention to first symbol", "attention to first symbol"))
    for column, variant in enumerate(grid.variants):
        for row, (metric, label, name) in enumerate(rows):
            ax = axes[row][column]
            for index, m in enumerate(grid.train_lengths):
                values = log.select(metric, m, variant).double()
                epochs = np.arange(1, values.shape[1] + 1)
                mean = values.mean(dim=0)
                error = values.std(dim=0) / values.shape[0] ** 0.5 if len(values) > 1 else 0 * mean
                ax.plot(epochs, mean, color=f"C{index}", label=f"trained on $m = {m}$")
                ax.fill_between(epochs, mean - error, mean + error, color=f"C{index}", alpha=0.2)
            ax.set_ylabel(label)
            # every panel its title and tick labels: on a phone the panels stand one under
            # another
            ax.set_title(f"{name}, {variant} attention", fontsize="medium")
            ax.tick_params(labelbottom=True)
            ax.set_xlabel("epoch")
        axes[1][column].set_ylim(0.4, 1.02)
    for row_axes in axes:  # the variants' panels of one quantity share their y-range
        low = min(ax.get_ylim()[0] for ax in row_axes)
        high = max(ax.get_ylim()[1] for ax in row_axes)
        for ax in row_axes:
            ax.set_ylim(low, high)
    axes[0][0].legend(frameon=False)
    return axes


def plot_length_generalization(benchmarks, axes=None):
    """One panel per :class:`companion.length_generalization.Benchmark`: accuracy against test
    length (log axis) for each variant, the mean over seeds with a band of one standard error;
    a dotted line at chance, a dashed one at the longest training length. Every panel has its
    own axis labels, since on a phone the panels stand one under another. Returns the axes."""
    from companion.length_generalization import Benchmark

    if isinstance(benchmarks, Benchmark | str) or not hasattr(benchmarks, "__iter__"):
        raise TypeError(f"benchmarks must be a list of Benchmarks, "
                        f"got {type(benchmarks).__name__}")
    benchmarks = list(benchmarks)
    if not benchmarks or not all(isinstance(result, Benchmark) for result in benchmarks):
        raise ValueError("benchmarks must hold at least one Benchmark, and only Benchmarks")
    columns = min(2, len(benchmarks))  # one panel alone, not beside an empty one
    if axes is None:
        rows = (len(benchmarks) + 1) // 2
        _, axes = plt.subplots(rows, columns, figsize=(4 * columns, 3.2 * rows),
                               squeeze=False, layout="constrained")
        axes = axes.flatten()[:len(benchmarks)]
    panels = [_axes(ax) for ax in np.ravel(np.asarray(axes, dtype=object))]
    if len(panels) != len(benchmarks):
        raise ValueError(f"axes must hold one Axes per benchmark ({len(benchmarks)}), "
                         f"got {len(panels)}")
    for ax, result in zip(panels, benchmarks, strict=True):
        for index, variant in enumerate(result.variants):
            values = result.accuracy[:, index].double()
            mean = values.mean(dim=0)
            error = values.std(dim=0) / len(values) ** 0.5 if len(values) > 1 else 0 * mean
            ax.semilogx(result.lengths, mean, ".-", color=f"C{index}", label=f"{variant}")
            ax.fill_between(result.lengths, mean - error, mean + error, color=f"C{index}",
                            alpha=0.2)
        ax.axhline(result.chance, color="gray", linewidth=0.8, linestyle=":")
        ax.axvline(result.max_train_length, color="gray", linewidth=0.8, linestyle="--")
        ax.set_title(result.task.replace("_", " "))
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("string length")
        ax.set_ylabel("accuracy")
    panels[0].legend(frameon=False, title="attention")
    return axes


def plot_generalization(result, axes=None):
    """Two panels from a :class:`companion.generalization.Result`, one per position encoding
    (titled *no positions (NoPE)* and *learned positions (APE)*): each task's mean accuracy
    over seeds on the training lengths and on each longer bin, a solid line where the theory
    predicts that the task generalizes with that encoding and a dashed one where it predicts
    failure; a dotted line at chance (0.5), a thin one at the verdict's threshold. Each panel
    has its own labels and legend, since on a phone they stand one under another. Returns the
    axes."""
    from companion.generalization import GENERALIZES, Result, name_of, predicted

    if not isinstance(result, Result):
        raise TypeError(f"result must be a Result of companion.generalization.run, got "
                        f"{type(result).__name__}")
    if axes is None:
        _, axes = plt.subplots(1, len(result.encodings), squeeze=False, layout="constrained",
                               figsize=(3.6 * len(result.encodings), 4.2))
        axes = axes.flatten()
    panels = [_axes(ax) for ax in np.ravel(np.asarray(axes, dtype=object))]
    if len(panels) != len(result.encodings):
        raise ValueError(f"axes must hold one Axes per encoding ({len(result.encodings)}), "
                         f"got {len(panels)}")
    ranges = [f"1–{result.bins[0][0] - 1}" if result.bins else "train"] + [
        f"{low}–{high}" for low, high in result.bins]
    titles = {"none": "no positions (NoPE)", "learned": "learned positions (APE)"}
    for j, (ax, encoding) in enumerate(zip(panels, result.encodings, strict=True)):
        for i, task in enumerate(result.tasks):
            mean = result.accuracy[i, j].double().mean(dim=0)
            style = "-" if predicted(task, encoding) else "--"
            ax.plot(range(len(ranges)), mean, style, marker="o", markersize=3,
                    color=f"C{i % 10}", label=name_of(task).replace("_", " "))
        ax.axhline(0.5, color="gray", linewidth=0.8, linestyle=":")
        ax.axhline(GENERALIZES, color="gray", linewidth=0.5)
        ax.set_xticks(range(len(ranges)), ranges)
        ax.set_ylim(0.3, 1.02)
        ax.set_title(titles[encoding])
        ax.set_xlabel("string lengths")
        ax.set_ylabel("accuracy, mean over seeds")
        ax.legend(frameon=False, fontsize="small", ncols=2, loc="upper center",
                  bbox_to_anchor=(0.5, -0.17), handlelength=1.5, columnspacing=0.8)
    return axes


def plot_scratchpad(outcome, axes=None):
    """Two panels from a :class:`companion.scratchpad.Outcome`, one line per condition (answer
    only dashed with squares, the filler dotted with triangles, scratchpad solid with
    circles), the mean over seeds with a band of one standard error: *accuracy by test
    length* (log axis; a dotted line at chance, a dashed one at the longest training
    length) and *training loss* (bits per supervised position against the step; a dotted
    line at 1 bit, a guess). Returns the two axes."""
    from companion.scratchpad import CONDITIONS, Outcome

    if not isinstance(outcome, Outcome) or outcome.train_loss is None:
        raise TypeError(f"outcome must be the Outcome that scratchpad.train returned, "
                        f"got {type(outcome).__name__}")
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(9, 3.4), layout="constrained")
    panels = [_axes(ax) for ax in np.ravel(np.asarray(axes, dtype=object))]
    if len(panels) != 2:
        raise ValueError(f"axes must hold two Axes, got {len(panels)}")
    styles = {"answer only": ("--", "s"), "filler": (":", "^"), "scratchpad": ("-", "o")}
    steps = np.arange(1, outcome.train_loss.shape[-1] + 1)
    for index, condition in enumerate(CONDITIONS):
        line, marker = styles[condition]
        for ax, x, values in ((panels[0], outcome.lengths, outcome.accuracy[:, index]),
                              (panels[1], steps, outcome.train_loss[:, index])):
            values = values.double()
            mean = values.mean(dim=0)
            error = values.std(dim=0) / len(values) ** 0.5 if len(values) > 1 else 0 * mean
            ax.plot(x, mean, linestyle=line, marker=marker if ax is panels[0] else None,
                    color=f"C{index}", label=condition)
            ax.fill_between(x, mean - error, mean + error, color=f"C{index}", alpha=0.2)
    accuracy, loss = panels
    accuracy.set_xscale("log", base=2)
    accuracy.set_xticks(outcome.lengths, labels=[str(m) for m in outcome.lengths])
    accuracy.minorticks_off()
    accuracy.axhline(0.5, color="gray", linewidth=0.8, linestyle=":")
    accuracy.axvline(outcome.max_train_length, color="gray", linewidth=0.8, linestyle="--")
    accuracy.set(title="accuracy by test length", xlabel="string length $m$",
                 ylabel="accuracy", ylim=(0, 1.02))
    loss.axhline(1.0, color="gray", linewidth=0.8, linestyle=":")
    loss.set(title="training loss", xlabel="step", ylabel="bits per supervised position",
             ylim=(0, None))
    accuracy.legend(frameon=False)
    return axes


def plot_sensitivity(ns, curves: dict, ax=None):
    """Average sensitivity against the length ``n``, one curve per label of ``curves``
    (label -> values at each ``n``), beside PARITY's ``n`` (dashed) and the envelope
    ``sqrt(n)`` (dotted) for scale (one layer of fixed size is bounded by ``sqrt(n)`` up to
    logarithmic factors whose constants are not known)."""
    ns = _numbers(ns, "ns")
    curves = _curves(curves, "curves", len(ns))
    ax = _axes(ax, size=(4.6, 3.5))
    styles = [("-", "o"), ("--", "s"), (":", "^"), ("-.", "v"), ("-", "D")]
    for (label, ys), (line, marker) in zip(curves.items(), itertools.cycle(styles),
                                          strict=False):
        ax.plot(ns, ys, linestyle=line, marker=marker, markersize=3.5, markerfacecolor="none",
                label=label)
    grid = np.linspace(ns.min(), ns.max(), 100)
    ax.plot(grid, grid, color="gray", linewidth=0.8, linestyle="--", label="$n$")
    ax.plot(grid, np.sqrt(grid), color="gray", linewidth=0.8, linestyle=":",
            label=r"$\sqrt{n}$")
    ax.set_xlabel("$n$ (bits)")
    ax.set_ylabel("average sensitivity")
    ax.legend(frameon=False)
    return ax


def plot_sharpness(ns, panels: dict, axes=None):
    """One panel per entry of ``panels`` (a y-axis label -> a dict from a task to its values
    at each length ``ns``, NaN where there is none), each task a curve against ``n``, as
    Hahn & Rofin plot sharpness, parameter norm and layer-norm blow-up. Draws on
    ``len(panels)`` axes (new ones unless ``axes`` is given) and returns them."""
    ns = _numbers(ns, "ns")
    if not isinstance(panels, dict) or not panels:
        raise TypeError("panels must be a non-empty dict from a y label to curves")
    checked = {label: _curves(curves, f"panels[{label!r}]", len(ns))
               for label, curves in panels.items()}
    if axes is None:
        _, axes = plt.subplots(1, len(checked), figsize=(3.2 * len(checked), 3.0),
                               layout="constrained")
    boxes = [_axes(ax) for ax in np.ravel(np.asarray(axes, dtype=object))]
    if len(boxes) != len(checked):
        raise ValueError(f"axes must be {len(checked)} Axes, got {len(boxes)}")
    markers = itertools.cycle("osv^D")
    for ax, (ylabel, curves) in zip(boxes, checked.items(), strict=True):
        for (task, ys), marker in zip(curves.items(), markers, strict=False):
            ax.plot(ns, ys, marker=marker, markersize=3.5, markerfacecolor="none", label=task)
        ax.set_xlabel("$n$ (bits)")
        ax.set_ylabel(ylabel)
        ax.set_xticks(ns)
    boxes[0].legend(frameon=False)
    return axes
