import math

import pytest
import torch

import companion.fast_attention as fast_attention
from companion.constructions import first_transformer, flawed_first_transformer, parity_transformer
from companion.languages import random_strings
from companion.layout import Layout
from companion.torch_export import to_torch
from companion.transformer import (
    Encoder,
    EncoderLayer,
    random_encoder,
    sinusoidal_position_embedding,
)

MODELS = {
    "parity": lambda: parity_transformer(c=0.7),
    "parity, LN eps=0": lambda: parity_transformer(layernorm=True),
    "parity, LN eps=1e-5": lambda: parity_transformer(layernorm=True, eps=1e-5),
    "first": lambda: first_transformer(c=2.0),
    "first, LN eps=1e-5": lambda: first_transformer(layernorm=True, eps=1e-5),
    "flawed first": lambda: flawed_first_transformer(c=3.0),
}


def random_model(norm, layernorm, seed=0, heads=2, layers=2, log_length=False):
    return random_encoder(d=6, heads=heads, layers=layers, d_hid=3, d_ff=7, max_n=40,
                          generator=torch.Generator().manual_seed(seed), norm=norm,
                          layernorm=layernorm, eps=1e-5, log_length=log_length)


@pytest.mark.parametrize("name", MODELS)
def test_constructions_match_pytorch_encoder_layers(name):
    model = MODELS[name]()
    w = random_strings(50, 25, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(model(w), to_torch(model)(w), rtol=0, atol=1e-12)


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("layernorm", [False, True])
def test_random_weights_match_pytorch_encoder_layers(norm, layernorm):
    """Full-rank random weights: PyTorch's heads are then given the whole width."""
    model = random_model(norm, layernorm, heads=1)
    w = random_strings(20, 12, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        torch.testing.assert_close(model(w), to_torch(model)(w), rtol=1e-10, atol=1e-10)


def test_log_length_scaling_matches_scaled_dot_product_attention():
    model = random_model("post", False, heads=1, layers=1, log_length=True)
    w = random_strings(5, 9, generator=torch.Generator().manual_seed(3))
    _, trace = model(w, record_attention=True)
    layer, a = model.layers[0], trace.a[0]
    q, k, v = a @ layer.W_Q[0].T, a @ layer.W_K[0].T, a @ layer.W_V[0].T
    attended = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, scale=math.log(10) / math.sqrt(model.d))
    torch.testing.assert_close(trace.c[0], a + attended)


def test_blocked_attention_equals_unblocked(monkeypatch):
    model = random_model("post", True, heads=2)
    w = random_strings(3, 30, generator=torch.Generator().manual_seed(4))
    whole, whole_trace = model(w, record_attention=True)
    monkeypatch.setattr(fast_attention, "SCORE_BUDGET", 7)  # blocks of a single query
    blocked, blocked_trace = model(w, record_attention=True)
    torch.testing.assert_close(whole, blocked, rtol=0, atol=1e-14)
    torch.testing.assert_close(whole_trace.attention[1], blocked_trace.attention[1])


def test_cls_only_last_layer_equals_full_record():
    model = random_model("pre", True, heads=2)
    w = random_strings(6, 11, generator=torch.Generator().manual_seed(5))
    fast = model(w)
    full, trace = model(w, record_attention=True)
    torch.testing.assert_close(fast, full, rtol=0, atol=1e-14)
    assert trace.a[-1].shape == (6, 12, model.d) and trace.attention[0].shape == (6, 2, 12, 12)


def test_dtype_conversion():
    model = parity_transformer().to(torch.float32)
    assert model("0110").dtype == torch.float32


def test_layout_builds_by_name():
    rows, columns = Layout("x", "y"), Layout("a", "b", "c")
    M = rows.matrix(columns, {("y", "c"): 2.0})
    assert M.shape == (2, 3) and M[1, 2] == 2.0 and M.abs().sum() == 2.0
    assert torch.equal(columns.vector({"b": 1.0}), torch.tensor([0.0, 1.0, 0.0],
                                                                 dtype=torch.float64))
    with pytest.raises(KeyError, match="no dimension named 'z'"):
        rows["z"]
    with pytest.raises(ValueError, match="distinct"):
        Layout("x", "x")


def test_bad_arguments():
    layer = EncoderLayer(4, 2, 1, 3)
    word = torch.zeros(3, 4, dtype=torch.float64)
    output = torch.zeros(4, dtype=torch.float64)
    with pytest.raises(ValueError, match="word_embedding must have shape"):
        Encoder(torch.zeros(2, 4, dtype=torch.float64), torch.zeros(5, 4), [layer], output)
    with pytest.raises(ValueError, match="position table"):
        Encoder(word, torch.zeros(5, 3, dtype=torch.float64), [layer], output)
    with pytest.raises(ValueError, match=r"layers\[0\].W_Q must have shape \[1, 2, 4\]"):
        Encoder(word, torch.zeros(5, 4, dtype=torch.float64), [EncoderLayer(5, 2, 1, 3)], output)
    with pytest.raises(ValueError, match="output_weight"):
        Encoder(word, torch.zeros(5, 4, dtype=torch.float64), [layer], torch.zeros(3))
    with pytest.raises(ValueError, match="eps"):
        Encoder(word, torch.zeros(5, 4, dtype=torch.float64), [layer], output, eps=-1.0)
    with pytest.raises(ValueError, match="norm"):
        Encoder(word, torch.zeros(5, 4, dtype=torch.float64), [layer], output, norm="mid")
    model = Encoder(word, torch.zeros(5, 4, dtype=torch.float64), [layer], output)
    with pytest.raises(ValueError, match="learned position table has only 5"):
        model(torch.zeros(1, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="only '0' and '1'"):
        model("0120")
    with torch.no_grad():
        model.layers[0].W_F2.data = torch.zeros(4, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"layers\[0\].W_F2 must have shape \[4, 3\]"):
        model("01")
    with pytest.raises(ValueError, match="log-length"):
        to_torch(first_transformer(log_length=True))


def test_sinusoidal_embedding_against_the_formula():
    pe = sinusoidal_position_embedding(9, 6)
    for i in range(9):
        for j in range(6):
            if j % 2 == 0:
                expected = math.sin(10000 ** (-j / 6) * i)
            else:
                expected = math.cos(10000 ** (-(j - 1) / 6) * i)
            assert abs(pe[i, j].item() - expected) < 1e-15
    with pytest.raises(ValueError, match="n must be >= 1"):
        sinusoidal_position_embedding(0, 4)


def test_shared_queries_give_the_same_result_as_computing_every_row(monkeypatch):
    model = parity_transformer(layernorm=True, eps=1e-5)
    w = random_strings(40, 33, generator=torch.Generator().manual_seed(6))
    shared, shared_trace = model(w, record_attention=True)
    monkeypatch.setattr(fast_attention, "distinct_rows", lambda rows: (None, None))
    every_row, every_trace = model(w, record_attention=True)
    torch.testing.assert_close(shared, every_row, rtol=0, atol=1e-15)
    for ours, theirs in zip(shared_trace.attention, every_trace.attention, strict=True):
        torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-15)


def sdpa(q, k, v, scale):
    """PyTorch's own attention, the reference for companion.fast_attention."""
    output = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)
    weights = torch.softmax(scale * q @ k.transpose(1, 2), dim=-1)
    return output, weights


@pytest.mark.parametrize("budget", [2**24, 5, 1])
@pytest.mark.parametrize("distinct", [1, 3, 17])
def test_attend_equals_scaled_dot_product_attention(monkeypatch, budget, distinct):
    """Every path of attend (shared queries, blocks of any size) against PyTorch's attention."""
    monkeypatch.setattr(fast_attention, "SCORE_BUDGET", budget)
    g = torch.Generator().manual_seed(distinct)
    pool = torch.randn(distinct, 4, generator=g, dtype=torch.float64)
    q = pool[torch.randint(distinct, (3, 17), generator=g)]  # [3, 17, 4], repeated rows
    k = torch.randn(3, 20, 4, generator=g, dtype=torch.float64)
    v = torch.randn(3, 20, 5, generator=g, dtype=torch.float64)
    output, weights = fast_attention.attend(q, k, v, 0.7, return_weights=True)
    expected, expected_weights = sdpa(q, k, v, 0.7)
    torch.testing.assert_close(output, expected, rtol=0, atol=1e-13)
    torch.testing.assert_close(weights, expected_weights, rtol=0, atol=1e-15)
    without, none = fast_attention.attend(q, k, v, 0.7)
    assert none is None
    torch.testing.assert_close(without, expected, rtol=0, atol=1e-13)


def test_a_head_with_zero_values_adds_nothing_and_still_reports_weights():
    model = random_model("post", False, heads=2, layers=1)
    with torch.no_grad():
        model.layers[0].W_V[1] = 0
    w = random_strings(3, 9, generator=torch.Generator().manual_seed(7))
    _, trace = model(w, record_attention=True)
    layer, a = model.layers[0], trace.a[0]
    q, k, v = (a @ W[0].T for W in (layer.W_Q, layer.W_K, layer.W_V))
    expected, _ = sdpa(q, k, v, 1 / math.sqrt(model.d))
    output, weights = layer.attention(a, slice(0, 10), 1 / math.sqrt(model.d))
    assert weights is None
    torch.testing.assert_close(output, expected, rtol=0, atol=1e-13)
    q1, k1 = (a @ W[1].T for W in (layer.W_Q, layer.W_K))
    torch.testing.assert_close(trace.attention[0][:, 1],
                               sdpa(q1, k1, v, 1 / math.sqrt(model.d))[1])


def test_distinct_rows():
    rows = torch.tensor([[1.0, 2], [3, 4], [1, 2], [3, 4], [5, 6]])
    distinct, which = fast_attention.distinct_rows(rows)
    assert len(distinct) == 3 and torch.equal(distinct[which], rows)
    same, which = fast_attention.distinct_rows(torch.ones(4, 2))
    assert len(same) == 1 and torch.equal(which, torch.zeros(4, dtype=torch.long))
    half = torch.tensor([[1.0, 2], [1, 2.5]], dtype=torch.bfloat16)
    distinct, which = fast_attention.distinct_rows(half)
    assert distinct.dtype == torch.bfloat16 and torch.equal(distinct[which], half)


def test_random_encoder_is_seeded_and_complete():
    one, two = (random_encoder(generator=torch.Generator().manual_seed(3)) for _ in range(2))
    w = random_strings(4, 10, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(one(w), two(w))
    assert all(bool(p.any()) for p in one.parameters())  # nothing left at zero
    assert not any(p.requires_grad for p in one.parameters())
    with pytest.raises(ValueError, match="layers must be >= 1"):
        random_encoder(layers=0)
