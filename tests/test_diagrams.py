"""The diagrams are drawn from the objects they show: their numbers, boxes and edges are read
back from the drawing and compared with computations that do not go through it."""

import math

import matplotlib
import pytest
import torch
import torch.nn.functional as F
from matplotlib.text import Text

from companion import diagrams
from companion.constructions import first_transformer, parity_transformer
from companion.steps import TM_EXAMPLES, compile_tm, parity_decoder
from companion.transformer import Encoder, random_encoder

matplotlib.use("Agg")

X = torch.tensor([[1.0, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]])
W_Q = torch.tensor([[1.0, 0], [0, 1], [1, 0], [0, 1]])
W_K = torch.tensor([[0.0, 1], [1, 0], [0, 1], [1, 0]])
W_V = torch.tensor([[1.0, 1], [0, 0], [0, 1], [1, 0]])


def drawn_texts(fig) -> dict[str, str]:
    """Every text of ``fig`` that has a gid, by gid (the diagrams tag what they draw)."""
    return {text.get_gid(): text.get_text() for text in fig.findobj(Text) if text.get_gid()}


def drawn_matrix(texts: dict, name: str, shape) -> torch.Tensor:
    return torch.tensor([[float(texts[f"{name}[{i},{j}]"]) for j in range(shape[1])]
                         for i in range(shape[0])], dtype=torch.float64)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_attention_prints_what_pytorch_computes(seed):
    generator = torch.Generator().manual_seed(seed)
    X_, W_Q_, W_K_, W_V_ = (torch.randn(*shape, generator=generator, dtype=torch.float64)
                            for shape in ((3, 4), (4, 2), (4, 2), (4, 3)))
    texts = drawn_texts(diagrams.draw_attention(X_, W_Q_, W_K_, W_V_, decimals=3))
    Q, K, V = X_ @ W_Q_, X_ @ W_K_, X_ @ W_V_
    expected = {"X": X_, "Q": Q, "K": K, "V": V, "S": Q @ K.T / math.sqrt(2),
                "A": torch.softmax(Q @ K.T / math.sqrt(2), dim=-1),
                "O": F.scaled_dot_product_attention(Q[None], K[None], V[None])[0]}
    for name, M in expected.items():
        gap = (drawn_matrix(texts, name, M.shape) - M).abs().max()
        assert gap <= 0.5e-3 + 1e-12, name  # printed to 3 places


def test_attention_draws_the_chapters_example():
    texts = drawn_texts(diagrams.draw_attention(X, W_Q, W_K, W_V))
    assert [texts[f"O[{i},1]"] for i in range(3)] == ["0.28", "1.72", "1"]
    assert [texts[f"A[0,{j}]"] for j in range(3)] == ["0.05", "0.77", "0.19"]
    changed = drawn_texts(diagrams.draw_attention(2 * X, W_Q, W_K, W_V))
    assert changed["S[0,1]"] != texts["S[0,1]"]


def test_attention_refuses_bad_input():
    with pytest.raises(TypeError, match="X"):
        diagrams.draw_attention([[1.0]], W_Q, W_K, W_V)
    with pytest.raises(ValueError, match="n must be <= 8"):
        diagrams.draw_attention(torch.zeros(9, 4), W_Q, W_K, W_V)
    with pytest.raises(ValueError, match="W_K"):
        diagrams.draw_attention(X, W_Q, W_K[:3], W_V)
    with pytest.raises(ValueError, match="decimals"):
        diagrams.draw_attention(X, W_Q, W_K, W_V, decimals=9)


def replay(model: Encoder, traced: diagrams.LayerSteps, w: str = "0110") -> torch.Tensor:
    """Compute the first layer by following the traced steps and skips with the model's own
    sublayers: if the diagram is the computation, this is the layer's output."""
    _, record = model(w, record=True)
    layer, n = model.layers[0], record.a[0].shape[1]
    scale = (math.log(n) if model.log_length else 1.0) / math.sqrt(model.d)
    results, skips = [record.a[0]], iter(traced.skips)
    for step in traced.steps:
        current = results[-1]
        if step == "+":
            results.append(current + results[next(skips) + 1])
        elif step == "LN":
            results.append(model.LN(current))
        elif step == "FFN":
            results.append(layer.ffn(current))
        else:
            results.append(layer.attention(current, slice(0, n), scale)[0])
    return results[-1], record.a[1]


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_layer_steps_are_the_encoders_computation(norm):
    model = random_encoder(layers=2, norm=norm, layernorm=True, eps=1e-5,
                           generator=torch.Generator().manual_seed(3))
    traced = diagrams.layer_steps(model)
    replayed, computed = replay(model, traced)
    assert torch.allclose(replayed, computed, atol=1e-12)
    assert traced.after == ([] if norm == "post" else ["LN"])


def test_layer_steps_follow_the_norm_flag():
    model = random_encoder(layers=1, norm="post")
    post = diagrams.layer_steps(model)
    model.norm = "pre"
    pre = diagrams.layer_steps(model)
    assert post.steps == ["attention", "+", "LN", "FFN", "+", "LN"]
    assert pre.steps == ["LN", "attention", "+", "LN", "FFN", "+"]


def test_layer_steps_follow_the_code_of_a_subclass():
    class NoResidual(Encoder):  # post-norm without the residual around the FFN
        def forward(self, w, record=False, record_attention=False):
            a = self.embed(w)
            scale = 1 / math.sqrt(self.d)
            layer = self.layers[0]
            c = self.LN(a + layer.attention(a, slice(0, a.shape[1]), scale)[0])
            out = self.LN(layer.ffn(c))
            return out[:, 0] @ self.output_weight, type("R", (), {"a": [a, out]})

    model = random_encoder(layers=1)
    model.__class__ = NoResidual
    assert diagrams.layer_steps(model).steps == ["attention", "+", "LN", "FFN", "LN"]


def test_layer_diagram_draws_the_traced_order():
    models = [random_encoder(layers=1, norm=norm) for norm in ("post", "pre")]
    fig = diagrams.draw_layer(models)
    for ax, model in zip(fig.axes, models, strict=True):
        drawn = sorted((text.get_position()[1], text.get_gid()) for text in ax.texts
                       if text.get_gid())
        traced = diagrams.layer_steps(model)
        assert [gid.split()[1] for _, gid in drawn if gid.startswith("step")] == traced.steps
        assert [gid.split()[1] for _, gid in drawn if gid.startswith("after")] == traced.after
        assert ax.get_title() == f"{model.norm}-norm"
    with pytest.raises(TypeError, match="models"):
        diagrams.draw_layer(models[0])


def weight_edges(model: Encoder) -> set:
    """Which head reads and writes which named dimension, straight from the weights."""
    names, edges = model.layout.names, set()
    for number, layer in enumerate(model.layers, start=1):
        for h in range(layer.W_Q.shape[0]):
            for role, W in (("Q", layer.W_Q[h]), ("K", layer.W_K[h]), ("V", layer.W_V[h])):
                for _, j in torch.nonzero(W).tolist():
                    edges.add((f"layer {number} head {h + 1}", role, names[j]))
            for i, _ in torch.nonzero(layer.W_V[h]).tolist():
                edges.add((f"layer {number} head {h + 1}", "write", names[i]))
    return edges


def drawn_edges(fig) -> set:
    edges = set()
    for gid in drawn_texts(fig):
        part, name, roles = gid.split("|")
        edges |= {(part, role, name) for role in roles.split()}
    return edges


@pytest.mark.parametrize("build", [parity_transformer, first_transformer])
def test_construction_diagram_draws_the_weights(build):
    model = build()
    drawn = drawn_edges(diagrams.draw_construction({"model": model}))
    heads = {edge for edge in drawn if "head" in edge[0]}
    assert heads == weight_edges(model) and heads


def test_construction_diagram_changes_with_the_weights():
    model = parity_transformer()
    before = drawn_edges(diagrams.draw_construction({"PARITY": model}))
    assert ("layer 2 head 1", "K", "cos(i*pi)") in before
    with torch.no_grad():
        model.layers[1].W_K[0, :, model.layout["cos(i*pi)"]] = 0.0
    after = drawn_edges(diagrams.draw_construction({"PARITY": model}))
    assert before - after == {("layer 2 head 1", "K", "cos(i*pi)")}


def test_construction_edges_of_first():
    edges = diagrams.construction_edges(first_transformer())
    assert ("layer 1 FFN", "write", "[w_i=1 and i=1]") in edges
    assert ("layer 2 head 1", "Q", "is_cls") in edges
    assert ("output", "out", "s") in edges
    assert not any(part == "layer 1 head 1" for part, _, _ in edges)  # it does nothing
    with pytest.raises(TypeError, match="models"):
        diagrams.draw_construction(first_transformer())
    with pytest.raises(TypeError, match="model"):
        diagrams.construction_edges("FIRST")


def test_construction_edges_of_the_parity_decoder():
    """The decoder of *Intermediate steps*, as the chapter describes it: layer 1 finds START
    and copies its position into m; layer 2 fetches w_{j+1} with the query (i - m, 1) and the
    key (2i', -i'^2); the FFN reads the state and the symbol and writes next."""
    edges = set(diagrams.construction_edges(parity_decoder()))
    part = {name: {(role, dim) for p, role, dim in edges if p == name}
            for name in {p for p, _, _ in edges}}
    assert {("K", "is_start"), ("V", "i"), ("write", "m")} <= part["layer 1 head 1"]
    assert {("Q", "i"), ("Q", "m"), ("K", "i"), ("K", "i^2"), ("V", "sym=0"),
            ("V", "sym=1"), ("write", "in=0"), ("write", "in=1")} <= part["layer 2 head 1"]
    assert part["layer 2 FFN"] == {("in", "state=0"), ("in", "state=1"), ("in", "in=0"),
                                   ("in", "in=1"), ("write", "next=0"), ("write", "next=1")}
    assert part["output"] == {("out", "next=0"), ("out", "next=1")}
    assert "layer 1 FFN" not in part  # it does nothing


def test_construction_diagram_of_a_turing_machine_draws_its_hash():
    tm = compile_tm(*TM_EXAMPLES["0^n 1^n"])
    edges = set(diagrams.construction_edges(tm))
    assert ("layer 2 hash", "in", "key_u") in edges
    assert {("layer 2 hash", "write", f"q_hash{k}") for k in range(4)} <= edges
    assert {("layer 2 head 1", "K", f"k_hash{k}") for k in range(4)} <= edges
    drawn = drawn_edges(diagrams.draw_construction({"0^n 1^n": tm}))
    assert ("layer 2 FFN", "write", "next=0..104") in drawn
    assert not any(name == "next=0" for _, _, name in drawn)  # the family is one row
    with torch.no_grad():
        tm.hashes["1"].W_in.zero_()
    assert not any(part == "layer 2 hash" and role == "in"
                   for part, role, _ in diagrams.construction_edges(tm))


def test_log_length_attention_matches_equation_1():
    ns = [3, 10, 100, 1000]
    measured = diagrams.log_length_attention(ns)
    n = torch.tensor(ns, dtype=torch.float64)
    # CLS's logit is c = 1 on position 1 and 0 elsewhere, times log n when scaled
    assert torch.allclose(measured["standard"], math.e / (math.e + n - 1), atol=1e-12)
    assert torch.allclose(measured["scaled"], n / (2 * n - 1), atol=1e-12)
    assert torch.allclose(measured["scaled gap"], n.log(), atol=1e-9)
    fig = diagrams.draw_log_length_scaling(ns)
    lines = {line.get_label(): line.get_ydata() for ax in fig.axes for line in ax.lines}
    assert torch.allclose(torch.as_tensor(lines["scaled"]), measured["scaled"])
    with pytest.raises(ValueError, match="ns"):
        diagrams.log_length_attention([2000])
    with pytest.raises(ValueError, match="c"):
        diagrams.draw_log_length_scaling(c=-1.0)


def test_every_panel_has_a_title_and_legible_text():
    figures = [diagrams.draw_attention(X, W_Q, W_K, W_V), diagrams.draw_layer(),
               diagrams.draw_construction({"PARITY": parity_transformer()}),
               diagrams.draw_log_length_scaling([3, 30, 300])]
    for fig in figures:
        assert not fig.texts and not fig.legends  # show() lays panels out one by one
        assert all(ax.get_title() for ax in fig.axes)
        sizes = [text.get_fontsize() for text in fig.findobj(Text)
                 if text.get_visible() and text.get_text().strip()]
        assert min(sizes) >= diagrams.FONT
