"""Diagrams that explain the book's computations, each drawn from the objects it shows.

Every function returns a matplotlib ``Figure`` with one titled panel per part, for
:func:`companion.plotting.show`. Nothing is drawn by hand: :func:`draw_attention` prints the
tensors that :func:`companion.attention.self_attention` computes; :func:`draw_layer` follows the
order in which :class:`companion.transformer.Encoder` calls its sublayers (see
:func:`layer_steps`); :func:`draw_construction` reads which named dimensions each head and FFN
reads and writes from the weights (see :func:`construction_edges`); and
:func:`draw_log_length_scaling` plots the attention weights that the FIRST transformer records.
"""

import math
from typing import NamedTuple

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Circle, FancyBboxPatch, Rectangle

from companion._checks import check_float_tensor, check_int, check_number

FONT = 10  # points: every text in the diagrams (show() keeps it >= 10 CSS px at any width)
MAX_CELLS = 8  # rows or columns of a matrix that draw_attention prints


def _new_figure(widths, height: float, unit: float = 0.4):
    """A figure of one frameless panel per entry of ``widths``, side by side; a panel is
    ``width * unit`` by ``height * unit`` inches (plus its title), one data unit ``unit``
    inches both ways."""
    fig, axes = plt.subplots(1, len(widths), figsize=(unit * sum(widths) + 0.3 * len(widths),
                                                      unit * height + 0.4),
                             layout="constrained", squeeze=False, width_ratios=widths)
    for ax in axes[0]:
        ax.set_axis_off()
    return fig, list(axes[0])


def _number(value: float, decimals: int) -> str:
    """``value`` to ``decimals`` places, without trailing zeros (2.0 -> "2", -0.0 -> "0")."""
    text = f"{value:.{decimals}f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text in ("-0", "") else text


def _matrix(ax, M, x: float, y: float, name: str, label: str, decimals: int, shade=False):
    """Draw ``M: [rows, columns]`` with its top-left corner at ``(x, y)`` (one unit per cell),
    ``label`` above it; each number is a text whose gid is ``name[i,j]``. Returns its width."""
    rows, columns = M.shape
    for (i, j), value in zip(torch.cartesian_prod(torch.arange(rows), torch.arange(columns))
                             .tolist(), M.flatten().tolist(), strict=True):
        face = plt.cm.Blues(0.85 * value) if shade else "white"
        ax.add_patch(Rectangle((x + j, y - i - 1), 1, 1, facecolor=face, edgecolor="gray",
                               linewidth=0.6))
        ax.text(x + j + 0.5, y - i - 0.5, _number(value, decimals), ha="center", va="center",
                fontsize=FONT, color="white" if shade and value > 0.6 else "black",
                gid=f"{name}[{i},{j}]")
    ax.text(x + columns / 2, y + 0.2, label, ha="center", va="bottom", fontsize=FONT)
    return columns


def draw_attention(X, W_Q, W_K, W_V, decimals: int = 2):
    """Self-attention's computation on ``X: [n, d]`` in four panels (the first above the
    other three), with the numbers that
    :func:`companion.attention.self_attention` computes (row convention,
    [selfattention2025chapter] §9.2): *queries, keys, values* (``Q = X W_Q``, ``K = X W_K``,
    ``V = X W_V``), *scores* (``S = Q K^T / sqrt(d_k)``), *softmax* (the weights ``A``, row by
    row) and *mixing* (``O = A V``). ``n``, ``d``, ``d_k`` and ``d_v`` are at most 8, so that
    every number stays legible. Returns the figure."""
    from companion.attention import self_attention

    check_float_tensor(X, "X", ranks=(2,))
    decimals = check_int(decimals, "decimals", minimum=0, maximum=4)
    out, A = self_attention(X, W_Q, W_K, W_V)  # checks the weights' shapes and dtypes
    for name, size in (("n", X.shape[0]), ("d", X.shape[1]), ("d_k", W_Q.shape[1]),
                       ("d_v", W_V.shape[1])):
        if size > MAX_CELLS:
            raise ValueError(f"draw_attention prints every number, so {name} must be <= "
                             f"{MAX_CELLS}, got {size}")
    X, A, out = (t.detach().cpu().double() for t in (X, A, out))
    Q, K, V = (X @ W.detach().cpu().double() for W in (W_Q, W_K, W_V))
    S = Q @ K.T / math.sqrt(W_Q.shape[1])
    n, d, d_k, d_v = X.shape[0], X.shape[1], Q.shape[1], V.shape[1]
    widths = [d + 0.8 + 2 * (d_k + 0.5) + d_v, max(n, 3.4), max(n, 3.4), n + 2 * (1.4 + d_v)]
    # the projections above, the three steps that follow below: narrow enough for a page
    unit, lower = 0.34, [w + 0.4 for w in widths[1:]]
    fig = plt.figure(figsize=(unit * max(widths[0] + 0.4, sum(lower)) + 0.9,
                              2 * unit * (n + 2.0) + 0.8), layout="constrained")
    grid = fig.add_gridspec(2, 3, width_ratios=lower)
    axes = [fig.add_subplot(grid[0, :])] + [fig.add_subplot(grid[1, k]) for k in range(3)]
    for ax in axes:
        ax.set_axis_off()
    x = _matrix(axes[0], X, 0, 0, "X", "$X$", decimals) + 0.8
    for name, M in (("Q", Q), ("K", K), ("V", V)):
        x += _matrix(axes[0], M, x, 0, name, f"${name}$\n$=XW_{name}$", decimals) + 0.5
    x = _matrix(axes[1], S, 0, 0, "S", r"$QK^\top/\sqrt{d_k}$", decimals)
    x = _matrix(axes[2], A, 0, 0, "A", r"$A = \mathrm{softmax}(S)$", decimals, shade=True)
    x = _matrix(axes[3], A, 0, 0, "A", "$A$", decimals, shade=True) + 0.7
    axes[3].text(x - 0.35, -n / 2, r"$\cdot$", ha="center", va="center", fontsize=FONT + 4)
    x += _matrix(axes[3], V, x, 0, "V", "$V$", decimals) + 0.7
    axes[3].text(x - 0.35, -n / 2, "=", ha="center", va="center", fontsize=FONT + 2)
    _matrix(axes[3], out, x, 0, "O", "$O = AV$", decimals)
    titles = ("queries, keys, values", "scores", "softmax (each row)", "mixing")
    for ax, width, title, top in zip(axes, widths, titles, (1.8, 1.1, 1.1, 1.1), strict=True):
        ax.set_xlim(-0.2, width + 0.2)
        ax.set_ylim(-n - 0.2, top)  # room for the labels: two lines in the first panel
        ax.set_aspect("equal")
        ax.set_title(title, fontsize=FONT)
    return fig


class LayerSteps(NamedTuple):
    """What :func:`layer_steps` traced: the first layer's ``steps`` in order; for each
    residual sum (``"+"``) in ``steps``, in ``skips``, the index in ``steps`` of the step whose
    result the residual path carries to it (-1: the layer's input); and the steps taken
    ``after`` the last layer."""

    steps: list[str]
    skips: list[int]
    after: list[str]


def layer_steps(model) -> LayerSteps:
    """The steps of ``model``'s first layer in the order its ``forward`` takes them, and the
    steps it takes after its last layer, traced by running the code of its class on one
    string (with random weights and layer normalization switched on, so that no step is the
    identity; the model's own weights do not change the order).

    Steps are ``"attention"``, ``"FFN"``, ``"LN"`` (layer normalization) and ``"+"``, a
    residual sum. The tracer records what each
    sublayer reads and returns: one that reads neither the layer's input nor the previous
    step's result reads a sum, and the sum less the previous result is the residual, matched
    to the latest earlier result it equals. A post-norm encoder gives
    ``["attention", "+", "LN", "FFN", "+", "LN"]`` with skips ``[-1, 2]`` (the second residual
    starts after the first LN) and nothing after; a pre-norm one
    ``["LN", "attention", "+", "LN", "FFN", "+"]`` with skips ``[-1, 2]`` (from the first sum)
    and ``["LN"]``, the final layer normalization, after."""
    from companion.transformer import Encoder, random_encoder

    if not isinstance(model, Encoder):
        raise TypeError(f"model must be an Encoder, got {type(model).__name__}")
    # The trace follows the code, not the weights: a one-layer random encoder of the model's
    # class and norm, with layer normalization on, so that every step changes what it reads.
    probe = random_encoder(layers=1, norm=model.norm, layernorm=True, eps=1e-5,
                           generator=torch.Generator().manual_seed(0))
    probe.__class__ = type(model)
    calls = []  # (step, what it read, what it returned)

    def trace(owner, method: str, step: str):
        original = getattr(owner, method)

        def traced(x, *rest):
            result = original(x, *rest)
            calls.append((step, x, result[0] if isinstance(result, tuple) else result))
            return result

        setattr(owner, method, traced)  # on this probe only

    trace(probe, "LN", "LN")
    trace(probe.layers[0], "attention", "attention")
    trace(probe.layers[0], "ffn", "FFN")
    with torch.no_grad():
        _, record = probe("01", record=True)
    layer_input, layer_output = record.a
    traced = LayerSteps([], [], [])
    results = [layer_input]  # results[k + 1]: what step k returned

    def add(total):  # a residual sum: find what the residual path carried
        residual = total - results[-1]
        source = max(k for k, value in enumerate(results)
                     if value.shape == residual.shape and torch.allclose(value, residual))
        traced.steps.append("+")
        traced.skips.append(source - 1)
        results.append(total)

    for step, read, output in calls:
        if read is layer_output or read._base is layer_output:  # past the layer's end
            if not traced.after and results[-1] is not layer_output:
                add(layer_output)
            traced.after.append(step)
            continue
        if read is not results[-1]:
            add(read)
        traced.steps.append(step)
        results.append(output)
    if not traced.after and results[-1] is not layer_output:
        add(layer_output)
    return traced


_STEP_LABELS = {"attention": "attention", "FFN": "FFN", "LN": "layer norm"}
_STEP_COLORS = {"attention": "#f6d7b0", "FFN": "#c9e3c1", "LN": "#f3f0b6"}


def _arrow(ax, start, end, color="black", width=1.0):
    ax.annotate("", xy=end, xytext=start, arrowprops=dict(
        arrowstyle="-|>", color=color, lw=width, shrinkA=0, shrinkB=0))


def _draw_steps(ax, traced: LayerSteps) -> float:
    """One layer, bottom to top: a box per sublayer and a circle per residual sum, with the
    residual path (blue) from the result it carries. Returns the height drawn."""
    middle, width, height, gap, side = 1.4, 2.8, 0.7, 0.45, 3.3
    ax.text(middle, 0, r"input $a^{\ell-1}$", ha="center", va="top", fontsize=FONT)
    y, tops, skips = 0.0, [], iter(traced.skips)  # tops[k]: where step k's result leaves
    for step in traced.steps:
        _arrow(ax, (middle, y), (middle, y + gap))
        if step == "+":
            centre = y + gap + 0.25
            ax.add_patch(Circle((middle, centre), 0.25, facecolor="white", edgecolor="black"))
            ax.text(middle, centre, "+", ha="center", va="center", fontsize=FONT,
                    gid="step +")
            source = next(skips)
            fork = (tops[source] if source >= 0 else 0.0) + gap / 2
            ax.plot([middle, side, side], [fork, fork, centre], color="#1f5fa8", lw=1.5)
            _arrow(ax, (side, centre), (middle + 0.25, centre), "#1f5fa8", 1.5)
            y = centre + 0.25
        else:
            y += gap
            ax.add_patch(FancyBboxPatch((middle - width / 2, y), width, height,
                                        boxstyle="round,pad=0.02",
                                        facecolor=_STEP_COLORS[step], edgecolor="black"))
            ax.text(middle, y + height / 2, _STEP_LABELS[step], ha="center", va="center",
                    fontsize=FONT, gid=f"step {step}")
            y += height
        tops.append(y)
    _arrow(ax, (middle, y), (middle, y + gap))
    y += gap
    ax.text(middle, y + 0.05, r"output $a^{\ell}$", ha="center", va="bottom", fontsize=FONT)
    y += 0.6
    for step in traced.after:
        y += 0.2
        ax.add_patch(FancyBboxPatch((middle - width / 2, y), width, 2 * height,
                                    boxstyle="round,pad=0.02", linestyle="--",
                                    facecolor="white", edgecolor="black"))
        ax.text(middle, y + height, f"{_STEP_LABELS[step]}\nafter the last\nlayer",
                ha="center", va="center", fontsize=FONT, gid=f"after {step}")
        y += 2 * height
    return y


def draw_layer(models=None):
    """The encoder layer as :class:`companion.transformer.Encoder` computes it, one panel per
    model in ``models`` (default: a small post-norm and a small pre-norm encoder), titled
    *post-norm* or *pre-norm* after the model's ``norm``. The boxes follow
    :func:`layer_steps`, traced from the model's own ``forward``: the sublayers (attention,
    FFN, layer norm) in the order it calls them, each residual sum, and the residual path
    (blue) that skips the branch ([chiang2024esslli] eqs. 5.17-5.20). Returns the figure."""
    from companion.transformer import Encoder, random_encoder

    if models is None:
        generator = torch.Generator().manual_seed(0)
        models = [random_encoder(layers=1, norm=norm, layernorm=True, generator=generator)
                  for norm in ("post", "pre")]
    if isinstance(models, Encoder) or not isinstance(models, list | tuple) or not models:
        raise TypeError("models must be a non-empty list of Encoders")
    traced = [layer_steps(model) for model in models]
    fig, axes = _new_figure([4.0] * len(models), 9.6, unit=0.45)
    for ax, model, steps in zip(axes, models, traced, strict=True):
        top = _draw_steps(ax, steps)
        ax.set_xlim(-0.2, 3.8)
        ax.set_ylim(-0.6, max(top, 9.0) + 0.3)
        ax.set_aspect("equal")
        ax.set_title(f"{model.norm}-norm", fontsize=FONT)
    return fig


def construction_edges(model) -> list[tuple[str, str, str]]:
    """What each part of ``model`` (an :class:`~companion.transformer.Encoder` or a decoder of
    :mod:`companion.steps`) reads and writes, by named dimension (``model.layout``), read from
    its weights: a list of ``(part, role, dimension)`` in the order of the layers.

    Parts are ``"embedding"``, ``"layer l hash"`` (a decoder's layer-norm hash before layer
    ``l``'s attention, which reads the nonzero columns of ``W_in`` and writes the nonzero rows
    of ``W_out``), ``"layer l head h"``, ``"layer l FFN"`` (counting from 1) and
    ``"output"``. A head's roles are ``"Q"``, ``"K"`` and ``"V"`` (it reads dimension X when
    column X of ``W^Q``, ``W^K`` or ``W^V`` has a nonzero entry) and ``"write"`` (row Y of
    ``W^V`` is nonzero); an FFN reads the nonzero columns of ``W^F1`` and writes the nonzero
    rows of ``W^F2`` and of ``b^F2``; the embedding writes what the word embedding and the
    position embedding (of lengths 1 to 8) set; the output layer reads the nonzero entries of
    its weight. A part that neither reads nor writes is left out."""
    from companion.steps import Decoder
    from companion.transformer import Encoder

    if not isinstance(model, Encoder | Decoder):
        raise TypeError(f"model must be an Encoder or a Decoder, got {type(model).__name__}")
    names = model.layout.names

    def nonzero(matrix, dim: int) -> list[str]:  # the names whose column/row is nonzero
        used = matrix.detach().cpu().ne(0)
        used = used.any(dim=1 - dim) if used.dim() == 2 else used
        return [names[j] for j in torch.nonzero(used).flatten().tolist()]

    with torch.no_grad():
        if isinstance(model, Decoder):
            words = model.embedding
            positions = model.positions(torch.arange(8, device=words.device)).to(words)
        elif model.position_function is not None:
            words = model.word_embedding
            positions = torch.cat([model.position_function(n) for n in range(1, 9)])
        else:
            words, positions = model.word_embedding, model.position_table
        edges = [("embedding", "write", name)
                 for name in nonzero(torch.cat([words, positions]), 1)]
        hashes = getattr(model, "hashes", {})
        for number, layer in enumerate(model.layers, start=1):
            if str(number - 1) in hashes:
                hashed, part = hashes[str(number - 1)], f"layer {number} hash"
                edges += [(part, "in", name) for name in nonzero(hashed.W_in.flatten(0, 1), 1)]
                edges += [(part, "write", name) for name in nonzero(hashed.W_out.flatten(1), 0)]
            heads = zip(layer.W_Q, layer.W_K, layer.W_V, strict=True)
            for h, weights in enumerate(heads, start=1):
                head = f"layer {number} head {h}"
                part = [(head, role, name) for role, W in zip("QKV", weights, strict=True)
                        for name in nonzero(W, 1)]
                part += [(head, "write", name) for name in nonzero(weights[2], 0)]
                edges += part
            ffn = f"layer {number} FFN"
            edges += [(ffn, "in", name) for name in nonzero(layer.W_F1, 1)]
            edges += [(ffn, "write", name)
                      for name in dict.fromkeys(nonzero(layer.W_F2, 0) + nonzero(layer.b_F2, 0))]
        out = model.output_weight
        edges += [("output", "out", name) for name in nonzero(out, 1 if out.dim() == 2 else 0)]
    return edges


_ROLE_ORDER = ("Q", "K", "V", "in", "out", "write")
COLUMN = 1.1  # the width of a part's column in draw_construction, in figure units


def _label_width(names: list[str]) -> float:
    """The width of the row labels: about 0.22 units per character at :data:`FONT` points."""
    return 0.4 + 0.22 * max(len(name) for name in names)
MAX_FAMILY = 4  # the most dimensions "x=0", "x=1", ... that draw_construction draws apart


def _families(edges, names: list[str]):
    """``edges`` and ``names`` with every family of more than :data:`MAX_FAMILY` dimensions
    named ``"x=v"`` (``"next=0"``, ``"next=1"``, ...) drawn as one row ``"x=first..last"``."""
    family = {name: name.split("=")[0] for name in names if "=" in name}
    members: dict[str, list[str]] = {}
    for name in names:
        if name in family:
            members.setdefault(family[name], []).append(name)
    row = dict(zip(names, names, strict=True))
    for group in members.values():
        if len(group) > MAX_FAMILY:
            label = f"{group[0]}..{group[-1].split('=', 1)[1]}"
            row.update(dict.fromkeys(group, label))
    merged = list(dict.fromkeys((part, role, row[name]) for part, role, name in edges))
    return merged, list(dict.fromkeys(row[name] for name in names))


def _draw_edges(ax, edges, names: list[str]) -> float:
    """The residual stream as one row per named dimension and a column per part, with a cell
    where the part reads (its roles) or writes (+=) that dimension. Returns the width."""
    parts = list(dict.fromkeys(part for part, _, _ in edges))
    label_width, column = _label_width(names), COLUMN
    row = {name: -i for i, name in enumerate(names)}
    width = label_width + column * len(parts)
    for name in names:
        ax.text(label_width - 0.15, row[name], name, ha="right", va="center", fontsize=FONT)
        ax.plot([label_width, width], [row[name]] * 2, color="lightgray", lw=1, zorder=0)
    for k, part in enumerate(parts):
        x = label_width + column * (k + 0.5)
        cells: dict[str, list[str]] = {}
        for other, role, name in edges:
            if other == part:
                cells.setdefault(name, []).append(role)
        rows = [row[name] for name in cells]
        ax.plot([x, x], [min(rows), max(rows)], color="black", lw=1, zorder=1)
        for name, roles in cells.items():
            roles = sorted(roles, key=_ROLE_ORDER.index)
            writes = "write" in roles
            text = "".join(role for role in roles if role != "write") or "+="
            if writes and text != "+=":
                text += "+="
            ax.text(x, row[name], text, ha="center", va="center", fontsize=FONT, zorder=2,
                    color="white" if writes else "black",
                    gid=f"{part}|{name}|{' '.join(roles)}",
                    bbox=dict(boxstyle="round,pad=0.15", edgecolor="black", lw=0.6,
                              facecolor="#a0401a" if writes else "white"))
        words = part.split()  # "layer 2 head 1", "layer 1 FFN", "embedding", "output"
        if words[0] == "layer":
            header = f"h{words[3]}" if words[2] == "head" else {"FFN": "FFN",
                                                                "hash": "hash"}[words[2]]
            ax.text(x, 1.45, words[1], ha="center", va="bottom", fontsize=FONT)
        else:
            header = {"embedding": "embed", "output": "out"}[part]
        ax.text(x, 0.75, header, ha="center", va="bottom", fontsize=FONT)
    ax.text(label_width - 0.15, 1.45, "layer", ha="right", va="bottom", fontsize=FONT)
    return width


def draw_construction(models):
    """Which head and which FFN of each hand-set transformer reads and writes which named
    dimension of the residual stream, layer by layer, drawn from :func:`construction_edges`
    (the weights and ``layout`` themselves). ``models`` maps a panel title to an
    :class:`~companion.transformer.Encoder` or a decoder of :mod:`companion.steps`. In each
    panel a row is a named dimension (a family of more than four, ``next=0``, ``next=1``, ...,
    is one row ``next=0..k``) and a column a part: *embed*, then per layer a decoder's
    *hash*, each head *h1*, *h2*, ... and the *FFN*, then the output layer *out*. A white
    cell lists the roles in which the part reads the dimension (*Q*, *K*, *V* for a head's
    query, key and value; *in* for an FFN or a hash; *out* for the output layer); a dark
    cell marked ``+=`` is a dimension the part adds to. Returns the figure."""
    if not isinstance(models, dict) or not models:
        raise TypeError("models must be a non-empty dict from a panel title to a model")
    drawn = {title: _families(construction_edges(model), model.layout.names)
             for title, model in models.items()}
    widths = [_label_width(names) + 0.2 + COLUMN * len({part for part, _, _ in edges})
              for edges, names in drawn.values()]
    rows = max(len(names) for _, names in drawn.values())
    fig, axes = _new_figure(widths, rows + 2.3)
    for ax, (title, (edges, names)), width in zip(axes, drawn.items(), widths, strict=True):
        _draw_edges(ax, edges, names)
        ax.set_xlim(0, width)
        ax.set_ylim(-rows + 0.4, 2.1)
        ax.set_aspect("equal")
        ax.set_title(title, fontsize=FONT)
    return fig


def log_length_attention(ns, c: float = 1.0) -> dict[str, torch.Tensor]:
    """The attention weight that CLS puts on position 1 in layer 2 of
    :func:`companion.constructions.first_transformer` (``c``), recorded at each length ``n``
    in ``ns`` (positions with CLS, ``3 <= n <= 1024``, as the record holds ``n**2``
    weights) on the string ``0^(n-1)``, without (``"standard"``) and with (``"scaled"``)
    log-length scaling, and the gap between the logits of positions 1 and 2 that the
    weights imply, ``log(alpha_1 / alpha_2)``. Returns ``{"standard": [len(ns)],
    "scaled": ..., "standard gap": ..., "scaled gap": ...}``."""
    from companion.constructions import first_transformer

    if not isinstance(ns, list | tuple) or not ns:
        raise TypeError("ns must be a non-empty list of lengths")
    ns = [check_int(n, "ns[...]", minimum=3, maximum=1024) for n in ns]
    result = {}
    for name, log_length in (("standard", False), ("scaled", True)):
        model = first_transformer(c=c, log_length=log_length)
        weights = []
        for n in ns:
            _, record = model(torch.zeros(1, n - 1, dtype=torch.long), record_attention=True)
            weights.append(record.attention[1][0, 0, 0, 1:3])  # CLS's weights on positions 1, 2
        weights = torch.stack(weights)
        result[name] = weights[:, 0]
        result[f"{name} gap"] = torch.log(weights[:, 0] / weights[:, 1])
    return result


def draw_log_length_scaling(ns=None, c: float = 1.0):
    """Why log-length scaling keeps FIRST's attention on position 1, in two panels computed
    by :func:`log_length_attention` (``c``; ``ns`` defaults to 3 to 1024 positions):
    *logit of position 1 over the rest*, the gap ``c`` without and ``c log n`` with scaling
    against ``log(n - 1)``, the gap at which position 1 gets weight 1/2
    ([chiang2022overcoming] §5.3); and *attention on position 1*, which fades like
    ``e^c / (e^c + n - 1)`` without scaling and stays at ``n^c / (n^c + n - 1)`` (1/2 for
    ``c = 1``) with it. Returns the figure."""
    c = check_number(c, "c", above=0)
    ns = ns if ns is not None else [3, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    measured = log_length_attention(ns, c)
    fig, axes = plt.subplots(1, 2, figsize=(6.8, 3.0), layout="constrained")
    styles = {"standard": ("o-", "C0", "standard: $c$"),
              "scaled": ("s--", "C3", r"scaled: $c \log n$")}
    for name, (style, color, gap) in styles.items():
        axes[0].semilogx(ns, measured[f"{name} gap"], style, color=color, markersize=4,
                         label=gap)
        axes[1].semilogx(ns, measured[name], style, color=color, markersize=4, label=name)
    n = torch.tensor(ns, dtype=torch.float64)
    axes[0].semilogx(ns, torch.log(n - 1), ":", color="black", label="$\\log(n-1)$: weight 1/2")
    axes[1].axhline(0.5, color="black", linestyle=":", linewidth=1)
    axes[0].set_title("logit of position 1 over the rest", fontsize=FONT)
    axes[0].set_ylabel("logit gap", fontsize=FONT)
    axes[1].set_title("attention on position 1", fontsize=FONT)
    axes[1].set_ylabel("weight of CLS on position 1", fontsize=FONT)
    axes[1].set_ylim(0, 1)
    for ax in axes:
        ax.set_xlabel("$n$ (positions, with CLS)", fontsize=FONT)
        ax.tick_params(labelsize=FONT)
        ax.legend(frameon=False, fontsize=FONT)
    return fig
