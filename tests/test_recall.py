"""companion.recall: the task's sentences against Definition 2.1, the batched model against a
dense implementation of eq. (1) and PyTorch's scaled_dot_product_attention, and the training
results that the paper proves (Lemma 3.1, Theorems 3.2 and 3.4, Lemmas 5.1 and 5.2)."""

import math

import pytest
import torch
import torch.nn.functional as F

from companion import recall
from companion.recall import (
    MODEL_NAMES,
    VARIANTS,
    RecallModels,
    RecallTask,
    Variant,
    bayes_loss,
    estimate_gamma,
    train,
)

SMALL = dict(vocab_size=12, n_triggers=2, n_outputs=3, length=10)


def dense_logits(task, tokens, V, W, Fm, kind):
    """Eq. (1) with dense one-hot embeddings, one model at a time."""
    N, d = task.vocab_size, task.dim
    E = F.one_hot(tokens, d).double()
    Et = F.pad(F.one_hot(tokens[:, :-1] + N + 1, d).double(), (0, 0, 1, 0))
    X = E + Et  # [B, H, d]
    scores = torch.einsum("bi,ij,bhj->bh", X[:, -1], W, X)
    if kind == "softmax":
        sigma = scores.softmax(dim=1)
        attended = F.scaled_dot_product_attention(
            (X[:, -1] @ W)[:, None, None], X[:, None], X[:, None], scale=1.0)[:, 0, 0]
        assert torch.allclose(attended, torch.einsum("bh,bhd->bd", sigma, X), atol=1e-12)
    else:
        sigma = scores if kind == "linear" else scores.relu()
    phi = torch.einsum("ij,bh,bhj->bi", V, sigma, X)
    n = task.n_classes
    return phi[:, :n], ((X[:, -1] + phi) @ Fm.T)[:, :n]


def paper_matrices(task, variant, p):
    """(V, W, F) of one model as the paper writes them, with explicit one-hot embeddings
    E(z) = e_z and Etilde(z) = e_(N+1+z): the parameters themselves (Origin), or
    Lemma 3.1 W = sum_q lambda_q E(q) Etilde(q)^T, Lemma 4.1 W = sum_q lambda_q E(q)
    (Etilde(q) - sum_(x != q) Etilde(x))^T with V = s I, and in the noisy setting Lemmas 5.1
    and 5.2, which subtract E(tau) (twice with softmax) from each key and add
    F = E(tau) (sum_q gamma E(q) + Etilde(q))^T."""
    N, d, Q, tau = task.vocab_size, task.dim, task.n_triggers, task.noise
    if variant.training == "Origin":
        return p["V"], p["W"], p["F"]

    def E(z):
        return F.one_hot(torch.tensor(z), d).double()

    def Et(z):
        return E(N + 1 + z)

    softmax = variant.activation == "softmax"
    V = p["s"] * torch.eye(d, dtype=torch.float64) if softmax else torch.eye(d).double()
    if "W" in p:
        W = p["W"]
    else:
        W = torch.zeros(d, d, dtype=torch.float64)
        for q in range(Q):
            key = Et(q)
            if softmax:
                key = key - sum(Et(x) for x in range(N) if x != q)
            if task.alpha > 0:
                key = key - (2 if softmax else 1) * E(tau)
            lam = p["lambda"][q] if task.alpha == 0 else p["lambda"][0]
            W = W + lam * torch.outer(E(q), key)
    Fm = torch.zeros(d, d, dtype=torch.float64)
    if task.alpha > 0:
        gamma = p["gamma"]
        Fm = torch.outer(E(tau), sum(gamma * E(q) + Et(q) for q in range(Q)))
    return V, W, Fm


@pytest.mark.parametrize("alpha", [0.0, 0.4])
def test_batched_model_matches_dense_equation(alpha):
    task = RecallTask(**SMALL, alpha=alpha)
    tokens, _ = task.sample(7, torch.Generator().manual_seed(1))
    models = RecallModels(task, MODEL_NAMES, seeds=(0, 1), init_std=0.3, device="cpu")
    with torch.no_grad():
        for params in models.parameters_of:  # make every parameter nonzero
            for p in params.values():
                p.add_(0.1 * torch.randn(p.shape, dtype=p.dtype))
        xi_A, xi_F = models(tokens)
        built = models.matrices()
        for k, variant in enumerate(models.variants):
            V, W, Fm = paper_matrices(task, variant, models.parameters_of[k])
            for ours, theirs in zip(built, (V, W, Fm), strict=True):
                torch.testing.assert_close(ours[k], theirs, rtol=0, atol=1e-14)
            want_A, want_F = dense_logits(task, tokens, V, W, Fm, variant.activation)
            assert torch.allclose(xi_A[k], want_A, atol=1e-10), variant.name
            assert torch.allclose(xi_F[k], want_F, atol=1e-10), variant.name


def test_variants_are_table_1():
    assert len(VARIANTS) == 9 and len(set(MODEL_NAMES)) == 9
    assert {"Origin-ReLU", "Reparam-Softmax-W", "Reparam-Linear"} <= set(MODEL_NAMES)
    assert Variant("Reparam-W", "relu").name == "Reparam-ReLU-W"
    models = RecallModels(RecallTask(**SMALL), [Variant("Reparam", "softmax"), "Origin-Linear"],
                          device="cpu")
    assert models.names == ["Reparam-Softmax", "Origin-Linear"]
    assert set(models.parameters_of[0]) == {"lambda", "s"}
    with pytest.raises(ValueError, match="activation"):
        Variant("Origin", "tanh")


@pytest.mark.parametrize("alpha", [0.0, 0.5])
@pytest.mark.parametrize("ood", [False, True])
def test_every_sampled_sentence_meets_definition_2_1(alpha, ood):
    task = RecallTask(alpha=alpha, length=40)
    generator = torch.Generator().manual_seed(0)
    for stratified in (False, True):
        tokens, target = task.sample(500, generator, ood=ood, stratified=stratified)
        task.validate(tokens, target, ood=ood)
        y = target if alpha == 0 else None
        if y is not None:
            outputs = range(5, 9)
            assert all((int(v) in outputs) != ood for v in y)
    assert not torch.equal(*[task.sample(20, torch.Generator().manual_seed(s))[0]
                             for s in (0, 1)])


def test_ood_fillers_are_uniform_over_the_fillers_other_than_the_output_word():
    """An OOD sentence's fillers avoid its output word without favouring any other filler
    (mapping a clash to the next filler id would double that filler's frequency)."""
    task = RecallTask(length=64)
    tokens, _ = task.sample(4000, torch.Generator().manual_seed(0), ood=True)
    fillers = torch.arange(task.n_triggers + task.n_outputs, task.vocab_size)
    y = task.output_word(tokens)
    pick = y - fillers[0]
    counts = [(tokens == fillers[(pick + shift) % len(fillers)][:, None]).sum().item()
              for shift in (0, 1, 2, 3)]
    assert counts[0] == len(tokens)  # y: only in its bigram
    mean_other = (counts[2] + counts[3]) / 2  # about 4000 * 61 / 50 each
    assert abs(counts[1] / mean_other - 1) < 0.1, counts


def test_noise_rate_and_validator_catch_each_broken_condition():
    task = RecallTask(alpha=0.3, length=20)
    tokens, target = task.sample(20000, torch.Generator().manual_seed(0))
    share = (target == task.noise).double().mean().item()
    assert abs(share - 0.3) < 0.02
    tokens, target = tokens[:4].clone(), target[:4].clone()
    q, y = tokens[0, -1].item(), target[target != task.noise][0].item()
    broken = {
        "(I) a (q, y) bigram": lambda t: t.masked_fill_((t >= 5) & (t < 9), 20),
        "(II) tau only if alpha > 0, after q": lambda t: t.__setitem__((0, 0), task.noise),
        "(III) q is followed by y or tau": lambda t: t[0, :2].copy_(torch.tensor([q, 40])),
        "(IV) other triggers precede outputs": lambda t: t[0, :2].copy_(
            torch.tensor([(q + 1) % 5, 40])),
        "last token is a trigger": lambda t: t.__setitem__((0, -1), 30),
    }
    for condition, damage in broken.items():
        damaged = tokens.clone()
        damage(damaged)
        holds = task.conditions(damaged, target)
        assert not holds[condition][0], condition
        with pytest.raises(ValueError, match="violates"):
            task.validate(damaged, target)
    assert y in range(5, 9)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="vocab_size"):
        RecallTask(vocab_size=9, n_triggers=5, n_outputs=4)
    for alpha in (-0.1, 1.0, 1.5):
        with pytest.raises(ValueError, match="alpha"):
            RecallTask(alpha=alpha)
    with pytest.raises(ValueError, match="length"):
        RecallTask(length=2)
    with pytest.raises(ValueError, match="length"):
        RecallTask(length=4, alpha=0.5)
    with pytest.raises(TypeError, match="length"):
        RecallTask(length=3.5)
    with pytest.raises(ValueError, match="names"):
        RecallModels(RecallTask(), "Reparam-Tanh", device="cpu")
    with pytest.raises(ValueError, match="batch"):
        RecallTask().sample(0)
    with pytest.raises(ValueError, match="before_query"):
        RecallTask().sample(3, before_query=2)


def test_lemma_3_1_logits_are_lambda_times_bigram_count():
    task = RecallTask(**SMALL)
    tokens, target = task.sample(50, torch.Generator().manual_seed(2))
    models = RecallModels(task, ("Reparam-Linear", "Reparam-ReLU"), device="cpu")
    lam = torch.tensor([1.5, 4.0], dtype=torch.float64)
    with torch.no_grad():
        for params in models.parameters_of:
            params["lambda"].copy_(lam)
    xi_A, xi_F = models(tokens)
    q = tokens[:, -1]
    want = torch.zeros_like(xi_A[0])
    want[torch.arange(50), target] = lam[q]  # C_{q,y} = 1 in these sentences
    assert torch.equal(xi_A[0], want) and torch.equal(xi_A[1], want)
    assert (xi_F == 0).all()
    loss = models.losses(tokens, target)
    expected = torch.log1p((task.vocab_size - 1) * torch.exp(-lam[q])).mean()
    assert torch.allclose(loss, expected.expand(2))


def test_theorem_3_2_normalized_gd_grows_lambda_linearly():
    task = RecallTask(**SMALL)
    tokens, target = task.sample(task.n_triggers * task.n_outputs * 4, stratified=True)
    models = RecallModels(task, ("Reparam-Linear", "Reparam-ReLU"), device="cpu")
    lr, steps = 0.3, 25
    for _ in range(steps):
        models.normalized_step(models.losses(tokens, target), lr)
    for params in models.parameters_of:
        want = lr * steps / math.sqrt(task.n_triggers)
        assert torch.allclose(params["lambda"], torch.full_like(params["lambda"], want))


def test_normalized_step_moves_each_model_by_lr_and_a_model_without_gradient_not_at_all():
    task = RecallTask(**SMALL)
    tokens, target = task.sample(16, torch.Generator().manual_seed(0))
    models = RecallModels(task, ("Origin-Softmax", "Reparam-ReLU-W"), device="cpu")
    before = [{key: p.detach().clone() for key, p in params.items()}
              for params in models.parameters_of]
    models.normalized_step(models.losses(tokens, target) * torch.tensor([1.0, 0.0]), 0.3)
    moved = [torch.sqrt(sum(((p - before[k][key]) ** 2).sum() for key, p in params.items()))
             for k, params in enumerate(models.parameters_of)]
    assert moved[0].item() == pytest.approx(0.3, rel=1e-9)  # the step has length lr
    assert moved[1].item() == 0.0  # zero gradient: no step and no NaN


def test_theorem_3_4_direction_of_gradient_descent_on_W():
    """The cosine with W* rises towards 2/sqrt(12) but starts below it: the proof's eq. (9),
    which would give exactly 2/sqrt(12) from the first step on, drops the normalizer's
    gradient at the filler positions."""
    task = RecallTask(vocab_size=8, n_triggers=1, n_outputs=2, length=12)
    tokens, target = task.sample(40, stratified=True, before_query=5)
    task.validate(tokens, target)
    models = RecallModels(task, "Reparam-Linear-W", device="cpu")
    W = models.parameters_of[0]["W"]
    star = torch.zeros_like(W)
    star[0, task.vocab_size + 1 + 0] = 1.0  # E(q) Etilde(q)^T with q = 0
    cosines = []
    for step in range(1, 301):
        (grad,) = torch.autograd.grad(models.losses(tokens, target).sum(), W)
        with torch.no_grad():
            W -= grad
        if step in (1, 10, 100, 300):
            cosines.append(((W * star).sum() / W.norm()).item())
    assert cosines[0] < 2 / math.sqrt(12) - 0.05
    assert all(a < b < 2 / math.sqrt(12) for a, b in zip(cosines, cosines[1:], strict=False))


def test_bayes_loss_and_lemma_5_1():
    for alpha in (0.0, 0.2, 0.5, 0.8):
        want = torch.distributions.Bernoulli(probs=torch.tensor(alpha)).entropy().item()
        assert abs(bayes_loss(alpha) - want) < 1e-6
    task = RecallTask(**SMALL, alpha=0.3)
    tokens, target = task.sample(4000, torch.Generator().manual_seed(3))
    share = (target == task.noise).double().mean().item()
    # Algorithm 1 picks gamma so that a softmax over (gamma, 0) gives tau the sample's share
    two = torch.tensor([estimate_gamma(target, task), 0.0], dtype=torch.float64)
    assert abs(two.softmax(dim=0)[0].item() - share) < 1e-12
    models = RecallModels(task, ("Reparam-Linear", "Reparam-ReLU"),
                          fixed_gamma=math.log(0.3 / 0.7), device="cpu")
    with torch.no_grad():
        for params in models.parameters_of:
            params["lambda"].fill_(40.0)
    # the model predicts tau with probability 0.3 and y with 0.7, so its loss on the sample
    # is the cross-entropy of those two probabilities against the sample's noise share
    expected = -share * math.log(0.3) - (1 - share) * math.log(0.7)
    losses = models.losses(tokens, target)
    assert torch.allclose(losses, torch.tensor(expected, dtype=torch.float64), atol=1e-12)
    with pytest.raises(ValueError, match="target"):
        estimate_gamma(torch.zeros(5, dtype=torch.long), task)


def test_training_is_deterministic_and_reparam_linear_learns():
    task = RecallTask(**SMALL)
    evaluation = {"population": task.sample(200, torch.Generator().manual_seed(9))}
    runs = []
    for _ in range(2):
        models = RecallModels(task, ("Origin-Linear", "Reparam-Linear"), device="cpu")
        runs.append(train(models, 30, 32, 0.2, torch.Generator().manual_seed(0),
                          evaluate=evaluation, eval_every=10, progress=False))
    assert torch.equal(runs[0]["population"], runs[1]["population"])
    assert runs[0]["step"] == [0, 10, 20, 30]
    assert runs[0]["population"][-1, 1] < 0.1 * runs[0]["population"][0, 1]


@pytest.mark.parametrize("alpha", [0.0, 0.5])
def test_evaluation_in_chunks_records_the_losses_of_the_whole_set(monkeypatch, alpha):
    task = RecallTask(**SMALL, alpha=alpha)
    tokens, target = task.sample(50, torch.Generator().manual_seed(4))
    models = RecallModels(task, ("Origin-Softmax", "Reparam-ReLU"), device="cpu")
    whole = [models.losses(tokens, y) for y in (target, None)]
    # two models x 10 positions: chunks of 3 sentences, the last one of 2
    monkeypatch.setattr(recall, "EVALUATION_ELEMENTS", 60)
    history = train(models, 1, 4, 0.0, evaluate={"with target": (tokens, target),
                                                  "expected": (tokens, None)},
                    progress=False)
    for key, want in zip(("with target", "expected"), whole, strict=True):
        torch.testing.assert_close(history[key][0], want, rtol=1e-12, atol=0)


def test_finite_sample_training_uses_every_sentence_once_per_epoch():
    task = RecallTask(**SMALL)
    data = task.sample(12, torch.Generator().manual_seed(3))
    models = RecallModels(task, "Reparam-Linear", device="cpu")
    seen = []
    losses = models.losses

    def recording(tokens, target):
        match = (tokens[:, None] == data[0][None]).all(dim=-1)  # [batch, M]
        assert (match.sum(dim=1) == 1).all()
        seen.append(match.long().argmax(dim=1))
        return losses(tokens, target)

    models.losses = recording
    train(models, 9, 4, 0.2, torch.Generator().manual_seed(0), data=data, progress=False)
    epochs = torch.cat(seen).view(3, 12)  # 12 sentences, batch 4: three steps an epoch
    for epoch in epochs:
        assert sorted(epoch.tolist()) == list(range(12))
    assert not torch.equal(epochs[0], epochs[1])  # reshuffled
    with pytest.raises(ValueError, match="batch"):
        train(models, 1, 13, 0.2, data=data, progress=False)


@pytest.mark.parametrize("alpha", [0.0, 0.3])
def test_losses_match_cross_entropy_and_expected_loss_is_bayes_plus_kl(alpha):
    task = RecallTask(**SMALL, alpha=alpha)
    tokens, target = task.sample(50, torch.Generator().manual_seed(4))
    models = RecallModels(task, MODEL_NAMES, init_std=0.3, device="cpu")
    with torch.no_grad():
        for params in models.parameters_of:
            for p in params.values():
                p.add_(0.5 * torch.randn(p.shape, dtype=p.dtype))
        logits = sum(models(tokens))
        y = task.output_word(tokens)
        for k, loss in enumerate(models.losses(tokens, target)):
            assert torch.isclose(loss, F.cross_entropy(logits[k], target), atol=1e-12)
        expected = models.losses(tokens)
        for k, loss in enumerate(expected):
            want = (1 - alpha) * F.cross_entropy(logits[k], y)
            if alpha > 0:
                want += alpha * F.cross_entropy(logits[k], torch.full_like(y, task.noise))
            assert torch.isclose(loss, want, atol=1e-12)
        assert (expected > bayes_loss(alpha)).all()  # the KL divergence is positive
    with pytest.raises(ValueError, match="output word"):
        models.losses(torch.arange(10).expand(2, 10))  # the last word occurs once


def test_lemma_5_2_expected_loss_is_the_bayes_loss():
    task = RecallTask(**SMALL, alpha=0.3)
    tokens, _ = task.sample(100, torch.Generator().manual_seed(5))
    models = RecallModels(task, "Reparam-Softmax", fixed_gamma=math.log(0.3 / 0.7),
                          device="cpu")
    with torch.no_grad():
        models.parameters_of[0]["lambda"].fill_(60.0)
        models.parameters_of[0]["s"].fill_(60.0)
        assert abs(models.losses(tokens).item() - bayes_loss(0.3)) < 1e-12


def test_train_refuses_bad_arguments_by_name():
    task = RecallTask(**SMALL)
    models = RecallModels(task, "Reparam-Linear", device="cpu")
    population = {"population": task.sample(8, torch.Generator().manual_seed(0))}
    tokens, target = task.sample(6, torch.Generator().manual_seed(1))
    run = dict(steps=2, batch=4, lr=0.2, progress=False)
    bad = [({"eval_every": 0, "evaluate": population}, ValueError, "eval_every"),
           ({"eval_every": 0}, ValueError, "eval_every"),
           ({"eval_every": 2.5}, TypeError, "eval_every"),
           ({"lr": float("nan")}, ValueError, "lr"),
           ({"lr": float("inf")}, ValueError, "lr"),
           ({"lr": -1.0}, ValueError, "lr"),
           ({"steps": 0}, ValueError, "steps"),
           ({"batch": 0}, ValueError, "batch"),
           ({"generator": 0}, TypeError, "generator"),
           ({"data": tokens}, TypeError, "data"),
           ({"data": (tokens, target[:5])}, ValueError, "data"),
           ({"evaluate": [tokens, target]}, TypeError, "evaluate"),
           ({"evaluate": {"set": (tokens.double(), target)}}, TypeError, "evaluate")]
    for change, error, name in bad:
        with pytest.raises(error, match=name):
            train(models, **{**run, **change})
    with pytest.raises(TypeError, match="models"):
        train("Reparam-Linear", **run)
    before = [p.clone() for p in models.parameters_of[0].values()]
    with pytest.raises(ValueError):
        train(models, **{**run, "lr": float("nan")})
    after = models.parameters_of[0].values()
    assert all(torch.equal(p, q) for p, q in zip(before, after, strict=True))
