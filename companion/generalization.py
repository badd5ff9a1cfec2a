"""Which programs does training find? Length generalization predicted by C-RASP with positional
predicates ([huang2025formal]) and tested by training.

Ten languages over {0, 1}, each a recognition task: a model reads ``BOS w`` (left to right,
causal attention) and says at the last symbol whether ``w`` is in the language. Each task is
split by the theory *before* any training (:data:`TASKS`): a task with a C-RASP program is
predicted to generalize from short strings to long ones, with learned absolute positions if its
program uses positional predicates (periodic or local, :func:`companion.rasp.periodic`,
:func:`companion.rasp.local`), and without any position encoding (NoPE) only if it uses none; a
task without such a program is predicted to fail, by an argument the chapter gives.

:func:`label` is each language's definition (batched, on ``LongTensor[B, m]``);
:func:`certificate` its C-RASP program, where there is one; :func:`strings` draws strings of one
length for a task, half inside the language and half outside where the language is thin;
:func:`run` trains models of every task, position encoding and seed together as one stacked
computation (:func:`companion.model.train`) and tests them on longer strings.
"""

from dataclasses import dataclass

import torch
from tqdm import tqdm

from companion import model as core
from companion import runtime
from companion._checks import (
    check_callable,
    check_choice,
    check_device,
    check_generator,
    check_int,
    check_number,
)
from companion.languages import as_strings
from companion.length_generalization import bootstrap_difference
from companion.rasp import Q, count, local, periodic

BOS, PAD = 2, 3  # token ids after the symbols 0 and 1
ENCODINGS = ("none", "learned")  # NoPE, and learned absolute positions (APE)
EVEN_ONLY = ("dyck1", "square")  # languages without strings of odd length
TEST_CHUNK = 64  # test strings per model at once


@dataclass(frozen=True)
class Task:
    """A task: its ``title``, whether the theory predicts that it generalizes with each
    position encoding (``predicted``: encoding -> bool), ``why`` in a few words, and the name
    of the same task in Huang et al.'s results (``huang``), if they ran it."""

    title: str
    predicted: dict
    why: str
    huang: str | None = None


def _both(value: bool) -> dict:
    return {"none": value, "learned": value}


#: The ten tasks, name -> :class:`Task`, each with the theory's prediction.
TASKS = {
    "majority": Task("more 1s than 0s", _both(True), "certificate, no positions",
                     "binary_majority"),
    "dyck1": Task("Dyck-1 (0 opens, 1 closes)", _both(True), "certificate, no positions"),
    "first": Task("the first symbol is 1", _both(True), "certificate, no positions"),
    "even_pairs": Task("first symbol = last symbol", _both(True),
                       "certificate, no positions"),
    "no_000": Task("no 000 (Tomita 4)", {"none": False, "learned": True},
                   "certificate, local", "tomita4"),
    "aa_star": Task("(00)*, even length", {"none": False, "learned": True},
                    "certificate, periodic", "(aa)*"),
    "parity": Task("an odd number of 1s", _both(False), "outside: counts settle", "parity"),
    "tomita6": Task("#0 - #1 divisible by 3 (Tomita 6)", _both(False),
                    "outside: counts settle", "tomita6"),
    "palindrome": Task("a palindrome", _both(False), "outside: message too long"),
    "square": Task("ww, a string twice", _both(False), "outside: message too long",
                   "copy_repeat"),
}


@dataclass(frozen=True, eq=False)
class Custom:
    """A task of the reader's own: its ``name``, its ``language`` (a function of strings
    ``LongTensor[B, m]`` to ``BoolTensor[B]``, like :func:`label`) and the prediction made for
    it before training (``predicted``: ``{"none": bool, "learned": bool}``). :func:`run` trains
    on it as on the named tasks, on uniformly random strings, so a language with few strings
    inside (or few outside) is learned as a constant."""

    name: str
    language: object
    predicted: dict

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty str, got {self.name!r}")
        check_callable(self.language, "language")
        if not (isinstance(self.predicted, dict) and set(self.predicted) == set(ENCODINGS)
                and all(isinstance(v, bool) for v in self.predicted.values())):
            raise ValueError(f"predicted must be a dict of a bool for each of {ENCODINGS}, got "
                             f"{self.predicted!r}")


def _task(task):
    """A named task's name, or a :class:`Custom` task as it is."""
    return task if isinstance(task, Custom) else check_choice(task, "task", tuple(TASKS))


def name_of(task) -> str:
    """A task's name: the name itself, or a :class:`Custom` task's ``name``."""
    return _task(task).name if isinstance(task, Custom) else _task(task)


def label(task, w) -> torch.Tensor:
    """Whether each string of ``w`` (``LongTensor[B, m]``, ``m >= 1``) is in ``task``'s
    language (a name of :data:`TASKS` or a :class:`Custom` task): ``BoolTensor[B]``."""
    task, w = _task(task), as_strings(w)
    if w.shape[1] == 0:
        raise ValueError("w must hold strings of length m >= 1")
    if isinstance(task, Custom):
        verdict = task.language(w)
        if not (isinstance(verdict, torch.Tensor) and verdict.shape == (len(w),)):
            raise ValueError(f"the language of task {task.name!r} must give one verdict per "
                             f"string, a tensor of shape [{len(w)}]")
        return verdict.bool()
    ones = w.sum(dim=1)
    zeros = w.shape[1] - ones
    if task == "majority":
        return ones > zeros
    if task == "dyck1":
        depth = (1 - 2 * w).cumsum(dim=1)  # 0 opens (+1), 1 closes (-1)
        return (depth.min(dim=1).values >= 0) & (depth[:, -1] == 0)
    if task == "first":
        return w[:, 0] == 1
    if task == "even_pairs":  # an even number of neighbours 01 and 10
        return (w[:, 1:] != w[:, :-1]).sum(dim=1) % 2 == 0
    if task == "no_000":
        windows = w.unfold(1, 3, 1) if w.shape[1] >= 3 else w.new_ones(len(w), 0, 3)
        return ~(windows.sum(dim=2) == 0).any(dim=1)
    if task == "aa_star":
        return (ones == 0) & (w.shape[1] % 2 == 0)
    if task == "parity":
        return ones % 2 == 1
    if task == "tomita6":
        return (zeros - ones) % 3 == 0
    if task == "palindrome":
        return (w == w.flip(1)).all(dim=1)
    half = w.shape[1] // 2
    same = (w[:, :half] == w[:, half:2 * half]).all(dim=1)
    return same & (w.shape[1] % 2 == 0)


def certificate(task: str):
    """The C-RASP program of ``task``'s language (a program of :mod:`companion.rasp`), or None
    for a task predicted to fail."""
    task = check_choice(task, "task", tuple(TASKS))
    zero, one = Q("0"), Q("1")
    at_start = count(True) <= 1  # position 0: the only one with a count of 1
    first_is_1 = count(at_start & one) >= 1
    if task == "majority":
        return count(one) > count(zero)
    if task == "dyck1":
        opened, closed = count(zero), count(one)
        dipped = count(closed > opened) >= 1
        return ~dipped & (opened <= closed) & (closed <= opened)
    if task == "first":
        return first_is_1
    if task == "even_pairs":
        return (first_is_1 & one) | (~first_is_1 & zero)
    if task == "no_000":
        return count(zero & local(zero, 1) & local(zero, 2)) <= 0
    if task == "aa_star":
        return periodic(2, 1) & (count(one) <= 0)
    return None


def predicted(task, encoding: str) -> bool:
    """The theory's prediction for ``task`` with ``encoding`` (``"none"`` or ``"learned"``):
    whether a model trained on short strings recognizes long ones (a :class:`Custom` task's
    own)."""
    task, encoding = _task(task), check_choice(encoding, "encoding", ENCODINGS)
    return (task if isinstance(task, Custom) else TASKS[task]).predicted[encoding]


def strings(task: str, batch: int, m: int, generator: torch.Generator) -> torch.Tensor:
    """``batch`` strings of length ``m`` for ``task``: uniformly random for a language with
    about as many strings inside as outside (MAJORITY, FIRST, even pairs, PARITY), else half
    drawn inside the language and half just outside it (one symbol flipped, or a near miss),
    in random order; ``0^m`` for ``aa_star``; uniformly random for a :class:`Custom` task.
    ``LongTensor[batch, m]``."""
    task = _task(task)
    batch, m = check_int(batch, "batch", minimum=1), check_int(m, "m", minimum=1)
    generator = check_generator(generator)
    if isinstance(task, Custom) or task in ("majority", "first", "even_pairs", "parity"):
        return torch.randint(2, (batch, m), generator=generator)
    if task == "aa_star":
        return torch.zeros(batch, m, dtype=torch.long)
    inside = _inside(task, batch, m, generator)
    flip = torch.randint(m, (batch,), generator=generator)
    outside = inside.clone()
    outside[torch.arange(batch), flip] ^= 1
    if task == "dyck1":  # a balanced string that dips below 0: a near miss of another kind
        shuffled = _balanced(batch, m, generator)
        outside = torch.where(torch.rand(batch, 1, generator=generator) < 0.5, outside, shuffled)
    if task == "no_000" and m >= 3:  # a 000 put at a random place
        start = torch.randint(m - 2, (batch,), generator=generator)
        for k in range(3):
            outside[torch.arange(batch), start + k] = 0
    half = torch.rand(batch, 1, generator=generator) < 0.5
    return torch.where(half, inside, outside)


def _balanced(batch: int, m: int, generator) -> torch.Tensor:
    """Strings with ``m // 2`` 1s (the rest 0s) in random order."""
    keys = torch.rand(batch, m, generator=generator)
    return (keys.argsort(dim=1) < m // 2).long()


def _inside(task: str, batch: int, m: int, generator) -> torch.Tensor:
    """``batch`` strings of length ``m`` drawn inside ``task``'s language where there are
    any (a few others where there are none: Dyck-1 at odd ``m``, squares at odd ``m``)."""
    if task == "dyck1":  # rotate a balanced string to start after its lowest point
        w = _balanced(batch, m, generator)
        if m % 2:
            return w
        depth = (1 - 2 * w).cumsum(dim=1)
        start = (depth.argmin(dim=1) + 1) % m
        index = (start[:, None] + torch.arange(m)) % m
        return w.gather(1, index)
    if task == "no_000":  # each symbol 1 where the two before are 0, else random
        w = torch.randint(2, (batch, m), generator=generator)
        for i in range(2, m):
            w[:, i] = torch.where((w[:, i - 1] == 0) & (w[:, i - 2] == 0), 1, w[:, i])
        return w
    if task == "tomita6":  # random, then a late symbol flipped where that fixes it
        w = torch.randint(2, (batch, m), generator=generator)
        for i in range(m - 1, max(-1, m - 9), -1):
            # flipping a 1 adds 2 to #0 - #1, flipping a 0 subtracts 2
            difference = (m - 2 * w.sum(dim=1)) % 3
            fixes = ((difference == 1) & (w[:, i] == 1)) | ((difference == 2) & (w[:, i] == 0))
            w[:, i] = torch.where(fixes, 1 - w[:, i], w[:, i])
        return w
    half = torch.randint(2, (batch, (m + 1) // 2), generator=generator)
    if task == "palindrome":
        return torch.cat([half, half[:, :m // 2].flip(1)], dim=1)
    return torch.cat([half, half], dim=1)[:, :m]  # square: w w, cut at odd m


def dataset(task: str, lengths, per_length: int, generator: torch.Generator):
    """``per_length`` strings of ``task`` of each length in ``lengths`` (the even ones alone
    for Dyck-1 and squares, which hold no string of odd length), read by a model: ``tokens``
    ``LongTensor[N, 1 + max(lengths)]`` (BOS, the string, PAD after it), the ``position`` of
    each string's last symbol and its ``label`` (``LongTensor[N]`` each)."""
    lengths = [check_int(m, "every length", minimum=1) for m in lengths]
    if name_of(task) in EVEN_ONLY and not isinstance(task, Custom):
        lengths = [m for m in lengths if m % 2 == 0]
    if not lengths:
        raise ValueError(f"lengths must name at least one length (an even one for {task})")
    per_length = check_int(per_length, "per_length", minimum=1)
    n = 1 + max(lengths)
    parts, positions, labels = [], [], []
    for m in lengths:
        w = strings(task, per_length, m, generator)
        tokens = torch.full((per_length, n), PAD, dtype=torch.long)
        tokens[:, 0] = BOS
        tokens[:, 1:m + 1] = w
        parts.append(tokens)
        positions.append(torch.full((per_length,), m))
        labels.append(label(task, w).long())
    return torch.cat(parts), torch.cat(positions), torch.cat(labels)


@dataclass
class Result:
    """The outcome of :func:`run`: ``accuracy[task, encoding, seed, bin]``, the fraction (in
    [0, 1]) of each bin's test strings classified right, bin 0 the training lengths (fresh
    strings) and the others ``bins``; ``config`` is the models' shape (every model has a
    table of positions, held at 0 for NoPE) and ``params`` their trained parameters, stacked
    in the order task, encoding, seed (name -> ``[models, ...]``)."""

    tasks: list
    encodings: list
    seeds: list
    bins: list
    accuracy: torch.Tensor
    config: core.Config
    params: dict


def run(tasks=tuple(TASKS), encodings=ENCODINGS, seeds=range(10), max_train_length: int = 20,
        bins=((21, 40), (41, 60)), steps: int = 400, batch: int = 32, per_length: int = 64,
        test_per_length: int = 16, d: int = 32, heads: int = 2, layers: int = 2,
        lr: float = 1e-3, device=None, progress: bool = True) -> Result:
    """Train one model per task (a name of :data:`TASKS` or a :class:`Custom` task), encoding
    and seed (all of them stacked, one computation) on
    ``per_length`` strings of every length ``1..max_train_length`` (the task's
    :func:`dataset`, drawn once from the first seed), ``steps`` Adam steps of ``batch``
    strings each, the loss the cross-entropy of the verdict at the last symbol. Models with
    learned positions (``max_length`` the longest test string) are trained at a random
    position offset each step, so that every position they are tested at has been trained;
    NoPE models are the same models with their position table held at 0. Then test each on
    ``test_per_length`` fresh strings of every length of the training range and of each bin
    ``(low, high)``, bins increasing and above the training lengths."""
    tasks = [_task(task) for task in tasks]
    encodings = [check_choice(e, "every encoding", ENCODINGS) for e in encodings]
    seeds = [check_int(seed, "every seed", minimum=0) for seed in seeds]
    if not tasks or not encodings or not seeds:
        raise ValueError("tasks, encodings and seeds must each name at least one")
    names = [name_of(task) for task in tasks]
    if len(set(names)) != len(names):
        raise ValueError(f"tasks must have distinct names, got {names}")
    max_train_length = check_int(max_train_length, "max_train_length", minimum=1)
    bins = [tuple(check_int(x, "a bin's end", minimum=1) for x in b) for b in bins]
    previous = max_train_length
    for low, high in bins:
        if not previous < low <= high:
            raise ValueError(f"bins must be increasing ranges (low, high) above "
                             f"max_train_length = {max_train_length}, got {bins}")
        previous = high
    for name, value in (("steps", steps), ("batch", batch), ("per_length", per_length),
                        ("test_per_length", test_per_length)):
        check_int(value, name, minimum=1)
    check_number(lr, "lr", above=0)
    device = check_device(device) or runtime.device()
    longest = max([max_train_length] + [high for _, high in bins]) + 1
    config = core.Config(vocab=4, outputs=2, d=d, heads=heads, layers=layers, d_ff=2 * d,
                         positions="learned", max_length=longest)
    models = [(t, e, s) for t in tasks for e in encodings for s in seeds]
    params = core.stack(config, [s for _, _, s in models], device=device)
    nope = torch.tensor([e == "none" for _, e, _ in models], device=device)
    with torch.no_grad():
        params["position.weight"][nope] = 0  # Adam keeps a parameter whose gradient is 0 at 0
    params["position.weight"].register_hook(lambda g: g.masked_fill(nope[:, None, None], 0))
    train_lengths = range(1, max_train_length + 1)
    data = torch.Generator().manual_seed(seeds[0])
    train = _pack({t: dataset(t, train_lengths, per_length, data) for t in tasks}, tasks)
    which = torch.tensor([tasks.index(t) for t, _, _ in models])
    order = torch.Generator().manual_seed(seeds[0] + 1)

    def batches(step):  # each model's strings from its own task's training set
        picks = torch.rand(len(models), batch, generator=order)
        tokens, targets = _select(train, which, (picks * train[3][which, None]).long())
        first = int(torch.randint(longest - tokens.shape[-1] + 1, (1,), generator=order))
        return tokens.to(device), targets.to(device), first

    core.train(params, config, batches, steps, lr, progress, "length generalization")
    forward = core.stacked_logits(config)
    test = torch.Generator().manual_seed(seeds[0] + 2)
    ranges = [(1, max_train_length)] + bins
    accuracy = torch.zeros(len(models), len(ranges))
    with torch.no_grad():
        for k, (low, high) in enumerate(tqdm(ranges, desc="testing", disable=not progress,
                                             leave=False)):
            held = _pack({t: dataset(t, range(low, high + 1), test_per_length, test)
                          for t in tasks}, tasks)
            right = torch.zeros(len(models))
            for start in range(0, int(held[3].max()), TEST_CHUNK):  # every model's k-th string
                rows = torch.arange(start, min(int(held[3].max()), start + TEST_CHUNK))
                tokens, targets = _select(held, which, rows.expand(len(models), -1))
                at, targets = core.supervised_positions(targets)  # each string's last symbol
                out = forward(params, tokens.to(device),
                              at=None if at is None else at.to(device)).argmax(-1).cpu()
                right += ((out == targets) & (targets != core.IGNORE)).sum(dim=(1, 2))
            accuracy[:, k] = right / held[3][which]
    shape = (len(tasks), len(encodings), len(seeds), len(ranges))
    params = {name: value.detach() for name, value in params.items()}
    return Result(tasks, encodings, seeds, bins, accuracy.reshape(shape), config, params)


def _pack(data: dict, tasks: list):
    """The datasets of ``tasks`` in one tensor each, padded to the largest: ``tokens``
    ``[tasks, N, n]``, ``position`` and ``labels`` ``[tasks, N]``, and each task's size. A row
    beyond a task's dataset (Dyck-1 and squares have fewer strings) is PAD, unsupervised."""
    n = max(data[t][0].shape[1] for t in tasks)
    sizes = torch.tensor([len(data[t][0]) for t in tasks])
    tokens = torch.full((len(tasks), int(sizes.max()), n), PAD, dtype=torch.long)
    position = torch.zeros(len(tasks), int(sizes.max()), dtype=torch.long)
    labels = torch.full((len(tasks), int(sizes.max())), core.IGNORE, dtype=torch.long)
    for k, t in enumerate(tasks):
        tokens[k, :sizes[k], :data[t][0].shape[1]] = data[t][0]
        position[k, :sizes[k]], labels[k, :sizes[k]] = data[t][1], data[t][2]
    return tokens, position, labels, sizes


def _select(packed, which: torch.Tensor, rows: torch.Tensor):
    """Model ``k``'s strings ``rows[k]`` of its task ``which[k]``: tokens and targets
    ``[models, B, n]``, the target the label at the last symbol and IGNORE elsewhere."""
    tokens, position, labels, _ = packed
    tokens = tokens[which[:, None], rows]
    position, labels = position[which[:, None], rows], labels[which[:, None], rows]
    targets = torch.full_like(tokens, core.IGNORE)
    targets.scatter_(2, position[..., None], labels[..., None])
    return tokens, targets


def bootstrap_mean(values, samples: int = 1000, generator: torch.Generator | None = None):
    """The mean of ``values`` (one number per seed, ``[runs]``) and a 95% percentile bootstrap
    interval for it, resampling the runs: ``(mean, low, high)``."""
    values = torch.as_tensor(values, dtype=torch.float64).cpu()
    if values.dim() != 1 or len(values) < 1:
        raise ValueError(f"values must be a 1-d sequence of runs, got shape "
                         f"{tuple(values.shape)}")
    # the paired bootstrap of Chapter 10, of the differences from 0: the same resampling
    return bootstrap_difference(torch.zeros_like(values), values, samples, generator)


#: Huang et al.'s published accuracies (%) per length bin, bins 0 (the training lengths), 1 and
#: 2, for the tasks they ran that are ours too, with learned positions (APE) and without (NoPE):
#: from ``formal_lang_suite/visualise/data_local.py`` of their code (commit b39b743 of
#: github.com/lacoco-lab/length_generalization), the data of their figures
#: ([huang2025formal]). Their tasks are next-token prediction, each string right only if every
#: position is.
HUANG = {
    "majority": {"learned": (100.0, 100.0, 100.0), "none": (100.0, 100.0, 100.0)},
    "no_000": {"learned": (100.0, 85.4, 84.4), "none": (100.0, 16.45, 0.0)},
    "aa_star": {"learned": (100.0, 100.0, 100.0), "none": (100.0, 0.0, 0.0)},
    "parity": {"learned": (100.0, 83.0, 62.1), "none": (97.5, 74.5, 63.3)},
    "tomita6": {"learned": (59.6, 0.0, 0.0), "none": (2.4, 0.0, 0.0)},
    "square": {"learned": (100.0, 25.6, 0.0), "none": (100.0, 28.0, 0.0)},
}

#: The verdict's threshold: a model generalizes when its mean accuracy over seeds on the
#: longest bin is at least this (chance is 1/2 on every task's test strings).
GENERALIZES = 0.9


def predictions():
    """The tasks and the theory's predictions, one row per task (pandas ``DataFrame``):
    whether it is predicted to generalize without positions (``NoPE``) and with learned ones
    (``APE``), ``"yes"`` or ``"no"``, and why."""
    import pandas as pd  # on first use only, like companion.tables

    return pd.DataFrame.from_dict({name: {
        "NoPE": _yes(task.predicted["none"]), "APE": _yes(task.predicted["learned"]),
        "why": task.why} for name, task in TASKS.items()}, orient="index")


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _word(generalizes: bool) -> str:
    return "generalizes" if generalizes else "fails"


def measured(result: Result, samples: int = 1000, generator: torch.Generator | None = None):
    """The central table of :func:`run`'s outcome, one row per task and encoding
    (``DataFrame``): the prediction; per range of lengths (the training range, then each bin)
    the mean accuracy over seeds and, with 10 seeds or more, the ends of its 95% bootstrap
    interval (:func:`bootstrap_mean`); the measured verdict (mean accuracy on the longest bin
    at least :data:`GENERALIZES`) and whether it agrees with the prediction."""
    import pandas as pd

    if not isinstance(result, Result):
        raise TypeError(f"result must be a Result of run, got {type(result).__name__}")
    names = [f"1-{result.bins[0][0] - 1}" if result.bins else "train"] + [
        f"{low}-{high}" for low, high in result.bins]
    rows = {}
    for i, task in enumerate(result.tasks):
        for j, encoding in enumerate(result.encodings):
            row = {"predicted": _word(predicted(task, encoding))}
            for k, name in enumerate(names):
                mean, low, high = bootstrap_mean(result.accuracy[i, j, :, k], samples,
                                                 generator)
                row[name] = mean
                if len(result.seeds) >= 10:
                    row[f"{name} low"], row[f"{name} high"] = low, high
            row["measured"] = _word(row[names[-1]] >= GENERALIZES)
            row["agrees"] = row["measured"] == row["predicted"]
            rows[(name_of(task), "NoPE" if encoding == "none" else "APE")] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def against_huang(result: Result):
    """For the tasks Huang et al. ran too: their accuracy (%) per bin, and this run's mean
    accuracy (%) on its own bins, in rows by task, encoding and ``"Huang"`` or ``"ours"``
    (``DataFrame``, columns ``bin 0`` to ``bin 2``, bin 0 the training lengths)."""
    import pandas as pd

    if not isinstance(result, Result):
        raise TypeError(f"result must be a Result of run, got {type(result).__name__}")
    rows = {}
    for i, task in enumerate(result.tasks):
        for j, encoding in enumerate(result.encodings):
            if not isinstance(task, str) or task not in HUANG:
                continue
            ours = (100 * result.accuracy[i, j].mean(dim=0)).tolist()
            name = "NoPE" if encoding == "none" else "APE"
            rows[(task, name, "Huang")] = {f"bin {k}": v for k, v in
                                           enumerate(HUANG[task][encoding])}
            rows[(task, name, "ours")] = {f"bin {k}": v for k, v in enumerate(ours[:3])}
    return pd.DataFrame.from_dict(rows, orient="index")


def compact(table, encoding: str):
    """The rows of one ``encoding`` (``"NoPE"`` or ``"APE"``) of :func:`measured`'s table,
    narrowed for reading on a phone: whether each task is predicted to generalize (``pred.``,
    yes/no), each range's mean accuracy, and the longest bin's 95% interval as one text,
    ``"0.93–0.98"`` (where the table has one)."""
    import pandas as pd

    if not isinstance(table, pd.DataFrame) or "measured" not in table.columns:
        raise TypeError("table must be the DataFrame that measured gives")
    check_choice(encoding, "encoding", ("NoPE", "APE"))
    rows = table.xs(encoding, level=1)
    ranges = [c for c in rows.columns if c not in ("predicted", "measured", "agrees")
              and not c.endswith((" low", " high"))]
    out = pd.DataFrame({"pred.": (rows["predicted"] == "generalizes").map(_yes)})
    for name in ranges:
        out[name.replace("-", "–")] = rows[name].map("{:.2f}".format)
    last = ranges[-1]
    if f"{last} low" in rows.columns:
        out["95%"] = rows[f"{last} low"].map("{:.2f}".format) + "–" + rows[
            f"{last} high"].map("{:.2f}".format)
    return out
