"""Training many small transformer recognizers at once: the learning experiments of
[chiang2022overcoming] §5.1 and §5.4 (keys of book/references.bib).

The model follows the authors' text (their §5.1): learned word embeddings for 0, 1 and CLS, the
fixed position features of the matching exact solution (``[i=1]`` for FIRST; ``i/n`` and
``cos(i pi)`` for PARITY), two post-norm layers with ``d_model = 16``, ``d_ff = 64``, no
dropout, layer norm eps ``1e-5``, one head for FIRST and two for PARITY. The text leaves the
rest open, and the book chooses: the position features enter through a learned linear map added
to the word embedding, each layer is PyTorch's ``nn.TransformerEncoderLayer`` (ReLU), and a
linear output on CLS gives the logit. :class:`Recognizer` is that model in plain PyTorch, one
run at a time; its default initialization is PyTorch's.

:func:`train` trains a whole grid of such models (runs x train lengths x variants) as one
computation: every parameter is stacked along a leading "model" dimension, the forward pass
(:func:`stacked_logits_and_attention`, a page of plain tensor code) is written out for the
stack, each linear map one batched matrix product, and one Adam updates the stack (the book's
one training loop, :func:`companion.stacked.optimize`), which is the same as one Adam per
model. The variant ``"scaled"`` multiplies every attention logit by ``log n``
([chiang2022overcoming] eq. 2; natural log, ``n`` counting CLS).

Positions that the model cannot tell apart are computed once. In FIRST's model every position
``i >= 2`` with the same symbol has the same input, hence the same query, key and value in
every layer, so a string reduces to four *token types* (CLS, the first symbol, the 0s after
it, the 1s after it) with multiplicities, and attention over positions becomes attention over
types with ``log(count)`` added to each logit. This is exact, and it makes a string of length
1000 cost as little as one of length 3. PARITY's features differ at every position, so its
strings keep one type per position.

This recognizer is the book's one learned model outside :mod:`companion.model`, which every
other learning experiment trains (Chapters 10 to 12): it is post-norm, as the paper's, reads
position features, and runs over token types, none of which the shared model does.
"""

import hashlib
import math
import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from companion import runtime
from companion._checks import (
    check_choice,
    check_device,
    check_dtype,
    check_int,
    check_keys,
    check_number,
)
from companion.languages import as_strings, first, parity, random_strings
from companion.stacked import optimize, stack_modules
from companion.transformer import CLS

LANGUAGES = {"first": first, "parity": parity}
HEADS = {"first": 1, "parity": 2}
VARIANTS = ("standard", "scaled")
SCORE_BUDGET = 2**24  # attention logits held at once when testing (models x strings x T x T)


def position_features(language: str, n: int) -> torch.Tensor:
    """The fixed position features of the exact solution for ``language`` at positions
    ``0..n-1`` (position 0 is CLS): ``[n, 1]`` holding ``[i=1]`` for FIRST, ``[n, 2]`` holding
    ``i/n`` and ``cos(i pi)`` for PARITY."""
    check_choice(language, "language", tuple(LANGUAGES))
    n = check_int(n, "n", minimum=1)
    i = torch.arange(n, dtype=torch.float64)
    if language == "first":
        return (i == 1).double().unsqueeze(1)
    return torch.stack([i / n, torch.cos(i * math.pi)], dim=1)


def token_types(language: str, w: torch.Tensor):
    """What the model sees of the strings ``w: LongTensor[B, m]`` (no CLS), as
    ``(symbols [B, T], features [B, T, k], log_counts [B, T])``: ``T`` token types, each with a
    symbol, position features and the log of how many positions hold it (``-inf`` when none).

    For FIRST, ``T = 4`` types: CLS, the first symbol, 0s after it, 1s after it. For PARITY,
    ``T = m + 1``: every position is its own type, CLS first. ``w`` may be a str.
    """
    check_choice(language, "language", tuple(LANGUAGES))
    w = as_strings(w)
    B, m = w.shape
    if m < 1:
        raise ValueError("w must hold strings of length >= 1")
    if language == "parity":
        symbols = torch.cat([torch.full((B, 1), CLS, device=w.device), w], dim=1)
        features = position_features("parity", m + 1).to(w.device).expand(B, -1, -1)
        return symbols, features, torch.zeros(B, m + 1, dtype=torch.float64, device=w.device)
    ones = w[:, 1:].sum(dim=1)
    symbols = torch.stack([torch.full((B,), CLS, device=w.device), w[:, 0],
                           torch.zeros_like(ones), torch.ones_like(ones)], dim=1)
    features = torch.tensor([0.0, 1.0, 0.0, 0.0], dtype=torch.float64,
                            device=w.device).expand(B, 4)
    counts = torch.stack([torch.ones_like(ones), torch.ones_like(ones), m - 1 - ones, ones], 1)
    return symbols, features.unsqueeze(-1), counts.double().log()


class Recognizer(nn.Module):
    """One model of the experiment in plain PyTorch: ``forward(w)`` gives the
    logits ``[B]`` of the strings ``w: LongTensor[B, m]`` with standard
    attention, one position per symbol. Its parameters, created by PyTorch's
    default initialization, are the ones :func:`train` stacks."""

    def __init__(self, language: str, d: int = 16, d_ff: int = 64,
                 eps: float = 1e-5):
        super().__init__()
        check_choice(language, "language", tuple(LANGUAGES))
        d = check_int(d, "d", minimum=1)
        d_ff = check_int(d_ff, "d_ff", minimum=1)
        eps = check_number(eps, "eps", minimum=0)
        if d % HEADS[language]:
            raise ValueError(f"d must be a multiple of the "
                             f"{HEADS[language]} heads, got d = {d}")
        self.language = language
        self.embedding = nn.Embedding(3, d)  # symbols 0, 1, CLS
        n_features = position_features(language, 2).shape[1]
        self.position = nn.Linear(n_features, d)
        layer = nn.TransformerEncoderLayer(
            d, HEADS[language], d_ff, dropout=0.0, batch_first=True,
            layer_norm_eps=eps)
        self.encoder = nn.TransformerEncoder(layer, 2,
                                             enable_nested_tensor=False)
        self.output = nn.Linear(d, 1)

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        """The logits ``[B]`` of ``w: LongTensor[B, m]`` (or a str)."""
        w = as_strings(w).to(self.output.weight.device)
        cls = torch.full((w.shape[0], 1), CLS, device=w.device)
        symbols = torch.cat([cls, w], dim=1)
        features = position_features(self.language, symbols.shape[1])
        features = features.to(self.output.weight)
        x = self.embedding(symbols) + self.position(features)
        return self.output(self.encoder(x)[:, 0]).squeeze(-1)


def logits_and_attention(p: dict, symbols, features, log_counts, scale, heads: int,
                         eps: float = 1e-5):
    """One model's forward pass over token types (see :func:`token_types`): the stacked pass
    (:func:`stacked_logits_and_attention`) of a stack of one.

    ``p``: the model's parameters by :class:`Recognizer`'s names. ``symbols: [S, T]``,
    ``features: [S, T, k]``, ``log_counts: [S, T]``; ``scale`` multiplies every attention logit
    (1, or ``log n``). Returns the logits ``[S]`` and the attention weight from CLS to
    position 1 (type 1), averaged over heads and summed over the two layers, ``[S]``.
    """
    check_keys(p, "p", PARAMETERS)
    logits, to_first = stacked_logits_and_attention(
        {name: value[None] for name, value in p.items()}, symbols[None], features[None],
        log_counts[None], scale, heads, eps)
    return logits[0], to_first[0]


def stacked_logits_and_attention(p: dict, symbols, features, log_counts, scale, heads: int,
                                 eps: float = 1e-5):
    """The forward pass of stacked models over token types, written out.

    ``p``: every model's parameters by :class:`Recognizer`'s names, stacked along a leading
    model dimension (``[models, ...]``). ``symbols: [models, S, T]``, ``features: [models, S,
    T, k]``, ``log_counts: [models, S, T]``; ``scale: [models]`` multiplies every attention
    logit of its model (1, or ``log n``). Returns the logits ``[models, S]`` and the attention
    weight from CLS to position 1 (type 1), averaged over heads and summed over the two layers,
    ``[models, S]``. A number for ``scale`` is every model's.
    """
    check_keys(p, "p", PARAMETERS)
    for name, value, dims in (("symbols", symbols, 3), ("features", features, 4),
                              ("log_counts", log_counts, 3)):
        if not isinstance(value, torch.Tensor) or value.dim() != dims:
            raise ValueError(f"{name} must be a tensor of {dims} dimensions [models, S, T"
                             f"{', k' if dims == 4 else ''}], got "
                             f"{list(value.shape) if isinstance(value, torch.Tensor) else value}")
    models = symbols.shape[0]
    scale = torch.as_tensor(scale, dtype=features.dtype, device=features.device)
    if scale.shape not in ((), (models,)):
        raise ValueError(f"scale must be a number or one per model, [{models}], got shape "
                         f"{list(scale.shape)}")
    scale = scale.expand(models)
    embedding = p["embedding.weight"][torch.arange(models, device=symbols.device)[:, None, None],
                                      symbols]
    x = embedding + _linear(features, p["position.weight"], p["position.bias"])
    to_first = 0.0
    for layer in range(2):
        x, alpha = encoder_layer({name.removeprefix(f"encoder.layers.{layer}."): value
                                   for name, value in p.items()}, x, log_counts, scale, heads, eps)
        to_first = to_first + alpha[..., 0, 1].mean(dim=-1)
    logits = _linear(x[:, :, 0], p["output.weight"], p["output.bias"]).squeeze(-1)
    return logits, to_first


LAYER_PARAMETERS = ("self_attn.in_proj_weight", "self_attn.in_proj_bias",
                    *(f"{module}.{kind}" for module in ("self_attn.out_proj", "linear1",
                                                        "linear2", "norm1", "norm2")
                      for kind in ("weight", "bias")))
"""The parameters of one ``nn.TransformerEncoderLayer``, by their names in that module."""
PARAMETERS = ("embedding.weight", "position.weight", "position.bias", "output.weight",
              "output.bias", *(f"encoder.layers.{layer}.{name}" for layer in range(2)
                               for name in LAYER_PARAMETERS))
"""The parameters of a :class:`Recognizer`, by their names in that module."""


def _linear(x, weight, bias):
    """``F.linear`` of each stacked model: ``x: [models, ..., k]``, ``weight: [models, out,
    k]``, ``bias: [models, out]``; one batched matrix product."""
    models, *middle, k = x.shape
    y = torch.baddbmm(bias[:, None], x.reshape(models, -1, k), weight.transpose(1, 2))
    return y.reshape(models, *middle, -1)


def encoder_layer(w: dict, x, log_counts, scale, heads: int, eps: float):
    """``nn.TransformerEncoderLayer`` (ReLU, no dropout, post-norm, the paper's) of stacked
    models over token types, with their parameters ``w`` (``[models, ...]``) by their names in
    that module; ``x: [models, S, T, d]``, ``log_counts: [models, S, T]``, ``scale: [models]``.
    Also returns the attention weights ``[models, S, heads, T, T]``. (The book's other learned
    models are pre-norm: :mod:`companion.model`.)"""
    check_keys(w, "w", LAYER_PARAMETERS)
    if x.dim() != 4:
        raise ValueError(f"x must be [models, S, T, d], got shape {list(x.shape)}")
    models, S, T, d = x.shape
    if d % heads:
        raise ValueError(f"heads must divide the model dimension d = {d}, got heads = {heads}")

    def norm(y, name):  # each model's own gain and bias
        gain, bias = (w[f"{name}.{kind}"][:, None, None] for kind in ("weight", "bias"))
        return torch.addcmul(bias, F.layer_norm(y, (d,), eps=eps), gain)

    qkv = _linear(x, w["self_attn.in_proj_weight"], w["self_attn.in_proj_bias"])
    q, k, v = (t.reshape(models, S, T, heads, d // heads).transpose(2, 3)
               for t in qkv.chunk(3, dim=-1))
    logits = (scale / math.sqrt(d // heads))[:, None, None, None, None] * (q @ k.transpose(-1, -2))
    alpha = torch.softmax(logits + log_counts[:, :, None, None, :], dim=-1)  # a type counts
    attended = (alpha @ v).transpose(2, 3).reshape(models, S, T, d)  # as often as it occurs
    attended = _linear(attended, w["self_attn.out_proj.weight"], w["self_attn.out_proj.bias"])
    x = norm(x + attended, "norm1")
    hidden = torch.relu(_linear(x, w["linear1.weight"], w["linear1.bias"]))
    ffn = _linear(hidden, w["linear2.weight"], w["linear2.bias"])
    return norm(x + ffn, "norm2"), alpha


@dataclass
class Grid:
    """The models trained together: every combination of ``train_lengths`` (``m``, without
    CLS), ``variants`` and ``runs`` run numbers, for one ``language``. Model ``r`` has length
    ``lengths[r]``, variant ``variant_of[r]`` and run number ``run_of[r]``."""

    language: str
    train_lengths: tuple
    runs: int
    variants: tuple = VARIANTS
    lengths: list = field(init=False)
    variant_of: list = field(init=False)
    run_of: list = field(init=False)

    def __post_init__(self):
        check_choice(self.language, "language", tuple(LANGUAGES))
        self.runs = check_int(self.runs, "runs", minimum=1)
        for name in ("train_lengths", "variants"):
            values = getattr(self, name)
            if not isinstance(values, list | tuple | range):
                raise TypeError(f"{name} must be a tuple, got {type(values).__name__}")
            if not values or len(set(values)) != len(values):
                raise ValueError(f"{name} must hold at least one value, each once, got {values}")
        self.train_lengths = tuple(check_int(m, "every entry of train_lengths", minimum=1)
                                   for m in self.train_lengths)
        self.variants = tuple(check_choice(v, "every variant", VARIANTS) for v in self.variants)
        models = [(m, v, r) for m in self.train_lengths for v in self.variants
                  for r in range(self.runs)]
        self.lengths = [m for m, _, _ in models]
        self.variant_of = [v for _, v, _ in models]
        self.run_of = [r for _, _, r in models]

    def __len__(self):
        return len(self.lengths)

    def seed(self, model: int, base: int) -> int:
        """The seed of model ``model``'s initialization and data: it depends on the base seed,
        the train length and the run number, not on the variant (so the two variants of a run
        start from the same weights and see the same strings) nor on the grid around it."""
        model = check_int(model, "model", minimum=0, maximum=len(self) - 1)
        base = check_int(base, "base", minimum=0)
        key = f"{base}/{self.language}/{self.lengths[model]}/{self.run_of[model]}"
        return int(hashlib.sha256(key.encode()).hexdigest()[:15], 16)


@dataclass
class TrainingLog:
    """Per-epoch test metrics of every model of ``grid`` (tested on strings of length
    ``test_length``, or of its own train length if None), each ``[models, epochs]``:
    ``cross_entropy`` (bits per string), ``accuracy``, ``attention_to_first`` (CLS to position
    1, summed over layers, averaged over heads and test strings), and ``train_loss`` (bits per
    string, averaged over the epoch's training strings); ``parameters``, every model's final
    parameters (name -> ``[models, ...]``, by :class:`Recognizer`'s names)."""

    grid: Grid
    test_length: int | None
    cross_entropy: torch.Tensor
    accuracy: torch.Tensor
    attention_to_first: torch.Tensor
    train_loss: torch.Tensor
    parameters: dict

    def save(self, path) -> None:
        """Write the log to ``path`` (``torch.save``), so figures can be redrawn without
        training again."""
        grid = {name: getattr(self.grid, name) for name in
                ("language", "train_lengths", "runs", "variants")}
        torch.save({"grid": grid, "test_length": self.test_length,
                    "parameters": self.parameters,
                    **{name: getattr(self, name) for name in METRICS}}, path)

    @classmethod
    def load(cls, path) -> "TrainingLog":
        """The log that :meth:`save` wrote to ``path``."""
        try:
            saved = torch.load(path)
        except (pickle.UnpicklingError, RuntimeError, EOFError, KeyError) as error:
            raise ValueError(f"path {path} does not hold a saved TrainingLog: "
                             f"{str(error)[:80]}") from None
        check_keys(saved, f"the object saved at path {path}",
                   ("grid", "test_length", "parameters", *METRICS))
        return cls(Grid(**saved["grid"]), saved["test_length"], parameters=saved["parameters"],
                   **{name: saved[name] for name in METRICS})

    def select(self, metric: str, length: int, variant: str) -> torch.Tensor:
        """``metric`` of the runs with train length ``length`` and ``variant``: ``[runs,
        epochs]``."""
        check_choice(metric, "metric", METRICS)
        rows = [r for r in range(len(self.grid)) if self.grid.lengths[r] == length
                and self.grid.variant_of[r] == variant]
        if not rows:
            raise ValueError(f"no model has train length {length} and variant {variant!r}")
        return getattr(self, metric)[rows]


METRICS = ("cross_entropy", "accuracy", "attention_to_first", "train_loss")


def results_folder(start=None) -> Path:
    """The folder where a chapter saves its training logs (:meth:`TrainingLog.save`):
    ``_build/results`` under the root of the book's repository when ``start`` lies inside it,
    and under ``start`` itself otherwise, so that a chapter run from a folder of unzipped
    notebooks writes nothing outside that folder. ``start`` is a folder, by default the working
    directory (where Jupyter runs a notebook); the repository's root is the nearest folder at
    or above it that holds ``_toc.yml`` and a ``companion`` folder. The folder is not created.
    """
    if start is None:
        start = Path.cwd()
    elif not isinstance(start, str | os.PathLike):
        raise TypeError(f"start must be a folder's path, got {type(start).__name__}")
    start = Path(start).resolve()
    for folder in (start, *start.parents):
        if (folder / "_toc.yml").is_file() and (folder / "companion").is_dir():
            return folder / "_build" / "results"
    return start / "_build" / "results"


def stacked_parameters(grid: Grid, seed: int, dtype=torch.float32, device=None) -> dict:
    """Every model's :class:`Recognizer` parameters (seeded by :meth:`Grid.seed`), stacked by
    :func:`companion.stacked.stack_modules`."""
    if not isinstance(grid, Grid):
        raise TypeError(f"grid must be a Grid, got {type(grid).__name__}")
    seeds = [grid.seed(model, seed) for model in range(len(grid))]
    return stack_modules(lambda: Recognizer(grid.language), seeds, dtype, device)


def _pad(parts: list) -> tuple:
    """Token types of several models, padded to one number of types (``-inf`` counts)."""
    T = max(symbols.shape[-1] for symbols, _, _ in parts)

    def pad(t, value):
        extra = T - t.shape[1]
        return F.pad(t, (0, 0, 0, extra) if t.dim() == 3 else (0, extra), value=value)

    return tuple(torch.stack([pad(part[i], value) for part in parts])
                 for i, value in ((0, 0), (1, 0.0), (2, -math.inf)))


def _batch(grid: Grid, strings: list, dtype, device) -> tuple:
    """The models' strings (``strings[r]: [S, m_r]``) as padded token types ``[models, S, T]``
    and each model's attention scale ``[models]``, on ``device``."""
    symbols, features, log_counts = _pad([token_types(grid.language, w) for w in strings])
    scale = torch.tensor([math.log(w.shape[1] + 1) if variant == "scaled" else 1.0
                          for w, variant in zip(strings, grid.variant_of, strict=True)])
    return (symbols.to(device), *(t.to(dtype=dtype, device=device)
                                  for t in (features, log_counts, scale)))


def train(grid: Grid, epochs: int, steps: int = 100, test_strings: int = 100,
          test_length: int | None = 1000, lr: float = 3e-4, seed: int = 0, dtype=torch.float32,
          device=None, progress: bool = True) -> TrainingLog:
    """Train every model of ``grid`` for ``epochs`` epochs of ``steps`` optimizer steps, one
    fresh random string of the model's train length per step, with Adam (learning rate
    ``lr``, :func:`companion.stacked.optimize`); after each epoch, test on ``test_strings``
    fresh strings of length ``test_length`` (``m``, without CLS; ``None``: each model's own
    train length). Model ``r`` draws its strings from its own generator seeded with
    ``grid.seed(r, seed)``, each epoch's training strings, then its test strings. Returns the
    :class:`TrainingLog`. Computes on ``device`` (default :func:`companion.runtime.device`);
    the strings are drawn on the CPU, so a seed gives the same strings on every device."""
    for name, value in (("epochs", epochs), ("steps", steps), ("test_strings", test_strings)):
        check_int(value, name, minimum=1)
    if test_length is not None:
        check_int(test_length, "test_length", minimum=1)
    if not isinstance(grid, Grid):
        raise TypeError(f"grid must be a Grid, got {type(grid).__name__}")
    check_number(lr, "lr", above=0)
    seed, dtype = check_int(seed, "seed", minimum=0), check_dtype(dtype)
    device = check_device(device) or runtime.device()
    params = stacked_parameters(grid, seed, dtype, device)
    heads = HEADS[grid.language]
    generators = [torch.Generator().manual_seed(grid.seed(r, seed)) for r in range(len(grid))]
    language = LANGUAGES[grid.language]
    log = {name: torch.zeros(len(grid), epochs) for name in METRICS}
    drawn = ()  # the current epoch's token types and labels, drawn as it starts

    def losses(step):
        nonlocal drawn
        at = step % steps
        if at == 0:
            strings = [random_strings(steps, m, g) for m, g in zip(grid.lengths, generators,
                                                                     strict=True)]
            labels = torch.stack([language(w) for w in strings]).to(dtype=dtype, device=device)
            drawn = (*_batch(grid, strings, dtype, device), labels)
        symbols, features, log_counts, scale, labels = drawn
        logits, _ = stacked_logits_and_attention(
            params, symbols[:, at:at + 1], features[:, at:at + 1], log_counts[:, at:at + 1],
            scale, heads)
        return F.binary_cross_entropy_with_logits(logits, labels[:, at:at + 1],
                                                  reduction="none")[:, 0]

    def test(step):
        tests = [random_strings(test_strings, test_length or m, g)
                 for m, g in zip(grid.lengths, generators, strict=True)]
        for name, values in evaluate(params, grid, tests, dtype).items():
            log[name][:, step // steps] = values

    history = optimize(params, losses, epochs * steps, lr, progress, "training", every=steps,
                       report=test)
    log["train_loss"][:] = history.reshape(len(grid), epochs, steps).mean(dim=2) / math.log(2)
    final = {name: value.detach().cpu() for name, value in params.items()}
    return TrainingLog(grid, test_length, parameters=final, **log)


def evaluate(params: dict, grid: Grid, strings: list, dtype=torch.float32) -> dict:
    """Test metrics of the stacked models on their strings (``strings[r]: [S, m]``):
    ``cross_entropy`` (bits per string), ``accuracy`` and ``attention_to_first``, each
    ``[models]``, averaged over the strings."""
    if not isinstance(grid, Grid):
        raise TypeError(f"grid must be a Grid, got {type(grid).__name__}")
    if not isinstance(params, dict) or not params:
        raise TypeError("params must be the dict of stacked parameters that train() uses")
    if not isinstance(strings, list | tuple) or len(strings) != len(grid):
        raise ValueError(f"strings must be a list of {len(grid)} LongTensor[S, m], one per model")
    strings = [as_strings(w, "every entry of strings") for w in strings]
    language = LANGUAGES[grid.language]
    heads = HEADS[grid.language]
    device = next(iter(params.values())).device
    labels = torch.stack([language(w) for w in strings]).to(device)
    symbols, features, log_counts, scale = _batch(grid, strings, dtype, device)
    models, S, T = symbols.shape
    chunk = max(1, SCORE_BUDGET // (models * HEADS[grid.language] * T * T))
    with torch.no_grad():
        parts = [stacked_logits_and_attention(
            params, symbols[:, i:i + chunk], features[:, i:i + chunk], log_counts[:, i:i + chunk],
            scale, heads) for i in range(0, S, chunk)]
    logits, attention = (torch.cat(values, dim=1) for values in zip(*parts, strict=True))
    bits = F.binary_cross_entropy_with_logits(logits, labels.to(dtype), reduction="none")
    return {"cross_entropy": bits.mean(dim=1).cpu() / math.log(2),
            "accuracy": ((logits > 0) == labels).double().mean(dim=1).cpu(),
            "attention_to_first": attention.mean(dim=1).cpu()}
