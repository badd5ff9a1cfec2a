"""Decision trees over ``n`` bits: the Ehrenfeucht–Haussler rank and the depth of a Boolean
function, exactly, by dynamic programming over all ``3**n`` subcubes.

A decision tree queries a bit at each inner node and goes left on 0, right on 1; a leaf says
the value. Its *rank* ([ehrenfeucht1989learning]) is 0 at a leaf and, at a node whose subtrees
have ranks ``r0`` and ``r1``, ``max(r0, r1)`` if they differ and ``r0 + 1`` if they are equal.
The rank of a function is the least rank of a tree that computes it, and its *depth* the least
depth (its deterministic query complexity). On a subcube (some bits fixed, the others free),
a constant function has rank and depth 0, and otherwise::

    rank(g) = min over free bits i of combine(rank(g | x_i = 0), rank(g | x_i = 1))
    depth(g) = 1 + min over free bits i of max(depth(g | x_i = 0), depth(g | x_i = 1))

Subcubes are numbered in base 3, digit ``i`` being 0 or 1 (bit ``i`` fixed) or 2 (free); both
restrictions of a subcube have one free bit fewer, so the subcubes are done by number of free
bits, each level in one vectorized step per bit. [barcelo2025ehrenfeucht] show that the rank
is the least number of steps of a one-layer hard-attention decoder computing the function.
"""

import numpy as np
import torch

from companion._checks import check_int
from companion.languages import all_strings

MAX_BITS = 12  # 3**12 = 531441 subcubes


def _values(f, n: int) -> np.ndarray:
    """``f`` on every string of length ``n`` (bit ``i`` of the index is ``x_i``), as bools."""
    if not callable(f):
        raise TypeError(f"f must map LongTensor[B, n] to BoolTensor[B], got {type(f).__name__}")
    strings = all_strings(n)  # row r holds the bits of r, most significant first
    strings = strings.flip(1) if n else strings  # now column i holds bit i of r
    values = f(strings)
    if not isinstance(values, torch.Tensor) or values.shape != (len(strings),) \
            or values.dtype != torch.bool:
        raise ValueError(f"f must return a BoolTensor[{len(strings)}] for the "
                         f"{len(strings)} strings of length {n}")
    return values.cpu().numpy()


def _measures(f, n: int) -> tuple[int, int]:
    """``(rank, depth)`` of ``f`` on ``n`` bits."""
    n = check_int(n, "n", minimum=0, maximum=MAX_BITS)
    values = _values(f, n)
    digits = np.zeros((3**n, n), dtype=np.int8)  # the base-3 digits of every subcube
    codes = np.arange(3**n)
    for i in range(n):
        digits[:, i] = codes // 3**i % 3
    free = (digits == 2).sum(1)
    low = np.zeros(3**n, dtype=bool)  # the least and largest value on the subcube
    high = np.zeros(3**n, dtype=bool)
    rank = np.zeros(3**n, dtype=np.int64)
    depth = np.zeros(3**n, dtype=np.int64)
    leaves = free == 0
    index = (digits[leaves].astype(np.int64) << np.arange(n)).sum(1) if n else np.zeros(1, int)
    low[leaves] = high[leaves] = values[index]
    for level in range(1, n + 1):
        cubes = np.flatnonzero(free == level)
        best_rank = np.full(len(cubes), n + 1)
        best_depth = np.full(len(cubes), n + 1)
        for i in range(n):
            open_ = digits[cubes, i] == 2
            at, zero = cubes[open_], cubes[open_] - 2 * 3**i
            one = zero + 3**i
            low[at] = low[zero] & low[one]
            high[at] = high[zero] | high[one]
            r0, r1 = rank[zero], rank[one]
            combined = np.where(r0 == r1, r0 + 1, np.maximum(r0, r1))
            best_rank[open_] = np.minimum(best_rank[open_], combined)
            best_depth[open_] = np.minimum(best_depth[open_],
                                           1 + np.maximum(depth[zero], depth[one]))
        constant = low[cubes] == high[cubes]
        rank[cubes] = np.where(constant, 0, best_rank)
        depth[cubes] = np.where(constant, 0, best_depth)
    return int(rank[-1]), int(depth[-1])


def eh_rank(f, n: int) -> int:
    """The Ehrenfeucht–Haussler rank of ``f`` on ``n`` bits (``0 <= n <= 12``), where ``f``
    maps ``LongTensor[B, n]`` to ``BoolTensor[B]`` (a language of
    :mod:`companion.languages`, a circuit's ``evaluate``): exact, over all ``3**n`` subcubes."""
    return _measures(f, n)[0]


def tree_depth(f, n: int) -> int:
    """The least depth of a decision tree computing ``f`` on ``n`` bits (its deterministic
    query complexity), exact like :func:`eh_rank`, which it bounds from above."""
    return _measures(f, n)[1]
