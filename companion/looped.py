"""Depth instead of steps: a weight-tied (looped) encoder that multiplies a word of the
symmetric group ``S_k`` by parallel prefix composition ([merrill2025little] §4 for the idea
of looping a block ``O(log n)`` times; the scan is Hillis and Steele's).

The word ``w_1 ... w_m`` has two letters, the permutations ``g_0`` and ``g_1`` (symbols 0
and 1, in cycle notation, applied left to right as in :func:`companion.languages.word_problem`),
and the encoder (:class:`~companion.transformer.Encoder`, post-norm without layer
normalization, so ``c = a + att(a)``, ``a' = c + ffn(c)``) sees ``CLS w_1 ... w_m`` at
positions ``0..m``. Position ``i`` holds a permutation ``cur`` as ``k`` one-hot rows
(dimension ``cur[x=y]`` is 1 when ``x`` goes to ``y``): at first its own letter, and the
identity at CLS. One block, the same weights each time, is applied ``R`` times; before its
``r``-th application (``r = 0, 1, ...``) position ``i`` holds the product of the letters at
positions ``i - 2**r + 1 .. i`` (those of them that are at least 1), and the stride
``s = 2**r`` in a dimension of its own. The block

1. attends from ``i`` to ``t = i - s`` with the query ``C (t, 1)`` against the keys
   ``(2 j, -j**2)``: the score ``C (2 j t - j**2) = C (t**2 - (j - t)**2)`` is largest at
   ``j = t`` when ``t >= 0`` and at ``j = 0`` (CLS, the identity) when ``t < 0``, and at least
   ``C`` smaller at every other position, so with ``C`` of 1024 the attention is hard; the
   head copies that position's ``cur`` into ``prev``;
2. composes, in its FFN: one ReLU ``relu(prev[x=y] + cur[y=z] - 1)`` per triple ``(x, y, z)``
   writes ``new[x=z] = cur[prev[x]]`` (first ``prev``'s letters, then ``cur``'s), and
   ``-relu(cur)``, ``-relu(prev)`` and ``+relu(s)`` replace ``cur`` by the product, clear
   ``prev`` and double ``s``: ``k**3 + 2 k**2 + 1`` units.

After ``R = ceil(log2 M)`` applications position ``m`` holds the whole product for every
``m <= M``; once ``2**r >= i`` a further application composes with CLS's identity and changes
nothing. A last layer of its own has CLS attend to the last position (query ``C``, key ``i``)
and copy its ``cur`` into ``final``; the logit ``sum_x final[x=x] - (k - 1/2)`` is positive
exactly when all ``k`` points are fixed, that is, when the word is the identity (a permutation
other than the identity fixes at most ``k - 2`` points).

Depth ``R + 1`` layers, no steps, width ``3 k**2 + 4``. The scores are integers times ``C``
up to ``C M**2``: the encoder is exact while those fit the significand, about ``2 log2 M``
bits, as for :func:`companion.steps.compile_dfa`'s decoder.
"""

import math

import torch

from companion._checks import check_int
from companion.languages import generator_permutations
from companion.layout import Layout
from companion.transformer import Encoder, EncoderLayer

SCALE = 1024.0  # C: the score gap between the position read and any other
MAX_LENGTH = 2**16  # the longest word a looped encoder is built for


def loops(max_length: int) -> int:
    """``R = ceil(log2 max_length)`` (at least 1): how often the block is applied, so that
    every word of at most ``max_length`` letters is multiplied out."""
    max_length = check_int(max_length, "max_length", minimum=1, maximum=MAX_LENGTH)
    return max(1, math.ceil(math.log2(max_length)))


def looped_word_problem(max_length: int, generators=("(01)", "(01234)"),
                        k: int = 5) -> Encoder:
    """A looped :class:`~companion.transformer.Encoder` that accepts a word over the two
    ``generators`` (symbols 0 and 1) of ``S_k`` exactly when it multiplies to the identity,
    for every word of at most ``max_length`` letters (1..65536); ``k`` is 1..6. Its
    ``layers`` are one :class:`~companion.transformer.EncoderLayer` object applied
    :func:`loops` ``(max_length)`` times, then a read-out layer; the construction is in the
    module docstring. A longer word raises ``ValueError``. ``encoder.block`` is the shared
    layer, ``encoder.generators`` the letters (``x -> p[x]``)."""
    R = loops(max_length)
    k = check_int(k, "k", minimum=1, maximum=6)
    letters = generator_permutations(generators, k, count=2)
    points = range(k)
    L = Layout(*(f"cur[{x}={y}]" for x in points for y in points),
               *(f"prev[{x}={y}]" for x in points for y in points),
               *(f"final[{x}={y}]" for x in points for y in points),
               "s", "1", "i", "i^2")
    hid = Layout("t", "1")  # the query/key space
    triples = Layout(*(f"{x}>{y}>{z}" for x in points for y in points for z in points))
    pairs = [f"{x}>{y}" for x in points for y in points]
    units = Layout(*triples.names, *(f"cur {p}" for p in pairs), *(f"prev {p}" for p in pairs),
                   "s")
    C = SCALE * math.sqrt(L.d)  # the encoder divides its scores by sqrt(d)

    def holding(p):  # a permutation p (x -> p[x]) in cur, with the stride 1
        return L.vector({**{f"cur[{x}={p[x]}]": 1.0 for x in points}, "s": 1.0})

    word_embedding = torch.stack([holding(letters[0]), holding(letters[1]),
                                  holding(list(points))])  # symbols 0, 1 and CLS

    def positions(n):
        if n - 1 > max_length:
            raise ValueError(f"w has {n - 1} letters but this looped encoder multiplies at "
                             f"most max_length = {max_length}; build one with a larger "
                             f"max_length")
        i = torch.arange(n, dtype=torch.float64)
        table = torch.zeros(n, L.d, dtype=torch.float64)
        table[:, L["1"]], table[:, L["i"]], table[:, L["i^2"]] = 1.0, i, i**2
        return table

    block = EncoderLayer(L.d, d_hid=2, heads=1, d_ff=units.d)
    read_out = EncoderLayer(L.d, d_hid=1, heads=1, d_ff=1)
    with torch.no_grad():
        block.W_Q[0] = hid.matrix(L, {("t", "i"): C, ("t", "s"): -C, ("1", "1"): C})
        block.W_K[0] = hid.matrix(L, {("t", "i"): 2.0, ("1", "i^2"): -1.0})
        block.W_V[0] = L.matrix(L, {(f"prev[{x}={y}]", f"cur[{x}={y}]"): 1.0
                                    for x in points for y in points})
        block.W_F1.copy_(units.matrix(L, {
            **{entry: 1.0 for x in points for y in points for z in points for entry in (
                (f"{x}>{y}>{z}", f"prev[{x}={y}]"), (f"{x}>{y}>{z}", f"cur[{y}={z}]"))},
            **{(f"cur {x}>{y}", f"cur[{x}={y}]"): 1.0 for x in points for y in points},
            **{(f"prev {x}>{y}", f"prev[{x}={y}]"): 1.0 for x in points for y in points},
            ("s", "s"): 1.0}))
        block.b_F1[:triples.d] = -1.0
        block.W_F2.copy_(L.matrix(units, {
            **{(f"cur[{x}={z}]", f"{x}>{y}>{z}"): 1.0
               for x in points for y in points for z in points},
            **{(f"cur[{x}={y}]", f"cur {x}>{y}"): -1.0 for x in points for y in points},
            **{(f"prev[{x}={y}]", f"prev {x}>{y}"): -1.0 for x in points for y in points},
            ("s", "s"): 1.0}))
        read_out.W_Q[0] = Layout("i").matrix(L, {("i", "1"): C})
        read_out.W_K[0] = Layout("i").matrix(L, {("i", "i"): 1.0})
        read_out.W_V[0] = L.matrix(L, {(f"final[{x}={y}]", f"cur[{x}={y}]"): 1.0
                                       for x in points for y in points})
    output_weight = L.vector({f"final[{x}={x}]": 1.0 for x in points})
    encoder = Encoder(word_embedding, positions, [block] * R + [read_out], output_weight,
                      output_bias=0.5 - k, layout=L)
    encoder.block, encoder.generators = block, letters
    return encoder


def prefix_products(encoder: Encoder, w) -> torch.Tensor:
    """The permutations ``LongTensor[B, m, k]`` that ``encoder`` (:func:`looped_word_problem`)
    holds at positions ``1..m`` after its last loop, each as ``x -> p[x]``: the products of
    the prefixes ``w_1 ... w_i`` (read off ``cur``, the largest entry of each row)."""
    if not hasattr(encoder, "block"):
        raise TypeError("encoder must be a looped encoder (looped_word_problem)")
    _, trace = encoder(w, record=True)
    k = len(encoder.generators[0])
    cur = trace.a[-2][:, 1:, :k * k]  # before the read-out layer
    return cur.reshape(*cur.shape[:2], k, k).argmax(-1)
