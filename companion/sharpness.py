"""Why sensitive functions are hard for transformers to learn ([hahn2024sensitive]), measured:
fit Boolean functions of ``n`` bits with the book's one model (:mod:`companion.model`), then read
the quantities Hahn & Rofin tie to a function's average sensitivity.

The setup, and where it differs from theirs (their code, ``lacoco-lab/sensitivity-hardness``,
``src/measurements.py``, is the reference for every definition):

* a causal :class:`companion.model.Model` reads the ``n`` bits (tokens 0 and 1) and then
  :data:`OUTPUT`, and decides at that position between two logits. Models of different lengths
  are trained in one stacked run: model ``m``'s string fills positions ``0 .. n_m - 1``,
  :data:`OUTPUT` every later position, and only position ``n_m`` is supervised (with causal
  attention the later positions cannot change it). Theirs: a post-norm encoder without a mask,
  a scalar output at the last position.
* training: Adam on the cross-entropy, fresh uniform strings at every step. Theirs: AdamW with
  weight decay 0.1 on the squared error.
* :func:`parameter_norm`: the Euclidean norm of all parameters but the position table (theirs).
* :func:`blowup`: the layer-norm blow-up, the product over the layer norms of the largest factor
  ``1 / sqrt(var + eps)`` by which each scales its input, over the positions whose norm reaches
  the decision, averaged over strings. Theirs: ``1 / std`` (no ``eps``), the same product of
  maxima, averaged over a batch.
* :func:`sharpness`: the mean increase of the loss (cross-entropy in bits, theirs the squared
  error) when independent Gaussian noise of standard deviation ``epsilon`` (0.02, theirs) is added
  to every parameter but the position table, over ``draws`` draws (10, theirs).
"""

import math
from dataclasses import dataclass

import torch
from tqdm import tqdm

from companion import model as core
from companion._checks import check_generator, check_int, check_number
from companion.languages import all_strings, first, majority, parity
from companion.sensitivity import average_sensitivity, profile_of_values, values

#: The functions :func:`fit` can train on, by name.
TASKS = {"parity": parity, "majority": majority, "first": first}
#: The token after the bits, where a model decides (and on every later position).
OUTPUT = 2
#: The parameter that :func:`parameter_norm` and :func:`sharpness` leave out, as Hahn & Rofin do.
POSITION = "position.weight"
#: The most ``models * strings`` one forward pass of :func:`decider` handles, by device type:
#: few on a CPU, where a pass's tensors then stay in its caches (1.7 times faster than 2**15),
#: many on a GPU, where each pass costs a launch.
CHUNK = {"cpu": 2**11, "cuda": 2**15}


def config(max_length: int, d: int = 32, heads: int = 2, layers: int = 2) -> core.Config:
    """The shape of every model (a companion.model.Config): bits and the
    output token, two logits, learned positions for strings of up to
    max_length bits, causal attention (this docstring is plain text: the
    book prints the function)."""
    max_length = check_int(max_length, "max_length", minimum=1)
    return core.Config(vocab=3, outputs=2, d=d, heads=heads, layers=layers,
                       positions="learned", causal=True,
                       max_length=max_length + 1)


def _labels(bits: torch.Tensor, lengths: torch.Tensor, tasks: torch.Tensor) -> torch.Tensor:
    """Each string's class (0 or 1) under its model's task: ``bits: LongTensor[models, B, N]``
    with 0 beyond each model's length, ``lengths`` and ``tasks`` (indices into :data:`TASKS`)
    ``LongTensor[models]``."""
    ones = bits.sum(dim=-1)
    answers = {"parity": ones % 2 == 1, "majority": 2 * ones > lengths[:, None],
               "first": bits[..., 0] == 1}
    stacked = torch.stack([answers[name] for name in TASKS])
    return stacked[tasks, torch.arange(len(tasks))].long()


def batch(tasks: torch.Tensor, lengths: torch.Tensor, size: int | None,
          generator: torch.Generator | None = None):
    """``size`` fresh uniform strings for each model, of its own length, and their classes under
    its task: ``tokens`` and ``targets``, ``LongTensor[models, size, N + 1]`` with ``N`` the
    longest length, ``targets`` :data:`companion.model.IGNORE` except at each model's decision
    position. ``tasks`` (indices into :data:`TASKS`) and ``lengths`` are ``LongTensor[models]``.
    ``size`` None: every string of ``N`` bits once, in place of random ones (``size = 2**N``);
    each model reads its own first bits, so that every string of its length appears equally
    often, and a mean over them is the exact mean over uniform strings."""
    N = int(lengths.max())
    positions = torch.arange(N + 1)
    inside = positions < lengths[:, None, None]
    if size is None:
        every = torch.cat([all_strings(N), torch.zeros(2**N, 1, dtype=torch.long)], dim=1)
        bits = every.expand(len(lengths), -1, -1) * inside
        size = 2**N
    else:
        size = check_int(size, "size", minimum=1)
        bits = torch.randint(0, 2, (len(lengths), size, N + 1), generator=generator) * inside
    tokens = torch.where(inside, bits, OUTPUT)
    labels = _labels(bits[..., :N], lengths, tasks)
    targets = torch.full_like(tokens, core.IGNORE)
    targets.scatter_(2, lengths[:, None, None].expand(-1, size, 1), labels[..., None])
    return tokens, targets


@dataclass
class Fit:
    """Stacked models trained by :func:`fit`: model ``m`` fits ``TASKS[tasks[m]]`` on
    ``lengths[m]`` bits from ``seeds[m]``; ``params`` (name -> ``[models, ...]``) and ``config``
    as in :mod:`companion.model`, ``losses[m, step]`` in bits."""

    tasks: list
    lengths: torch.Tensor
    seeds: list
    params: dict
    config: core.Config
    losses: torch.Tensor

    def decider(self, n: int):
        """The decisions of the models of length ``n`` as one function for
        :mod:`companion.sensitivity`: strings ``LongTensor[B, n]`` -> ``BoolTensor[k, B]``
        (True for class 1), ``k`` the number of such models."""
        n = check_int(n, "n", minimum=1)
        chosen = (self.lengths == n).nonzero().flatten()
        if len(chosen) == 0:
            raise ValueError(f"n must be one of the fitted lengths "
                             f"{sorted(set(self.lengths.tolist()))}, got {n}")
        params = {name: p.detach()[chosen] for name, p in self.params.items()}
        return decider(params, self.config)


def decider(params: dict, config: core.Config):
    """Stacked models' decisions as one function for :mod:`companion.sensitivity`: strings
    ``LongTensor[B, n]`` -> ``BoolTensor[models, B]``, True where the logit of class 1 exceeds
    that of class 0 at :data:`OUTPUT` after the bits (computed in chunks of
    ``CHUNK[device type]`` model-strings, the CUDA size on any other accelerator)."""
    forward = core.stacked_logits(config)
    some = next(iter(params.values()))
    models, chunk = some.shape[0], CHUNK.get(some.device.type, CHUNK["cuda"])

    def decide(strings):
        tokens = torch.cat([strings, torch.full_like(strings[:, :1], OUTPUT)], dim=1)
        step = max(1, chunk // models)
        parts = []
        with torch.no_grad():
            for start in range(0, len(tokens), step):
                part = tokens[start:start + step].expand(models, -1, -1)
                out = forward(params, part, at=-1)[:, :, 0]
                parts.append(out[..., 1] > out[..., 0])
        return torch.cat(parts, dim=1)

    return decide


def fit(tasks, lengths, seeds, steps: int, size: int = 128, d: int = 32, heads: int = 2,
        layers: int = 2, lr: float = 3e-3, generator: torch.Generator | None = None,
        progress: bool = True) -> Fit:
    """Train one model for every task in ``tasks`` (names in :data:`TASKS`), length in
    ``lengths`` (bits, at least 1) and seed in ``seeds``, all stacked in one run of ``steps``
    Adam steps on ``size`` fresh strings per model; ``generator`` draws the strings."""
    tasks, seeds = list(tasks), list(seeds)
    for task in tasks:
        if task not in TASKS:
            raise ValueError(f"every task must be one of {tuple(TASKS)}, got {task!r}")
    lengths = [check_int(n, "every length", minimum=1) for n in lengths]
    size = check_int(size, "size", minimum=1)
    if not tasks or not lengths or not seeds:
        raise ValueError("tasks, lengths and seeds must each hold at least one entry")
    check_generator(generator)
    grid = [(t, n, s) for t in tasks for n in lengths for s in seeds]
    model_tasks = torch.tensor([list(TASKS).index(t) for t, _, _ in grid])
    model_lengths = torch.tensor([n for _, n, _ in grid])
    shape = config(max(lengths), d, heads, layers)
    params = core.stack(shape, [s for _, _, s in grid])
    losses = core.train(params, shape, lambda step: batch(model_tasks, model_lengths, size,
                                                          generator),
                        steps, lr=lr, progress=progress, description="fitting")
    return Fit([t for t, _, _ in grid], model_lengths, [s for _, _, s in grid],
               {name: p.detach() for name, p in params.items()}, shape, losses)


def parameter_norm(params: dict) -> torch.Tensor:
    """The Euclidean norm of each stacked model's parameters but :data:`POSITION`:
    ``[models]``."""
    squares = [p.detach().flatten(1).pow(2).sum(dim=1) for name, p in params.items()
               if name != POSITION]
    return torch.stack(squares).sum(dim=0).sqrt()


def sharpness(params: dict, config: core.Config, tokens: torch.Tensor, targets: torch.Tensor,
              epsilon: float = 0.02, draws: int = 10,
              generator: torch.Generator | None = None, progress: bool = False) -> torch.Tensor:
    """Hahn & Rofin's sharpness of each stacked model (``[models]``): the mean over ``draws``
    draws of the increase of its loss on ``tokens``, ``targets`` (as :func:`batch` gives them)
    when every parameter but :data:`POSITION` gets independent Gaussian noise of standard
    deviation ``epsilon``."""
    epsilon = check_number(epsilon, "epsilon", above=0)
    draws = check_int(draws, "draws", minimum=1)
    check_generator(generator)
    params = {name: p.detach() for name, p in params.items()}
    with torch.no_grad():
        base = core.stacked_losses(params, config, tokens, targets)
        total = torch.zeros_like(base)
        for _ in tqdm(range(draws), desc="sharpness", disable=not progress, leave=False):
            noisy = {name: p if name == POSITION else
                     p + epsilon * torch.randn(p.shape, generator=generator, dtype=p.dtype)
                     for name, p in params.items()}
            total += core.stacked_losses(noisy, config, tokens, targets)
    return (total / draws - base) / math.log(2)  # in bits


def blowup(params: dict, config: core.Config, tokens: torch.Tensor,
           lengths: torch.Tensor) -> torch.Tensor:
    """Hahn & Rofin's layer-norm blow-up of each stacked model (``[models]``) on ``tokens``
    (``LongTensor[models, B, N + 1]``, each model deciding at position ``lengths[m]``): per
    string, the product over the layer norms of the largest factor ``1 / sqrt(var + eps)`` over
    the positions whose norm reaches the decision (every position up to it for the norms
    before an attention, the decision's own for the last layer's second norm and the final
    norm), averaged over strings."""

    with torch.no_grad():
        params = {name: p.detach() for name, p in params.items()}
        scales = torch.func.vmap(lambda p, t: core.norm_factors(p, t, config))(
            params, tokens)  # [models, norms, B, N + 1]
    positions = torch.arange(tokens.shape[-1])
    reach = positions <= lengths[:, None]  # [models, N + 1]
    own = positions == lengths[:, None]
    last = torch.zeros(scales.shape[1], dtype=torch.bool)
    last[2 * config.layers - 1:] = True  # the last layer's second norm, the final norm
    where = torch.where(last[None, :, None], own[:, None, :], reach[:, None, :])
    largest = scales.masked_fill(~where[:, :, None, :], 0).amax(dim=-1)  # [models, norms, B]
    return largest.prod(dim=1).mean(dim=1)


def measure(result: Fit, size: int = 512, draws: int = 10,
            generator: torch.Generator | None = None) -> dict:
    """Everything the chapter reads from a :func:`fit`, one entry per model (``[models]``):
    ``accuracy`` on every string of its length, ``fitted`` (accuracy 1), the ``sensitivity``
    of its decisions (over all strings), its ``sharpness`` (``draws`` draws) and ``blowup``
    on ``size`` fresh strings per model (on every string of the longest length instead, for
    every model, where there are at most ``size`` of them: see :func:`batch`), and its
    ``norm``."""
    if not isinstance(result, Fit):
        raise TypeError(f"result must be a Fit, got {type(result).__name__}")
    size = check_int(size, "size", minimum=1)
    models = len(result.tasks)
    accuracy = torch.zeros(models, dtype=torch.float64)
    sensitivity = torch.zeros(models, dtype=torch.float64)
    for n in sorted(set(result.lengths.tolist())):  # one exhaustive pass per length
        chosen = (result.lengths == n).nonzero().flatten()
        decide = result.decider(n)
        strings = all_strings(n)
        answers = torch.stack([TASKS[result.tasks[m]](strings) for m in chosen.tolist()])
        decided = values(decide, n)  # one pass over every string of length n
        accuracy[chosen] = (decided == answers).double().mean(dim=1)
        sensitivity[chosen] = profile_of_values(decided).double().mean(dim=1)
    tasks = torch.tensor([list(TASKS).index(task) for task in result.tasks])
    every = 2 ** int(result.lengths.max()) <= size  # the exact mean over fewer strings
    tokens, targets = batch(tasks, result.lengths, None if every else size, generator)
    return {"accuracy": accuracy, "fitted": accuracy == 1.0, "sensitivity": sensitivity,
            "sharpness": sharpness(result.params, result.config, tokens, targets,
                                   draws=draws, generator=generator),
            "blowup": blowup(result.params, result.config, tokens, result.lengths),
            "norm": parameter_norm(result.params)}


def random_sensitivity(lengths, seeds, d: int = 32, heads: int = 2,
                       layers: int = 1) -> torch.Tensor:
    """The average sensitivity of randomly initialized models (PyTorch's default
    initialization, one per seed in ``seeds``, the shape of :func:`config`): ``[lengths,
    seeds]``, each over all strings of that length."""
    lengths = [check_int(n, "every length", minimum=1) for n in lengths]
    if not lengths:
        raise ValueError("lengths must hold at least one length")
    shape = config(max(lengths), d, heads, layers)
    params = {name: p.detach() for name, p in core.stack(shape, list(seeds)).items()}
    decide = decider(params, shape)
    return torch.stack([average_sensitivity(decide, n) for n in lengths])
