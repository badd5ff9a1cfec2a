"""Hidden tests of the exercises of *Circuit classes* (``book/circuits.ipynb``).

Each test asks the submission for one member of its circuit family, as plain data (inputs,
gates, output), rebuilds it with :class:`companion.circuits.Circuit` in the grader's process
and runs it there: on every input for a short length, on strings of every weight for a long
one (:func:`companion.exercises.check_circuit_family`)."""

import math
import random

from companion.circuits import Circuit
from companion.exercises import check_circuit_family
from course.hidden import HiddenTest


def _data(family: str, n: int) -> str:
    return f"(lambda c: [c.n_inputs, c.gates, c.output])({family}({n}))"


def _rebuilt(data) -> Circuit:
    n_inputs, gates, output = data
    circuit = Circuit(n_inputs)
    for kind, inputs in gates:
        circuit.gate(kind, *inputs)
    return circuit.set_output(output)


def _decides(n, language, circuit_class, max_depth, max_size=None, seed=0):
    """A judge: the circuit (ignoring the instructor's) has ``n`` inputs, decides
    ``language`` and obeys ``circuit_class`` and the bounds (ints or functions of n)."""
    def judge(got, expected) -> str:
        try:
            circuit = _rebuilt(got)
        except (TypeError, ValueError) as error:  # not a circuit, or a broken one
            return f"not a valid circuit ({error})"
        lengths, sampled = ([n], ()) if n <= 10 else ((), (n,))
        feedback = check_circuit_family(lambda _: circuit, language, lengths, circuit_class,
                                        max_depth, sampled_lengths=sampled, samples=500,
                                        seed=seed)
        if not feedback:  # its message, but never the string it fails on (an oracle)
            wrong = "gives the wrong answer on"
            return (f"family({n}) gives the wrong answer on some string" if wrong in
                    feedback.message else feedback.message)
        bound = max_size(n) if callable(max_size) else max_size
        if bound is not None and circuit.size > bound:
            return f"its size is {circuit.size}, more than {bound}"
        return ""
    return judge


def _family_tests(rng, family, language, circuit_class, max_depth, max_size=None):
    lengths = [rng.choice([0, 1]), *rng.sample(range(2, 11), 2), rng.randrange(12, 70)]
    return [HiddenTest(_data(family, n), _decides(n, language, circuit_class, max_depth,
                                                   max_size, rng.randrange(2**31)))
            for n in lengths]


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    return {
        "ex-circ-or": _family_tests(
            rng, "or_family", lambda w: w.sum(dim=1) > 0, "NC",
            lambda n: math.ceil(math.log2(n)) if n > 1 else 0),
        "ex-circ-two": _family_tests(
            rng, "two_ones", lambda w: w.sum(dim=1) >= 2, "AC", 2,
            lambda n: n * n + 2),
        "ex-circ-half": _family_tests(
            rng, "exactly_half", lambda w: 2 * w.sum(dim=1) == w.shape[1], "TC", 3),
    }
