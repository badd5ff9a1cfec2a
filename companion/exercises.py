"""Check functions for the book's exercises: each grades any attempt and explains a failure.

A check returns a :class:`Feedback`, which is truthy when the attempt is right, so a notebook
can ``assert check_...(...)`` and an autograder can report ``feedback.message``.

A check must not accept an answer that is right only on the cases it happens to try. Where the
exercise asks for something true at every length, the check proves it: the attention exercises
of [chiang2024esslli] §5 are decided exactly, in rational arithmetic, for every length at once.
"""

import math
import re
import textwrap
from dataclasses import dataclass
from fractions import Fraction

import torch

from companion._checks import (
    check_bool,
    check_callable,
    check_choice,
    check_int,
    check_number,
    check_shape,
    check_tensor,
)


@dataclass
class Feedback:
    """The outcome of a check: ``passed`` and a message for the student."""

    passed: bool
    message: str

    def __post_init__(self):
        check_bool(self.passed, "passed")
        if not isinstance(self.message, str):
            raise TypeError(f"message must be a str, got {type(self.message).__name__}")

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        """The verdict and the message, wrapped at 76 characters to fit a page."""
        verdict = ("PASSED: " if self.passed else "FAILED: ") + self.message
        return "\n".join(textwrap.wrap(verdict, 76, subsequent_indent="  "))


def previous_position_inputs(x: torch.Tensor) -> torch.Tensor:
    """Exercise 5.1's input sequence as columns: ``[5, n]`` with column ``i`` equal to
    ``[x_i, 1, i, i^2, 0]``, for a 1-d tensor ``x: [n]``."""
    check_tensor(x, "x")
    if x.dim() != 1:
        raise ValueError(f"x must be a 1-d tensor [n], got shape {list(x.shape)}")
    i = torch.arange(x.shape[0], dtype=torch.float64)
    return torch.stack([x.double(), torch.ones_like(i), i, i**2, torch.zeros_like(i)])


EXERCISE_KEYS = [[0, 0, 1, 0, 0], [0, 0, 0, 1, 0]]
"""The keys ``k_j = [j, j^2]`` of the solution of Exercise 5.1, as a ``W_K: [2, 5]``."""


def _exact_matrix(W, name: str, rows=None, columns: int = 5):
    """``W`` as a list of rows of Fractions (every float is a rational number), or a str
    saying why it is not a ``[rows, columns]`` matrix of finite numbers."""
    try:
        W = torch.as_tensor(W, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError) as error:
        return f"{name} must be a numeric matrix ({error})"
    wanted = f"[{'d_hid' if rows is None else rows}, {columns}]"
    if W.dim() != 2 or W.shape[1] != columns or (rows is not None and W.shape[0] != rows):
        return f"{name} must be a {wanted} matrix, got {list(W.shape)}"
    if not torch.isfinite(W).all():
        return f"{name} must be finite"
    return [[Fraction(v) for v in row] for row in W.tolist()]


def _position_scores(W_Q, W_K):
    """The score ``q_i . k_j`` of Exercise 5.1's inputs, up to terms that do not depend on
    ``j`` (they cannot move the maximum), and up to the positive factor ``1/sqrt(d_hid)``.

    With ``u_i = [x_i, 1, i, i^2]`` and ``M = W_Q^T W_K``, the score is ``u_i^T M u_j``.
    Returns ``(A, B)``, polynomials in ``i`` with ``score = A(i) j + B(i) j^2 + (terms free of
    j)``, or a str naming the entries of ``M`` that make the score depend on ``x``: such a
    score moves with the input, so some ``x`` defeats any position rule.
    """
    d = len(W_Q)
    M = [[sum(W_Q[h][r] * W_K[h][c] for h in range(d)) for c in range(4)] for r in range(4)]
    names = ["x", "1", "i", "i^2"]
    depends_on_x = [(r, c) for r in range(4) for c in range(4)
                    if M[r][c] != 0 and (c == 0 or (r == 0 and c >= 2))]
    if depends_on_x:
        pairs = ", ".join(f"{names[r]} (query) with {names[c].replace('i', 'j')} (key)"
                          for r, c in depends_on_x)
        return (f"the scores depend on the input x, not only on the positions: W_Q^T W_K "
                f"pairs {pairs}, so some inputs move the maximum")
    import sympy  # exact polynomials; imported here, where they are needed

    i = sympy.Symbol("i")
    A = sympy.Poly([M[3][2], M[2][2], M[1][2]], i, domain="QQ")
    B = sympy.Poly([M[3][3], M[2][3], M[1][3]], i, domain="QQ")
    return A, B


def _first_nonpositive(p, start: int):
    """The least integer ``i >= start`` with ``p(i) <= 0``, or None if ``p`` is positive at
    every integer from ``start`` on. Exact: if ``p(m) <= 0``, then ``p`` is ``<= 0`` at
    ``start`` or at the ceiling of the largest real root in ``[start, m]``, so those are the
    only candidates. ``p`` is a ``sympy.Poly`` over the rationals."""
    import sympy

    if p.is_zero:
        return start
    candidates = {start} | {int(sympy.ceiling(r)) for r in p.real_roots() if r >= start}
    failing = [c for c in sorted(candidates) if p.eval(c) <= 0]
    return failing[0] if failing else None


def _score(A, B, i: int, j: int):
    return A.eval(i) * j + B.eval(i) * j * j


def _rival(A, B, i: int, target: int) -> int:
    """A position ``j != target`` whose score at position ``i`` is at least the target's
    (one exists when the check has found that ``target`` is not the unique maximum)."""
    for j in (target - 1, target + 1):
        if j >= 0 and _score(A, B, i, j) >= _score(A, B, i, target):
            return j
    a, b = A.eval(i), B.eval(i)  # target = 0 and the score j (a + b j) grows for large j
    return max(1, int(-(a // -b)))  # ceil(-a / b), exact for rationals


def _value_error(W_V) -> str | None:
    """Why ``W_V`` does not map every column ``[x, 1, j, j^2, 0]`` to ``[0, 0, 0, 0, x]``
    (to 1e-9; the last column meets only zeros), or None."""
    wanted = torch.zeros(5, 4, dtype=torch.float64)
    wanted[4, 0] = 1
    if not torch.allclose(W_V[:, :4], wanted, rtol=0, atol=1e-9):
        return ("W_V must write x_j into the fifth row and nothing else: its first four "
                "columns should be zero except a 1 in row 5, column 1 (it is multiplied by "
                "[x_j, 1, j, j^2], so any other entry changes the output for some x or j)")
    return None


def check_previous_position_layer(W_Q, W_K, W_V, offset: int = 1) -> Feedback:
    """Grade Exercise 5.1 of [chiang2024esslli]: an average-hard attention layer
    ``f(X) = X + att(X)`` (the residual connection, no layer norm, no FFN) whose fifth row
    copies ``x_{i-1}`` (``x_0`` at position 0) and leaves the other rows as they were, for
    every length ``n`` and every input ``x``. With ``offset`` (a positive int, default 1)
    the fifth row copies ``x_{i-offset}`` instead (``x_0`` at the positions ``i < offset``).

    The weights use the column convention: ``W_Q, W_K: [d_hid, 5]``, ``W_V: [5, 5]``; scores
    are ``(W_Q X)^T (W_K X) / sqrt(d_hid)``. The check is exact, not a trial: the scores must
    not depend on ``x``, and then at position ``i`` they are ``A(i) j + B(i) j^2`` plus terms
    free of ``j``, a quadratic in ``j`` that must have its unique maximum over all ``j >= 0``
    at ``t = max(i - offset, 0)``. For ``i > offset`` that means ``B(i) < 0`` and the score
    at ``t`` beats those at ``t - 1`` and ``t + 1``: two polynomial inequalities in ``i``,
    decided at every integer ``i > offset`` from their real roots.
    """
    check_int(offset, "offset", minimum=1)
    W_Q, W_K = (_exact_matrix(W, name) for W, name in ((W_Q, "W_Q"), (W_K, "W_K")))
    for W in (W_Q, W_K):
        if isinstance(W, str):
            return Feedback(False, W)
    if len(W_Q) != len(W_K):
        return Feedback(False, f"W_Q and W_K must both be [d_hid, 5] matrices, got "
                               f"{len(W_Q)} and {len(W_K)} rows")
    value = _exact_matrix(W_V, "W_V", rows=5)
    if isinstance(value, str):
        return Feedback(False, value)
    problem = _value_error(torch.as_tensor(W_V, dtype=torch.float64))
    if problem:
        return Feedback(False, problem)
    scores = _position_scores(W_Q, W_K)
    if isinstance(scores, str):
        return Feedback(False, scores)
    A, B = scores
    first = next((i for i in range(offset + 1)  # t = 0: j (A(i) + B(i) j) < 0 for j >= 1
                  if not (B.eval(i) <= 0 and A.eval(i) + B.eval(i) < 0)), None)
    if first is None:
        t = A.gen - offset
        later = [_first_nonpositive(-A - B * (2 * t + 1), offset + 1),   # beats t + 1
                 _first_nonpositive(A + B * (2 * t - 1), offset + 1)]    # beats t - 1
        later = [i for i in later if i is not None]
        first = min(later) if later else None
    if first is None:
        start = "position 0 reads" if offset == 1 else f"positions i < {offset} read"
        return Feedback(True, f"position i reads x_(i-{offset}) ({start} x_0) for every "
                              "length n and every input x")
    target = max(first - offset, 0)
    rival = _rival(A, B, first, target)
    return Feedback(False, f"for n = {max(first, rival) + 1}, position {first} should read "
                           f"x_{target} into the fifth row, but position {rival} scores at "
                           f"least as high as position {target}")


def check_tied_queries(W_Q_tie, offset: int = 1) -> Feedback:
    """Grade the tie exercise that follows Exercise 5.1 of [chiang2024esslli]: with the keys
    ``k_j = [j, j^2]`` (:data:`EXERCISE_KEYS`), the queries ``W_Q_tie: [2, 5]`` must give every
    position ``i >= 1`` exactly two maximal scores, at ``j = i - 1`` and ``j = i``, for every
    length and input; with ``offset`` (a positive int, default 1), every position
    ``i >= offset`` at ``j = i - offset`` and ``j = i - offset + 1``. Exact, like
    :func:`check_previous_position_layer`: with ``t = i - offset``, the tie
    ``A(i) + B(i)(2t + 1) = 0`` must hold as a polynomial identity, and ``B(i) < 0`` (the two
    tied scores are the top of a concave parabola) at every integer ``i >= offset``."""
    check_int(offset, "offset", minimum=1)
    W_Q_tie = _exact_matrix(W_Q_tie, "W_Q_tie", rows=2)
    if isinstance(W_Q_tie, str):
        return Feedback(False, W_Q_tie)
    scores = _position_scores(W_Q_tie, [[Fraction(v) for v in row] for row in EXERCISE_KEYS])
    if isinstance(scores, str):
        return Feedback(False, scores)
    A, B = scores
    gap = A + B * (2 * (A.gen - offset) + 1)  # score(t + 1) - score(t)
    if not gap.is_zero:
        i = next(i for i in range(offset, offset + 4) if gap.eval(i) != 0)  # <= 3 roots
        return Feedback(False, f"at position {i} the scores of positions {i - offset} and "
                               f"{i - offset + 1} differ by {float(gap.eval(i)):.3g}: they "
                               "are not tied")
    i = _first_nonpositive(-B, offset)
    if i is not None:  # B(i) >= 0: the tie sits at the bottom of the parabola, or it is flat
        t = i - offset
        rival = t - 1 if t >= 1 else t + 2
        return Feedback(False, f"for n = {max(i, rival) + 1}, the tied scores of positions "
                               f"{t} and {t + 1} at position {i} are not the largest: "
                               f"position {rival} scores at least as high")
    later = "i" if offset == 1 else f"i - {offset - 1}"
    return Feedback(True, f"every position i >= {offset} has exactly two maximal scores, at "
                          f"i - {offset} and {later}, for every length n and every input x")


def _strings_of_every_weight(n: int, samples: int, generator: torch.Generator) -> torch.Tensor:
    """``LongTensor[samples + 2n + 2, n]``: every string with at most one 1 or at most one 0,
    and ``samples`` strings whose number of 1s is uniform on ``0..n`` (placed at random), so
    that a language that depends on the count is tested at every count, not only near n/2."""
    eye = torch.eye(n, dtype=torch.long)
    edges = torch.cat([torch.zeros(1, n, dtype=torch.long), eye, 1 - eye,
                       torch.ones(1, n, dtype=torch.long)])
    ones = torch.randint(n + 1, (samples, 1), generator=generator)
    ranks = torch.rand(samples, n, generator=generator).argsort(dim=1)
    return torch.cat([edges, (ranks < ones).long()])


MAX_SAMPLED_LENGTH = 4096  # the longest length check_circuit_family samples strings at


def check_circuit_family(family, language, lengths=range(0, 11), circuit_class: str = "TC",
                         max_depth=None, sampled_lengths=(16, 33, 64), samples: int = 2000,
                         seed: int = 0) -> Feedback:
    """Grade a circuit family: ``family(n)`` must return a
    :class:`~companion.circuits.Circuit` with ``n`` inputs that decides ``language`` (a
    function from ``LongTensor[B, n]`` to ``BoolTensor[B]``, such as
    ``companion.languages.parity``; another result raises ``ValueError`` or ``TypeError``),
    obeys the gate rules of ``circuit_class`` and, if ``max_depth`` (an int or a function of
    n) is given, is no deeper than that.

    Every input is tried at each length in ``lengths``; at each of ``sampled_lengths``, too
    long for that, the strings with at most one 1 or one 0 and ``samples`` strings with a
    number of 1s uniform on ``0..n`` (seeded by ``seed``). A family is a program, so no finite
    test proves it right at every length; the longer lengths catch families that are right
    only on the short ones. The checker's own arguments are checked first: ``lengths`` of at
    most 20 (every input is tried), ``sampled_lengths`` of at most 4096, not both empty."""
    from companion.circuits import CLASSES, Circuit
    from companion.evaluation import _labels
    from companion.languages import MAX_ENUMERATED_LENGTH, all_strings

    lengths = [check_int(n, "lengths", 0, MAX_ENUMERATED_LENGTH) for n in lengths]
    sampled_lengths = [check_int(n, "sampled_lengths", 0, MAX_SAMPLED_LENGTH)
                       for n in sampled_lengths]
    if not lengths and not sampled_lengths:
        raise ValueError("lengths and sampled_lengths are both empty: nothing would be checked")
    check_callable(family, "family")
    check_callable(language, "language")
    check_choice(circuit_class, "circuit_class", CLASSES)
    if max_depth is not None and not callable(max_depth):
        check_int(max_depth, "max_depth", minimum=0)
    samples = check_int(samples, "samples", 1, 10**6)
    generator = torch.Generator().manual_seed(check_int(seed, "seed", minimum=0))
    for n in [*lengths, *sampled_lengths]:
        try:
            circuit = family(n)
        except Exception as error:  # a student's code may fail in any way
            return Feedback(False, f"family({n}) raised {type(error).__name__}: {error}")
        if not isinstance(circuit, Circuit) or circuit.n_inputs != n:
            return Feedback(False, f"family({n}) must return a Circuit with {n} inputs")
        if circuit.output is None:
            return Feedback(False, f"family({n}) has no output node; call set_output")
        if not circuit.obeys(circuit_class):
            return Feedback(False, f"family({n}) breaks the gate rules of {circuit_class}: "
                                   f"{circuit.fan_in()}")
        bound = max_depth(n) if callable(max_depth) else max_depth
        if bound is not None and circuit.depth > bound:
            return Feedback(False, f"family({n}) has depth {circuit.depth}, more than {bound}")
        exhaustive = n in lengths
        w = all_strings(n) if exhaustive else _strings_of_every_weight(n, samples, generator)
        wrong = (circuit.evaluate(w) != _labels(language, w)).nonzero().flatten()
        if len(wrong):
            example = "".join(str(b) for b in w[wrong[0]].tolist())
            return Feedback(False, f"family({n}) gives the wrong answer on {example!r} "
                                   f"(and {len(wrong) - 1} other inputs "
                                   f"{'' if exhaustive else 'of those tried '}of length {n})")
    tried = [f"on every input for n in {min(lengths)}..{max(lengths)}"] if lengths else []
    if sampled_lengths:
        tried.append(f"on strings of every weight for n in {list(sampled_lengths)}")
    return Feedback(True, "correct " + " and ".join(tried))


# Per-seed scores (standard, scaled) with which check_paired_bootstrap tries an answer: every
# seed gains the same (the interval is a point); seeds that differ much more than their small
# steady gain, and the same as a loss (only resampling the pairs together sees either); a
# difference that changes sign from seed to seed (the interval contains 0).
_SPREAD = [0.52, 0.61, 0.95, 0.58, 0.77, 0.88, 0.66, 0.71, 0.93, 0.55]
_GAIN = [0.021, 0.016, 0.024, 0.019, 0.025, 0.017, 0.022, 0.018, 0.023, 0.020]
_BOOTSTRAP_CASES = [
    ([0.5, 0.6, 0.4], [0.6, 0.7, 0.5]),
    (_SPREAD, [s + g for s, g in zip(_SPREAD, _GAIN, strict=True)]),
    ([s + g for s, g in zip(_SPREAD, _GAIN, strict=True)], _SPREAD),
    ([0.70, 0.64, 0.81, 0.59, 0.73, 0.68, 0.77, 0.62],
     [0.74, 0.61, 0.83, 0.53, 0.74, 0.72, 0.75, 0.61]),
]


def _plain_number(value, name: str):
    """``value`` as a float (a Python, NumPy or one-element tensor number), or a str saying
    why it is not one."""
    if hasattr(value, "item"):
        try:
            value = value.item()
        except (ValueError, RuntimeError):
            return f"{name} must be one number, got {value!r}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{name} must be a number, got {value!r}"
    return float(value)


def _checked_pair(pair):
    """A ``(standard, scaled)`` pair of ``pairs``: two equally long 1-d sequences of at least
    two finite scores."""
    try:
        standard, scaled = (torch.as_tensor(v, dtype=torch.float64) for v in pair)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"pairs must hold (standard, scaled) pairs of score lists, got "
                        f"{pair!r}") from None
    if standard.dim() != 1 or standard.shape != scaled.shape or len(standard) < 2:
        raise ValueError(f"pairs: standard and scaled must be 1-d and of one length >= 2, got "
                         f"shapes {list(standard.shape)} and {list(scaled.shape)}")
    if not (torch.isfinite(standard).all() and torch.isfinite(scaled).all()):
        raise ValueError("pairs: the scores must be finite")
    return standard, scaled


def check_paired_bootstrap(paired_bootstrap, pairs=(), samples: int = 1000,
                           seed: int = 0) -> Feedback:
    """Grade the paired bootstrap exercise of *Learning FIRST and PARITY*:
    ``paired_bootstrap(standard, scaled, samples, generator)`` takes the per-seed scores of two
    variants (``[seeds]`` float64 tensors, paired by seed) and returns ``(mean, low, high,
    excludes_zero)``: the mean over seeds of ``scaled - standard``, a 95% percentile bootstrap
    interval for it, and whether the interval excludes 0.

    The answer must resample whole seeds with ``torch.randint(k, (samples, k),
    generator=generator)``, ``k = len(standard)`` the number of seeds (one row per resample),
    and take the 2.5th and 97.5th percentiles of the resampled means with linear
    interpolation; it is then compared with
    :func:`companion.length_generalization.bootstrap_difference` given a generator seeded
    alike, to 1e-9, on built-in cases and on the ``(standard, scaled)`` pairs in ``pairs``.
    """
    from companion.length_generalization import bootstrap_difference

    check_callable(paired_bootstrap, "paired_bootstrap")
    samples = check_int(samples, "samples", 1, 10**7)
    seed = check_int(seed, "seed", minimum=0)
    cases = [*_BOOTSTRAP_CASES, *map(_checked_pair, pairs)]
    for index, (standard, scaled) in enumerate(cases):
        standard = torch.as_tensor(standard, dtype=torch.float64).cpu()
        scaled = torch.as_tensor(scaled, dtype=torch.float64).cpu()
        data = (f"standard = {[round(v, 3) for v in standard.tolist()]}, "
                f"scaled = {[round(v, 3) for v in scaled.tolist()]}")
        expected = bootstrap_difference(standard, scaled, samples,
                                        torch.Generator().manual_seed(seed + index))
        try:
            got = paired_bootstrap(standard.clone(), scaled.clone(), samples,
                                   torch.Generator().manual_seed(seed + index))
        except Exception as error:  # a student's code may fail in any way
            return Feedback(False, f"paired_bootstrap raised {type(error).__name__}: {error}")
        if not isinstance(got, tuple | list) or len(got) != 4:
            return Feedback(False, "paired_bootstrap must return a tuple (mean, low, high, "
                                   f"excludes_zero), got {got!r}")
        numbers = [_plain_number(v, name) for v, name in zip(got[:3], ("mean", "low", "high"),
                                                             strict=True)]
        for number in numbers:
            if isinstance(number, str):
                return Feedback(False, number)
        excludes = got[3]
        if hasattr(excludes, "item"):  # a NumPy or one-element tensor bool
            try:
                excludes = excludes.item()
            except (ValueError, RuntimeError):
                pass
        if not isinstance(excludes, bool):
            return Feedback(False, f"excludes_zero must be True or False, got {got[3]!r}")
        mean, low, high = expected

        def near(a, b):
            return abs(a - b) <= 1e-9 * (1 + abs(b))

        if not near(numbers[0], mean):
            hint = (": the difference is scaled - standard, not standard - scaled"
                    if mean != 0 and near(numbers[0], -mean) else "")
            return Feedback(False, f"for {data}, the mean difference is {mean:.6f}, "
                                   f"not {numbers[0]:.6f}{hint}")
        if not (near(numbers[1], low) and near(numbers[2], high)):
            wider = (" Yours is much wider: resampling the two columns separately loses the "
                     "pairing, and with it the seeds' shared ups and downs."
                     if numbers[2] - numbers[1] > 1.5 * (high - low) + 1e-9 else "")
            return Feedback(False, f"for {data} and {samples} resamples, the 95% interval is "
                                   f"[{low:.6f}, {high:.6f}], not [{numbers[1]:.6f}, "
                                   f"{numbers[2]:.6f}]. Resample whole seeds with "
                                   f"torch.randint(k, (samples, k), "
                                   f"generator=generator) with k = len(standard), the "
                                   f"number of seeds, one row per resample, and take "
                                   f"the 2.5th and 97.5th percentiles of the resampled means, "
                                   f"interpolating linearly.{wider}")
        if excludes != (low > 0 or high < 0):
            verdict = "excludes" if low > 0 or high < 0 else "contains"
            return Feedback(False, f"the interval [{low:.6f}, {high:.6f}] {verdict} 0, but "
                                   f"excludes_zero is {excludes}")
    return Feedback(True, f"the mean difference, its 95% interval and whether it excludes 0 "
                          f"are right on {len(cases)} sets of paired scores, with {samples} "
                          f"resamples each")


# --- Which programs does training find? (C-RASP certificates and fooling pairs) -------------

# The largest program a certificate check compiles: lines of its listing; named vectors one line
# reads (the FFN of a Boolean line has a unit for each of their 2**k values); the sum of the
# absolute coefficients of one comparison (its MAJORITY gate reads each bit that many times);
# and the offsets of its local predicates, added up (each offset c is c attentions).
MAX_CERTIFICATE_LINES, MAX_CERTIFICATE_READS = 32, 8
MAX_CERTIFICATE_WEIGHT, MAX_CERTIFICATE_REACH = 64, 64
MAX_CERTIFICATE_LENGTH = 200  # the longest sampled length of check_certificate
MAX_CIRCUIT_CHECK_LENGTH = 8  # check_certificate compiles circuits up to this length
POSITIONAL = ("local", "periodic")
MAX_FOOLING_H = 10  # check_fooling_pairs: 2**10 first halves, a million concatenations


def varied_strings(m: int, samples: int, generator: torch.Generator) -> torch.Tensor:
    """``LongTensor[samples + 2, m]``: ``0^m``, ``1^m`` and ``samples`` strings of length
    ``m >= 1`` in three kinds, a third each: strings each with its own density of 1s (uniform on
    [0, 1]); a random block of 1 to 4 symbols repeated, with up to two symbols flipped; and a
    constant string with up to five random windows of four symbols written over it. Uniformly
    random long strings hold every short factor many times and almost never fall inside a
    language that bounds how often one occurs; these hold every count of every short factor,
    and every density, so they fall on both sides of such thresholds."""
    from companion._checks import check_generator

    m, samples = check_int(m, "m", minimum=1), check_int(samples, "samples", minimum=3)
    generator = check_generator(generator)
    k, rest = samples // 3, samples - 2 * (samples // 3)
    dense = (torch.rand(k, m, generator=generator)
             < torch.rand(k, 1, generator=generator)).long()
    period = torch.randint(1, 5, (k, 1), generator=generator)
    blocks = torch.randint(2, (k, 4), generator=generator)
    tiled = blocks.gather(1, torch.arange(m) % period)
    flips = torch.randint(m, (k, 2), generator=generator)
    flipped = torch.rand(k, 2, generator=generator) < 0.5
    tiled.scatter_(1, flips, tiled.gather(1, flips) ^ flipped.long())
    islands = torch.randint(2, (rest, 1), generator=generator).expand(rest, m).clone()
    windows = torch.randint(6, (rest, 1), generator=generator)
    for t in range(5):
        start = torch.randint(max(m - 3, 1), (rest, 1), generator=generator)
        where = (start + torch.arange(4)).clamp(max=m - 1)
        bits = torch.randint(2, (rest, 4), generator=generator)
        islands.scatter_(1, where, torch.where(windows > t, bits, islands.gather(1, where)))
    edges = torch.stack([torch.zeros(m, dtype=torch.long), torch.ones(m, dtype=torch.long)])
    return torch.cat([edges, dense, tiled, islands])


def _certificate_too_large(program) -> str:
    """Why a check will not compile ``program`` (a C-RASP program), or "": read from its
    listing, where a line names what it reads as ``Q_1(i)``, ``P3(i)`` or ``P3(i - 2)``."""
    from companion.rasp import Count, listing, nodes

    lines = listing(program).splitlines()
    if len(lines) > MAX_CERTIFICATE_LINES:
        return (f"its listing has {len(lines)} lines, more than the {MAX_CERTIFICATE_LINES} "
                "the check compiles")
    for line in lines:
        name, body = line.split("(i) := ", 1)
        reads = set(re.findall(r"(Q_[01]|P\d+)\(", body))
        if len(reads) > MAX_CERTIFICATE_READS:
            return (f"its line {name} reads {len(reads)} named vectors, more than the "
                    f"{MAX_CERTIFICATE_READS} the check compiles")
    order = nodes(program)
    weight = max((sum(abs(c) for _, c in node.terms) for node in order
                  if isinstance(node, Count)), default=0)
    if weight > MAX_CERTIFICATE_WEIGHT:
        return (f"it compares counts whose coefficients add up to {weight}, more than the "
                f"{MAX_CERTIFICATE_WEIGHT} the check compiles")
    reach = sum(node.param for node in order if getattr(node, "op", None) == "local")
    if reach > MAX_CERTIFICATE_REACH:
        return (f"its local predicates reach back {reach} positions in all, more than the "
                f"{MAX_CERTIFICATE_REACH} the check compiles")
    return ""


def certificate_problem(program, predicates=None) -> str:
    """Why ``program`` is not a C-RASP program that a certificate may be, or "": it must be a
    Boolean vector over positions of :mod:`companion.rasp` without ``leftmost`` or
    ``rightmost``, read at most the positional predicates named in ``predicates`` (a tuple of
    ``"local"`` and ``"periodic"``; ``None`` allows both, ``()`` none: C-RASP without
    positions), and be small enough to compile in a check (the ``MAX_CERTIFICATE_*``
    limits)."""
    from companion.rasp import Bool, Count, is_c_rasp, positional_predicates

    if predicates is not None:
        predicates = tuple(check_choice(p, "every predicate", POSITIONAL) for p in predicates)
    if isinstance(program, Count):
        return ("it is a count, not a Boolean vector: compare counts (<, <=, >, >=) to get a "
                "verdict")
    if not isinstance(program, Bool):
        return ("it is not a program of companion.rasp (a Boolean vector built from Q, count, "
                f"periodic and local), but a {type(program).__name__}")
    if program.pairwise:
        return "it depends on j (at_j): a program is a vector over positions"
    if not is_c_rasp(program):
        return "it uses leftmost or rightmost attention, which C-RASP does not have"
    used = positional_predicates(program)
    if predicates is not None and not set(used) <= set(predicates):
        allowed = " and ".join(predicates) if predicates else "no positional predicate"
        return (f"it uses {' and '.join(used)}, but a certificate here may use {allowed}"
                + (" (C-RASP without positions, the class of NoPE)" if not predicates else ""))
    return _certificate_too_large(program)


def language_problem(program, language, w, circuit: bool = True, show: bool = True) -> str:
    """Why ``program`` does not decide ``language`` on the strings ``w`` (``LongTensor[B, m]``
    of one length), three ways, or "": :func:`companion.rasp.run` must agree with
    ``language(w)``, and with them the compiled transformer (:func:`companion.rasp.to_transformer`)
    and, if ``circuit``, the compiled circuit (:func:`companion.rasp.to_circuit`). With
    ``show`` the message names a string the program gets wrong; without it (a grader's hidden
    test) it names only the length."""
    from companion.evaluation import _labels
    from companion.rasp import run, to_circuit, to_transformer

    m = w.shape[1]
    expected = _labels(language, w)
    verdicts = run(program, w)
    wrong = (verdicts != expected).nonzero().flatten()
    if len(wrong):
        if not show:
            return f"it gives the wrong answer on some string of length {m}"
        example = "".join(str(b) for b in w[wrong[0]].tolist())
        says = "accepts" if bool(verdicts[wrong[0]]) else "rejects"
        where = "outside" if says == "accepts" else "inside"
        others = (f" (and {len(wrong) - 1} other strings of those tried of length {m})"
                  if len(wrong) > 1 else "")
        return f"it {says} {example!r}, a string {where} the language{others}"
    ways = {"its transformer (to_transformer)": lambda: to_transformer(program).accepts(w)}
    if circuit:
        ways["its circuit (to_circuit)"] = lambda: to_circuit(program, m).evaluate(w)
    for way, decide in ways.items():
        try:
            if torch.equal(decide(), verdicts):
                continue
            what = "gives other verdicts"
        except Exception as error:  # noqa: BLE001 - a compiler's fault is reported as such
            what = f"raises {type(error).__name__}"
        return (f"its verdicts are right, but {way} {what} on some string of length {m}: a "
                "fault of companion.rasp's compilers, not of the program; please report it")
    return ""


def check_certificate(certificate, language, lengths=range(1, 11), long_lengths=(40, 71, 100),
                      samples: int = 300, predicates=None, seed: int = 0) -> Feedback:
    """Grade a certificate: ``certificate()`` must return a C-RASP program
    (:func:`certificate_problem`, with at most the positional predicates in ``predicates``)
    whose verdicts are those of ``language`` (a function from ``LongTensor[B, m]`` to
    ``BoolTensor[B]``, written apart from the program) three ways (:func:`language_problem`):
    run, compiled into a transformer and, up to length 8, compiled into a circuit.

    It is tried on every string of each length in ``lengths`` (at most 12) and, at each of
    ``long_lengths`` (at most 200), on ``samples`` :func:`varied_strings` seeded by
    ``seed``: strings of every density and every small count of each short factor. A program is
    right at every length or not; these lengths catch one that is right on short strings
    only."""
    from companion.languages import all_strings

    check_callable(certificate, "certificate")
    check_callable(language, "language")
    lengths = [check_int(m, "lengths", 1, 12) for m in lengths]
    long_lengths = [check_int(m, "long_lengths", 1, MAX_CERTIFICATE_LENGTH)
                    for m in long_lengths]
    if not lengths and not long_lengths:
        raise ValueError("lengths and long_lengths are both empty: nothing would be checked")
    samples = check_int(samples, "samples", 3, 10_000)
    generator = torch.Generator().manual_seed(check_int(seed, "seed", minimum=0))
    if predicates is not None:
        predicates = tuple(check_choice(p, "every predicate", POSITIONAL) for p in predicates)
    try:
        program = certificate()
    except Exception as error:  # a student's code may fail in any way
        return Feedback(False, f"certificate() raised {type(error).__name__}: {error}")
    if why := certificate_problem(program, predicates):
        return Feedback(False, f"certificate() is not a certificate: {why}")
    for m in [*lengths, *long_lengths]:
        w = all_strings(m) if m in lengths else varied_strings(m, samples, generator)
        if why := language_problem(program, language, w, circuit=m <= MAX_CIRCUIT_CHECK_LENGTH):
            return Feedback(False, f"certificate()'s program is wrong: {why}")
    tried = [f"every string of lengths {min(lengths)}..{max(lengths)}"] if lengths else []
    if long_lengths:
        tried.append(f"{samples + 2} varied strings of each length in {list(long_lengths)}")
    return Feedback(True, "a C-RASP program, right on " + " and on ".join(tried)
                    + ", run, as a transformer and as a circuit (up to length "
                    f"{MAX_CIRCUIT_CHECK_LENGTH})")


ENCODINGS = ("none", "learned")  # the keys of a prediction: NoPE and learned positions


def prediction_problem(predicted) -> str:
    """Why ``predicted`` is not a prediction, or "": a dict with the keys ``"none"`` and
    ``"learned"`` (NoPE and learned absolute positions), each ``True`` or ``False``, and
    ``learned`` at least ``none`` (C-RASP without positions is part of C-RASP[periodic,
    local], so what the theory promises NoPE it promises learned positions too)."""
    if not isinstance(predicted, dict) or set(predicted) != set(ENCODINGS):
        return ('predict() must return a dict {"none": ..., "learned": ...}, got '
                f"{predicted!r}")
    values = [predicted[key] for key in ENCODINGS]
    if hasattr(values[0], "item") or hasattr(values[1], "item"):
        values = [v.item() if hasattr(v, "item") else v for v in values]
    if not all(isinstance(v, bool) for v in values):
        return f"each prediction must be True or False, got {predicted!r}"
    if values[0] and not values[1]:
        return ("the predictions contradict each other: a task in C-RASP without positions "
                "is in C-RASP[periodic, local] too, so if NoPE is predicted to generalize, so "
                "are learned positions")
    return ""


def check_prediction(predict, certify, language, expected=None, seed: int = 0) -> Feedback:
    """Grade a prediction of length generalization for one task (a language, ``language``: a
    function from ``LongTensor[B, m]`` to ``BoolTensor[B]``). ``predict()`` returns
    ``{"none": bool, "learned": bool}`` (:func:`prediction_problem`), whether the theory of
    [huang2025formal] predicts that a causal transformer trained on short strings recognizes
    long ones without position encoding (C-RASP[]) and with learned absolute positions
    (C-RASP[periodic, local]); ``certify()`` returns the C-RASP program that backs them, or
    ``None`` where the task has none.

    The check: where ``learned`` is True, the program must be a certificate of the language
    (:func:`check_certificate`), without positional predicates where ``none`` is True; where
    it uses none, ``none`` must be True (the theory then promises NoPE too); where ``learned``
    is False, ``certify()`` must return ``None``. No finite check shows that a task is
    *outside* a class: with ``expected`` (a prediction) the predictions are compared with it,
    and without it only their consistency with the certificate is checked."""
    check_callable(predict, "predict")
    check_callable(certify, "certify")
    check_callable(language, "language")
    if expected is not None and (why := prediction_problem(expected)):
        raise ValueError(f"expected: {why}")
    try:
        predicted = predict()
    except Exception as error:  # a student's code may fail in any way
        return Feedback(False, f"predict() raised {type(error).__name__}: {error}")
    if why := prediction_problem(predicted):
        return Feedback(False, why)
    none, learned = (bool(predicted[key]) for key in ENCODINGS)
    try:
        program = certify()
    except Exception as error:  # a student's code may fail in any way
        return Feedback(False, f"certify() raised {type(error).__name__}: {error}")
    if not learned and program is not None:
        return Feedback(False, "learned positions are predicted to fail, so the task has no "
                               "C-RASP[periodic, local] program: certify() must return None")
    if learned and program is None:
        return Feedback(False, "learned positions are predicted to generalize, which the "
                               "theory backs with a C-RASP[periodic, local] program: "
                               "certify() must return one")
    if program is not None:
        feedback = check_certificate(lambda: program, language, seed=seed,
                                     predicates=() if none else None)
        if not feedback:
            return Feedback(False, feedback.message.replace("certificate()", "certify()"))
        if not none and not certificate_problem(program, ()):
            return Feedback(False, "certify()'s program uses no positional predicate: it is "
                                   "in C-RASP without positions, for which the theory "
                                   "predicts that NoPE generalizes too")
    if expected is not None and [predicted[k] for k in ENCODINGS] != [
            expected[k] for k in ENCODINGS]:
        wrong = [k for k in ENCODINGS if bool(predicted[k]) != expected[k]]
        return Feedback(False, f"the prediction for {' and '.join(map(repr, wrong))} is "
                               "wrong")
    said = ("NoPE and learned positions" if none else "learned positions only" if learned
            else "neither NoPE nor learned positions")
    backed = ("a certificate right on every string tried" if program is not None else
              "no certificate")
    return Feedback(True, f"predicted to generalize with {said}, with {backed}"
                          + ("; the predictions are those expected" if expected is not None
                             else "; whether a task is outside a class no finite check "
                                  "shows, so the predictions are consistent, not proven"))


def fooling_problem(firsts, seconds, language, h: int) -> str:
    """Why ``(firsts, seconds)`` is not a fooling set of ``2**h`` pairs for ``language`` (a
    function from ``LongTensor[B, n]`` to ``BoolTensor[B]``), or "": ``firsts`` must be an
    integer tensor ``[2**h, h]`` of 0s and 1s with distinct rows, ``seconds`` one
    ``[2**h, h2]``, and ``firsts[i]`` followed by ``seconds[j]`` must be in the language
    exactly when ``i == j``, decided for all ``4**h`` pairs at once (in blocks of rows)."""
    from companion.evaluation import _labels

    k = 2**h
    for name, value in (("firsts", firsts), ("seconds", seconds)):
        if not isinstance(value, torch.Tensor):
            return f"{name} must be a LongTensor, got {type(value).__name__}"
        if value.dtype.is_floating_point or value.dtype.is_complex or value.dim() != 2:
            return (f"{name} must be a 2-d integer tensor, got {value.dtype} of shape "
                    f"{list(value.shape)}")
        if len(value) != k:
            return f"{name} must have 2**h = {k} rows for h = {h}, got {len(value)}"
        if len(value) and not ((value == 0) | (value == 1)).all():
            return f"{name} must hold only the symbols 0 and 1"
    if firsts.shape[1] != h:
        return f"firsts must have h = {h} columns (strings of length h), got {firsts.shape[1]}"
    if h + seconds.shape[1] == 0 or seconds.shape[1] > 4 * h + 4:
        return (f"seconds must hold strings of length 1 to {4 * h + 4} for h = {h}, got "
                f"{seconds.shape[1]}")
    firsts, seconds = firsts.long().cpu(), seconds.long().cpu()
    if len(torch.unique(firsts, dim=0)) < k:
        return f"the rows of firsts must be distinct: for h = {h} some row appears twice"
    n = h + seconds.shape[1]
    block = max(1, 2**22 // (k * n))  # rows of firsts per block: about 4M symbols at once
    inside = torch.zeros(k, k, dtype=torch.bool)
    for start in range(0, k, block):
        rows = firsts[start:start + block]
        pairs = torch.cat([rows[:, None, :].expand(-1, k, -1),
                           seconds[None, :, :].expand(len(rows), -1, -1)], dim=2)
        inside[start:start + len(rows)] = _labels(language, pairs.reshape(-1, n)).reshape(
            len(rows), k)
    eye = torch.eye(k, dtype=torch.bool)
    if not inside.diagonal().all():
        i = int((~inside.diagonal()).nonzero()[0])
        return (f"for h = {h}, firsts[{i}] followed by seconds[{i}] is not in the language: "
                "every pair (i, i) must be")
    if (inside & ~eye).any():
        i, j = (int(x) for x in (inside & ~eye).nonzero()[0])
        return (f"for h = {h}, firsts[{i}] followed by seconds[{j}] is in the language, "
                f"though {i} != {j}: no other pair may be")
    return ""


def check_fooling_pairs(fooling_pairs, language, hs=range(1, 7)) -> Feedback:
    """Grade a fooling set of the one-way communication argument: for each ``h`` in ``hs``
    (1 to 10), ``fooling_pairs(h)`` must return ``(firsts, seconds)``, ``firsts`` a
    ``LongTensor[2**h, h]`` of distinct strings and ``seconds`` a ``LongTensor[2**h, h2]``,
    such that ``firsts[i]`` followed by ``seconds[j]`` is in ``language`` (a function from
    ``LongTensor[B, n]`` to ``BoolTensor[B]``, written apart from the answer) exactly when
    ``i == j`` (:func:`fooling_problem`). Then the second half's verdicts tell the ``2**h``
    first halves apart, so any computation split between the halves must send ``h`` bits
    from the first to the second."""
    check_callable(fooling_pairs, "fooling_pairs")
    check_callable(language, "language")
    hs = [check_int(h, "hs", 1, MAX_FOOLING_H) for h in hs]
    if not hs:
        raise ValueError("hs is empty: nothing would be checked")
    for h in hs:
        try:
            answer = fooling_pairs(h)
        except Exception as error:  # a student's code may fail in any way
            return Feedback(False, f"fooling_pairs({h}) raised {type(error).__name__}: {error}")
        if not isinstance(answer, tuple | list) or len(answer) != 2:
            return Feedback(False, f"fooling_pairs({h}) must return a pair (firsts, seconds), "
                                   f"got a {type(answer).__name__}")
        if why := fooling_problem(*answer, language, h):
            return Feedback(False, why)
    return Feedback(True, f"for every h in {hs}, 2**h first halves, each in the language "
                          "with its own second half and with no other")


# --- PARITY after 2024 (sensitivity in closed form, a wide layer, sharpness) ----------------

MAX_THRESHOLD_LENGTH = 1000
"""The longest length at which :func:`symmetric_average_sensitivity` counts, and so the longest
that :func:`check_threshold_sensitivity` tries."""
MAX_ZIGZAG_LENGTH = 1000
"""The longest length that :func:`check_zigzag` tries."""


def symmetric_average_sensitivity(f, n: int) -> Fraction:
    """The exact average sensitivity of ``f`` on strings of length ``n`` (any ``n`` up to
    :data:`MAX_THRESHOLD_LENGTH`), where ``f`` (a function from ``LongTensor[B, n]`` to
    ``BoolTensor[B]``) depends only on the number ``k`` of 1s: ``f`` is asked about one
    string of each ``k``, ``1^k 0^(n-k)``, and a string with ``k`` 1s is sensitive at its
    ``k`` 1s where ``f`` changes between ``k - 1`` and ``k``, and at its ``n - k`` 0s where it
    changes between ``k`` and ``k + 1``. So ``2^-n sum_k C(n, k) s(k)``, a ``Fraction``, with
    no enumeration of the ``2^n`` strings (:func:`companion.sensitivity.average_sensitivity`
    enumerates them, for any ``f``)."""
    from math import comb

    from companion.evaluation import _labels

    n = check_int(n, "n", 0, MAX_THRESHOLD_LENGTH)
    k = torch.arange(n + 1)
    accepted = _labels(f, (torch.arange(n)[None, :] < k[:, None]).long()).tolist()
    total = sum(comb(n, j) * (j * (j > 0 and accepted[j] != accepted[j - 1])
                              + (n - j) * (j < n and accepted[j] != accepted[j + 1]))
                for j in range(n + 1))
    return Fraction(total, 2**n)


def _exact_number(value, name: str):
    """``value`` as a ``Fraction`` (a ``Fraction`` or an int) or a float (a Python, NumPy or
    one-element tensor number), or a str saying why it is neither."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    number = _plain_number(value, name)
    if isinstance(number, float) and not math.isfinite(number):
        return f"{name} must be a finite number, got {number}"
    return number


def _same_value(got, exact: Fraction) -> bool:
    """Whether ``got`` (a ``Fraction`` or a float) is ``exact``: exactly, or a float within a
    relative 1e-9 of it (0 only as 0)."""
    if isinstance(got, Fraction):
        return got == exact
    return abs(got - float(exact)) <= 1e-9 * abs(float(exact))


def check_threshold_sensitivity(average, language, lengths=range(1, 13),
                                long_lengths=(20, 33, 47, 60)) -> Feedback:
    """Grade a closed form of average sensitivity: ``average(n, t)`` must return the exact
    average sensitivity (a ``Fraction``, or a float within a relative 1e-9) of the strings of
    length ``n`` that ``language(w, t)`` accepts (a function from ``LongTensor[B, n]`` and
    ``t`` to ``BoolTensor[B]``, written apart from the answer, that depends only on the
    number of 1s), for every ``1 <= t <= n``.

    At each of ``lengths`` (at most 12) the value is compared with
    :func:`companion.sensitivity.average_sensitivity`, over all ``2^n`` strings; at each of
    ``long_lengths`` (at most 1000), where no enumeration reaches, with
    :func:`symmetric_average_sensitivity`. A wrong value that is half the right one, the
    total over all strings, or the right one for ``t - 1`` or ``t + 1``, is named as such."""
    from companion.languages import all_strings
    from companion.sensitivity import average_sensitivity

    check_callable(average, "average")
    check_callable(language, "language")
    lengths = [check_int(n, "lengths", 1, 12) for n in lengths]
    long_lengths = [check_int(n, "long_lengths", 1, MAX_THRESHOLD_LENGTH) for n in long_lengths]
    if not lengths and not long_lengths:
        raise ValueError("lengths and long_lengths are both empty: nothing would be checked")
    for n in [*lengths, *long_lengths]:
        exact = {t: symmetric_average_sensitivity(lambda w, t=t: language(w, t), n)
                 for t in range(0, n + 2)}
        for t in range(1, n + 1):
            if n in lengths:
                w = all_strings(n)
                decided = language(w, t)
                ones = w.sum(dim=1)
                representative = (torch.arange(n)[None, :] < ones[:, None]).long()
                if not torch.equal(decided, language(representative, t)):
                    raise ValueError("language must depend only on the number of 1s of a "
                                     "string")
                enumerated = average_sensitivity(lambda w, t=t: language(w, t), n)
                if abs(enumerated - float(exact[t])) > 1e-9 * (1 + abs(enumerated)):
                    raise RuntimeError("average_sensitivity and symmetric_average_sensitivity "
                                       "disagree: please report it")
            try:
                got = _exact_number(average(n, t), f"average({n}, {t})")
            except Exception as error:  # a student's code may fail in any way
                return Feedback(False, f"average({n}, {t}) raised {type(error).__name__}: "
                                       f"{error}")
            if isinstance(got, str):
                return Feedback(False, got)
            if _same_value(got, exact[t]):
                continue
            how = (f"over all 2**{n} strings" if n in lengths else
                   f"counted by the number of 1s (2**{n} strings are too many to enumerate)")
            value = (f"{exact[t]}" if exact[t].denominator == 1 else
                     f"{exact[t]} = {float(exact[t]):.10g}")
            why = f"average({n}, {t}) = {float(got):.10g}, but the average sensitivity {how} " \
                  f"is {value}"
            seen = []  # what the wrong value is, where it is something recognizable
            if t > 1 and exact[t - 1] != exact[t] and _same_value(got, exact[t - 1]):
                seen.append("the value for t - 1 (an off-by-one in the threshold?)")
            if exact[t + 1] != exact[t] and _same_value(got, exact[t + 1]):
                seen.append("the value for t + 1 (an off-by-one in the threshold?)")
            if exact[t] and _same_value(got, exact[t] / 2):
                seen.append("half of it (a flip that changes the answer joins an accepted "
                            "string and a rejected one, and counts at both: did you count "
                            "only one side?)")
            if exact[t] and _same_value(got, exact[t] * 2**n):
                seen.append(f"the total over all 2**{n} strings, not their mean")
            if seen:
                why += ": yours is " + ", and also ".join(seen)
            return Feedback(False, why)
    tried = [f"against all 2**n strings for n = {min(lengths)}..{max(lengths)}"] if lengths \
        else []
    if long_lengths:
        tried.append(f"exactly for n in {list(long_lengths)}")
    return Feedback(True, "the average sensitivity is right for every t, "
                          + " and ".join(tried))


def relu_sum(b, c, t) -> torch.Tensor:
    """``sum_j c_j max(0, t - b_j)`` at each entry of ``t``: the output of one hidden layer of
    ReLUs with thresholds ``b`` and output weights ``c`` (1-d float64 tensors of one length)
    on the scalar input ``t`` (a 1-d float64 tensor)."""
    return (c * torch.relu(t[:, None] - b)).sum(dim=1)


def zigzag_problem(b, c, t, wanted, width: int, show: bool = True) -> str:
    """Why thresholds ``b`` and coefficients ``c`` (1-d float64 tensors of one length, at most
    ``width``) do not give ``relu_sum(b, c, t)`` equal to ``wanted`` (both ``[K]``, the
    inputs and the values wanted there) to within 1e-6 at every entry, or "". With
    ``show``, the message names the first wrong entry ``k`` and both values."""
    for name, value in (("b", b), ("c", c)):
        if not isinstance(value, torch.Tensor):
            return f"{name} must be a tensor, got {type(value).__name__}"
        if value.dtype != torch.float64 or value.dim() != 1:
            return (f"{name} must be a 1-d float64 tensor, got {value.dtype} of shape "
                    f"{list(value.shape)}")
        if not torch.isfinite(value).all():
            return f"{name} must hold finite numbers"
    if len(b) != len(c):
        return f"b and c must have one length (one threshold per ReLU), got {len(b)} and {len(c)}"
    if len(b) > width:
        return f"{len(b)} ReLUs are more than the {width} allowed"
    got = relu_sum(b.cpu(), c.cpu(), t)
    wrong = ((got - wanted).abs() > 1e-6).nonzero().flatten()
    if not len(wrong):
        return ""
    if not show:
        return "the sum is wrong at some k"
    k = int(wrong[0])
    return f"at k = {k} the sum is {float(got[k]):.6g}, not {float(wanted[k]):g}"


def check_zigzag(zigzag, wanted, mean, threshold: float = 0.5,
                 lengths=(*range(1, 13), 30, 100), moduli=range(2, 6)) -> Feedback:
    """Grade a one-layer network that counts modulo ``m``: for each ``n`` in ``lengths`` (at
    most :data:`MAX_ZIGZAG_LENGTH`), each ``m`` in ``moduli`` and each ``0 <= r < m``,
    ``zigzag(n, m, r)`` must return ``(b, c)``, thresholds and coefficients (1-d float64
    tensors of one length, at most ``n + 1``), such that the ReLU sum
    (:func:`relu_sum`) at ``t = mean(w)`` is ``wanted(k, m, r)`` for every string ``w`` with
    ``k`` ones, ``k = 0 .. n`` (:func:`zigzag_problem`). ``mean`` maps ``LongTensor[B, n]``
    to the attention's output, a ``DoubleTensor[B]`` that depends only on ``k``; ``wanted``
    maps a ``LongTensor`` of counts to the values wanted (a float tensor), both written apart
    from the answer. Every string of length up to 10 is also decided, by comparing the sum
    with ``threshold``, as the language ``wanted > threshold`` decides it. The message gives
    the number of ReLUs at the longest length."""
    from companion.languages import all_strings

    check_callable(zigzag, "zigzag")
    check_callable(wanted, "wanted")
    check_callable(mean, "mean")
    threshold = check_number(threshold, "threshold")
    lengths = [check_int(n, "lengths", 1, MAX_ZIGZAG_LENGTH) for n in lengths]
    moduli = [check_int(m, "moduli", 2, 100) for m in moduli]
    if not lengths or not moduli:
        raise ValueError("lengths and moduli must not be empty: nothing would be checked")
    widths = {}
    for n in lengths:
        k = torch.arange(n + 1)
        t = check_shape(mean((torch.arange(n)[None, :] < k[:, None]).long()), "mean(w)",
                        (n + 1,)).double()
        strings = all_strings(n) if n <= 10 else None
        for m in moduli:
            for r in range(m):
                want = torch.as_tensor(wanted(k, m, r)).double()
                call = f"zigzag({n}, {m}, {r})"
                try:
                    answer = zigzag(n, m, r)
                except Exception as error:  # a student's code may fail in any way
                    return Feedback(False, f"{call} raised {type(error).__name__}: {error}")
                if not isinstance(answer, tuple | list) or len(answer) != 2:
                    return Feedback(False, f"{call} must return a pair (b, c), got a "
                                           f"{type(answer).__name__}")
                b, c = answer
                if why := zigzag_problem(b, c, t, want, n + 1):
                    return Feedback(False, f"{call}: {why}")
                widths[n] = max(widths.get(n, 0), len(b))
                if strings is not None:
                    decided = relu_sum(b.cpu(), c.cpu(), mean(strings).double()) > threshold
                    right = torch.as_tensor(wanted(strings.sum(dim=1), m, r)) > threshold
                    if not torch.equal(decided, right):
                        i = int((decided != right).nonzero()[0])
                        word = "".join(map(str, strings[i].tolist()))
                        return Feedback(False, f"{call} decides the string {word} wrong "
                                               f"(the sum compared with {threshold:g})")
    longest = max(lengths)
    return Feedback(True, f"the sum is right at every k for {len(lengths)} lengths n up to "
                          f"{longest}, m in {moduli} and every r, and decides every string "
                          f"of length up to "
                          f"{min(10, longest)}; it uses {widths[longest]} ReLUs at "
                          f"n = {longest} (at most n + 1 = {longest + 1} allowed)")


SIGMAS = 6
"""How many standard errors of the mean increase over the draws a right answer may lie from
it, in :func:`check_expected_increase`."""


def _increase_cases(dims, epsilons, generator):
    """``(H, epsilon)`` for the check of ``expected_increase``: for each ``d`` of ``dims`` a
    random ``A A^T`` (``A`` Gaussian, ``[d, d]``), with the ``epsilons`` in turn, then a
    diagonal and a rank-one matrix of the largest ``d``."""
    cases = []
    for index, d in enumerate(dims):
        a = torch.randn(d, d, generator=generator, dtype=torch.float64)
        cases.append((a @ a.T, epsilons[index % len(epsilons)]))
    d = max(dims)
    v = torch.randn(d, 1, generator=generator, dtype=torch.float64)
    cases.append((torch.diag(torch.arange(1, d + 1, dtype=torch.float64)), epsilons[0]))
    cases.append((v @ v.T, epsilons[-1]))
    return cases


def check_expected_increase(expected_increase, noise, dims=(1, 2, 3, 5, 8),
                            epsilons=(0.02, 0.3, 1.0, 2.5), draws: int = 200_000,
                            seed: int = 0) -> Feedback:
    """Grade the expected increase of a quadratic loss under noise: for symmetric positive
    semidefinite ``H`` (``[d, d]`` float64) and ``epsilon``, ``expected_increase(H, epsilon)``
    must return ``E[Delta^T H Delta] / 2``, a number, with ``Delta`` drawn by ``noise(d,
    epsilon, draws, generator)`` (``[draws, d]`` float64, one draw per row; written apart from
    the answer), exactly.

    On a random matrix ``A A^T`` of each size in ``dims`` (``A`` Gaussian), with the
    ``epsilons`` in turn, and on a diagonal and a rank-one matrix, the answer is compared with
    the mean of ``Delta^T H Delta / 2`` over ``draws`` draws: it must lie within
    :data:`SIGMAS` standard errors of that mean, the standard error computed from the draws
    (so that a right answer fails by chance with probability below ``1e-8`` a case). And an
    expectation of a quadratic form is linear in its matrix: the answer for ``H_1 + H_2``
    must be the sum of the answers, to a relative ``1e-9``."""
    check_callable(expected_increase, "expected_increase")
    check_callable(noise, "noise")
    dims = [check_int(d, "dims", 1, 64) for d in dims]
    epsilons = [check_number(e, "epsilons", above=0) for e in epsilons]
    if not dims or not epsilons:
        raise ValueError("dims and epsilons must not be empty: nothing would be checked")
    draws = check_int(draws, "draws", 1000, 10**7)
    generator = torch.Generator().manual_seed(check_int(seed, "seed", minimum=0))

    def answer(H, epsilon):
        call = f"expected_increase(H, {epsilon:g}) for a {len(H)} x {len(H)} H"
        try:
            value = expected_increase(H.clone(), epsilon)
        except Exception as error:  # a student's code may fail in any way
            return None, f"{call} raised {type(error).__name__}: {error}"
        value = _plain_number(value, call)
        if isinstance(value, float) and not math.isfinite(value):
            return None, f"{call} must be a finite number, got {value}"
        return (None, value) if isinstance(value, str) else (value, "")

    cases = _increase_cases(dims, epsilons, generator)
    for H, epsilon in cases:
        d = len(H)
        got, why = answer(H, epsilon)
        if why:
            return Feedback(False, why)
        delta = check_shape(noise(d, epsilon, draws, generator), "noise(d, epsilon, draws, "
                            "generator)", (draws, d)).double()
        increase = ((delta @ H) * delta).sum(dim=1) / 2
        mean, error = increase.mean().item(), increase.std().item() / math.sqrt(draws)
        if abs(got - mean) <= SIGMAS * error + 1e-12 * (1 + abs(mean)):
            continue
        why = (f"for a {d} x {d} H (trace {H.trace().item():.4g}) and epsilon = {epsilon:g}, "
               f"expected_increase gives {got:.6g}, but the mean increase over {draws} draws "
               f"of the noise is {mean:.6g}, with a standard error of {error:.2g}")
        if mean and abs(got / mean - 1) > 0.1:
            why += f" (yours is {got / mean:.4g} times that)"
            if epsilon != 1 and abs(got * epsilon / mean - 1) < 0.1:
                why += ("; the increase is quadratic in the noise, so it grows with "
                        "epsilon**2, not epsilon")
        return Feedback(False, why)
    (first, epsilon), (second, _) = cases[-2], cases[-1]
    both = [answer(H, epsilon) for H in (first, second, first + second)]
    for _, why in both:
        if why:
            return Feedback(False, why)
    (one, _), (other, _), (total, _) = both
    if abs(total - (one + other)) > 1e-9 * (abs(one) + abs(other)) + 1e-12:
        return Feedback(False, f"expected_increase(H1 + H2, {epsilon:g}) = {total:.10g}, but "
                               f"the values for H1 and H2 add up to {one + other:.10g}: the "
                               "mean of Delta^T H Delta / 2 is linear in H")
    return Feedback(True, f"within {SIGMAS} standard errors of the mean increase over {draws} "
                          f"draws of the noise, on {len(cases)} matrices H of sizes up to "
                          f"{max(dims)}, and linear in H")


# --- Circuits by steps (the rank of a decision tree, a fan-in-2 circuit, a count of steps) -----

MAX_RANK_LENGTH = 400
"""The longest length at which :func:`symmetric_rank` works, and so the longest of
:func:`check_rank_formula`'s ``long_lengths``."""


def _combine_ranks(r0: int, r1: int) -> int:
    """The rank of a decision-tree node whose subtrees have ranks ``r0`` and ``r1``."""
    return r0 + 1 if r0 == r1 else max(r0, r1)


def symmetric_rank(f, n: int) -> int:
    """The Ehrenfeucht–Haussler rank of ``f`` on ``n`` bits (any ``n`` up to
    :data:`MAX_RANK_LENGTH`), where ``f`` (a function from ``LongTensor[B, n]`` to
    ``BoolTensor[B]``) depends only on the number ``k`` of 1s, with values ``v_0 .. v_n``.
    Every bit is alike, so a subcube with ``i`` bits fixed to 1 and ``m`` free has the values
    ``v_i .. v_(i+m)``, and its two restrictions the windows one shorter at either end: rank
    0 on a constant window, else the rank of a node over the two (``O(n^2)`` windows, where
    :func:`companion.decision_trees.eh_rank` visits all ``3^n`` subcubes, for any ``f``)."""
    from companion.evaluation import _labels

    n = check_int(n, "n", 0, MAX_RANK_LENGTH)
    k = torch.arange(n + 1)
    values = _labels(f, (torch.arange(n)[None, :] < k[:, None]).long()).tolist()
    ranks = [0] * (n + 1)  # ranks[i]: the window v_i .. v_(i + m), for the current m
    constant = [True] * (n + 1)
    for m in range(1, n + 1):
        for i in range(n + 1 - m):
            constant[i] = constant[i] and constant[i + 1] and values[i] == values[i + m]
            ranks[i] = 0 if constant[i] else _combine_ranks(ranks[i], ranks[i + 1])
    return ranks[0]


def _integer(value, name: str):
    """``value`` as an int (a Python, NumPy or one-element tensor integer, or a float that
    holds one), or a str saying why it is not one."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    number = _plain_number(value, name)
    if isinstance(number, str):
        return number
    if isinstance(number, float) and not number.is_integer():
        return f"{name} must be a whole number, got {number}"
    return int(number)


def check_rank_formula(rank, function, lengths=range(1, 13),
                       long_lengths=(20, 57, 100)) -> Feedback:
    """Grade a closed form of decision-tree rank: ``rank(n)`` must return the
    Ehrenfeucht–Haussler rank ([ehrenfeucht1989learning]) of ``function`` on ``n`` bits (a
    function from ``LongTensor[B, n]`` to ``BoolTensor[B]``, written apart from the answer),
    an int.

    At each of ``lengths`` (at most 12) the value is compared with
    :func:`companion.decision_trees.eh_rank`, over all ``3^n`` subcubes; where ``function``
    depends only on the number of 1s at every one of them, also at each of ``long_lengths``
    (at most :data:`MAX_RANK_LENGTH`), with :func:`symmetric_rank`, where no enumeration
    reaches. A wrong value that is the least depth of a decision tree
    (:func:`companion.decision_trees.tree_depth`), one more or one less than the rank, or the
    rank at ``n - 1`` or ``n + 1``, is named as such."""
    from companion.decision_trees import MAX_BITS, eh_rank, tree_depth
    from companion.evaluation import _labels
    from companion.languages import all_strings

    check_callable(rank, "rank")
    check_callable(function, "function")
    lengths = [check_int(n, "lengths", 1, MAX_BITS) for n in lengths]
    long_lengths = [check_int(n, "long_lengths", 1, MAX_RANK_LENGTH) for n in long_lengths]
    if not lengths:
        raise ValueError("lengths is empty: nothing would be checked against eh_rank")
    symmetric = True
    for n in lengths:
        w = all_strings(n)
        representative = (torch.arange(n)[None, :] < w.sum(dim=1)[:, None]).long()
        symmetric = symmetric and torch.equal(_labels(function, w),
                                              _labels(function, representative))
    checked = lengths + (long_lengths if symmetric else [])

    def exact(n: int) -> int:
        if n in lengths or n <= MAX_BITS and not symmetric:
            return eh_rank(function, n)
        return symmetric_rank(function, n)

    for n in checked:
        try:
            got = _integer(rank(n), f"rank({n})")
        except Exception as error:  # a student's code may fail in any way
            return Feedback(False, f"rank({n}) raised {type(error).__name__}: {error}")
        if isinstance(got, str):
            return Feedback(False, got)
        right = exact(n)
        if got == right:
            continue
        how = ("over all 3**n subcubes" if n in lengths else
               "counted by the number of 1s (3**n subcubes are too many to enumerate)")
        why = f"rank({n}) = {got}, but the rank {how} is {right}"
        seen = []  # what the wrong value is, where it is something recognizable
        if n <= MAX_BITS and got == tree_depth(function, n) != right:
            seen.append("the least depth of a decision tree for it (tree_depth), not its "
                        "rank: a node adds one to the rank only where both subtrees have "
                        "the same rank")
        if got in (right - 1, right + 1):
            seen.append(f"one {'more' if got > right else 'less'} than the rank (an "
                        "off-by-one?)")
        for other in (n - 1, n + 1):
            if 1 <= other and (other <= MAX_BITS or symmetric and other <= MAX_RANK_LENGTH) \
                    and exact(other) != right and got == exact(other):
                seen.append(f"the rank at n = {other} (an off-by-one in n?)")
        if seen:
            why += ": yours is " + ", and also ".join(seen)
        return Feedback(False, why)
    tried = f"against eh_rank for n = {min(lengths)}..{max(lengths)}"
    if symmetric and long_lengths:
        tried += f", and counted by the number of 1s for n in {list(long_lengths)}"
    return Feedback(True, "the rank is right " + tried)


MAX_BUILD_LENGTH = 16
"""The longest length :func:`check_fan_in_2_circuit` decodes circuits at (the decoder
attends over every position it has written, so its time grows with the square of a
circuit's size)."""


def circuit_test_strings(n: int, samples: int, generator: torch.Generator) -> torch.Tensor:
    """``LongTensor[5 samples + 2n + 2, n]``: the strings with at most one 1 or one 0,
    ``samples`` strings whose number of 1s is uniform on ``0..n``, and, from ``samples``
    random halves ``u`` of length ``n // 2``, the strings ``u u`` and ``u reversed(u)`` (a
    middle bit between them where ``n`` is odd) and each with one bit flipped: languages that
    compare the halves of a string accept almost no random string, but many of these."""
    weights = _strings_of_every_weight(n, samples, generator)
    h = n // 2
    u = torch.randint(2, (samples, h), generator=generator)
    middle = torch.randint(2, (samples, n - 2 * h), generator=generator)
    copies = torch.cat([torch.cat([u, middle, u], 1), torch.cat([u, middle, u.flip(1)], 1)])
    flip = torch.nn.functional.one_hot(torch.randint(n, (len(copies),), generator=generator),
                                       n) if n else torch.zeros_like(copies)
    return torch.cat([weights, copies, copies ^ flip])


def check_fan_in_2_circuit(build, function, budget, lengths=(2, 4, 6, 8),
                           sampled_lengths=(14,), samples: int = 24, seed: int = 0) -> Feedback:
    """Grade a fan-in-2 circuit family run by a decoder: ``build(n)`` must return a
    :class:`~companion.circuits.Circuit` on ``n`` inputs with NOT, AND and OR gates of fan-in
    at most 2 (no MAJORITY), at most ``budget(n)`` gates, whose verdict is ``function`` (a
    function from ``LongTensor[B, n]`` to ``BoolTensor[B]``, written apart from the answer).

    Each circuit is compiled into a decoder at 2 significand bits
    (:func:`companion.steps.compile_circuit`, one gate per step) and decoded
    (:func:`companion.steps.decode`): on every input at each of ``lengths``, on
    :func:`circuit_test_strings` (``samples``, seeded by ``seed``) at each of
    ``sampled_lengths``, all at most :data:`MAX_BUILD_LENGTH`. The verdicts are compared with
    ``function``'s, never with the circuit's own :meth:`~companion.circuits.Circuit.evaluate`.
    The message names the first gate that breaks a rule, the number of gates and the budget,
    or the first input decided wrong."""
    from companion.circuits import Circuit
    from companion.evaluation import _labels
    from companion.languages import all_strings
    from companion.steps import compile_circuit, decode

    check_callable(build, "build")
    check_callable(function, "function")
    check_callable(budget, "budget")
    lengths = [check_int(n, "lengths", 1, MAX_BUILD_LENGTH) for n in lengths]
    sampled_lengths = [check_int(n, "sampled_lengths", 1, MAX_BUILD_LENGTH)
                       for n in sampled_lengths]
    if not lengths and not sampled_lengths:
        raise ValueError("lengths and sampled_lengths are both empty: nothing would be checked")
    samples = check_int(samples, "samples", 1, 10**4)
    generator = torch.Generator().manual_seed(check_int(seed, "seed", minimum=0))
    sizes = {}
    for n in [*lengths, *sampled_lengths]:
        allowed = check_int(budget(n), f"budget({n})", minimum=0)
        try:
            circuit = build(n)
        except Exception as error:  # a student's code may fail in any way
            return Feedback(False, f"build({n}) raised {type(error).__name__}: {error}")
        if not isinstance(circuit, Circuit):
            return Feedback(False, f"build({n}) must return a companion.circuits.Circuit, got "
                                   f"a {type(circuit).__name__}")
        if circuit.n_inputs != n:
            return Feedback(False, f"build({n}) has {circuit.n_inputs} inputs, not {n}")
        if circuit.output is None:
            return Feedback(False, f"build({n}) has no output node; call set_output")
        for index, (kind, inputs) in enumerate(circuit.gates):
            if kind == "MAJORITY" or len(inputs) > 2:
                what = "a MAJORITY gate" if kind == "MAJORITY" else \
                    f"an {kind} gate of fan-in {len(inputs)}"
                return Feedback(False, f"build({n}): gate {index} (node {n + index}) is "
                                       f"{what}; only NOT, AND and OR of fan-in at most 2 "
                                       "are allowed")
        if len(circuit.gates) > allowed:
            return Feedback(False, f"build({n}) has {len(circuit.gates)} gates, more than the "
                                   f"{allowed} allowed (budget({n}))")
        sizes[n] = len(circuit.gates)
        exhaustive = n in lengths
        w = all_strings(n) if exhaustive else circuit_test_strings(n, samples, generator)
        _, verdict = decode(compile_circuit(circuit, bits=2), w)
        wrong = (verdict != _labels(function, w)).nonzero().flatten()
        if len(wrong):
            example = "".join(str(b) for b in w[wrong[0]].tolist())
            return Feedback(False, f"build({n})'s decoder says {bool(verdict[wrong[0]])} on "
                                   f"{example!r}, where the function is "
                                   f"{not bool(verdict[wrong[0]])} (and it is wrong on "
                                   f"{len(wrong) - 1} other inputs "
                                   f"{'' if exhaustive else 'of those tried '}of length {n})")
    tried = [f"on every input for n in {list(lengths)}"] if lengths else []
    if sampled_lengths:
        tried.append(f"on strings of every weight and strings whose halves agree for n in "
                     f"{list(sampled_lengths)}")
    longest = max(sizes)
    return Feedback(True, "decoded at 2 significand bits, right " + " and ".join(tried)
                    + f"; {sizes[longest]} gates at n = {longest} (at most "
                      f"{budget(longest)} allowed)")


def check_step_count(steps, family, lengths=range(1, 65)) -> Feedback:
    """Grade a closed form of a circuit decoder's steps: ``steps(n)`` must return the number
    of steps that the decoder of ``family(n)`` (a :class:`~companion.circuits.Circuit` on
    ``n`` inputs, written apart from the answer) takes, one per gate
    (:func:`companion.steps.compile_circuit`): ``len(family(n).gates)``, for every ``n`` in
    ``lengths``. That the decoder writes one value per gate is confirmed by decoding the
    circuits of the three shortest lengths. A wrong value that counts the inputs too (the
    circuit's ``size``), and BOS with them (the positions the decoder ends with), or is one
    off, is named as such."""
    from companion.circuits import Circuit
    from companion.steps import compile_circuit, decode

    check_callable(steps, "steps")
    check_callable(family, "family")
    lengths = [check_int(n, "lengths", 0) for n in lengths]
    if not lengths:
        raise ValueError("lengths is empty: nothing would be checked")
    for index, n in enumerate(sorted(lengths)):
        circuit = family(n)
        if not isinstance(circuit, Circuit):
            raise TypeError(f"family({n}) must return a companion.circuits.Circuit, got "
                            f"{type(circuit).__name__}")
        right = len(circuit.gates)
        if index < 3:
            written, _ = decode(compile_circuit(circuit), torch.zeros(1, n, dtype=torch.long))
            if written.shape[1] != right:
                raise RuntimeError("the circuit decoder did not write one value per gate: "
                                   "please report it")
        try:
            got = _integer(steps(n), f"steps({n})")
        except Exception as error:  # a student's code may fail in any way
            return Feedback(False, f"steps({n}) raised {type(error).__name__}: {error}")
        if isinstance(got, str):
            return Feedback(False, got)
        if got == right:
            continue
        why = f"steps({n}) = {got}, but the decoder of family({n}) takes {right} steps"
        if got == circuit.size:
            why += (": yours counts the inputs too (the circuit's size); the decoder "
                    "reads the inputs in its prompt and takes a step per gate only")
        elif got == circuit.size + 1:
            why += (": yours counts every position, BOS and the inputs too; the decoder "
                    "takes a step per gate only")
        elif abs(got - right) == 1:
            why += ": yours is one off (the output gate, or a constant gate, counts as one)"
        return Feedback(False, why)
    return Feedback(True, f"the number of steps is right for {len(lengths)} lengths n from "
                          f"{min(lengths)} to {max(lengths)}")
