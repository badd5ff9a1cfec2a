import itertools

import pytest
import torch
import torch.nn.functional as F

from companion.attention import attention_flops, attention_weights, future_mask, self_attention


def random_problem(seed, batch=3, n=7, d=6, d_k=4, d_v=5):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(batch, n, d, generator=g, dtype=torch.float64)
    W_Q, W_K = (torch.randn(d, d_k, generator=g, dtype=torch.float64) for _ in range(2))
    W_V = torch.randn(d, d_v, generator=g, dtype=torch.float64)
    return X, W_Q, W_K, W_V


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seed", range(5))
def test_matches_scaled_dot_product_attention(seed, causal):
    X, W_Q, W_K, W_V = random_problem(seed)
    mask = future_mask(X.shape[1]) if causal else None
    ours, _ = self_attention(X, W_Q, W_K, W_V, mask=mask)
    theirs = F.scaled_dot_product_attention(X @ W_Q, X @ W_K, X @ W_V, attn_mask=mask)
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)
    if causal:
        theirs = F.scaled_dot_product_attention(X @ W_Q, X @ W_K, X @ W_V, is_causal=True)
        torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seed", range(5))
def test_matches_one_head_multihead_attention(seed, causal):
    d = 6
    X, W_Q, W_K, W_V = random_problem(seed, d=d, d_k=d, d_v=d)
    mha = torch.nn.MultiheadAttention(d, num_heads=1, bias=False, batch_first=True).double()
    with torch.no_grad():  # PyTorch applies in_proj_weight as x @ W.T: store our W's transposed
        mha.in_proj_weight.copy_(torch.cat([W_Q.T, W_K.T, W_V.T]))
        mha.out_proj.weight.copy_(torch.eye(d))
    mask = future_mask(X.shape[1]) if causal else None
    ours, our_weights = self_attention(X, W_Q, W_K, W_V, mask=mask)
    # nn.MultiheadAttention's boolean mask marks what may NOT be attended to.
    theirs, their_weights = mha(X, X, X, attn_mask=None if mask is None else ~mask)
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(our_weights, their_weights, rtol=1e-12, atol=1e-12)


def brute_force_hard(scores, allowed, kind):
    """Hard attention weights of one score row by 004 eq. 5.12 / 5.13, in plain Python."""
    candidates = [j for j, ok in enumerate(allowed) if ok]
    weights = [0.0] * len(scores)
    if not candidates:
        return weights
    best = max(scores[j] for j in candidates)
    maximal = [j for j in candidates if scores[j] == best]
    if kind == "leftmost_hard":
        weights[min(maximal)] = 1.0
    else:
        for j in maximal:
            weights[j] = 1.0 / len(maximal)
    return weights


@pytest.mark.parametrize("kind", ["leftmost_hard", "average_hard"])
def test_hard_attention_against_brute_force(kind):
    n = 4
    rows = torch.tensor(list(itertools.product(range(3), repeat=n)), dtype=torch.float64)
    for strict in (False, True):
        mask = future_mask(n, strict=strict)
        for i in range(n):  # query position i sees row i of the mask
            ours = attention_weights(rows, kind=kind, mask=mask[i])
            expected = torch.tensor(
                [brute_force_hard(r.tolist(), mask[i].tolist(), kind) for r in rows],
                dtype=torch.float64,
            )
            torch.testing.assert_close(ours, expected, rtol=0, atol=1e-15)


def test_softmax_weights_are_distributions_and_masks_zero_the_future():
    X, W_Q, W_K, W_V = random_problem(11, n=9)
    _, A = self_attention(X, W_Q, W_K, W_V, mask=future_mask(9))
    torch.testing.assert_close(A.sum(-1), torch.ones(3, 9, dtype=torch.float64))
    assert (A[:, ~future_mask(9)] == 0).all() and (A[:, future_mask(9)] > 0).all()


def test_strict_mask_leaves_first_row_empty():
    X, W_Q, W_K, W_V = random_problem(12, n=5)
    out, A = self_attention(X, W_Q, W_K, W_V, mask=future_mask(5, strict=True))
    assert (A[:, 0] == 0).all() and (out[:, 0] == 0).all()
    torch.testing.assert_close(A[:, 1:].sum(-1), torch.ones(3, 4, dtype=torch.float64))


def test_future_mask_pattern():
    expected = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool)
    assert torch.equal(future_mask(3), expected)
    assert torch.equal(future_mask(3, strict=True), expected & ~torch.eye(3, dtype=torch.bool))


@pytest.mark.parametrize("n, d, d_k, d_v", [(1, 1, 1, 1), (5, 4, 2, 3), (64, 16, 8, 8),
                                         (8192, 4096, 4096, 2048)])
def test_flop_count_matches_the_hand_count(n, d, d_k, d_v):
    """Counted on the meta device: the largest size would take minutes of arithmetic."""
    multiply_adds = n * d * (2 * d_k + d_v) + n * n * d_k + n * n * d_v
    assert attention_flops(n, d, d_k, d_v) == 2 * multiply_adds


def test_the_count_on_meta_tensors_is_the_count_on_real_ones():
    from torch.utils.flop_counter import FlopCounterMode

    X, W = torch.randn(6, 4), torch.randn(4, 3)
    with FlopCounterMode(display=False) as counter:
        out, weights = self_attention(X, W, W, W)
    assert attention_flops(6, 4, 3) == counter.get_total_flops()
    meta_out, meta_weights = self_attention(X.to("meta"), *(W.to("meta"),) * 3)
    assert (meta_out.shape, meta_weights.shape) == (out.shape, weights.shape)


def test_bad_arguments_are_refused():
    X, W_Q, W_K, W_V = random_problem(0)
    with pytest.raises(ValueError, match="kind"):
        self_attention(X, W_Q, W_K, W_V, kind="sparsemax")
    with pytest.raises(ValueError, match="W_Q must have shape"):
        self_attention(X, W_Q[:-1], W_K, W_V)
    with pytest.raises(ValueError, match="W_Q and W_K"):
        self_attention(X, W_Q, W_K[:, :-1], W_V)
    with pytest.raises(TypeError, match="W_V has dtype"):
        self_attention(X, W_Q, W_K, W_V.float())
    with pytest.raises(TypeError, match="X must have a floating-point dtype"):
        self_attention(X.long(), W_Q, W_K, W_V)
    with pytest.raises(ValueError, match="X must have rank"):
        self_attention(X[0, 0], W_Q, W_K, W_V)
    with pytest.raises(ValueError, match="mask has shape"):
        self_attention(X, W_Q, W_K, W_V, mask=future_mask(4))
    with pytest.raises(TypeError, match="BoolTensor"):
        self_attention(X, W_Q, W_K, W_V, mask=future_mask(7).double())
    with pytest.raises(ValueError, match="NaN"):
        attention_weights(torch.tensor([[0.0, float("nan")]]))
    with pytest.raises(ValueError, match="n must be >= 1"):
        future_mask(0)
    with pytest.raises(TypeError, match="strict"):
        future_mask(3, strict="yes")
