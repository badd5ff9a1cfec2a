"""One small trainable transformer for the learning chapters, and how it is trained.

The model (:class:`Model`, plain PyTorch modules): a learned embedding of the tokens, pre-norm
``nn.TransformerEncoderLayer`` s (ReLU, no dropout), a final layer norm (unless
``config.final_norm`` is False) and a linear output of ``config.outputs`` logits at every
position. Attention logits may be multiplied by a factor, per model (log-length scaling,
[chiang2022overcoming]: ``scale = log n``). Tokens are a ``LongTensor[B, n]`` of ids
``0..vocab-1``; positions count from 0. Attention is causal (a query ``i`` sees the keys
``j <= i``) unless ``config.causal`` is False, and the position encoding is one of
:data:`POSITIONS`:

* ``"none"`` (NoPE): nothing marks a position; a causal model can still compute it (uniform
  attention gives the first token the share ``1/(i+1)``);
* ``"learned"``: a learned vector per position ``0..max_length-1`` added to the embedding;
* ``"sinusoidal"``: the fixed table of [vaswani2017attention] added to the embedding
  (:func:`companion.transformer.sinusoidal_position_embedding`);
* ``"alibi"``: no vector; head ``h`` adds ``-slope_h |i - j|`` to the score of query ``i`` for
  key ``j`` ([press2022train]), with ``slope_h = 2^-h`` (steeper than Press et al.'s
  ``2^(-8(h+1)/heads)``, which ``alibi_slopes="press"`` gives);
* ``"rope"``: no vector; each head's queries and keys at position ``i`` are rotated, pair of
  coordinates ``(k, k + d_head/2)`` by the angle ``i * 10000^(-2k/d_head)`` (rotary position
  embedding, in the half-split layout of GPT-NeoX), so that a score depends on ``i - j``.

:func:`logits` computes one model from its parameters by name (plain tensor code, which
``torch.func.vmap`` vectorizes over stacked models, :func:`stacked_logits`), at every position
or, cheaper, at the few a loss or a decision reads (``at``: the last layer runs there only);
:func:`extend` does the same for new positions after cached keys and values (greedy
decoding). :func:`train` trains many models (seeds, tasks, variants) at once through the book's
one training loop, :func:`companion.stacked.optimize`: Adam over their stacked parameters, each
model's gradient that of its own mean loss, which is the same as one Adam per model.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from companion._checks import (
    check_bool,
    check_callable,
    check_choice,
    check_device,
    check_dtype,
    check_int,
    check_keys,
    check_layers,
    check_number,
)
from companion.stacked import optimize, stack_modules
from companion.training import LAYER_PARAMETERS
from companion.transformer import sinusoidal_position_embedding

#: The position encodings a :class:`Config` may name (see the module docstring).
POSITIONS = ("none", "learned", "sinusoidal", "alibi", "rope")
#: A target that no loss counts (``train``'s ``batches`` mark unsupervised positions with it).
IGNORE = -100
#: Longest sequence the attention bias or the rotation is built for.
MAX_LENGTH = 8192
#: The most entries ``heads * n * n`` of one :func:`alibi_bias` (1 GiB in float32).
MAX_BIAS = 2**28


@dataclass(frozen=True)
class Config:
    """The shape of a :class:`Model`: ``vocab`` token ids, ``outputs`` logits per position,
    width ``d`` split over ``heads``, ``layers`` layers with a feed-forward width ``d_ff``
    (``4 d`` when None), the position encoding ``positions`` (one of :data:`POSITIONS`),
    ``causal`` attention or not, ``max_length`` positions for ``"learned"`` (the longest
    sequence the model can read), ``alibi_slopes``, ``"steep"`` (``2^-h``) or ``"press"``,
    and whether a layer norm comes before the output (``final_norm``)."""

    vocab: int
    outputs: int
    d: int = 32
    heads: int = 4
    layers: int = 2
    d_ff: int | None = None
    positions: str = "none"
    causal: bool = True
    max_length: int = 512
    alibi_slopes: str = "steep"
    final_norm: bool = True

    def __post_init__(self):
        for name in ("vocab", "outputs", "d", "heads", "layers"):
            check_int(getattr(self, name), name, minimum=1)
        if self.d_ff is not None:
            check_int(self.d_ff, "d_ff", minimum=1)
        check_choice(self.positions, "positions", POSITIONS)
        check_bool(self.causal, "causal")
        check_int(self.max_length, "max_length", minimum=1, maximum=MAX_LENGTH)
        check_choice(self.alibi_slopes, "alibi_slopes", ("steep", "press"))
        check_bool(self.final_norm, "final_norm")
        if self.d % self.heads:
            raise ValueError(f"d must be a multiple of heads, got d = {self.d} and "
                             f"heads = {self.heads}")
        if self.positions == "rope" and (self.d // self.heads) % 2:
            raise ValueError(f"positions 'rope' needs an even width per head, got d / heads = "
                             f"{self.d // self.heads}")

    @property
    def hidden(self) -> int:
        """The feed-forward width."""
        return 4 * self.d if self.d_ff is None else self.d_ff


class Model(nn.Module):
    """One model in plain PyTorch. forward(tokens) gives the logits
    [B, n, outputs] of tokens, a LongTensor[B, n]; the function logits
    computes them from these modules' parameters, by name (this docstring
    is plain text: the book prints the class)."""

    def __init__(self, config: Config):
        super().__init__()
        if not isinstance(config, Config):
            raise TypeError(
                f"config must be a Config, got {type(config).__name__}")
        self.config = config
        self.embedding = nn.Embedding(config.vocab, config.d)
        if config.positions == "learned":
            self.position = nn.Embedding(config.max_length, config.d)
        self.layers = nn.ModuleList(nn.TransformerEncoderLayer(
            config.d, config.heads, config.hidden, dropout=0.0,
            batch_first=True, norm_first=True) for _ in range(config.layers))
        if config.final_norm:
            self.norm = nn.LayerNorm(config.d)
        self.output = nn.Linear(config.d, config.outputs)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """The logits [B, n, outputs] of tokens, a LongTensor[B, n]."""
        return logits(dict(self.named_parameters()), tokens, self.config)


def parameter_names(config: Config) -> list:
    """The names of a :class:`Model`'s parameters."""
    if not isinstance(config, Config):
        raise TypeError(f"config must be a Config, got {type(config).__name__}")
    names = ["embedding.weight", "output.weight", "output.bias"]
    if config.final_norm:
        names += ["norm.weight", "norm.bias"]
    if config.positions == "learned":
        names.append("position.weight")
    return names + [f"layers.{layer}.{name}" for layer in range(config.layers)
                    for name in LAYER_PARAMETERS]


def _check(params, tokens, config: Config, first: int = 0) -> None:
    """Bad input to :func:`logits` or :func:`extend`: a clear error, never a wrong answer."""
    if not isinstance(config, Config):
        raise TypeError(f"config must be a Config, got {type(config).__name__}")
    check_keys(params, "params", parameter_names(config))
    check_layers(params, "params", "layers.", config.layers)
    if not isinstance(tokens, torch.Tensor) or tokens.dtype != torch.long or tokens.dim() != 2:
        got = (f"dtype {tokens.dtype} and shape {list(tokens.shape)}"
               if isinstance(tokens, torch.Tensor) else type(tokens).__name__)
        raise TypeError(f"tokens must be a LongTensor[B, n], got {got}")
    if tokens.shape[1] < 1:
        raise ValueError("tokens must hold at least one position")
    limit = config.max_length if config.positions == "learned" else MAX_LENGTH
    if first + tokens.shape[1] > limit:
        raise ValueError(f"tokens reach position {first + tokens.shape[1] - 1}, beyond the "
                         f"{limit} positions this model reads")
    # under torch.func.vmap the ids cannot be read (no data-dependent branch there)
    if not torch._C._functorch.is_batchedtensor(tokens) and bool(
            ((tokens < 0) | (tokens >= config.vocab)).any()):
        raise ValueError(f"tokens must hold the ids 0..{config.vocab - 1}")


def alibi_bias(n: int, heads: int, causal: bool = True, slopes: str = "steep",
               dtype=torch.float32, device=None) -> torch.Tensor:
    """ALiBi's attention bias ``[heads, n, n]``: ``-slope_h |i - j|`` for query ``i`` and key
    ``j`` in head ``h`` (``slope_h = 2^-h``, or Press et al.'s ``2^(-8(h+1)/heads)`` with
    ``slopes="press"``), and ``-inf`` for a later key when ``causal``."""
    n = check_int(n, "n", minimum=1, maximum=MAX_LENGTH)
    heads = check_int(heads, "heads", minimum=1)
    if heads * n * n > MAX_BIAS:
        raise ValueError(f"heads * n * n must be at most {MAX_BIAS} (the bias's entries), got "
                         f"heads = {heads} and n = {n}")
    check_choice(slopes, "slopes", ("steep", "press"))
    dtype, device = check_dtype(dtype), check_device(device)
    h = torch.arange(heads, dtype=dtype, device=device)
    slope = 2.0 ** -h if slopes == "steep" else 2.0 ** (-8.0 * (h + 1) / heads)
    i = torch.arange(n, device=device)
    distance = (i[:, None] - i[None, :]).to(dtype)
    bias = -slope[:, None, None] * distance.abs()
    return bias.masked_fill(distance < 0, -math.inf) if check_bool(causal, "causal") else bias


def rotate(x: torch.Tensor, first: int = 0) -> torch.Tensor:
    """Rotary position embedding of queries or keys ``x: [..., t, d_head]`` at the positions
    ``first .. first + t - 1``: coordinates ``k`` and ``k + d_head/2`` rotated by the angle
    ``i * 10000^(-2k/d_head)``."""
    t, size = x.shape[-2], x.shape[-1]
    half = size // 2
    frequency = 10000.0 ** (-torch.arange(half, dtype=torch.float64, device=x.device) * 2 / size)
    position = torch.arange(first, first + t, dtype=torch.float64, device=x.device)
    angle = position[:, None] * frequency
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    low, high = x[..., :half], x[..., half:]
    return torch.cat([low * cos - high * sin, low * sin + high * cos], dim=-1)


def logits(params: dict, tokens: torch.Tensor, config: Config, first: int = 0,
           scale: float = 1.0, at: torch.Tensor | None = None) -> torch.Tensor:
    """One model's logits ``[B, n, outputs]`` of ``tokens: LongTensor[B, n]`` from its
    parameters ``params`` (by the names of :class:`Model`'s modules), the tokens at the
    positions ``first .. first + n - 1`` (a position offset, as in training with random
    offsets, so that every learned position is trained), every attention logit multiplied by
    ``scale``. ``at`` (``LongTensor[B, k]``, indices into each string's ``n`` tokens): only the
    logits at those positions of each string, ``[B, k, outputs]``, the same logits up to
    rounding, cheaper: the last layer's queries, feed-forward and output are computed there
    only (its keys and values everywhere)."""
    first = check_int(first, "first", minimum=0)
    scale = check_number(scale, "scale", above=0)
    _check(params, tokens, config, first)
    if at is not None:
        _check_at(at, tokens)
    return _pass(params, tokens, config, first=first, scale=scale, at=at)[0]


def _check_at(at, tokens: torch.Tensor) -> None:
    """``at`` must be positions ``0 .. n - 1`` of ``tokens`` (``[..., n]``): a
    ``LongTensor[..., k]`` on their device, ``k`` at least 1."""
    *strings, n = tokens.shape
    wanted = "LongTensor[" + ", ".join([*map(str, strings), "k"]) + "] of positions"
    if not isinstance(at, torch.Tensor) or at.dtype != torch.long:
        got = f"dtype {at.dtype}" if isinstance(at, torch.Tensor) else type(at).__name__
        raise TypeError(f"at must be a {wanted}, got {got}")
    if at.dim() != len(strings) + 1 or at.shape[:-1] != tuple(strings) or at.shape[-1] < 1:
        raise ValueError(f"at must be a {wanted}, k at least 1, got shape {list(at.shape)}")
    if at.device != tokens.device:
        raise ValueError(f"at must be on the tokens' device, {tokens.device}, got {at.device}")
    # under torch.func.vmap the positions cannot be read (no data-dependent branch there)
    if not torch._C._functorch.is_batchedtensor(at) and bool(((at < 0) | (at >= n)).any()):
        raise ValueError(f"at must hold positions 0..{n - 1}")


def norm_factors(params: dict, tokens: torch.Tensor, config: Config) -> torch.Tensor:
    """The factor ``1 / sqrt(var + eps)`` by which each layer norm of one model scales its input
    at each position of ``tokens: LongTensor[B, n]``: ``[norms, B, n]``, the norms in the order
    norm1, norm2 of each layer, then the final norm (Hahn & Rofin's layer-norm blow-up is built
    from these, :func:`companion.sharpness.blowup`)."""
    _check(params, tokens, config)
    norms = []
    _pass(params, tokens, config, norms=norms)
    return torch.stack(norms)


def extend(params: dict, tokens: torch.Tensor, config: Config, keys=None, values=None):
    """:func:`logits` of ``tokens: LongTensor[B, t]`` that continue a sequence whose earlier
    ``P`` positions left, in every layer, the keys and values ``keys``, ``values`` (each
    ``[layers, B, heads, P, d / heads]``, or None for ``P = 0``): returns the logits
    ``[B, t, outputs]`` and the keys and values of all ``P + t`` positions (a KV cache). Only
    a causal model can be extended: a non-causal one's earlier positions would see the new."""
    if not isinstance(config, Config) or not config.causal:
        raise ValueError("config must be a causal model's Config to extend a sequence")
    first = 0 if keys is None else keys.shape[-2]
    _check(params, tokens, config, first)
    return _pass(params, tokens, config, keys, values)


def _pass(p: dict, tokens: torch.Tensor, config: Config, keys=None, values=None,
          first: int = 0, scale=1.0, norms: list | None = None, at=None):
    """:func:`extend` without the checks (``first``, ``scale`` and ``at``: :func:`logits`'s).
    When ``norms`` is a list, each layer norm's factor ``1 / sqrt(var + eps)`` at every
    position (``[B, t]``; ``[B, k]`` for the last layer's norm2 and the final norm when ``at``
    is given) is appended to it, in the order norm1, norm2 of each layer, then the final
    norm."""
    heads, d = config.heads, config.d

    def layer_norm(x, weight, bias):
        if norms is not None:
            norms.append((x.var(dim=-1, unbiased=False) + 1e-5).rsqrt())
        return F.layer_norm(x, (d,), weight, bias)

    x = p["embedding.weight"][tokens]
    B, t, _ = x.shape
    if keys is None:
        keys = values = x.new_zeros(config.layers, B, heads, 0, d // heads)
    P = keys.shape[-2]
    start = first + P  # the position of the first new token
    if config.positions == "learned":
        x = x + p["position.weight"][start:start + t]
    elif config.positions == "sinusoidal":
        x = x + sinusoidal_position_embedding(start + t, d)[start:].to(x.dtype).to(x.device)
    if config.positions == "alibi":
        bias = alibi_bias(P + t, heads, config.causal, config.alibi_slopes, x.dtype,
                          x.device)[:, P:]
    else:
        bias = x.new_zeros(1, t, P + t)
        if config.causal:
            later = torch.arange(P, P + t, device=x.device)[:, None] < torch.arange(
                P + t, device=x.device)
            bias = bias.masked_fill(later, -math.inf)
    all_keys, all_values = [], []
    for layer in range(config.layers):
        w = {name: p[f"layers.{layer}.{name}"] for name in LAYER_PARAMETERS}
        y = layer_norm(x, w["norm1.weight"], w["norm1.bias"])
        qkv = F.linear(y, w["self_attn.in_proj_weight"], w["self_attn.in_proj_bias"])
        q, k, v = (u.reshape(B, t, heads, -1).transpose(1, 2) for u in qkv.chunk(3, dim=-1))
        if config.positions == "rope":
            q, k = rotate(q, start), rotate(k, start)
        if P:  # a copy of the cache, forward and backward: only when there is one
            k, v = torch.cat([keys[layer], k], dim=-2), torch.cat([values[layer], v], dim=-2)
        all_keys.append(k)
        all_values.append(v)
        if at is not None and layer == config.layers - 1:  # the rest: no later layer reads them
            q = q.gather(2, at[:, None, :, None].expand(-1, heads, -1, q.shape[-1]))
            x = x.gather(1, at[..., None].expand(-1, -1, d))
            bias = bias[:, at].transpose(0, 1)  # each string's rows: [B, heads or 1, k, P + t]
        scores = scale * (q @ k.transpose(-1, -2)) / math.sqrt(d // heads) + bias
        attended = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, q.shape[-2], d)
        x = x + F.linear(attended, w["self_attn.out_proj.weight"], w["self_attn.out_proj.bias"])
        y = layer_norm(x, w["norm2.weight"], w["norm2.bias"])
        hidden = torch.relu(F.linear(y, w["linear1.weight"], w["linear1.bias"]))
        x = x + F.linear(hidden, w["linear2.weight"], w["linear2.bias"])
    if config.final_norm:
        x = layer_norm(x, p["norm.weight"], p["norm.bias"])
    out = F.linear(x, p["output.weight"], p["output.bias"])
    return out, torch.stack(all_keys), torch.stack(all_values)


def stack(config: Config, seeds, dtype=torch.float32, device=None) -> dict:
    """The parameters of ``Model(config)`` with PyTorch's default initialization, one model per
    seed in ``seeds`` (each made on the CPU from its seed), stacked: name ->
    ``[len(seeds), ...]`` on ``device``, requiring gradients."""
    if not isinstance(config, Config):
        raise TypeError(f"config must be a Config, got {type(config).__name__}")
    return stack_modules(lambda: Model(config), seeds, dtype, device)


def stacked_logits(config: Config, first: int = 0):
    """:func:`logits` over stacked models: a function ``(params, tokens, scale=None, at=None)``
    of the stacked parameters (name -> ``[models, ...]``), ``tokens: LongTensor[models, B, n]``
    at the positions ``first .. first + n - 1``, each model's factor on its attention logits
    (``[models]``, or None for 1) and the positions of each string whose logits are computed
    (``LongTensor[models, B, k]``; an int, one position for every string, ``k = 1``, negative
    from the end; or None for all ``n``) that returns ``[models, B, k, outputs]``."""
    if not isinstance(config, Config):
        raise TypeError(f"config must be a Config, got {type(config).__name__}")
    first = check_int(first, "first", minimum=0)

    def forward(params, tokens, scale=None, at=None):
        n = tokens.shape[-1]
        if at is not None and not isinstance(at, torch.Tensor):  # one position for all
            at = torch.full((*tokens.shape[:2], 1), check_int(at, "at", minimum=-n,
                                                              maximum=n - 1) % n,
                            device=tokens.device)
        if at is not None:
            _check_at(at, tokens)
        in_dims = (0, 0, None if scale is None else 0, None if at is None else 0)
        return torch.func.vmap(
            lambda p, tokens, s, a: _pass(p, tokens, config, first=first, scale=s, at=a)[0],
            in_dims=in_dims)(params, tokens, 1.0 if scale is None else scale, at)

    return forward


def stacked_losses(params: dict, config: Config, tokens: torch.Tensor, targets: torch.Tensor,
                   first: int = 0, scale=None) -> torch.Tensor:
    """Each stacked model's mean cross-entropy (in nats) over its supervised positions:
    ``[models]``, for ``tokens`` and ``targets`` as :func:`train`'s ``batches`` gives them
    (``first`` and ``scale`` as there). The last layer runs only at the positions of each
    string that hold a target (``at``, :func:`stacked_logits`): a string whose class is read at
    one position pays for one there."""
    at, targets = supervised_positions(targets)
    out = stacked_logits(config, first)(params, tokens, scale, at)
    each = F.cross_entropy(out.flatten(0, 2), targets.flatten(), ignore_index=IGNORE,
                           reduction="none").reshape(targets.shape).sum(dim=(1, 2))
    return each / (targets != IGNORE).sum(dim=(1, 2)).clamp(min=1)


def supervised_positions(targets: torch.Tensor) -> tuple:
    """The positions of each string that hold a target (``targets: LongTensor[..., n]``,
    :data:`IGNORE` elsewhere), as ``at`` for :func:`stacked_logits`, and the targets there:
    ``(at, targets)``, each ``LongTensor[..., k]``, ``k`` the most targets of one string (a
    string with fewer is filled with unsupervised positions, IGNORE). ``(None, targets)``
    where some string has a target at every position, or none has one."""
    supervised = targets != IGNORE
    k = int(supervised.sum(dim=-1).max()) if supervised.numel() else 0
    if not 0 < k < targets.shape[-1]:
        return None, targets
    at = supervised.int().argsort(dim=-1, descending=True, stable=True)[..., :k]
    return at, targets.gather(-1, at)


def train(params: dict, config: Config, batches, steps: int, lr: float = 3e-3,
          progress: bool = True, description: str = "training") -> torch.Tensor:
    """Train the stacked models ``params`` (name -> ``[models, ...]``, as :func:`stack` makes
    them) for ``steps`` Adam steps with learning rate ``lr`` (:func:`companion.stacked.optimize`).
    ``batches(step)`` returns the step's ``tokens: LongTensor[models, B, n]`` and ``targets:
    LongTensor[models, B, n]``, a class ``0..outputs-1`` at every supervised position and
    :data:`IGNORE` elsewhere, and may return a third item, the step's position offset ``first``
    (see :func:`logits`), and a fourth, each model's factor on its attention logits
    (``[models]``). Each model's loss is its mean cross-entropy over its supervised positions,
    and its gradient that loss's alone. Returns the losses in bits, ``[models, steps]``;
    ``params`` are updated in place."""
    check_callable(batches, "batches")
    check_keys(params, "params", parameter_names(config))
    models = next(iter(params.values())).shape[0]
    limit = config.max_length if config.positions == "learned" else MAX_LENGTH

    def losses(step):
        tokens, targets, *more = batches(step)
        if tokens.shape[0] != models or targets.shape != tokens.shape:
            raise ValueError(f"batches must give tokens and targets of one shape [models = "
                             f"{models}, B, n], got {list(tokens.shape)} and "
                             f"{list(targets.shape)}")
        first = more[0] if more else 0
        scale = more[1] if len(more) > 1 else None
        if check_int(first, "the offset batches gives", minimum=0) + tokens.shape[-1] > limit:
            raise ValueError(f"batches' tokens at offset {first} reach position "
                             f"{first + tokens.shape[-1] - 1}, beyond the {limit} this model "
                             f"reads")
        return stacked_losses(params, config, tokens, targets, first, scale)

    return optimize(params, losses, steps, lr, progress, description) / math.log(2)
