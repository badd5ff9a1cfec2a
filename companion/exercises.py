"""Check functions for the book's exercises: each grades any attempt and explains a failure.

A check returns a :class:`Feedback`, which is truthy when the attempt is right, so a notebook
can ``assert check_...(...)`` and an autograder can report ``feedback.message``.
"""

from dataclasses import dataclass

import torch

from companion.attention import attention_weights


@dataclass
class Feedback:
    """The outcome of a check: ``passed`` and a message for the student."""

    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return ("PASSED: " if self.passed else "FAILED: ") + self.message


def previous_position_inputs(x: torch.Tensor) -> torch.Tensor:
    """Exercise 5.1's input sequence as columns: ``[5, n]`` with column ``i`` equal to
    ``[x_i, 1, i, i^2, 0]``, for ``x: [n]``."""
    i = torch.arange(x.shape[0], dtype=torch.float64)
    return torch.stack([x.double(), torch.ones_like(i), i, i**2, torch.zeros_like(i)])


def check_previous_position_layer(W_Q, W_K, W_V, lengths=range(1, 25), trials: int = 20,
                                  seed: int = 0) -> Feedback:
    """Grade Exercise 5.1 of 004: an average-hard attention layer ``f(X) = X + att(X)`` (the
    residual connection, no layer norm, no FFN) whose fifth row copies ``x_{i-1}`` (``x_0`` at
    position 0) and leaves the other rows as they were.

    The weights use 004's column convention: ``W_Q, W_K: [d_hid, 5]``, ``W_V: [5, 5]``; scores
    are ``(W_Q X)^T (W_K X) / sqrt(d_hid)``. The layer is tried on random ``x`` for every
    length in ``lengths``.
    """
    try:
        W_Q, W_K, W_V = (torch.as_tensor(W, dtype=torch.float64) for W in (W_Q, W_K, W_V))
    except (TypeError, ValueError, RuntimeError) as error:
        return Feedback(False, f"the weights must be numeric matrices ({error})")
    if W_Q.dim() != 2 or W_Q.shape[1] != 5 or W_K.shape != W_Q.shape:
        return Feedback(False, f"W_Q and W_K must both be [d_hid, 5] matrices, got "
                               f"{list(W_Q.shape)} and {list(W_K.shape)}")
    if W_V.shape != (5, 5):
        return Feedback(False, f"W_V must be a [5, 5] matrix, got {list(W_V.shape)}")
    generator = torch.Generator().manual_seed(seed)
    for n in lengths:
        x = torch.randn(trials, n, generator=generator, dtype=torch.float64)
        X = torch.stack([previous_position_inputs(row) for row in x])  # [trials, 5, n]
        scores = (W_Q @ X).transpose(1, 2) @ (W_K @ X) / W_Q.shape[0] ** 0.5
        alpha = attention_weights(scores, kind="average_hard")  # [trials, n, n]
        Y = X + (W_V @ X) @ alpha.transpose(1, 2)
        target = X.clone()
        target[:, 4] = torch.cat([x[:, :1], x[:, :-1]], dim=1)
        if not torch.allclose(Y, target, rtol=1e-9, atol=1e-9):
            position = int((Y - target).abs().amax(dim=(0, 1)).argmax())
            attended = alpha[0, position].nonzero().flatten().tolist()
            wanted = max(position - 1, 0)
            return Feedback(False, f"for n = {n}, position {position} should read x_{wanted} "
                                   f"into the fifth row, but it attends to positions {attended} "
                                   "(or W_V changes other rows)")
    return Feedback(True, f"position i copies x_(i-1) for every n in {min(lengths)}.."
                          f"{max(lengths)}")


def check_circuit_family(family, language, lengths=range(0, 11), circuit_class: str = "TC",
                         max_depth=None) -> Feedback:
    """Grade a circuit family: ``family(n)`` must return a
    :class:`~companion.circuits.Circuit` with ``n`` inputs that decides ``language`` (a
    function on ``LongTensor[B, n]``, such as ``companion.languages.parity``) on every input of
    each length in ``lengths``, obeys the gate rules of ``circuit_class`` and, if
    ``max_depth`` (an int or a function of n) is given, is no deeper than that."""
    from companion.circuits import Circuit
    from companion.languages import all_strings

    for n in lengths:
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
        w = all_strings(n)
        wrong = (circuit.evaluate(w) != language(w)).nonzero().flatten()
        if len(wrong):
            example = "".join(str(b) for b in w[wrong[0]].tolist())
            return Feedback(False, f"family({n}) gives the wrong answer on {example!r} "
                                   f"(and {len(wrong) - 1} other inputs)")
    return Feedback(True, f"correct on every input for n in {min(lengths)}..{max(lengths)}")
