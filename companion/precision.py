"""A rounding-error analysis of the PARITY transformer: up to which length must a floating-point
format classify every string correctly, whatever order its kernels sum in?

The analysis follows the standard model of floating-point arithmetic (Higham, *Accuracy and
Stability of Numerical Algorithms*, 2nd ed., §2.2 and §3.1): every ``+ - * /`` returns the exact
result times ``(1 + d)`` with ``|d| <= u``, the unit roundoff of the dtype (``2**-24`` for
float32, ``2**-8`` for bfloat16, ``2**-53`` for float64). A sum of ``j + 1`` terms, in any order,
blocked or not, with or without FMA or a wider accumulator, is then off by at most
``gamma(j) * sum |terms|`` with ``gamma(j) = j u / (1 - j u)``. Two assumptions about the
library: ``exp(0) = 1`` and ``exp`` is within 2 ulps (``4u``) elsewhere; no underflow (the
smallest quantity, about ``1/n**2``, is far above float32's and bfloat16's least normal number).

Quantities are in *count units*: a value ``x/n`` of the construction is reported as ``x``, so an
error of 1 in count units moves ``k/n`` by one whole position. For a string of ``n`` positions
(CLS included) with ``k`` ones, ``k <= n - 1``, the steps of the proof are (names as in
:func:`companion.constructions.parity_transformer`):

1. the position feature ``i/n`` is rounded once from float64: relative error ``u + u64``;
2. layer 1 averages with weights ``fl(1/n)`` (the sum of ``n`` ones is exact while ``n <= 2**p``,
   ``p`` the precision in bits); the sum of ``k`` such weights has the *count error*
   ``|E| <= k ((1 + gamma(2)) (1 + gamma(k - 1)) - 1)``, about ``k**2 u``;
3. FFN 1's pre-activations (three terms each) add an error ``eta_i`` and its output combination
   ``1, -2, 1`` an error ``F_i``; since ReLU is 1-Lipschitz the spike value at position ``i`` is
   ``T(k - i + E) + phi_i`` with ``T(x) = max(0, 1 - |x|)`` and ``|phi_i| <= 4 eta_i + F_i``,
   and exactly 0 for ``i >= k + 2``;
4. layer 2's scores are ``+-c`` rounded, so its weights are exact softmax weights for a
   slightly different ``c`` (still a valid construction) times ``1 + mu_i``; each head sums ``n``
   products; the final addition of the two heads and the output layer cannot change a sign.

The logit has the sign of ``k``'s parity when ``margin > 0`` (see :func:`parity_rounding_bounds`).
"""

import numpy as np
import torch

from companion import runtime
from companion._checks import check_device, check_dtype, check_int, check_number

U64 = 2.0**-53
MAX_GUARANTEED_LENGTH = 10**8  # the largest up_to of parity_guaranteed_length
GUARANTEE_CHUNK = 2**18
"""The lengths :func:`parity_guaranteed_length` bounds at once: some 20 float64 arrays, 40 MB."""


def unit_roundoff(dtype: torch.dtype) -> float:
    """``u = eps / 2`` for a floating-point ``dtype`` (float32: ``2**-24``)."""
    return torch.finfo(check_dtype(dtype)).eps / 2


def _gamma(j, u):
    """Higham's ``gamma(j) = j u / (1 - j u)``, infinite once ``j u >= 1``."""
    ju = np.asarray(j, dtype=np.float64) * u
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ju < 1, ju / (1 - ju), np.inf)


def _attention_weights(n, c):
    """Layer 2's exact weights for ``n`` positions: the two heads' differences at odd and at
    even positions (``Delta``) and the largest single weight ``A``. Numerator and denominator
    are divided by ``e^c``, so that no ``exp`` overflows at large ``c``."""
    odd, even, t = np.floor(n / 2), np.ceil(n / 2), np.exp(-2 * c)
    z1 = odd + even * t  # head 1 prefers odd positions: its normalizer over e^c
    z2 = odd * t + even  # head 2 prefers even positions
    delta_odd = 1 / z1 - t / z2
    delta_even = 1 / z2 - t / z1
    return np.minimum(delta_odd, delta_even), np.maximum(delta_odd, delta_even), \
        1 / np.minimum(z1, z2)


def parity_rounding_bounds(n, dtype: torch.dtype, c: float = 1.0) -> dict:
    """Worst-case rounding bounds for ``parity_transformer(c)`` run in ``dtype`` on strings of
    ``n`` positions (CLS included; an int or an array of ints ``>= 2``), over every string and
    every summation order. Returns arrays shaped like ``n``:

    * ``"count"``: bound on the count error ``|E|`` of ``k/n`` (count units) for ``k = n - 1``;
    * ``"ffn"``: bound on FFN 1's own rounding at any position, in count units: its spike at
      position ``i`` is within this of ``T(e_i)``, where ``e_i`` is the error of the stored
      ``k/n - i/n`` in count units;
    * ``"margin"``: a lower bound on ``|Delta_k| (1 - |E|)`` minus everything rounding can add
      against it; positive means every string with ``n`` positions is classified correctly.
    """
    u, c = unit_roundoff(dtype), check_number(c, "c", above=0)
    if isinstance(n, str) or np.asarray(n).dtype.kind not in "iuf":
        raise TypeError(f"n must be an int or an array of ints, got {type(n).__name__}")
    n = np.asarray(n, dtype=np.float64)
    if not np.all(np.isfinite(n)) or np.any(n < 2) or np.any(n != np.round(n)):
        raise ValueError("n must hold integers >= 2 (positions, CLS included)")
    g2, k = _gamma(2, u), n - 1
    p = -np.log2(u)  # precision in bits
    embedding = u + U64 + u * U64
    delta = np.where(n <= 2.0**p, g2, _gamma(n + 1, u))  # layer 1's weights fl(1/n)
    count = k * ((1 + delta) * (1 + _gamma(k - 1, u)) - 1)
    # eta_i = a + b i bounds the error of FFN 1's pre-activations at position i.
    a = delta + g2 * (k + count + 1 + delta)
    b = embedding + g2 * (1 + embedding)
    # F_i = 4 gamma(2) (k + 1 + count + a - (1 - b) i) bounds its output combination (i <= k+1).
    ffn = 4 * (a + b * k) + 4 * g2 * (k + 1 + count + a)
    positions = n * (n - 1) / 2  # sum of i over 0..n-1
    phi = n * (4 * a + 4 * g2 * (k + 1 + count + a)) + (4 * b - 4 * g2 * (1 - b)) * positions
    # Layer 2: the score c is rounded three times; weights then carry a relative error mu.
    xi = _gamma(3, u)
    delta_min, _, _ = _attention_weights(n, c * (1 - xi))
    _, delta_max, largest = _attention_weights(n, c * (1 + xi))
    normalizer = np.minimum(_gamma(n - 1, u), 1.0)  # layer 2's sum of n exponentials
    with np.errstate(divide="ignore"):
        mu = (1 + 4 * u) * (1 + u) / ((1 - 4 * u) * (1 - normalizer)) - 1
    with np.errstate(invalid="ignore"):  # inf - inf where the bounds are vacuous
        spread = 2 * largest * (mu + _gamma(n, u) * (1 + mu)) * (1 + count + phi)
        margin = delta_min * (1 - count) - delta_max * (count + phi) - spread
    usable = count + a + b * k < 1  # |E| < 1 and no spurious spike beyond k + 1
    return {"count": count, "ffn": ffn, "margin": np.where(usable, margin, -np.inf)}


def parity_guaranteed_length(dtype: torch.dtype, c: float = 1.0, up_to: int = 10**7) -> int:
    """The largest ``n <= up_to`` (positions, CLS included) such that, by
    :func:`parity_rounding_bounds`, ``parity_transformer(c)`` in ``dtype`` classifies every
    string of every length ``2..n`` correctly, on any device and in any summation order.
    ``up_to`` is at least 2 and at most ``10**8``; the lengths are bounded in chunks of
    :data:`GUARANTEE_CHUNK`, so memory stays near 40 MB whatever ``up_to`` is."""
    up_to = check_int(up_to, "up_to", minimum=2, maximum=MAX_GUARANTEED_LENGTH)
    for first in range(2, up_to + 1, GUARANTEE_CHUNK):
        ns = np.arange(first, min(first + GUARANTEE_CHUNK, up_to + 1))
        failing = np.flatnonzero(parity_rounding_bounds(ns, dtype, c)["margin"] <= 0)
        if failing.size:
            return int(ns[failing[0]] - 1)
    return int(up_to)


def parity_spike_probe(m: int, dtype: torch.dtype, c: float = 1.0,
                       device: torch.device | str | None = None) -> dict:
    """Run ``parity_transformer(c)`` in ``dtype`` on ``1^m`` (``k = m``, ``n = m + 1``) and read
    off, in count units: ``"count error"`` ``E`` of the stored ``k/n``; ``"e_k"`` and
    ``"e_k-1"``, the errors of the stored ``k/n - i/n`` at ``i = k`` and ``i = k - 1`` (what FFN 1
    actually sees); and FFN 1's spike ``"at k"`` and ``"at k-1"`` (1 and 0 in exact
    arithmetic). Also ``"spike error"``: the largest ``|spike_i - T(k - i + e_i)|`` over all
    positions, FFN 1's own rounding (bounded by ``parity_rounding_bounds(...)["ffn"]``).
    Runs on ``device`` (default :func:`companion.runtime.device`)."""
    from companion.constructions import PARITY_LAYOUT, parity_transformer

    m, dtype = check_int(m, "m", minimum=1), check_dtype(dtype)
    device = check_device(device) or runtime.device()
    with torch.no_grad():
        model = parity_transformer(c).to(device=device, dtype=dtype)
        _, trace = model(torch.ones(1, m, dtype=torch.long, device=device), record=True)
    n, L = m + 1, PARITY_LAYOUT
    c1 = trace.c[0][0].double().cpu()
    offset = (m - torch.arange(n)).double()  # k - i
    e = (c1[:, L["k/n"]] - c1[:, L["i/n"]]) * n - offset
    spike = trace.a[1][0, :, L["[i=k]/n"]].double().cpu() * n
    triangle = (1 - (offset + e).abs()).clamp(min=0)
    return {"count error": c1[0, L["k/n"]].item() * n - m, "e_k": e[m].item(),
            "e_k-1": e[m - 1].item(), "at k": spike[m].item(), "at k-1": spike[m - 1].item(),
            "spike error": (spike - triangle).abs().max().item()}
