"""Finite precision: an executor that runs the companion's models at ``p`` bits, and a
rounding-error analysis of the PARITY transformer.

**The executor** (:func:`at_precision`, :func:`round_to`). A number format has ``bits``
significand bits (the leading one included, as IEEE counts them: 24 for float32, 8 for
bfloat16) and ``exponent_bits`` bits of exponent: its numbers are 0 and ``+-f 2**E`` with
``1 <= f < 2`` a multiple of ``2**(1 - bits)`` and ``2 - 2**(e-1) <= E <= 2**(e-1) - 1``.
:func:`round_to` maps a real number to the nearest one (ties to an even last bit), with two
choices stated here because models of precision differ on them: a magnitude below the smallest
normal number flushes to 0 (no subnormals, so ``exp`` of a very negative score is exactly 0),
and a magnitude above the largest saturates to it (no infinities; a score masked to ``-inf``
stays ``-inf``).

Under :func:`at_precision`, *every operation rounds*: each PyTorch operation that a model's
``forward`` calls, from an addition or a product to a layer normalization's square root, is
computed in float64 from rounded operands and its result rounded. (Operations that only move
numbers, such as indexing, reshaping and concatenation, return numbers already rounded; the
weights and position embeddings are rounded when :func:`at_precision` makes its copy.) An
operation that sums many terms (a matrix product, a mean, softmax's normalizer) sums them in
float64, exact for the small integers of the constructions, and rounds once; [li2024chain]
instead round after every single addition (the circuit decoders of
:func:`companion.steps.compile_circuit` are exact under both; its docstring says why).
Softmax is three rounded operations: ``exp(x - max x)``, which flushes to 0 below the
smallest normal number, the sum, and the division. Attention is rounded too, weights and
weighted sum, which [yang2025knee] do not do: their transformers round everywhere *but*
inside attention.

**The rounding analysis** of the PARITY transformer asks up to which length a floating-point
format (float32, bfloat16) must classify every string correctly, whatever order its kernels sum
in. The analysis follows the standard model of floating-point arithmetic (Higham, *Accuracy and
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

import copy
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.overrides import TorchFunctionMode

from companion import runtime
from companion._checks import check_device, check_dtype, check_int, check_number

U64 = 2.0**-53
MAX_GUARANTEED_LENGTH = 10**8  # the largest up_to of parity_guaranteed_length
GUARANTEE_CHUNK = 2**18
"""The lengths :func:`parity_guaranteed_length` bounds at once: some 20 float64 arrays, 40 MB."""


MAX_EXPONENT_BITS = 11  # float64's, in which the executor computes
SIGNIFICAND_BITS = {torch.float64: 53, torch.float32: 24, torch.float16: 11, torch.bfloat16: 8}
"""The floating dtypes, each with its significand's bits (the leading one included)."""


@dataclass(frozen=True)
class Format:
    """A floating-point format of ``bits`` significand bits and ``exponent_bits`` exponent bits
    (see the module docstring): ``Format(24, 8)`` is float32's, ``Format(8, 8)`` bfloat16's,
    ``Format(11, 5)`` float16's, without their subnormal numbers and infinities."""

    bits: int
    exponent_bits: int = 8

    def __post_init__(self):
        check_int(self.bits, "bits", minimum=1, maximum=53)
        check_int(self.exponent_bits, "exponent_bits", minimum=2, maximum=MAX_EXPONENT_BITS)

    @property
    def largest(self) -> float:
        """The largest finite number, ``(2 - 2**(1 - bits)) 2**(2**(e-1) - 1)``."""
        return (2 - 2.0 ** (1 - self.bits)) * 2.0 ** (2 ** (self.exponent_bits - 1) - 1)

    @property
    def smallest(self) -> float:
        """The smallest positive number, ``2**(2 - 2**(e-1))`` (no subnormals)."""
        return 2.0 ** (2 - 2 ** (self.exponent_bits - 1))


def round_to(x: torch.Tensor, fmt: Format) -> torch.Tensor:
    """``x`` (a float64 tensor) rounded to the nearest number of ``fmt``, ties to an even last
    bit; below ``fmt.smallest`` in magnitude to 0, above ``fmt.largest`` to ``+-largest``;
    infinities and NaN unchanged. The result is float64."""
    if not isinstance(fmt, Format):
        raise TypeError(f"fmt must be a Format, got {type(fmt).__name__}")
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float64:
        raise TypeError("x must be a float64 tensor")
    mantissa, exponent = torch.frexp(x)  # x = mantissa 2**exponent, 1/2 <= |mantissa| < 1
    rounded = torch.ldexp(torch.round(torch.ldexp(mantissa, torch.tensor(fmt.bits))),
                          exponent - fmt.bits)
    rounded = torch.where(rounded.abs() < fmt.smallest, torch.zeros_like(x), rounded)
    rounded = rounded.clamp(-fmt.largest, fmt.largest)
    return torch.where(torch.isfinite(x), rounded, x)


_SOFTMAX = {torch.softmax, torch.Tensor.softmax, F.softmax, torch.special.softmax}
_MOVES = {"__getitem__", "view", "reshape", "transpose", "permute", "expand", "unsqueeze",
          "squeeze", "flatten", "contiguous", "cat", "stack", "narrow", "select", "gather",
          "index_select", "flip", "clone", "to", "detach", "split", "chunk", "unbind"}
"""Operations that only move numbers: their results are the numbers they were given."""


class _Rounding(TorchFunctionMode):
    """A torch-function mode in which every operation's floating result is rounded to ``fmt``,
    and softmax is computed as three rounded operations (see the module docstring)."""

    def __init__(self, fmt: Format):
        super().__init__()
        self.fmt = fmt

    def round(self, value):
        if isinstance(value, torch.Tensor) and value.dtype == torch.float64:
            return round_to(value, self.fmt)
        if isinstance(value, tuple | list):
            return type(value)(self.round(v) for v in value)
        return value

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _SOFTMAX:
            x = args[0]
            dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
            shifted = self.round(x - x.amax(dim, keepdim=True))
            exponentials = self.round(torch.exp(shifted))
            return self.round(exponentials / self.round(exponentials.sum(dim, keepdim=True)))
        if func is torch.Tensor.__setitem__:  # the value written is rounded
            args = (args[0], args[1], self.round(args[2]))
            return func(*args, **kwargs)
        result = func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        if name in _MOVES:
            return result
        if name.endswith("_") and not name.startswith("__") and isinstance(result, torch.Tensor):
            with torch.no_grad():  # an in-place operation: round its target in place
                return result.copy_(self.round(result)) if result.dtype == torch.float64 \
                    else result
        return self.round(result)


def _round_tensors(obj, fmt: Format, seen: set):
    """Round, in place, every float64 tensor held by ``obj``: a module's parameters and buffers,
    and the tensors in its attributes, lists, tuples and dicts (a compiled program's weights)."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        if obj.dtype == torch.float64:
            with torch.no_grad():
                obj.copy_(round_to(obj.detach(), fmt))
        return
    if isinstance(obj, nn.Module):
        for tensor in [*obj.parameters(), *obj.buffers()]:
            _round_tensors(tensor, fmt, seen)
    if isinstance(obj, dict):
        items = obj.values()
    elif isinstance(obj, list | tuple):
        items = obj
    elif hasattr(obj, "__dict__") and type(obj).__module__.startswith("companion"):
        items = vars(obj).values()
    else:
        return
    for item in items:
        _round_tensors(item, fmt, seen)


def _float_dtype(obj) -> torch.dtype:
    """The dtype the model ``obj`` computes in: that of its first floating tensor."""
    if isinstance(obj, nn.Module):
        for tensor in obj.parameters():
            return tensor.dtype
    return getattr(obj, "dtype", torch.float64)


def at_precision(model, bits: int, exponent_bits: int = 8):
    """A copy of ``model`` that computes at ``bits`` significand bits and ``exponent_bits``
    exponent bits: its weights rounded once, and every operation of its ``forward`` rounded as
    the module docstring says. ``model`` is any of the companion's float64 models that compute
    in ``forward``: an :class:`~companion.transformer.Encoder` (Chapter 6's constructions), a
    :class:`~companion.rasp.RaspTransformer`, a :class:`~companion.steps.Decoder` (run it with
    :func:`~companion.steps.decode`). ``bits`` is 1..53, ``exponent_bits`` 2..11. The model
    itself is left as it was."""
    fmt = Format(check_int(bits, "bits", minimum=1, maximum=53),
                 check_int(exponent_bits, "exponent_bits", minimum=2,
                           maximum=MAX_EXPONENT_BITS))
    if not callable(getattr(model, "forward", None)):
        raise TypeError(f"model must have a forward method (a companion model), "
                        f"got {type(model).__name__}")
    if _float_dtype(model) != torch.float64:
        raise TypeError(f"model must compute in float64, so that every format up to 53 bits "
                        f"can be simulated, got {_float_dtype(model)}")
    rounded = copy.deepcopy(model)
    _round_tensors(rounded, fmt, set())
    forward = rounded.forward
    if callable(getattr(rounded, "positions", None)):  # a decoder's position embedding,
        positions = rounded.positions  # which its cache holds: rounded when computed

        def positions_at_precision(i):
            return round_to(positions(i).double(), fmt)

        rounded.positions = positions_at_precision

    def forward_at_precision(*args, **kwargs):
        with _Rounding(fmt):
            return forward(*args, **kwargs)

    rounded.forward = forward_at_precision
    rounded.format = fmt
    return rounded


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
