"""The in-context recall task and the one-layer transformers that learn it
([nguyen2025recall]: Definition 2.1, model (1), Lemmas 3.1, 4.1, 5.1, 5.2, Algorithm 1,
Table 1).

Conventions. Token ids are ``0 .. N-1`` (``N = vocab_size``) and the noise token is ``tau = N``.
The triggers are ``0 .. Q-1``, the output words ``Q .. Q+O-1``, and every other id is a filler
(in the paper's §6, fillers are drawn from ``[N] \\ (Q u O)``). A sentence is a row of a
``LongTensor[B, H]`` (0-based positions; the paper's ``z_1 .. z_H``); its last token is the
trigger ``q``, and the target ``z_{H+1}`` is ``y`` or, with probability ``alpha``, ``tau``.

The embeddings are the standard basis, as in the paper's experiments: ``E(z) = e_z`` and
``Etilde(z) = e_{N+1+z}``, so ``d = 2(N + 1)`` (the paper's ``d = 128`` pads these with unused
zero coordinates, which change nothing). Position ``h`` holds ``x_h = E(z_h) + Etilde(z_{h-1})``
(no previous token at ``h = 0``). The model computes, with ``sigma`` linear, ReLU or a softmax
over positions,

    phi = V sum_h sigma(x_H^T W x_h) x_h,   xi_A = U phi,   xi_F = U F (x_H + phi),

and the logits ``xi = xi_A + xi_F`` over the ``N`` words, plus ``tau`` when ``alpha > 0``.
``U`` is fixed (its rows are the ``E(j)``). The one-hot structure is used directly: scores are
gathered from ``x_H^T W`` and the attention sum is a scatter-add, never a dense ``[B, H, d]``.

The nine models of Table 1 differ in what is trained (:data:`MODEL_NAMES`): *Origin* trains
``V, W, F`` in full; *Reparam-...-W* trains ``W`` in full with ``V`` and ``F`` reparameterized;
*Reparam* trains only the scalars of Lemmas 3.1/4.1 (noiseless) and 5.1/5.2 (noisy): ``lambda``
(one per trigger when noiseless, one in all when noisy), ``s`` (softmax) and ``gamma`` (noisy).
Many models (names x seeds) are evaluated in one batched computation; each takes steps of
normalized gradient descent (eq. 3) on its own parameters.
"""

import math
from dataclasses import dataclass

import torch

from companion._checks import (
    check_bool,
    check_choice,
    check_device,
    check_generator,
    check_int,
    check_number,
    check_tensor,
)
from companion.runtime import device as default_device
from companion.runtime import generator as runtime_generator

#: The attention activations ``sigma`` of model (1).
ACTIVATIONS = ("linear", "relu", "softmax")
#: What is trained (see the module docstring).
TRAININGS = ("Origin", "Reparam-W", "Reparam")
#: Entries of one ``[models, sentences, H]`` tensor when :func:`train` evaluates (128 MiB in
#: float64): evaluation sets are taken in chunks of sentences so that memory stays bounded.
EVALUATION_ELEMENTS = 2**24
_LABELS = {"linear": "Linear", "relu": "ReLU", "softmax": "Softmax"}


@dataclass(frozen=True)
class Variant:
    """One model of Table 1: which parameters are trained (one of :data:`TRAININGS`) and the
    attention activation ``sigma`` (one of :data:`ACTIVATIONS`)."""

    training: str
    activation: str

    def __post_init__(self):
        check_choice(self.training, "training", TRAININGS)
        check_choice(self.activation, "activation", ACTIVATIONS)

    @property
    def name(self) -> str:
        """The paper's label, such as ``"Origin-Linear"`` or ``"Reparam-Softmax-W"``."""
        family, _, suffix = self.training.partition("-")
        return "-".join([family, _LABELS[self.activation], *([suffix] if suffix else [])])


#: The nine models of Table 1: each training with each activation.
VARIANTS = tuple(Variant(training, activation)
                 for training in TRAININGS for activation in ACTIVATIONS)
#: The names of the nine models, the rows of Table 1 in order.
MODEL_NAMES = tuple(variant.name for variant in VARIANTS)
_VARIANT_NAMED = dict(zip(MODEL_NAMES, VARIANTS, strict=True))


def bayes_loss(alpha: float) -> float:
    """The entropy ``-alpha ln alpha - (1 - alpha) ln(1 - alpha)`` in nats (0 at ``alpha = 0``):
    the smallest expected loss any predictor can reach on the noisy task. ``alpha`` lies in
    ``[0, 1)``, as for :class:`RecallTask`."""
    alpha = check_number(alpha, "alpha", minimum=0, below=1)
    return -sum(p * math.log(p) for p in (alpha, 1 - alpha) if p > 0)


@dataclass(frozen=True)
class RecallTask:
    """Definition 2.1 with the sentence distribution of the paper's §6: one ``(q, y)`` bigram
    at a uniform position, one ``(q, tau)`` bigram at another when ``alpha > 0``, fillers
    elsewhere, and the trigger ``q`` last."""

    vocab_size: int = 60
    n_triggers: int = 5
    n_outputs: int = 4
    length: int = 256
    alpha: float = 0.0

    def __post_init__(self):
        check_int(self.n_triggers, "n_triggers", minimum=1)
        check_int(self.n_outputs, "n_outputs", minimum=1)
        check_int(self.vocab_size, "vocab_size")
        if self.vocab_size < self.n_triggers + self.n_outputs + 1:
            raise ValueError(
                f"vocab_size must leave at least one filler word beside the {self.n_triggers} "
                f"triggers and {self.n_outputs} outputs, so be >= "
                f"{self.n_triggers + self.n_outputs + 1}; got {self.vocab_size}")
        check_number(self.alpha, "alpha", minimum=0, below=1)
        check_int(self.length, "length", minimum=5 if self.alpha > 0 else 3)

    @property
    def noise(self) -> int:
        """The id of the noise token ``tau``."""
        return self.vocab_size

    @property
    def max_token(self) -> int:
        """The largest token id a sentence may hold: ``tau`` when ``alpha > 0``, else the last
        word."""
        return self.noise if self.alpha > 0 else self.vocab_size - 1

    @property
    def n_classes(self) -> int:
        """How many logits the model has: the ``N`` words, and ``tau`` when ``alpha > 0``."""
        return self.vocab_size + (self.alpha > 0)

    @property
    def dim(self) -> int:
        """The embedding width ``d = 2(N + 1)``."""
        return 2 * (self.vocab_size + 1)

    def sample(self, batch: int, generator: torch.Generator | None = None, ood: bool = False,
               stratified: bool = False, before_query: int | None = None):
        """``(tokens LongTensor[batch, length], target LongTensor[batch])``.

        ``ood=True`` draws the output word of each sentence from the fillers (words outside
        triggers and outputs), as in Theorems 3.3 and 5.5, and the other fillers of that
        sentence uniformly from the rest, so that its output word occurs only in its bigram.
        ``stratified=True`` cycles the trigger and output word through all pairs instead of
        drawing them, so that a batch of a multiple of ``n_triggers * n_outputs`` sentences
        gives the population gradient exactly
        (every sentence here has one ``(q, y)`` bigram). ``before_query`` fixes the filler just
        before the final trigger (the instance of Theorem 3.4)."""
        batch = check_int(batch, "batch", minimum=1)
        check_generator(generator)
        ood, stratified = check_bool(ood, "ood"), check_bool(stratified, "stratified")
        Q, n_out, H = self.n_triggers, self.n_outputs, self.length
        fillers = torch.arange(Q + n_out, self.vocab_size)
        if before_query is not None and before_query not in fillers.tolist():
            raise ValueError(f"before_query must be a filler id in [{Q + n_out}, "
                             f"{self.vocab_size}), got {before_query}")
        index = torch.arange(batch)
        if stratified:
            q, pick = index % Q, (index // Q) % n_out
        else:
            q = torch.randint(Q, (batch,), generator=generator)
            pick = torch.randint(n_out if not ood else len(fillers), (batch,), generator=generator)
        y = fillers[pick] if ood else Q + pick
        if ood:  # uniform over the fillers other than the OOD output word
            drawn = torch.randint(len(fillers) - 1, (batch, H), generator=generator)
            tokens = fillers[drawn + (drawn >= pick[:, None]).long()]
        else:
            tokens = fillers[torch.randint(len(fillers), (batch, H), generator=generator)]
        if before_query is not None:
            tokens[:, H - 2] = before_query
        last_start = H - 3 if before_query is None else H - 4  # a bigram's first position
        starts = self._distinct_starts(batch, last_start + 1, generator)
        tokens[index, starts[:, 0]], tokens[index, starts[:, 0] + 1] = q, y
        if self.alpha > 0:
            tokens[index, starts[:, 1]], tokens[index, starts[:, 1] + 1] = q, self.noise
        tokens[:, H - 1] = q
        noisy = torch.rand(batch, generator=generator) < self.alpha
        return tokens, torch.where(noisy, self.noise, y)

    def _distinct_starts(self, batch, n_starts, generator):
        """Two start positions per sentence in ``[0, n_starts)`` whose bigrams do not overlap."""
        first = torch.randint(n_starts, (batch,), generator=generator)
        scores = torch.rand(batch, n_starts, generator=generator)
        position = torch.arange(n_starts)
        scores[(position - first[:, None]).abs() <= 1] = -1.0
        return torch.stack([first, scores.argmax(dim=1)], dim=1)

    @staticmethod
    def _after_trigger(tokens: torch.Tensor):
        """``(after_q, following)``, both ``[B, H-1]``: whether ``z_h`` is the final trigger,
        and ``z_{h+1}``, the word that follows it."""
        return tokens[:, :-1] == tokens[:, -1:], tokens[:, 1:]

    def output_word(self, tokens: torch.Tensor) -> torch.Tensor:
        """``y`` of each sentence, ``LongTensor[B]``: the word after an earlier occurrence of
        the final trigger that is not ``tau`` (-1 where there is none)."""
        tokens = _check_tokens(tokens, "tokens", ranks=(2,), shortest=2)
        after_q, following = self._after_trigger(tokens)
        return torch.where(after_q & (following != self.noise), following, -1).amax(dim=1)

    def conditions(self, tokens: torch.Tensor, target: torch.Tensor, ood: bool = False):
        """Conditions (I)-(IV) of Definition 2.1 (and a well-formed target) for each sentence:
        a dict of ``BoolTensor[B]``. ``y`` is read off the sentence as the word after ``q``
        that is not ``tau``; with ``ood=True`` it must be a filler instead of an output word."""
        tokens = _check_tokens(tokens, "tokens", ranks=(2,), shortest=2)
        target = _check_tokens(target, "target", ranks=(1,))
        if target.shape[0] != tokens.shape[0]:
            raise ValueError(f"target must have one entry per sentence ({tokens.shape[0]}), "
                             f"got {target.shape[0]}")
        ood = check_bool(ood, "ood")
        Q, n_out, tau = self.n_triggers, self.n_outputs, self.noise
        q, previous = tokens[:, -1], tokens[:, :-1]
        after_q, following = self._after_trigger(tokens)
        y = self.output_word(tokens)
        is_output = ((y >= Q + n_out) & (y < self.vocab_size)) if ood else \
            ((y >= Q) & (y < Q + n_out))
        is_trigger = lambda t: (t >= 0) & (t < Q)  # noqa: E731
        is_word = lambda t: (t >= Q) & (t < Q + n_out)  # noqa: E731
        tau_at = tokens == tau
        return {
            "last token is a trigger": is_trigger(q),
            "(I) a (q, y) bigram": (after_q & (following == y[:, None])).any(dim=1) & is_output,
            "(II) tau only if alpha > 0, after q": ~tau_at.any(dim=1) if self.alpha == 0 else
            ~tau_at[:, 0] & ~(tau_at[:, 1:] & ~after_q).any(dim=1),
            "(III) q is followed by y or tau": ~(after_q & (following != y[:, None])
                                                  & (following != tau)).any(dim=1),
            "(IV) other triggers precede outputs": ~(is_trigger(previous) & ~after_q
                                                      & ~is_word(following)).any(dim=1),
            "target is y or tau": (target == y) | ((target == tau) & (self.alpha > 0)),
        }

    def validate(self, tokens, target, ood: bool = False) -> None:
        """Raise ``ValueError`` naming the first sentence and condition that fails."""
        for name, holds in self.conditions(tokens, target, ood).items():
            if not holds.all():
                bad = int((~holds).nonzero()[0])
                raise ValueError(f"sentence {bad} violates condition {name!r}")


def _check_tokens(tokens, name: str, ranks: tuple[int, ...], shortest: int = 1) -> torch.Tensor:
    """``tokens`` as an integer tensor whose rank is one of ``ranks`` and whose last dimension
    is at least ``shortest`` long (2 for sentences: the query and a word before it)."""
    check_tensor(tokens, name)
    if tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
        raise TypeError(f"{name} must be a LongTensor of token ids, got dtype {tokens.dtype}")
    if tokens.dim() not in ranks or tokens.shape[-1] < shortest:
        raise ValueError(f"{name} must be a tensor of rank {' or '.join(map(str, ranks))} "
                         f"whose last dimension is at least {shortest}, got shape "
                         f"{list(tokens.shape)}")
    return tokens


class RecallModels(torch.nn.Module):
    """Several one-layer models (1), ``names`` x ``seeds``, evaluated in one computation.

    ``self.parameters_of[k]`` lists the trainable tensors of model ``k`` (in the order
    ``for seed in seeds for name in names``). Origin models start from ``N(0, init_std^2)``
    entries; ``W`` of a Reparam-...-W model and all ``lambda``, ``gamma`` start at 0; ``s``
    starts at Theorem 4.2's ``s_0 = (Q ln H + 2) / 2``. ``fixed_gamma`` freezes ``gamma`` at a
    given value (Algorithm 1)."""

    def __init__(self, task: RecallTask, names=MODEL_NAMES, seeds=(0,), init_std: float = 0.02,
                 fixed_gamma: float | None = None, device=None):
        super().__init__()
        if not isinstance(task, RecallTask):
            raise TypeError(f"task must be a RecallTask, got {type(task).__name__}")
        if isinstance(names, str | Variant):
            names = (names,)
        if not names:
            raise ValueError("names must name at least one model")
        if isinstance(seeds, str) or not hasattr(seeds, "__iter__"):
            raise TypeError(f"seeds must be a list of ints, got {type(seeds).__name__}")
        seeds = [check_int(seed, "every seed", minimum=0) for seed in seeds]
        if not seeds:
            raise ValueError("seeds must hold at least one seed")
        init_std = check_number(init_std, "init_std", minimum=0)
        if fixed_gamma is not None:
            fixed_gamma = check_number(fixed_gamma, "fixed_gamma")
        variants = []
        for name in names:
            if not isinstance(name, Variant):
                check_choice(name, "names", MODEL_NAMES)
                name = _VARIANT_NAMED[name]
            variants.append(name)
        self.task, self.device = task, check_device(device) or default_device()
        self.fixed_gamma, self.init_std = fixed_gamma, init_std
        self.variants = [variant for _ in seeds for variant in variants]
        self.names = [variant.name for variant in self.variants]
        self.seeds = [seed for seed in seeds for _ in variants]
        # the models of each nonlinear activation, as index tensors (no mask sync on a GPU)
        self.models_with = {activation: torch.tensor(
            [k for k, variant in enumerate(self.variants) if variant.activation == activation],
            dtype=torch.long, device=self.device) for activation in ("relu", "softmax")}
        self.parameters_of = [self._initial_parameters(variant, seed)
                              for variant, seed in zip(self.variants, self.seeds, strict=True)]
        self.values = torch.nn.ParameterList(
            [p for parameters in self.parameters_of for p in parameters.values()])
        eye = torch.eye(task.dim, dtype=torch.float64, device=self.device)
        self.E, self.Etilde = eye[: task.vocab_size + 1], eye[task.vocab_size + 1:]

    def _initial_parameters(self, variant: Variant, seed: int) -> dict:
        """The trainable tensors of one model, as the class docstring says they start."""
        task, d = self.task, self.task.dim

        def zeros(*shape):
            return torch.nn.Parameter(torch.zeros(*shape, dtype=torch.float64,
                                                  device=self.device))

        if variant.training == "Origin":
            generator = runtime_generator(seed)
            return {key: torch.nn.Parameter(
                        (torch.randn(d, d, generator=generator, dtype=torch.float64)
                         * self.init_std).to(self.device))
                    for key in ("V", "W", "F")}
        if variant.training == "Reparam-W":
            parameters = {"W": zeros(d, d)}
        else:
            parameters = {"lambda": zeros(task.n_triggers if task.alpha == 0 else 1)}
        if variant.activation == "softmax":
            parameters["s"] = zeros(1)
            with torch.no_grad():
                parameters["s"].fill_((task.n_triggers * math.log(task.length) + 2) / 2)
        if task.alpha > 0 and self.fixed_gamma is None:
            parameters["gamma"] = zeros(1)
        return parameters

    def matrices(self):
        """``(V, W, F)``, each ``[K, d, d]``, built from every model's parameters."""
        triples = [self._matrices_of(variant, parameters)
                   for variant, parameters in zip(self.variants, self.parameters_of, strict=True)]
        return tuple(torch.stack(matrices) for matrices in zip(*triples, strict=True))

    def _matrices_of(self, variant: Variant, p: dict):
        """One model's ``(V, W, F)``: its parameters, or the reparameterizations of Lemmas 3.1
        and 4.1 (noiseless) and 5.1 and 5.2 (noisy) built from its scalars."""
        if variant.training == "Origin":
            return p["V"], p["W"], p["F"]
        task, E, Et = self.task, self.E, self.Etilde
        Q, tau, d = task.n_triggers, task.noise, task.dim
        softmax = variant.activation == "softmax"
        eye = torch.eye(d, dtype=torch.float64, device=self.device)
        V = p["s"] * eye if softmax else eye
        if "W" in p:
            W = p["W"]
        else:  # W = sum_q lambda_q E(q) key(q)^T: row q of W is lambda_q key(q)
            keys = Et[:Q] - (Et[:task.vocab_size].sum(0) - Et[:Q] if softmax else 0)
            if task.alpha > 0:
                keys = keys - (2 if softmax else 1) * E[tau]
            rows = p["lambda"].expand(Q)[:, None] * keys
            W = torch.cat([rows, rows.new_zeros(d - Q, d)])
        if task.alpha > 0:  # F = E(tau) (sum_q gamma E(q) + Etilde(q))^T
            gamma = p["gamma"] if "gamma" in p else self.fixed_gamma
            F = torch.outer(E[tau], gamma * E[:Q].sum(0) + Et[:Q].sum(0))
        else:
            F = torch.zeros(d, d, dtype=torch.float64, device=self.device)
        return V, W, F

    def forward(self, tokens: torch.Tensor):
        """Logits ``(xi_A, xi_F)``, each ``[K, B, n_classes]``, for ``tokens`` of shape
        ``[B, H]`` (the same sentences for every model) or ``[K, B, H]``."""
        task = self.task
        _check_tokens(tokens, "tokens", ranks=(2, 3), shortest=2)
        if tokens.dim() == 3 and tokens.shape[0] != len(self.names):
            raise ValueError(f"tokens of shape [K, B, H] need K = {len(self.names)} (the "
                             f"models), got {list(tokens.shape)}")
        highest = task.max_token
        if bool(((tokens < 0) | (tokens > highest)).any()):
            raise ValueError(f"tokens must hold ids 0..{highest} (the noise token {task.noise} "
                             "only when alpha > 0)")
        if tokens.dim() == 2:
            tokens = tokens.expand(len(self.names), *tokens.shape)
        tokens = tokens.to(self.device)
        K, B, H = tokens.shape
        d, offset = task.dim, task.vocab_size + 1
        V, W, F = self.matrices()
        k = torch.arange(K, device=self.device)[:, None]
        current = tokens
        previous = torch.cat([torch.full((K, B, 1), d, device=self.device),
                              tokens[..., :-1] + offset], dim=-1)  # slot d: no token
        z_last, z_before = current[..., -1], previous[..., -1]  # x_H = e_{z_last} + e_{z_before}
        u = W[k, z_last] + W[k, z_before]  # x_H^T W, [K, B, d]
        u = torch.nn.functional.pad(u, (0, 1))
        scores = u.gather(2, current) + u.gather(2, previous)  # x_H^T W x_h, [K, B, H]
        sigma = scores  # the linear models keep their scores
        for activation, index in self.models_with.items():
            chosen = scores.index_select(0, index)  # ReLU with derivative 1 at 0
            sigma = sigma.index_copy(0, index, torch.where(chosen >= 0, chosen, 0.0)
                                     if activation == "relu" else chosen.softmax(dim=-1))
        summed = torch.zeros(K, B, d + 1, dtype=torch.float64, device=self.device)
        summed = summed.scatter_add(2, current, sigma).scatter_add(2, previous, sigma)
        phi = torch.einsum("kij,kbj->kbi", V, summed[..., :d])
        n = task.n_classes
        xi_A = phi[..., :n]
        F_x_last = F[k, :n, z_last] + F[k, :n, z_before]  # [K, B, n]
        xi_F = F_x_last + torch.einsum("kij,kbj->kbi", F[:, :n], phi)
        return xi_A, xi_F

    def losses(self, tokens, target=None) -> torch.Tensor:
        """Mean cross-entropy (nats) of each model, ``[K]``, on ``tokens: [B, H]`` or ``[K, B, H]``.

        With ``target`` (``LongTensor[B]`` or ``[K, B]``): the loss on those targets. With
        ``target=None``: the expected loss over the target given each sentence,
        ``(1 - alpha) (-ln p(y)) + alpha (-ln p(tau))``. Its mean over sampled sentences is the
        population loss with the label noise integrated out exactly; it exceeds the Bayes loss
        by the mean KL divergence from the true next-word distribution to the model's (>= 0)."""
        xi_A, xi_F = self(tokens)
        log_p = (xi_A + xi_F).log_softmax(dim=-1)  # [K, B, n_classes]
        if target is not None:
            _check_tokens(target, "target", ranks=(1, 2))
            if target.shape[-1] != log_p.shape[1] or bool(
                    ((target < 0) | (target >= self.task.n_classes)).any()):
                raise ValueError(f"target must hold one class id in 0..{self.task.n_classes - 1} "
                                 f"per sentence ({log_p.shape[1]}), got shape "
                                 f"{list(target.shape)}")
            target = target.to(self.device).expand(log_p.shape[:2])
            return -log_p.gather(2, target[..., None])[..., 0].mean(dim=1)
        y = self.task.output_word(tokens.flatten(0, -2)).view(tokens.shape[:-1])
        if (y < 0).any():
            raise ValueError("tokens: every sentence needs an output word after its final "
                             "trigger when target is None")
        y = y.to(self.device).expand(log_p.shape[:2])
        loss = -(1 - self.task.alpha) * log_p.gather(2, y[..., None])[..., 0]
        if self.task.alpha > 0:
            loss = loss - self.task.alpha * log_p[..., self.task.noise]
        return loss.mean(dim=1)

    def normalized_step(self, loss_per_model: torch.Tensor, lr: float) -> None:
        """One step of normalized gradient descent (eq. 3) for every model: each model moves
        its own parameters by ``lr`` along its negative gradient, normalized to unit length."""
        lr = check_number(lr, "lr", minimum=0)
        grads = torch.autograd.grad(loss_per_model.sum(), list(self.values), allow_unused=True)
        by_tensor = {id(p): g for p, g in zip(self.values, grads, strict=True)}
        with torch.no_grad():
            for params in self.parameters_of:
                gs = [by_tensor[id(p)] for p in params.values()]
                norm = torch.sqrt(sum((g**2).sum() for g in gs if g is not None))
                norm = torch.where(norm > 0, norm, 1.0)  # zero gradient: no step, no 0 / 0
                for p, g in zip(params.values(), gs, strict=True):
                    if g is not None:
                        p -= lr * g / norm


def _check_sentences(pair, name: str, target_required: bool,
                     highest: int | None = None) -> None:
    """``pair`` must be ``(tokens LongTensor[M, H], target LongTensor[M])`` (``target`` may be
    ``None`` unless ``target_required``), with token ids at most ``highest`` if given."""
    if not isinstance(pair, tuple | list) or len(pair) != 2:
        raise TypeError(f"{name} must be a pair (tokens, target), got {type(pair).__name__}")
    tokens, target = pair
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.is_floating_point() \
            or tokens.dtype == torch.bool:
        raise TypeError(f"{name}: tokens must be a LongTensor[M, H]")
    if highest is not None and bool(((tokens < 0) | (tokens > highest)).any()):
        raise ValueError(f"{name}: tokens must hold ids 0..{highest}")
    if target is None and not target_required:
        return
    if not isinstance(target, torch.Tensor) or target.shape != tokens.shape[:1]:
        raise ValueError(f"{name}: target must be a LongTensor[M] with one entry per sentence "
                         f"(M = {tokens.shape[0]})")


def _mean_losses(models: RecallModels, tokens: torch.Tensor, target) -> torch.Tensor:
    """``models.losses(tokens, target)`` over ``tokens: [M, H]`` taken in chunks of sentences
    that keep each intermediate ``[K, rows, H]`` tensor within ``EVALUATION_ELEMENTS``."""
    rows = max(1, EVALUATION_ELEMENTS // (len(models.names) * tokens.shape[1]))
    total = 0.0
    for start in range(0, len(tokens), rows):
        chunk = tokens[start:start + rows]
        chunk_target = None if target is None else target[start:start + rows]
        total = total + models.losses(chunk, chunk_target) * len(chunk)
    return total / len(tokens)


def train(models: RecallModels, steps: int, batch: int, lr: float, generator=None,
          data=None, evaluate=None, eval_every: int = 10, progress: bool = True):
    """Train every model with normalized gradient descent and record its losses.

    Without ``data``, each step draws a fresh batch per seed (training on the population
    loss). With ``data = (tokens, target)``, a fixed set of ``M`` sentences shared by every
    model, training goes through the set in epochs: each epoch shuffles it and takes
    ``M // batch`` minibatches of ``batch`` sentences (the remainder waits for a later epoch's
    shuffle), so ``steps = epochs * (M // batch)``. Every ``eval_every`` steps
    the loss on each set of ``evaluate = {"population": (tokens, target), ...}`` is recorded
    (``target=None`` records the expected loss over the label noise, see
    :meth:`RecallModels.losses`), in chunks of sentences that bound memory (see
    ``EVALUATION_ELEMENTS``); the chunks are weighted by their sizes, so the record is the
    mean over the whole set.
    Returns ``{"step": [...], "<key>": Tensor[records, K]}``."""
    from tqdm.auto import tqdm

    if not isinstance(models, RecallModels):
        raise TypeError(f"models must be a RecallModels, got {type(models).__name__}")
    check_int(steps, "steps", minimum=1)
    check_int(eval_every, "eval_every", minimum=1)
    check_number(lr, "lr", minimum=0)
    check_generator(generator)
    if data is not None:
        _check_sentences(data, "data", target_required=True, highest=models.task.max_token)
    check_int(batch, "batch", minimum=1, maximum=None if data is None else len(data[1]))
    if evaluate is not None:
        if not isinstance(evaluate, dict):
            raise TypeError("evaluate must be a dict {name: (tokens, target)}, got "
                            f"{type(evaluate).__name__}")
        for key, pair in evaluate.items():
            _check_sentences(pair, f"evaluate[{key!r}]", target_required=False)
    task, history = models.task, {"step": []}
    seeds = sorted(set(models.seeds))
    seed_of = torch.tensor([seeds.index(s) for s in models.seeds])
    for key in evaluate or {}:
        history[key] = []
    if data is not None:
        data_tokens, data_target = data
        unused = torch.empty(0, dtype=torch.long)  # this epoch's sentences not yet used
    for step in tqdm(range(steps + 1), disable=not progress, desc="training"):
        if evaluate and (step % eval_every == 0 or step == steps):
            with torch.no_grad():
                history["step"].append(step)
                for key, (tokens, target) in evaluate.items():
                    history[key].append(_mean_losses(models, tokens, target).cpu())
        if step == steps:
            break
        if data is None:
            sampled = [task.sample(batch, generator) for _ in seeds]
            tokens = torch.stack([t for t, _ in sampled])[seed_of]
            target = torch.stack([y for _, y in sampled])[seed_of]
        else:
            if len(unused) < batch:  # a new epoch
                unused = torch.randperm(len(data_target), generator=generator)
            chosen, unused = unused[:batch], unused[batch:]
            tokens, target = data_tokens[chosen], data_target[chosen]
        models.normalized_step(models.losses(tokens, target), lr)
    return {key: (torch.stack(v) if key != "step" else v) for key, v in history.items()}


def estimate_gamma(target: torch.Tensor, task: RecallTask) -> float:
    """Algorithm 1's ``gamma_hat = ln(alpha_hat / (1 - alpha_hat))``, with ``alpha_hat`` the
    share of targets that are ``tau``."""
    if not isinstance(task, RecallTask):
        raise TypeError(f"task must be a RecallTask, got {type(task).__name__}")
    target = _check_tokens(target, "target", ranks=(1,))
    alpha_hat = (target == task.noise).double().mean().item()
    if not 0 < alpha_hat < 1:
        raise ValueError(f"target: the share of noise targets must lie in (0, 1), got {alpha_hat}")
    return math.log(alpha_hat / (1 - alpha_hat))
