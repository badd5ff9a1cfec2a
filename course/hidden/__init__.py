"""Hidden tests: how the autograder decides whether an answer is right.

A hidden test is an expression that the grader evaluates in the submission's kernel, where the
exercise's part of the notebook ends, on inputs drawn at grading time (its numbers are written
into the expression as literals). Its value comes back as plain data (numbers, booleans,
strings, lists: tensors become lists) and is *judged in the grader's own process*: compared
with the value of the same expression in the instructor edition, or checked by code of the
grader's (rebuilding a circuit from its gates and running it, for example). Nothing the
submission does to its own namespace (rebinding a check, patching ``torch.allclose``, an
IPython hook that swallows errors) reaches that judgement; to pass, the submission must produce
the right values, on inputs it has not seen.

The tests of a chapter live in ``course/hidden/<chapter>.py``, a module whose function
``hidden_tests(rng, variants)`` returns ``{exercise label: [HiddenTest, ...]}`` with inputs drawn
from ``rng`` (a :class:`random.Random` seeded by the grader), for the book's exercises
(``variants`` empty) or for the graded variants ``variants`` (``{label: Variant}``), which the
module's ``VARIANTS`` defines (:mod:`course.variants`). They are not in the student edition nor
in the book; an instructor may keep their own in a folder of their choice (``--hidden``).
An exercise scores its points times the fraction of its hidden tests that pass.
"""

import importlib.util
import json
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

MARKER = "hidden-test-value:"  # starts the line a test cell prints its value on
MAX_VALUE_CHARS = 1_000_000  # the longest printed value the grader parses
MAX_DEPTH = 20  # the deepest nesting of lists it parses

# Defined in every test cell (a submission may have rebound anything defined earlier).
_PLAIN = '''\
def _hidden_test_plain(value):
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [_hidden_test_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"a value of type {type(value).__name__} cannot be compared")
'''


def close(rtol: float = 1e-9, atol: float = 1e-12, locate: bool = True):
    """A judge: the value equals the instructor's, numbers to within ``atol + rtol * |expected|``
    (NaN matches NaN, booleans and strings exactly), lists entry by entry with the same
    shape. Its message never says what the right value is, and says where the value is wrong
    only with ``locate``: a test whose value is the same in every batch (a bare name, such as
    ``limit``) takes ``locate=False``, so that resubmitting does not find the wrong entries
    one by one."""
    def judge(got, expected) -> str:
        why = _difference(got, expected, rtol, atol)
        return why if locate or not why else "the value is wrong"
    return judge


def _difference(got, expected, rtol, atol, where="") -> str:
    if isinstance(expected, list):
        if not isinstance(got, list) or len(got) != len(expected):
            kind = f"a list of {len(got)}" if isinstance(got, list) else f"a {type(got).__name__}"
            return f"{where or 'the value'} is {kind}, not a list of the right length"
        for k, (g, e) in enumerate(zip(got, expected, strict=True)):
            if reason := _difference(g, e, rtol, atol, f"{where}[{k}]"):
                return reason
        return ""
    wrong = f"{where or 'the value'} is wrong"
    if isinstance(expected, bool) or isinstance(expected, str) or expected is None:
        return "" if got == expected and type(got) is type(expected) else wrong
    if isinstance(got, bool) or not isinstance(got, int | float):
        return wrong
    if math.isnan(expected) or math.isnan(got):
        return "" if math.isnan(expected) and math.isnan(got) else wrong
    return "" if abs(got - expected) <= atol + rtol * abs(expected) else wrong


@dataclass(frozen=True)
class HiddenTest:
    """``expression`` is evaluated in the submission's kernel after the statements ``setup``;
    ``judge(value, expected)`` returns ``""`` when the value passes and otherwise says why,
    ``expected`` being the value in the instructor edition."""

    expression: str
    judge: Callable = close()
    setup: str = ""

    def cell_source(self) -> str:
        """The code cell that evaluates the test and prints its value."""
        return (f"{_PLAIN}{self.setup}\n"
                f"print({MARKER!r}, __import__('json').dumps("
                f"_hidden_test_plain(({self.expression}))))")


def value_printed(stdout: str):
    """The value a test cell printed (the last marked line), or raise ``ValueError``: where
    there is none, or it is longer than :data:`MAX_VALUE_CHARS` characters, nested deeper
    than :data:`MAX_DEPTH`, or not JSON."""
    lines = [line for line in stdout.splitlines() if line.startswith(MARKER)]
    if not lines:
        raise ValueError("the test printed no value")
    text = lines[-1][len(MARKER):]
    if len(text) > MAX_VALUE_CHARS:
        raise ValueError(f"the value is longer than {MAX_VALUE_CHARS} characters")
    if _depth(text) > MAX_DEPTH:
        raise ValueError(f"the value is nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text)
    except ValueError:
        raise ValueError("the value is not readable") from None


def _depth(text: str) -> int:
    """How deeply the brackets of the JSON ``text`` nest (outside its strings), in one pass:
    a value the submission printed is read in time linear in its length."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def variant_params(variants: dict, label: str, book: dict | None = None) -> dict:
    """The parameters of the variant of exercise ``label`` in ``variants`` (label ->
    :class:`course.variants.Variant`, those handed out), or ``book``, the book's own (default
    none), where the exercise is handed out as the book prints it."""
    return variants[label].params if label in variants else ({} if book is None else book)


def circuit_from_data(data):
    """A :class:`companion.circuits.Circuit` from the plain data a hidden test sends back,
    ``(n_inputs, [(kind, inputs), ...], output)``: built again gate by gate in the grader's
    process, so that a submission's own object is never trusted."""
    from companion.circuits import Circuit  # only the circuit chapters' judges need it

    n_inputs, gates, output = data
    circuit = Circuit(n_inputs)
    for kind, inputs in gates:
        circuit.gate(kind, *inputs)
    return circuit.set_output(output)


def tensor_literal(rng: random.Random, shape: Sequence[int], digits: int = 6) -> str:
    """Source text of a float64 tensor of the given shape with normal entries from ``rng``,
    so that the same input reaches the submission and the instructor edition."""
    def nested(dims):
        if not dims:
            return repr(round(rng.gauss(0, 1), digits))
        return "[" + ", ".join(nested(dims[1:]) for _ in range(dims[0])) + "]"
    return f"torch.tensor({nested(list(shape))}, dtype=torch.float64)"


def log_uniform(rng: random.Random, low: float, high: float) -> float:
    """A number between ``low`` and ``high`` whose logarithm is uniform."""
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def load(chapter: str, directory: Path | None = None):
    """The module of hidden tests of ``chapter`` (a notebook's stem), from ``directory``
    (default: this package's folder): its ``hidden_tests(rng, variants)`` and its ``VARIANTS``
    (``{}`` where it defines none; see :mod:`course.variants`)."""
    path = Path(directory or Path(__file__).parent) / f"{chapter}.py"
    if not path.is_file():
        raise ValueError(f"hidden: no hidden tests for {chapter!r} ({path} does not exist)")
    spec = importlib.util.spec_from_file_location(f"hidden_tests_{chapter}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "hidden_tests", None)):
        raise ValueError(f"hidden: {path} defines no function hidden_tests(rng, variants)")
    if not isinstance(getattr(module, "VARIANTS", {}), dict):
        raise ValueError(f"hidden: {path}'s VARIANTS must map labels to functions")
    module.VARIANTS = getattr(module, "VARIANTS", {})
    return module
