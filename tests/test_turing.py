"""The Turing-machine decoder (companion.steps.compile_tm) against a direct simulation written
here, on every string up to a length and on long random ones, for machines whose languages
are not regular; and bad input."""

import contextlib
import itertools
import math
import random

import pytest
import torch

from companion.steps import (
    SCALE,
    TM_EXAMPLES,
    Cache,
    compile_tm,
    decode,
    run_tm,
    tm_max_positions,
    tm_scale,
)

BLANK = 2
ZEROS_THEN_ONES, PALINDROMES, INCREMENT = (TM_EXAMPLES[name] for name in (
    "0^n 1^n", "palindromes", "increment"))


def simulate(machine, word, max_steps=10_000):
    """The moves (state, symbol written, move) of the machine on ``word``, and whether it
    accepts: a tape as a dict, a head that a left move at cell 0 leaves there."""
    transitions, state, accepting, rejecting = machine
    tape, head, moves = dict(enumerate(word)), 0, []
    while len(moves) < max_steps and state not in accepting + rejecting:
        if (state, tape.get(head, BLANK)) not in transitions:
            break
        state, tape[head], move = transitions[state, tape.get(head, BLANK)]
        move = 0 if head == 0 and move == -1 else move
        head += move
        moves.append((state, tape[head - move], move))
    return moves, state in accepting


def check(machine, words, max_positions=512, dtype=torch.float64):
    """Decode ``words`` (lists of one length) in one batch; each run's moves and verdict
    must be the simulation's."""
    decoder = compile_tm(*machine, max_positions=max_positions, dtype=dtype,
                         allow_rounding=dtype != torch.float64)
    w = torch.tensor(words, dtype=torch.long).reshape(len(words), -1)
    written, verdict = decode(decoder, w)
    for row, word in enumerate(words):
        moves, accepts = simulate(machine, list(word))
        assert [tuple(m) for m in written[row, :len(moves)].tolist()] == moves, word
        assert bool(verdict[row]) == accepts, word
        if len(moves) < written.shape[1]:  # then the run ended: it repeats a staying move
            assert written[row, len(moves):, 2].eq(0).all(), word


@pytest.mark.parametrize("machine", [ZEROS_THEN_ONES, PALINDROMES, INCREMENT],
                         ids=["0^n1^n", "palindromes", "increment"])
def test_every_string_up_to_length_9(machine):
    for m in range(10):
        check(machine, list(itertools.product([0, 1], repeat=m)))


def test_the_languages_are_the_ones_named():
    """The machines, by this file's simulation: 0^n 1^n and palindromes accepted, nothing
    else; the increment writes w + 1 (least significant bit first)."""
    for m in range(9):
        for word in itertools.product([0, 1], repeat=m):
            half = m // 2
            assert simulate(ZEROS_THEN_ONES, list(word))[1] == (
                m % 2 == 0 and word == (0,) * half + (1,) * half)
            assert simulate(PALINDROMES, list(word))[1] == (word == word[::-1])
            tape = dict(enumerate(word))
            for cell, (_, symbol, _) in enumerate(simulate(INCREMENT, list(word))[0]):
                tape[cell] = symbol  # it only moves right
            value = sum(bit << k for k, bit in enumerate(word))
            assert sum(bit << k for k, bit in tape.items()) == value + 1


def test_run_tm_is_the_simulation_padded_as_decode_pads():
    for machine in (ZEROS_THEN_ONES, PALINDROMES):
        w = torch.tensor(list(itertools.product([0, 1], repeat=6)))
        moves, accepts = run_tm(*machine, w)
        written, verdict = decode(compile_tm(*machine), w)
        assert torch.equal(run_tm(*machine, w, steps=written.shape[1])[0], written)
        assert torch.equal(accepts, verdict)
        for row, word in enumerate(w.tolist()):
            right, accepted = simulate(machine, word)
            assert [tuple(m) for m in moves[row, :len(right)].tolist()] == right
            assert bool(accepts[row]) == accepted


def test_long_random_strings():
    rng = random.Random(0)
    n = 14  # 0^14 1^14 takes 421 moves: 450 positions, within 512
    check(ZEROS_THEN_ONES, [[0] * n + [1] * n, [0] * n + [1] * (n - 1) + [0],
                            [0] * (n - 1) + [1] * (n + 1)])
    check(PALINDROMES, [(half := [rng.randrange(2) for _ in range(9)]) + half[::-1]
                        for _ in range(20)])
    carries = [rng.randrange(250) for _ in range(5)]  # the carry runs this far, then stops
    check(INCREMENT, [[1] * k + [0] + [rng.randrange(2) for _ in range(249 - k)]
                      for k in carries] + [[1] * 250])  # 251 moves: 501 positions


def test_a_left_move_at_cell_0_stays_and_a_missing_transition_rejects():
    # step left twice from cell 0, then read: still the input's first symbol
    machine = ({(0, 0): (1, 0, -1), (0, 1): (1, 1, -1), (1, 0): (2, 0, -1), (1, 1): (2, 1, -1),
                (2, 1): (3, 1, 1)}, 0, [3], [])
    check(machine, [[1, 0], [0, 1]])
    written, verdict = decode(compile_tm(*machine), "1")
    assert written[0].tolist() == [[1, 1, 0], [2, 1, 0], [3, 1, 1], [3, BLANK, 0]][:len(
        written[0])] and verdict.tolist() == [True]
    written, verdict = decode(compile_tm(*machine), "0")  # (2, 0) is missing: stuck
    assert verdict.tolist() == [False] and written[0, -1].tolist() == [2, 0, 0]


def test_max_steps_cuts_a_run_short_and_the_start_state_judges_no_step():
    written, verdict = decode(compile_tm(*ZEROS_THEN_ONES), "0011", max_steps=3)
    assert written.shape == (1, 3, 3) and verdict.tolist() == [False]
    assert decode(compile_tm(*ZEROS_THEN_ONES), "0011")[1].tolist() == [True]
    written, verdict = decode(compile_tm({}, 0, [0], []), "01", max_steps=0)
    assert written.shape == (1, 0, 3) and verdict.tolist() == [True]


def test_float32_errs_where_the_scores_outgrow_its_significand():
    """The hash scores are about 4 C = 4 R (N + 1)(N^2 + 1)^2; resolving gaps of R needs
    about log2(4 (N + 1)(N^2 + 1)^2) bits: 47 for N = 512, which float64's 53 hold and
    float32's 24 do not. A float32 decoder built for 512 positions errs on 0^n 1^n; float64
    does not."""
    assert 24 < math.log2(4 * tm_scale(512) / SCALE) < 48
    words = [[0] * n + [1] * n for n in (4, 6)]
    decoder = compile_tm(*ZEROS_THEN_ONES, max_positions=512, dtype=torch.float32,
                         allow_rounding=True)
    right = [simulate(ZEROS_THEN_ONES, word)[0] for word in words]
    written, _ = decode(decoder, torch.tensor(words[:1]))
    assert [tuple(m) for m in written[0, :len(right[0])].tolist()] != right[0]
    check(ZEROS_THEN_ONES, words[1:], max_positions=512, dtype=torch.float64)


def random_machine(seed, states=4, symbols=4):
    """A machine with random transitions, some missing, left moves at cell 0 included."""
    rng = random.Random(seed)
    transitions = {(q, a): (rng.randrange(states + 2), rng.randrange(symbols),
                            rng.choice([-1, 1]))
                   for q in range(states) for a in range(symbols) if rng.random() < 0.85}
    return transitions, rng.randrange(states), [states], [states + 1]


@pytest.mark.parametrize("seed", range(12))
def test_random_machines_on_every_string_up_to_length_5(seed):
    machine = random_machine(seed)
    for m in range(6):
        words = list(itertools.product([0, 1], repeat=m))
        decoder = compile_tm(*machine, max_positions=128)
        w = torch.tensor(words, dtype=torch.long).reshape(len(words), m)
        written, verdict = decode(decoder, w, max_steps=100)
        t = written.shape[1]  # decoding stops once every run has ended
        for row, word in enumerate(words):
            moves, accepts = simulate(machine, list(word), max_steps=100)
            assert [tuple(x) for x in written[row, :len(moves)].tolist()] == moves[:t], word
            assert all(move == moves[t - 1] for move in moves[t:]), word  # a loop at cell 0
            assert bool(verdict[row]) == accepts, word


def test_a_loop_at_cell_0_ends_the_run_and_rejects():
    machine = ({(0, 0): (0, 0, -1), (0, 1): (1, 1, 1)}, 0, [1], [])  # 0 at cell 0: for ever
    written, verdict = decode(compile_tm(*machine), "01")
    assert verdict.tolist() == [False] and written[0, -2:].tolist() == [[0, 0, 0]] * 2
    moves, accepts = run_tm(*machine, "01")
    assert accepts.tolist() == [False] and torch.equal(moves, written[:, :moves.shape[1]])
    with pytest.raises(ValueError, match="did not end within"):
        run_tm({(0, 0): (0, 0, 1), (0, BLANK): (0, BLANK, 1)}, 0, [1], [], "0")


@pytest.mark.parametrize("m", [1, 5, 9])
def test_a_stuck_run_needs_two_positions_more_than_a_halting_one(m):
    """decode's docstring (a review's finding): m positions plus run_tm's moves for a run that
    halts; a missing transition shows only when the staying move repeats, so two more."""
    halts = {(0, 0): (0, 0, 1), (0, BLANK): (1, BLANK, 1)}  # right over the 0s, then accept
    stuck = {(0, 0): (0, 0, 1)}  # right over the 0s, then nothing to do on the blank
    w = torch.zeros(1, m, dtype=torch.long)

    def fewest_positions(transitions):
        for N in range(2, 4 * m + 8):
            with contextlib.suppress(ValueError):
                decode(compile_tm(transitions, 0, [1], [], max_positions=N), w)
                return N
    for transitions, more in ((halts, 0), (stuck, 2)):
        moves, _ = run_tm(transitions, 0, [1], [], w)
        assert fewest_positions(transitions) == m + moves.shape[1] + more


def test_the_cache_keeps_only_the_rows_the_machine_reads():
    """The counting layer's scores are all 0 (uniform attention): it keeps no keys, and its
    values are h/(i+1), 1/(i+1) and key_u. The reading layer keeps the hash's four rows and
    the constant as keys, and the symbol read as values. The increment of 1^m, which moves
    right m + 1 times, decodes as the simulation says with that cache."""
    decoder = compile_tm(*INCREMENT, max_positions=128)
    cache, names = Cache(decoder, 2, 128), decoder.layout.names
    assert [keys.shape[2] for keys in cache.keys] == [0, 5]
    assert [[names[r] for r in rows] for rows in cache.value_rows] == [
        ["h/(i+1)", "1/(i+1)", "key_u"], ["read=0", "read=1", "read=2"]]
    written, verdict = decode(decoder, torch.ones(2, 60, dtype=torch.long))
    assert written.shape[1] == 61 and written[:, :60, 1].eq(0).all() and verdict.all()
    assert written[:, 60].tolist() == [[1, 1, 1]] * 2  # the carry, written on the blank


def test_decoding_a_machine_restores_torchs_threads(monkeypatch):
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        monkeypatch.setenv("COMPANION_THREADS", "1")
        assert decode(compile_tm(*INCREMENT), "011")[1].tolist() == [True]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("dtype, significand", [(torch.float64, 53), (torch.float32, 24)])
def test_the_largest_decoder_a_dtype_builds_is_the_last_with_the_bits(dtype, significand):
    """Scores of size 4 (N + 1)(N^2 + 1)^2 gaps, resolved with 4 bits to spare."""
    def enough(N):
        return math.log2(4 * (N + 1) * (N**2 + 1) ** 2) + 4 <= significand
    N = tm_max_positions(dtype)
    assert enough(N) and not enough(N + 1)
    assert compile_tm(*INCREMENT, max_positions=N, dtype=dtype).max_positions == N
    with pytest.raises(ValueError, match="max_positions: a decoder for"):
        compile_tm(*INCREMENT, max_positions=N + 1, dtype=dtype)


def test_a_dtype_without_the_bits_or_the_range_is_refused():
    assert compile_tm(*INCREMENT, max_positions=600).max_positions == 600
    with pytest.raises(ValueError, match="max_positions: a decoder for 4096 positions needs"):
        compile_tm(*INCREMENT, max_positions=4096)
    with pytest.raises(ValueError, match="float32 has 24"):
        compile_tm(*INCREMENT, max_positions=64, dtype=torch.float32)
    with pytest.raises(ValueError, match="beyond the largest torch.float16"):
        compile_tm(*INCREMENT, max_positions=2, dtype=torch.float16, allow_rounding=True)
    built = compile_tm(*INCREMENT, max_positions=64, dtype=torch.float32, allow_rounding=True)
    assert built.embedding.dtype == torch.float32
    with pytest.raises(ValueError, match="model dimension"):
        compile_tm({(q, 0): (q, 99, 1) for q in range(20)}, 0, [20], [])


@pytest.mark.parametrize("args, error, words", [
    (([(0, 0)], 0, [1], []), TypeError, "dict"),
    (({(0, 0): (1, 0)}, 0, [1], []), TypeError, "triple"),
    (({(0, 0): (1, 0, 0)}, 0, [1], []), ValueError, "-1 .left. or \\+1"),
    (({(0, 0): (1, 0, 2)}, 0, [1], []), ValueError, "move"),
    (({(0, 0): (1, 0, 1)}, 0, [1], [1]), ValueError, "must differ"),
    (({(1, 0): (1, 0, 1)}, 0, [1], []), ValueError, "halting states"),
    (({(0, -1): (1, 0, 1)}, 0, [1], []), ValueError, "transitions key"),
    (({(0, 0): (1, 0, 1)}, 0, 1, []), TypeError, "accepting"),
])
def test_bad_machines_are_refused(args, error, words):
    with pytest.raises(error, match=words):
        compile_tm(*args)


def test_bad_blank_positions_and_steps_are_refused():
    with pytest.raises(ValueError, match="blank"):
        compile_tm(*INCREMENT, blank=1)
    with pytest.raises(ValueError, match="max_positions"):
        compile_tm(*INCREMENT, max_positions=1)
    decoder = compile_tm(*INCREMENT, max_positions=8)
    with pytest.raises(ValueError, match="max_steps"):
        decode(decoder, "01", max_steps=7)
    with pytest.raises(ValueError, match="max_positions above 8"):
        decode(decoder, "0" * 8)
    with pytest.raises(ValueError, match="did not halt"):
        decode(compile_tm({(0, 0): (0, 0, 1), (0, BLANK): (0, BLANK, 1)}, 0, [1], [],
                          max_positions=8), "00")
    with pytest.raises(ValueError, match="digits 0..1"):
        decode(decoder, "012")
    with pytest.raises(ValueError, match="record"):
        decode(decoder, "01", record=True)


def test_the_trace_replays_the_moves_and_the_attention_reads_the_cell():
    """tm_trace's tape against run_tm's moves replayed here; tm_attention's weights one-hot
    on a position that holds the symbol the trace says was read."""
    import pandas as pd

    from companion.steps import TM_EXAMPLES, compile_tm, run_tm, tm_attention, tm_trace

    for name, machine in TM_EXAMPLES.items():
        decoder = compile_tm(*machine)
        for word in ("0110", "0011", "1", ""):
            trace = tm_trace(decoder, word)
            moves, _ = run_tm(*machine, word, steps=len(trace))
            assert trace[["state", "writes", "move"]].values.tolist() == moves[0].tolist()
            tape, cell = {i: int(c) for i, c in enumerate(word)}, 0
            for row, (_, symbol, move) in zip(trace.itertuples(), moves[0].tolist(),
                                              strict=True):
                assert (row.cell, row.reads) == (cell, tape.get(cell, 2)), (name, word)
                tape[cell], cell = symbol, max(cell + move, 0)
            if not word:
                continue
            weights = tm_attention(decoder, word)
            assert isinstance(weights, pd.DataFrame) and len(weights) == len(trace)
            assert ((weights == 0) | (weights == 1)).all().all()
            tokens = [column.split(":", 1)[1] for column in weights.columns]
            for s, read in enumerate(trace["reads"]):
                token = tokens[int(weights.iloc[s].to_numpy().argmax())]
                held = "2" if token == "START" else token if not token.startswith("(") \
                    else token.strip("()").split(",")[1]
                assert int(held) == read, (name, word, s)
    with pytest.raises(TypeError, match="compile_tm"):
        tm_trace(compile_tm(*TM_EXAMPLES["increment"]).layers, "01")
    with pytest.raises(ValueError, match="one string"):
        tm_trace(compile_tm(*TM_EXAMPLES["increment"]), torch.zeros(2, 3, dtype=torch.long))
