import math

import pytest
import torch

import companion.transformer as transformer
from companion.constructions import first_transformer, flawed_first_transformer, parity_transformer
from companion.languages import random_strings
from companion.transformer import Encoder, EncoderLayer, Layout, to_torch

MODELS = {
    "parity": lambda: parity_transformer(c=0.7),
    "parity, LN eps=0": lambda: parity_transformer(layernorm=True),
    "parity, LN eps=1e-5": lambda: parity_transformer(layernorm=True, eps=1e-5),
    "first": lambda: first_transformer(c=2.0),
    "first, LN eps=1e-5": lambda: first_transformer(layernorm=True, eps=1e-5),
    "flawed first": lambda: flawed_first_transformer(c=3.0),
}


def random_encoder(norm, layernorm, seed=0, d=6, heads=2, layers=2, log_length=False):
    g = torch.Generator().manual_seed(seed)
    stack = []
    for _ in range(layers):
        layer = EncoderLayer(d, d_hid=3, heads=heads, d_ff=7)
        with torch.no_grad():
            for parameter in layer.parameters():
                parameter.copy_(torch.randn(parameter.shape, generator=g, dtype=torch.float64))
        stack.append(layer)
    table = torch.randn(40, d, generator=g, dtype=torch.float64)
    return Encoder(torch.randn(3, d, generator=g, dtype=torch.float64), table, stack,
                   torch.randn(d, generator=g, dtype=torch.float64), 0.3, norm=norm,
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
    model = random_encoder(norm, layernorm, heads=1)
    w = random_strings(20, 12, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        torch.testing.assert_close(model(w), to_torch(model)(w), rtol=1e-10, atol=1e-10)


def test_log_length_scaling_matches_scaled_dot_product_attention():
    model = random_encoder("post", False, heads=1, layers=1, log_length=True)
    w = random_strings(5, 9, generator=torch.Generator().manual_seed(3))
    _, trace = model(w, record_attention=True)
    layer, a = model.layers[0], trace.a[0]
    q, k, v = a @ layer.W_Q[0].T, a @ layer.W_K[0].T, a @ layer.W_V[0].T
    attended = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, scale=math.log(10) / math.sqrt(model.d))
    torch.testing.assert_close(trace.c[0], a + attended)


def test_blocked_attention_equals_unblocked(monkeypatch):
    model = random_encoder("post", True, heads=2)
    w = random_strings(3, 30, generator=torch.Generator().manual_seed(4))
    whole, whole_trace = model(w, record_attention=True)
    monkeypatch.setattr(transformer, "SCORE_BUDGET", 7)  # blocks of a single query
    blocked, blocked_trace = model(w, record_attention=True)
    torch.testing.assert_close(whole, blocked, rtol=0, atol=1e-14)
    torch.testing.assert_close(whole_trace.attention[1], blocked_trace.attention[1])


def test_cls_only_last_layer_equals_full_record():
    model = random_encoder("pre", True, heads=2)
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
    from companion.transformer import sinusoidal_position_embedding

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
    monkeypatch.setattr(transformer, "_distinct_rows", lambda rows: (None, None))
    every_row, every_trace = model(w, record_attention=True)
    torch.testing.assert_close(shared, every_row, rtol=0, atol=1e-15)
    for ours, theirs in zip(shared_trace.attention, every_trace.attention, strict=True):
        torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-15)
