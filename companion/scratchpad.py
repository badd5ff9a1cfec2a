"""Learning PARITY with and without a scratchpad: the same small causal transformer trained to
write the running parities as it reads ([nye2021show]; [kim2025parity]) or to give the answer
alone (keys of book/references.bib).

Token ids: ``0`` and ``1`` are the input bits; ``STATE + p`` (2 or 3) is a written parity
``p``. Every sequence starts with the token ``STATE`` (the parity ``p_0 = 0`` of the empty
prefix), which also serves as the start token.

* **Scratchpad** (:func:`scratchpad_sequence`): the bits and the running parities alternate,
  ``STATE, w_1, STATE + p_1, w_2, STATE + p_2, ..., w_m, STATE + p_m`` (``2m + 1`` tokens,
  ``p_j`` the parity of ``w_1 .. w_j``). At the position of ``w_j`` (position ``2j - 1``,
  counting from 0) the model predicts ``p_j``, which it writes at position ``2j``; its
  answer is ``p_m``. Each step needs only the token before it and its own:
  ``p_j = p_{j-1} XOR w_j``.
* **Answer only** (:func:`answer_sequence`): ``STATE, w_1, ..., w_m``; the model predicts the
  parity of ``w`` at the position of ``w_m`` (position ``m``), and nowhere else.
* **Filler** (:func:`filler_sequence`): the scratchpad's layout with the constant ``STATE`` in
  place of every written parity, ``STATE, w_1, STATE, w_2, ..., w_m, STATE``; the model
  predicts the parity of ``w`` at the position of ``w_m`` (position ``2m - 1``) only. It has
  the scratchpad's input format and the answer-only supervision, so it separates the two.

The model is the book's one small transformer (:mod:`companion.model`), shaped by
:func:`config`: a learned embedding of the 4 tokens, pre-norm layers with a causal mask, a
final layer norm and a linear output of 2 logits (parity 0 or 1) at every position. It has no
position vector: each head ``h`` adds the bias ``-2^-h (i - i')`` to the score of query ``i``
for key ``i' <= i`` (ALiBi with steep slopes: attention prefers recent positions, and no input
gives the absolute position), so a model can run on strings longer than any it was trained on.

:func:`train` trains one model per seed and condition, all as one computation
(:func:`companion.model.train`: stacked parameters, one vectorized forward pass, one Adam).
The models of a seed start from the same weights and read the same strings. At test time the
scratchpad models decode greedily from their own written parities (:func:`decode`), the
answer-only and filler models read their answer in one pass.
"""

from dataclasses import dataclass

import torch

from companion import model, runtime
from companion._checks import (
    check_device,
    check_int,
    check_keys,
    check_layers,
    check_number,
)
from companion.languages import as_strings, random_strings
from companion.length_generalization import Benchmark, bootstrap_difference
from companion.model import IGNORE, Config

STATE = 2
"""The token of the written parity ``p`` is ``STATE + p``; every sequence starts with ``STATE``."""
VOCAB = 4
"""The number of token ids: the bits 0 and 1, and the written parities ``STATE``, ``STATE + 1``."""
CONDITIONS = ("answer only", "filler", "scratchpad")
"""The conditions, in the order of the models of a seed and of ``accuracy[:, condition]``."""
SCORE_BUDGET = 2**26  # attention scores, or cached keys and values, held at once in tests


def running_parities(w) -> torch.Tensor:
    """The parities of the prefixes of ``w`` (``LongTensor[B, m]`` or a str):
    ``LongTensor[B, m]`` whose entry ``j - 1`` is the parity of ``w_1 .. w_j``."""
    return as_strings(w).cumsum(dim=1) % 2


def scratchpad_sequence(w) -> torch.Tensor:
    """The teacher-forced scratchpad sequence of ``w``: ``LongTensor[B, 2m + 1]`` holding
    ``STATE`` at position 0, ``w_j`` at position ``2j - 1`` and ``STATE + p_j`` at
    position ``2j``."""
    w = as_strings(w)
    tokens = torch.full((w.shape[0], 2 * w.shape[1] + 1), STATE, device=w.device)
    tokens[:, 1::2] = w
    tokens[:, 2::2] += running_parities(w)
    return tokens


def filler_sequence(w) -> torch.Tensor:
    """The filler control's sequence of ``w``: :func:`scratchpad_sequence` with ``STATE`` at
    every position ``2j`` in place of ``STATE + p_j``, ``LongTensor[B, 2m + 1]``."""
    w = as_strings(w)
    tokens = torch.full((w.shape[0], 2 * w.shape[1] + 1), STATE, device=w.device)
    tokens[:, 1::2] = w
    return tokens


def answer_sequence(w) -> torch.Tensor:
    """The answer-only sequence of ``w``: ``STATE, w_1, ..., w_m`` as ``LongTensor[B, m + 1]``."""
    w = as_strings(w)
    start = torch.full((w.shape[0], 1), STATE, device=w.device)
    return torch.cat([start, w], dim=1)


def targets(w, condition: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The training pair of ``w`` in ``condition``, both ``LongTensor[B, 2m + 1]``: the tokens
    (answer-only sequences padded at the end with ``STATE``, which the causal mask hides from
    the answer) and the targets, a parity at each supervised position and ``IGNORE``
    elsewhere: ``p_j`` at position ``2j - 1`` for the scratchpad, ``p_m`` at position ``m``
    for answer only and at position ``2m - 1`` for the filler."""
    if condition not in CONDITIONS:
        raise ValueError(f"condition must be one of {CONDITIONS}, got {condition!r}")
    w = as_strings(w)
    B, m = w.shape
    target = torch.full((B, 2 * m + 1), IGNORE, device=w.device)
    if condition == "scratchpad":
        target[:, 1::2] = running_parities(w)
        return scratchpad_sequence(w), target
    if condition == "filler":
        if m:
            target[:, 2 * m - 1] = w.sum(dim=1) % 2
        return filler_sequence(w), target
    tokens = torch.full((B, 2 * m + 1), STATE, device=w.device)
    tokens[:, :m + 1] = answer_sequence(w)
    target[:, m] = w.sum(dim=1) % 2
    return tokens, target


def config(d: int = 32, heads: int = 4, layers: int = 2) -> Config:
    """The shape of the chapter's model (:class:`companion.model.Config`): the :data:`VOCAB`
    tokens, two logits (the next written parity), width ``d`` over ``heads``, ``layers``
    pre-norm layers, causal attention with ALiBi's steep slopes and no position vector."""
    return Config(vocab=VOCAB, outputs=2, d=d, heads=heads, layers=layers, positions="alibi")


def _model_config(params: dict, heads: int, layers: int) -> Config:
    """The :func:`config` of the (stacked) parameters ``params`` with ``heads`` and
    ``layers``."""
    check_keys(params, "params", ["embedding.weight"])
    heads, layers = check_int(heads, "heads", minimum=1), check_int(layers, "layers", minimum=1)
    check_layers(params, "params", "layers.", layers)
    d = params["embedding.weight"].shape[-1]
    if d % heads:
        raise ValueError(f"heads must divide the model's width d = {d}, got heads = {heads}")
    return config(d, heads, layers)


def decode(params: dict, w, heads: int, layers: int) -> torch.Tensor:
    """Greedy decoding of the scratchpad by stacked models (``params``: name ->
    ``[models, ...]``) on their strings ``w: LongTensor[models, B, m]`` (or one
    ``LongTensor[B, m]`` or str for every model): the written parities ``LongTensor[models, B,
    m]``. Each model reads ``w_j`` after its own parity ``p_{j-1}``, not the true one. A loop
    over the ``m`` positions, none over strings; each pass reads the two new tokens (the
    parity just written and the next bit) and keeps the keys and values of the earlier ones."""
    shape = _model_config(params, heads, layers)
    models = next(iter(params.values())).shape[0]
    device = next(iter(params.values())).device
    if isinstance(w, str) or (isinstance(w, torch.Tensor) and w.dim() == 2):
        w = as_strings(w).expand(models, -1, -1)
    if not isinstance(w, torch.Tensor) or w.dim() != 3 or w.shape[0] != models:
        raise ValueError(f"w must be a LongTensor[models, B, m] with models = {models}")
    w = torch.stack([as_strings(strings, "w") for strings in w]).to(device)
    _, B, m = w.shape
    step = torch.func.vmap(lambda p, tokens, keys, values: model.extend(
        p, tokens, shape, keys, values))
    written = torch.zeros(models, B, m, dtype=torch.long, device=device)
    if m == 0:  # the empty string: nothing to write
        return written
    new = torch.stack([torch.full_like(w[:, :, 0], STATE), w[:, :, 0]], dim=-1)
    embedding = params["embedding.weight"]
    keys = values = embedding.new_zeros(models, layers, B, heads, 0,
                                        embedding.shape[-1] // heads)
    with torch.no_grad():
        for j in range(m):  # reads p_j (START for j = 0) and w_{j+1}, writes p_{j+1}
            logits, keys, values = step(params, new, keys, values)
            written[:, :, j] = logits[:, :, -1].argmax(dim=-1)
            if j + 1 < m:
                new = torch.stack([STATE + written[:, :, j], w[:, :, j + 1]], dim=-1)
    return written


def _check_list(values, name: str, minimum: int) -> list:
    if isinstance(values, str) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a list of ints, got {type(values).__name__}")
    values = [check_int(value, f"every entry of {name}", minimum=minimum) for value in values]
    if not values or len(set(values)) != len(values):
        raise ValueError(f"{name} must hold at least one value, each once")
    return values


@dataclass
class Outcome(Benchmark):
    """What :func:`train` returns: a :class:`~companion.length_generalization.Benchmark` of the
    task ``"parity_check"`` whose variants are :data:`CONDITIONS` (``accuracy[seed, condition,
    length]``, the fraction of the test strings of that length whose answer is right), and
    ``train_loss[seed, condition, step]``, each model's cross-entropy in bits per supervised
    position at every training step."""

    train_loss: torch.Tensor | None = None


def train(seeds, steps: int, max_train_length: int, lengths, batch: int = 32,
          test_batch: int = 100, lr: float = 3e-3, d: int = 32, heads: int = 4,
          layers: int = 2, device=None, progress: bool = True) -> Outcome:
    """Train, for every seed in ``seeds``, one model (:func:`config`) per condition of
    :data:`CONDITIONS`, all from the same initial weights (seeded by the seed) and on the same
    strings (drawn from a generator seeded by ``seed + 1``), for ``steps`` Adam steps
    (learning rate ``lr``) of ``batch`` strings, each step's length uniform in
    ``1..max_train_length`` (drawn from a generator seeded by the first seed). Then test each
    on ``test_batch`` fresh strings of every length in ``lengths`` (:func:`evaluate`: greedy
    decoding for the scratchpad).
    Computes on ``device`` (default :func:`companion.runtime.device`) in float32; the strings
    are drawn on the CPU, so a seed gives the same strings on every device."""
    seeds = _check_list(seeds, "seeds", 0)
    if max(seeds) > 2**62:
        raise ValueError("seeds must be below 2**62")
    lengths = _check_list(lengths, "lengths", 1)
    for name, value in (("steps", steps), ("batch", batch), ("test_batch", test_batch),
                        ("max_train_length", max_train_length), ("d", d), ("heads", heads),
                        ("layers", layers)):
        check_int(value, name, minimum=1)
    check_number(lr, "lr", above=0)
    if d % heads:
        raise ValueError(f"d must be a multiple of heads, got d = {d} and heads = {heads}")
    device = check_device(device) or runtime.device()
    models = [(seed, condition) for seed in seeds for condition in CONDITIONS]
    shape = config(d, heads, layers)
    params = model.stack(shape, [seed for seed, _ in models], device=device)
    draw_length = torch.Generator().manual_seed(seeds[0])
    data = {seed: torch.Generator().manual_seed(seed + 1) for seed in seeds}

    def batches(step):
        m = int(torch.randint(1, max_train_length + 1, (1,), generator=draw_length))
        drawn = {seed: random_strings(batch, m, data[seed]) for seed in seeds}
        pairs = [targets(drawn[seed], condition) for seed, condition in models]
        return (torch.stack(t).to(device) for t in zip(*pairs, strict=True))

    train_loss = model.train(params, shape, batches, steps, lr, progress, "scratchpad")
    accuracy = evaluate(params, seeds, lengths, test_batch, heads, layers)
    return Outcome("parity_check", seeds, CONDITIONS, lengths, max_train_length, accuracy,
                   train_loss.reshape(len(seeds), len(CONDITIONS), steps))


def evaluate(params: dict, seeds: list, lengths: list, test_batch: int, heads: int,
             layers: int) -> torch.Tensor:
    """The accuracy ``[seeds, conditions, lengths]`` of the stacked models that :func:`train`
    made (ordered seed by seed, :data:`CONDITIONS` within a seed) on ``test_batch`` strings of
    each length in ``lengths``, the same strings for the two models of a seed (drawn from a
    generator seeded by ``seed + 2``): answer only and the filler read their answer at the
    last bit, the scratchpad its last written parity (:func:`decode`)."""
    shape = _model_config(params, heads, layers)
    seeds, lengths = _check_list(seeds, "seeds", 0), _check_list(lengths, "lengths", 1)
    test_batch = check_int(test_batch, "test_batch", minimum=1)
    if next(iter(params.values())).shape[0] != len(CONDITIONS) * len(seeds):
        raise ValueError(f"params must stack {len(CONDITIONS)} models per seed")
    device = next(iter(params.values())).device
    answer, filler, writers = ({name: value[c::len(CONDITIONS)] for name, value in params.items()}
                               for c in range(len(CONDITIONS)))
    accuracy = torch.zeros(len(seeds), len(CONDITIONS), len(lengths))
    forward = model.stacked_logits(shape)
    d = shape.d
    for column, m in enumerate(lengths):
        tests = {seed: torch.Generator().manual_seed(seed + 2) for seed in seeds}
        w = torch.stack([random_strings(test_batch, m, tests[seed]) for seed in seeds])
        truth = (w.sum(dim=-1) % 2).to(device)
        w = w.to(device)
        # strings in chunks, so that the attention scores of a pass over the filler
        # sequences, and the keys and values that decoding keeps, stay within budget
        chunk = max(1, SCORE_BUDGET // (len(seeds) * max(heads * (2 * m) ** 2,
                                                          2 * layers * (2 * m + 1) * d)))
        for start in range(0, test_batch, chunk):
            part = slice(start, start + chunk)
            with torch.no_grad():
                tokens = torch.stack([answer_sequence(strings) for strings in w[:, part]])
                said = forward(answer, tokens, at=-1)[:, :, 0].argmax(dim=-1)
                tokens = torch.stack([filler_sequence(strings)[:, :-1] for strings in w[:, part]])
                padded = forward(filler, tokens, at=-1)[:, :, 0].argmax(dim=-1)
                written = decode(writers, w[:, part], heads, layers)[:, :, -1]
            for c, answers in enumerate((said, padded, written)):
                accuracy[:, c, column] += (answers == truth[:, part]).sum(dim=1).cpu()
    return accuracy / test_batch


def summary(result: Benchmark, samples: int = 1000, generator: torch.Generator | None = None,
            baseline: str = "answer only"):
    """A table with one row per test length of ``result`` (what :func:`train` returned): the
    mean accuracy over seeds of each condition, and the mean paired ``difference`` scratchpad
    minus ``baseline`` (``"answer only"`` or ``"filler"``) with the ends ``low``, ``high`` of
    its 95% bootstrap interval over the seeds
    (:func:`companion.length_generalization.bootstrap_difference`); the column ``trained``
    says whether the length was among the training lengths."""
    import pandas as pd  # on first use only, like companion.tables

    if not isinstance(result, Benchmark) or tuple(result.variants) != CONDITIONS:
        raise TypeError("result must be the Benchmark that scratchpad.train returned")
    if baseline not in CONDITIONS[:-1]:
        raise ValueError(f"baseline must be one of {CONDITIONS[:-1]}, got {baseline!r}")
    rows = {}
    for column, m in enumerate(result.lengths):
        accuracy = result.accuracy[:, :, column].double()
        before, after = accuracy[:, CONDITIONS.index(baseline)], accuracy[:, -1]
        mean, low, high = bootstrap_difference(before, after, samples, generator)
        rows[m] = {"trained": m <= result.max_train_length,
                   **dict(zip(CONDITIONS, accuracy.mean(dim=0).tolist(), strict=True)),
                   "difference": mean, "low": low, "high": high}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "m"
    return table
