"""Formal languages over the alphabet {0, 1}, decided exactly and in batches.

A batch of strings is a ``LongTensor[B, m]`` (batch first, one string per row, no CLS symbol).
Wherever one string is expected, a ``str`` of ``'0'`` and ``'1'`` characters is accepted too, and
the answer is then a plain ``bool`` instead of a ``BoolTensor[B]``.
"""

import itertools

import torch

from companion._checks import check_callable, check_dfa, check_generator, check_int

MAX_ENUMERATED_LENGTH = 20  # all_strings(20) holds 2**20 strings of 20 symbols: 168 MB
MAX_FORMULA_LEAVES = 2**16  # constants of a random formula: random_formula(16) has 2**16
MAX_RANDOM_SYMBOLS = 2**28  # symbols of random_strings(batch, m): batch * m, 2 GiB as int64


#: Integer dtypes that ``torch.aminmax`` cannot reduce on a CPU.
UNSIGNED_WIDE = (torch.uint16, torch.uint32, torch.uint64)


def as_strings(w, name: str = "w") -> torch.Tensor:
    """Check ``w`` and return it as a ``LongTensor[B, m]`` of 0s and 1s.

    ``w`` is a ``str`` over {'0', '1'} (returned as a batch of one) or an integer tensor of
    rank 2 with ``B >= 1`` rows. Anything else raises ``TypeError`` or ``ValueError``. (The
    symbols of a tensor on the ``meta`` device, which holds shapes only, are not checked.)
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str (the argument's name), got {type(name).__name__}")
    if isinstance(w, str):
        bad = sorted(set(w) - {"0", "1"})
        if bad:
            raise ValueError(f"{name} must contain only '0' and '1', found {bad}")
        return torch.tensor([[int(symbol) for symbol in w]], dtype=torch.long).reshape(1, len(w))
    if not isinstance(w, torch.Tensor):
        raise TypeError(f"{name} must be a str or a LongTensor[B, m], got {type(w).__name__}")
    if w.dtype == torch.bool or w.is_floating_point() or w.is_complex():
        raise TypeError(f"{name} must have an integer dtype (torch.long), got {w.dtype}")
    if w.dim() != 2:
        raise ValueError(
            f"{name} must have shape [B, m] (batch first), got shape {tuple(w.shape)}; "
            "wrap a single string as w[None]"
        )
    if w.shape[0] == 0:
        raise ValueError(f"{name} is an empty batch (B = 0); expected at least one string")
    if w.numel() and not w.is_meta:
        # one pass, five times faster than comparing twice (aminmax has no unsigned 16 to 64
        # bit kernels on a CPU)
        low, high = torch.aminmax(w.long() if w.dtype in UNSIGNED_WIDE else w)
        if bool((low < 0) | (high > 1)):
            raise ValueError(f"{name} must contain only the symbols 0 and 1")
    return w.long()


def _answer(result: torch.Tensor, w) -> torch.Tensor | bool:
    """A ``bool`` for a ``str`` input, else the ``BoolTensor[B]`` itself."""
    return bool(result[0]) if isinstance(w, str) else result


def parity(w) -> torch.Tensor | bool:
    """PARITY: the strings with an odd number of 1s. ``BoolTensor[B]`` (``bool`` for a str)."""
    strings = as_strings(w)
    return _answer(strings.sum(dim=1) % 2 == 1, w)


def first(w) -> torch.Tensor | bool:
    """FIRST: the strings whose first symbol is 1 (the empty string is rejected)."""
    strings = as_strings(w)
    if strings.shape[1] == 0:
        return _answer(torch.zeros(strings.shape[0], dtype=torch.bool, device=strings.device), w)
    return _answer(strings[:, 0] == 1, w)


def majority(w) -> torch.Tensor | bool:
    """MAJORITY: the strings with strictly more 1s than 0s (a tie is rejected), as in
    [chiang2024esslli] §5.2."""
    strings = as_strings(w)
    return _answer(2 * strings.sum(dim=1) > strings.shape[1], w)


def ordered(w) -> torch.Tensor | bool:
    """ORDERED: the strings with no 1 before a 0, ``0^a 1^b`` ([vandoornmalen2026order]; the
    language of Chapter 5's B-RASP program ``no_10``). Strings of length 0 and 1 are ordered."""
    strings = as_strings(w)
    return _answer((strings[:, 1:] >= strings[:, :-1]).all(dim=1), w)


def random_strings(batch: int, m: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """``batch`` strings of length ``m`` drawn uniformly from {0,1}^m: ``LongTensor[batch, m]``.

    The strings are drawn on the generator's device (the CPU when ``generator`` is None, using
    PyTorch's global generator), so a seed gives the same strings whatever device runs the model.
    ``batch * m`` is at most ``2**28`` symbols (2 GiB).
    """
    batch, m = check_int(batch, "batch", minimum=1), check_int(m, "m", minimum=0)
    if batch * m > MAX_RANDOM_SYMBOLS:
        raise ValueError(f"batch * m must be at most 2**28 symbols, got batch = {batch} and "
                         f"m = {m}; draw the strings in smaller batches")
    check_generator(generator)
    where = generator.device if generator is not None else torch.device("cpu")
    return torch.randint(0, 2, (batch, m), generator=generator, device=where)


def mixed_strings(m: int, generator=None) -> torch.Tensor:
    """``LongTensor[64, m]``: strings of length ``m >= 1`` that fall on both sides of many
    languages at once, where uniformly random strings almost never fall inside one (Dyck-1,
    ``0*1*``): 32 random strings; 8 of the form ``0^k 1^(m-k)`` with random ``k``; 2 each that
    repeat ``01``, ``0011``, ``001011`` and ``010`` (cut to length ``m``); and each of these 16
    with one random bit flipped. ``generator`` (a ``torch.Generator``) makes them
    reproducible."""
    m = check_int(m, "m", minimum=1)
    generator = check_generator(generator)
    k = torch.randint(0, m + 1, (8, 1), generator=generator)
    blocks = [torch.arange(m).expand(8, m) >= k]
    for pattern in ([0, 1], [0, 0, 1, 1], [0, 0, 1, 0, 1, 1], [0, 1, 0]):
        blocks.append(torch.tensor(pattern * m)[:m].expand(2, m))
    structured = torch.cat(blocks).long()
    flipped = structured.clone()
    flipped[torch.arange(16), torch.randint(0, m, (16,), generator=generator)] ^= 1
    return torch.cat([random_strings(32, m, generator), structured, flipped])


def all_strings(m: int) -> torch.Tensor:
    """Every string of length ``m``, in lexicographic order: ``LongTensor[2**m, m]``.

    Row ``k`` is ``k`` written in binary with the most significant bit first. ``m`` may be at most
    20 (168 MB), so that the result fits comfortably in memory.
    """
    m = check_int(m, "m", minimum=0, maximum=MAX_ENUMERATED_LENGTH)
    numbers = torch.arange(2**m, dtype=torch.int32).unsqueeze(1)
    shifts = torch.arange(m - 1, -1, -1, dtype=torch.int32)
    return ((numbers >> shifts) & 1).long()


# --- Boolean formulas (BFVP) -------------------------------------------------------------------

_OPERATORS = {"∧": "and", "&": "and", "∨": "or", "|": "or", "¬": "not", "!": "not"}


def parse_formula(formula: str, leaf, combine):
    """Parse a fully parenthesized Boolean formula ([chiang2024esslli] §5.2's BFVP grammar)
    bottom-up:
    ``0``, ``1``, ``(¬F)``, ``(F ∧ F)``, ``(F ∨ F)``; ``!``, ``&``, ``|`` may replace ``¬``,
    ``∧``, ``∨``, and spaces are ignored.

    Each constant becomes ``leaf(bit)`` and each parenthesized formula
    ``combine(op, operands)`` with ``op`` in ``"not"``, ``"and"``, ``"or"``; the result of the
    whole formula is returned. A malformed formula raises ``ValueError`` with the position
    (0-based) of the problem. An explicit stack is used, so any nesting depth works.
    """
    if not isinstance(formula, str):
        raise TypeError(f"formula must be a str, got {type(formula).__name__}")
    check_callable(leaf, "leaf")
    check_callable(combine, "combine")
    stack = []  # items: ("(", None, pos), ("op", name, pos), ("value", result, pos)
    for pos, symbol in enumerate(formula):
        if symbol.isspace():
            continue
        if symbol in "01":
            stack.append(("value", leaf(symbol == "1"), pos))
        elif symbol == "(":
            stack.append(("(", None, pos))
        elif symbol in _OPERATORS:
            stack.append(("op", _OPERATORS[symbol], pos))
        elif symbol == ")":
            items = []
            while stack and stack[-1][0] != "(":
                items.append(stack.pop())
            if not stack:
                raise ValueError(f"formula: ')' at position {pos} has no matching '('")
            start = stack.pop()[2]
            items.reverse()
            stack.append(("value", _reduce(items, start, pos, combine), start))
        else:
            raise ValueError(f"formula: unexpected symbol {symbol!r} at position {pos}")
    if not stack:
        raise ValueError("formula is empty")
    for kind, _, pos in stack:
        if kind == "(":
            raise ValueError(f"formula: '(' at position {pos} is never closed")
    if len(stack) != 1:
        raise ValueError(f"formula: unexpected {formula[stack[1][2]]!r} at position "
                         f"{stack[1][2]}; join formulas with an operator inside parentheses")
    return stack[0][1]


def _reduce(items, start: int, end: int, combine):
    """``combine`` applied to the parenthesized formula whose inside is ``items``."""
    kinds = [kind for kind, _, _ in items]
    if kinds == ["op", "value"] and items[0][1] == "not":
        return combine("not", [items[1][1]])
    if kinds == ["value", "op", "value"] and items[1][1] in ("and", "or"):
        return combine(items[1][1], [items[0][1], items[2][1]])
    where = items[0][2] if items else end
    raise ValueError(f"formula: the parentheses at positions {start}..{end} must hold "
                     f"'¬F' or 'F ∧ F' or 'F ∨ F'; the problem starts at position {where}")


def _truth(op: str, operands: list[bool]) -> bool:
    if op == "not":
        return not operands[0]
    return all(operands) if op == "and" else any(operands)


def bfvp_value(formula: str) -> bool:
    """The truth value of a Boolean formula of BFVP (see :func:`parse_formula`,
    which also describes the errors)."""
    return parse_formula(formula, leaf=lambda bit: bit, combine=_truth)


# The BFVP grammar of [chiang2024esslli] §5.2: F1 derives the true formulas, F0 the false ones.
# Each right-hand side is a connective and the nonterminals of its operands.
BFVP_GRAMMAR = {
    "F1": [("and", ("F1", "F1")), ("or", ("F0", "F1")), ("or", ("F1", "F0")),
           ("or", ("F1", "F1")), ("not", ("F0",))],
    "F0": [("and", ("F0", "F0")), ("and", ("F0", "F1")), ("and", ("F1", "F0")),
           ("or", ("F0", "F0")), ("not", ("F1",))],
}
# As printed, with F0 -> (F1 ∨ F1) where (F0 ∨ F0) is meant: an erratum.
BFVP_GRAMMAR_AS_PRINTED = {
    "F1": BFVP_GRAMMAR["F1"],
    "F0": [("and", ("F0", "F0")), ("and", ("F0", "F1")), ("and", ("F1", "F0")),
           ("or", ("F1", "F1")), ("not", ("F1",))],
}


def _check_grammar(grammar) -> None:
    """``grammar`` must map each nonterminal (a str) to a list of rules ``(op, operands)``, with
    ``op`` one of "not", "and", "or" and ``operands`` a tuple of nonterminals."""
    if not isinstance(grammar, dict):
        raise TypeError(f"grammar must be a dict like BFVP_GRAMMAR, got {type(grammar).__name__}")
    for head, rules in grammar.items():
        if not isinstance(head, str) or not isinstance(rules, list | tuple) or not all(
                isinstance(rule, tuple) and len(rule) == 2 and rule[0] in ("not", "and", "or")
                and isinstance(rule[1], tuple) and all(part in grammar for part in rule[1])
                for rule in rules):
            raise ValueError(f"grammar[{head!r}] must be a list of rules (op, operands), op in "
                             f"'not', 'and', 'or', operands a tuple of the grammar's "
                             f"nonterminals, like BFVP_GRAMMAR's; got {rules!r:.80}")


def derivable_from(formula: str, grammar: dict = BFVP_GRAMMAR) -> frozenset:
    """The nonterminals of ``grammar`` (``BFVP_GRAMMAR`` or ``BFVP_GRAMMAR_AS_PRINTED``) that
    derive ``formula``: the constant 1 comes from ``F1``, 0 from ``F0``, and a parenthesized
    formula from every nonterminal with a rule whose operands derive its parts. A formula is in
    the grammar's language iff ``"F1"`` is in the set. Fully parenthesized formulas have one
    parse, so the sets are computed bottom-up along it."""
    _check_grammar(grammar)

    def combine(op, operands):
        return frozenset(head for head, rules in grammar.items()
                         for connective, parts in rules if connective == op
                         and all(part in found for part, found in zip(parts, operands,
                                                                       strict=True)))

    return parse_formula(formula, leaf=lambda bit: frozenset({"F1" if bit else "F0"}),
                         combine=combine)


def all_formulas(depth: int) -> list[str]:
    """Every BFVP formula (``∧ ∨ ¬``) whose parentheses nest at most ``depth`` deep: 2, 12 and
    302 of them for depths 0, 1 and 2."""
    check_int(depth, "depth", minimum=0, maximum=3)
    formulas = ["0", "1"]
    for _ in range(depth):
        formulas = (["0", "1"] + [f"(¬{a})" for a in formulas]
                    + [f"({a}{op}{b})" for op in "∧∨" for a in formulas for b in formulas])
    return formulas


def random_formula(depth: int, generator: torch.Generator | None = None) -> str:
    """A random BFVP formula whose parse tree is complete binary to ``depth`` levels of ∧/∨
    (each subformula negated with probability 1/4), with random constants at the leaves.
    ``depth`` is at most 16 (65,536 constants)."""
    depth = check_int(depth, "depth", minimum=0, maximum=MAX_FORMULA_LEAVES.bit_length() - 1)
    check_generator(generator)

    def draw(high: int) -> int:
        return int(torch.randint(0, high, (1,), generator=generator))

    def build(level: int) -> str:
        text = str(draw(2)) if level == 0 else (
            f"({build(level - 1)}{'∧∨'[draw(2)]}{build(level - 1)})")
        return f"(¬{text})" if draw(4) == 0 else text

    return build(depth)


def random_split_formula(leaves: int, generator: torch.Generator | None = None) -> str:
    """A random BFVP formula with ``leaves`` constants whose shape is *not* chosen balanced:
    a formula with ``l >= 2`` constants joins, by ∧ or ∨, a left operand with ``k`` constants
    and a right one with ``l - k``, ``k`` uniform in ``1..l-1``, recursively (the shape of a
    random binary search tree); every subformula, constants included, is negated with
    probability 1/4, and the constants are fair bits.

    With ``l`` constants, ``E[sum over constants of 2^(depth of its NOT/∧/∨ path)]`` is
    ``(5/4) C(l + 3, 4) <= (5/4) l^4``, so the nesting depth exceeds ``4 log2(l) + D`` with
    probability at most ``(5/4) 2^-D`` (Markov's inequality). ``leaves`` is at most 2**16."""
    leaves = check_int(leaves, "leaves", minimum=1, maximum=MAX_FORMULA_LEAVES)
    check_generator(generator)
    splits = torch.rand(leaves - 1, generator=generator, dtype=torch.float64).tolist()
    operators = torch.randint(0, 2, (leaves - 1,), generator=generator).tolist()
    negated = (torch.rand(2 * leaves - 1, generator=generator) < 0.25).tolist()
    bits = torch.randint(0, 2, (leaves,), generator=generator).tolist()
    splits, operators, negated, bits = map(iter, (splits, operators, negated, bits))

    def build(n: int) -> str:  # recursion depth = the tree's height, O(log n) w.h.p.
        if n == 1:
            text = str(next(bits))
        else:
            left = 1 + int(next(splits) * (n - 1))
            op = "∧∨"[next(operators)]
            text = f"({build(left)}{op}{build(n - left)})"
        return f"(¬{text})" if next(negated) else text

    return build(leaves)


# --- The word problem of the symmetric group S_k ---------------------------------------------


def _cycles(text: str, k: int, name: str = "word") -> list[tuple[int, ...]]:
    """The cycles of a string in cycle notation such as ``"(01)(234)"``, the argument
    ``name``."""
    cycles, pos = [], 0
    text = text.replace(" ", "")
    while pos < len(text):
        if text[pos] != "(":
            raise ValueError(f"{name}: expected '(' at position {pos} of {text!r}")
        close = text.find(")", pos)
        if close < 0:
            raise ValueError(f"{name}: '(' at position {pos} of {text!r} is never closed")
        body = text[pos + 1:close]
        if not body or not all(digit in "0123456789" for digit in body):
            raise ValueError(f"{name}: malformed cycle {text[pos:close + 1]!r} at position {pos}; "
                             "write a cycle as digits in parentheses, e.g. (01234)")
        cycle = tuple(int(digit) for digit in body)
        if max(cycle) >= k:
            raise ValueError(f"{name}: cycle {text[pos:close + 1]!r} moves {max(cycle)}, which is "
                             f"not in [k] = 0..{k - 1}")
        if len(set(cycle)) != len(cycle):
            raise ValueError(f"{name}: cycle {text[pos:close + 1]!r} repeats an element")
        cycles.append(cycle)
        pos = close + 1
    return cycles


def _as_permutation(cycles, k: int) -> list[int]:
    """The permutation ``p`` (``i -> p[i]``) that applies ``cycles`` from left to right."""
    p = list(range(k))
    for cycle in cycles:
        step = {a: b for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True)}
        p = [step.get(image, image) for image in p]
    return p


def generator_permutations(generators, k: int, count: int | None = None) -> list[list[int]]:
    """The letters of a word problem, each as the list ``p`` with ``x -> p[x]``: ``generators``
    is a list of permutations of ``0..k-1`` in cycle notation, one per symbol (``"(01)"``,
    ``"(01234)"``), of ``count`` entries when ``count`` is given; ``k`` is 1..10."""
    k = check_int(k, "k", minimum=1, maximum=10)
    if isinstance(generators, str) or not hasattr(generators, "__iter__"):
        raise TypeError("generators must be a list of permutations such as '(01)(234)', "
                        f"got {type(generators).__name__}")
    generators = list(generators)  # a generator expression is read once
    if not all(isinstance(g, str) for g in generators):
        raise TypeError("generators must be a list of permutations such as '(01)(234)'")
    if not generators or (count is not None and len(generators) != count):
        raise ValueError(f"generators must hold {count or 'at least one'} permutation(s) in "
                         f"cycle notation, one per symbol, got {generators!r}")
    return [_as_permutation(_cycles(g, k, "generators"), k) for g in generators]


def word_problem(word, k: int = 5) -> bool:
    """Whether a word over S_k multiplies to the identity ([chiang2024esslli] §5.2: the language
    W(S_k)).

    ``word`` is a str of cycles, each cycle one letter, e.g. ``"(01)(01234)"``, or a list of
    letters, each a permutation written as a product of cycles (``["(01)(23)", "(4)"]``).
    Letters act from left to right: the first letter is applied first. ``k`` is at most 10, so
    that each point is one digit.
    """
    k = check_int(k, "k", minimum=1, maximum=10)
    if isinstance(word, str):
        letters = [[cycle] for cycle in _cycles(word, k)]
    elif isinstance(word, list | tuple) and all(isinstance(letter, str) for letter in word):
        letters = [_cycles(letter, k) for letter in word]
    else:
        raise TypeError("word must be a str of cycles or a list of str permutations")
    product = list(range(k))
    for letter in letters:
        p = _as_permutation(letter, k)
        product = [p[image] for image in product]
    return product == list(range(k))


def derived_series_orders(k: int) -> list[int]:
    """Orders of the derived series ``S_k > S_k' > S_k'' > ...`` (each term generated by the
    commutators of the previous one), by brute force over all ``k!`` permutations, until it
    stops shrinking. It reaches 1 exactly when ``S_k`` is solvable (``k <= 4``)."""
    check_int(k, "k", minimum=1, maximum=5)
    compose = lambda p, q: tuple(q[i] for i in p)  # noqa: E731  (p first, then q)
    inverse = lambda p: tuple(sorted(range(k), key=lambda i: p[i]))  # noqa: E731
    group = set(itertools.permutations(range(k)))
    orders = [len(group)]
    while True:
        commutators = {compose(compose(inverse(a), inverse(b)), compose(a, b))
                       for a in group for b in group}
        subgroup, frontier = set(commutators), set(commutators)
        while frontier:  # close under composition
            frontier = {compose(a, b) for a in frontier for b in commutators} - subgroup
            subgroup |= frontier
        if len(subgroup) == len(group):
            return orders
        group = subgroup
        orders.append(len(group))


def syntactic_monoid(transitions, start: int, accepting) -> set[tuple[int, ...]]:
    """The syntactic monoid of the language of a DFA (``transitions[state][symbol]`` the next
    state, states ``0..S-1``, symbols ``0..k-1``; ``start``; ``accepting`` a collection of
    states): the transition monoid of its minimal DFA, every map of states to states that some
    string induces, the empty string's included. Each map is a tuple ``f``, ``f[q]`` the state
    that the string leads to from ``q`` (states of the minimal DFA, numbered by its
    construction). The DFA is minimized first (its reachable states, then Moore's refinement),
    so the monoid depends on the language alone."""
    table, start, final = check_dfa(transitions, start, accepting)
    table, final = table.tolist(), final.tolist()
    reachable, frontier = {start}, [start]
    while frontier:
        frontier = [t for q in frontier for t in table[q] if t not in reachable]
        reachable.update(frontier)
    states = sorted(reachable)
    block = {q: int(final[q]) for q in states}  # Moore: split blocks until stable
    while True:
        signature = {q: (block[q], *(block[t] for t in table[q])) for q in states}
        numbers = {sig: n for n, sig in enumerate(dict.fromkeys(signature.values()))}
        refined = {q: numbers[signature[q]] for q in states}  # numbered 0, 1, ...
        stable = len(set(refined.values())) == len(set(block.values()))  # nothing split
        block = refined
        if stable:
            break
    representative = {block[q]: q for q in states}  # a state of each block, by number
    size = len(representative)
    letters = [tuple(block[table[representative[b]][a]] for b in range(size))
               for a in range(len(table[0]))]
    monoid, frontier = {tuple(range(size))}, [tuple(range(size))]
    while frontier:  # close under appending a letter: f then a
        frontier = list({tuple(a[q] for q in f) for f in frontier for a in letters} - monoid)
        monoid.update(frontier)
    return monoid


def is_aperiodic(monoid) -> bool:
    """Whether every element ``f`` of a finite monoid of maps (tuples, as
    :func:`syntactic_monoid` gives) has ``f^k = f^(k+1)`` for some ``k``: no power of ``f``
    cycles with a period above 1. By Schützenberger's theorem, a regular language is
    star-free exactly when its syntactic monoid is aperiodic ([schutzenberger1965finite];
    [mcnaughton1971counter])."""
    for f in monoid:
        powers, power = [], f
        while power not in powers:
            powers.append(power)
            power = tuple(power[q] for q in f)  # f^(k+1) = f^k then f
        if power != powers[-1]:  # the powers cycle through more than one map
            return False
    return True
