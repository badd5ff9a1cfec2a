"""The intermediate-steps decoder (companion.steps) against plain-Python automata, brute force
over all short strings, PyTorch's own causal attention, and bad input."""

import itertools
import random

import pytest
import torch
import torch.nn.functional as F

from companion.languages import all_strings, parity, random_strings, word_problem
from companion.runtime import using_threads
from companion.steps import (
    MAX_PAIRS,
    Cache,
    Decoder,
    activation_table,
    compile_dfa,
    decode,
    exact_length,
    forced_states,
    parity_decoder,
    run_dfa,
    word_problem_dfa,
)

GENERATORS = ["(01)", "(01234)"]


def simulate(transitions, start, word):
    """The states after each symbol, by hand."""
    states, state = [], start
    for symbol in word:
        state = transitions[state][symbol]
        states.append(state)
    return states


def random_dfa(seed, states=5, symbols=3):
    rng = random.Random(seed)
    transitions = [[rng.randrange(states) for _ in range(symbols)] for _ in range(states)]
    return transitions, rng.randrange(states), rng.sample(range(states), 2)


def every_string(k, m):
    return torch.tensor(list(itertools.product(range(k), repeat=m)), dtype=torch.long)


def check_all(transitions, start, accepting, max_m):
    decoder, k = compile_dfa(transitions, start, accepting), len(transitions[0])
    for m in range(max_m + 1):
        w = every_string(k, m).reshape(k**m, m)
        states, verdict = decode(decoder, w)
        expected = [simulate(transitions, start, word) for word in w.tolist()]
        assert states.tolist() == expected, f"m = {m}"
        last = [row[-1] if row else start for row in expected]
        assert verdict.tolist() == [q in accepting for q in last], f"m = {m}"


def test_parity_on_every_string_up_to_length_10():
    decoder = parity_decoder()
    for m in range(11):
        w = all_strings(m)
        states, verdict = decode(decoder, w)
        assert torch.equal(verdict, parity(w)), f"m = {m}"
        assert states.tolist() == [simulate([[0, 1], [1, 0]], 0, x) for x in w.tolist()]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_dfa_on_every_string_up_to_length_6(seed):
    check_all(*random_dfa(seed), max_m=6)


def test_word_problem_of_s5_on_every_word_up_to_length_10():
    transitions, start, accepting = word_problem_dfa(GENERATORS)
    assert len(transitions) == 120 and len(transitions[0]) == 2
    decoder = compile_dfa(transitions, start, accepting)
    for m in (0, 1, 5, 10):
        w = every_string(2, m).reshape(2**m, m)
        _, verdict = decode(decoder, w)
        expected = [word_problem([GENERATORS[a] for a in row]) for row in w.tolist()]
        assert verdict.tolist() == expected, f"m = {m}"
    assert sum(expected) > 0  # some words of length 10 multiply to the identity


def test_long_random_strings_in_float64_and_float32_within_its_exact_length():
    generator = torch.Generator().manual_seed(0)
    for dtype, m in ((torch.float64, 1500), (torch.float32, exact_length(torch.float32))):
        w = random_strings(2, m, generator)
        states, verdict = decode(parity_decoder(dtype), w)
        assert torch.equal(states, run_dfa([[0, 1], [1, 0]], 0, w)), dtype
        assert torch.equal(verdict, parity(w)), dtype


def test_run_dfa_is_the_plain_simulation():
    transitions, start, _ = random_dfa(7)
    w = torch.randint(0, 3, (20, 15), generator=torch.Generator().manual_seed(1))
    assert run_dfa(transitions, start, w).tolist() == [
        simulate(transitions, start, row) for row in w.tolist()]


def test_batching_does_not_change_any_string():
    decoder = compile_dfa(*random_dfa(3))
    w = torch.randint(0, 3, (6, 12), generator=torch.Generator().manual_seed(2))
    states, verdict = decode(decoder, w)
    for b in range(6):
        alone, alone_verdict = decode(decoder, w[b:b + 1])
        assert torch.equal(alone[0], states[b]) and alone_verdict[0] == verdict[b]


def test_stages_match_pytorch_causal_attention_on_the_whole_sequence():
    """Teacher forcing: the sequence the decoder read, run at once through
    F.scaled_dot_product_attention with is_causal=True, gives every recorded stage."""
    decoder = compile_dfa(*random_dfa(4))
    w = torch.randint(0, 3, (3, 7), generator=torch.Generator().manual_seed(3))
    states, _, stages = decode(decoder, w, record=True)
    k, S = 3, 5
    tokens = torch.cat([w, torch.full((3, 1), k + S), k + states[:, :-1]], 1)
    N = tokens.shape[1]
    a = decoder.embedding[tokens] + decoder.positions(torch.arange(N)).to(decoder.embedding)
    torch.testing.assert_close(stages[0], a, rtol=0, atol=0)
    for index, layer in enumerate(decoder.layers):
        q, key, v = (a @ W.transpose(0, 1) for W in (layer.W_Q[0], layer.W_K[0], layer.W_V[0]))
        c = a + F.scaled_dot_product_attention(q, key, v, is_causal=True, scale=1.0)
        a = c + layer.ffn(c)
        torch.testing.assert_close(stages[1 + 2 * index], c, rtol=0, atol=1e-9)
        torch.testing.assert_close(stages[2 + 2 * index], a, rtol=0, atol=1e-9)


def test_the_cache_keeps_only_the_rows_that_later_steps_read():
    """S5's decoder (d = 249): the first layer's keys and values are one row wide (is_start;
    m), the second's two (i and i^2; in=0 and in=1), so the cache holds 6 numbers a position
    rather than 2 (d_hid + d) = 502, by construction."""
    decoder = compile_dfa(*word_problem_dfa(GENERATORS))
    B, N, d = 3, 10, decoder.layout.d
    cache = Cache(decoder, B, N)
    assert [tuple(keys.shape) for keys in cache.keys] == [(1, B, 1, N), (1, B, 2, N)]
    assert [tuple(values.shape) for values in cache.values] == [(1, B, N, 1), (1, B, N, 2)]
    names = [[decoder.layout.names[r] for r in rows] for rows in cache.value_rows]
    assert names == [["m"], ["in=0", "in=1"]]
    held = sum(x.numel() for x in cache.keys + cache.values)
    assert held == 6 * B * N < len(decoder.layers) * B * N * d


def test_the_narrow_cache_gives_what_whole_rows_without_a_cache_give():
    """From START on, every recorded stage of S5's decoder equals, exactly, plain causal
    attention over the whole sequence with the layers' whole matrices (no cache, no rows left
    out); the written states are the automaton's."""
    transitions, start, accepting = word_problem_dfa(GENERATORS)
    decoder = compile_dfa(transitions, start, accepting)
    w = torch.randint(0, 2, (4, 40), generator=torch.Generator().manual_seed(7))
    states, _, stages = decode(decoder, w, record=True)
    assert torch.equal(states, run_dfa(transitions, start, w))
    B, m = w.shape
    tokens = torch.cat([w, torch.full((B, 1), len(decoder.tokens) - 1), 2 + states[:, :-1]], 1)
    N = tokens.shape[1]
    a = decoder.embedding[tokens] + decoder.positions(torch.arange(N)).to(decoder.embedding)
    whole = [a]
    for layer in decoder.layers:
        q, key, v = (a @ W[0].T for W in (layer.W_Q, layer.W_K, layer.W_V))
        scores = (q @ key.transpose(1, 2)).masked_fill(~torch.ones(N, N).tril().bool(),
                                                       -torch.inf)
        c = a + torch.softmax(scores, -1) @ v
        a = c + layer.ffn(c)
        whole += [c, a]
    for recorded, expected in zip(stages, whole, strict=True):
        assert torch.equal(recorded[:, m:], expected[:, m:])


def test_decoding_computes_on_the_books_threads_and_restores_torchs(monkeypatch):
    seen = []
    run = Decoder.run
    monkeypatch.setattr(Decoder, "run", lambda *args, **kwargs: (
        seen.append(torch.get_num_threads()), run(*args, **kwargs))[1])
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(3)
        monkeypatch.setenv("COMPANION_THREADS", "2")
        decode(parity_decoder(), "0110")
        forced_states(parity_decoder(), "0110")
        assert torch.get_num_threads() == 3
        with pytest.raises(ValueError, match="w"):
            decode(parity_decoder(), "012")
        assert torch.get_num_threads() == 3
        monkeypatch.delenv("COMPANION_THREADS")
        decode(parity_decoder(), "01")
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)
    assert seen == [2] * 5 + [1] * 2  # the prompt, three steps, teacher forcing; then 1


def test_decoding_keeps_the_stages_only_when_asked(monkeypatch):
    """Without record, no step keeps its d-wide stages (they would outgrow the cache)."""
    asked = []
    forward = Decoder.forward
    monkeypatch.setattr(Decoder, "forward", lambda self, tokens, start, cache, record=None: (
        asked.append(record is not None), forward(self, tokens, start, cache, record))[1])
    decode(parity_decoder(), "0110")
    assert asked == [False] * 4
    decode(parity_decoder(), "0110", record=True)
    assert asked == [False] * 4 + [True] * 4


def test_using_threads_restores_the_count_even_after_an_error(monkeypatch):
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        monkeypatch.setenv("COMPANION_THREADS", "1")
        with using_threads() as count:
            assert count == torch.get_num_threads() == 1
        with pytest.raises(RuntimeError, match="inside"), using_threads(3):
            assert torch.get_num_threads() == 3
            raise RuntimeError("inside")
        assert torch.get_num_threads() == 2
        with pytest.raises(ValueError, match="count"), using_threads(0):
            pass
        monkeypatch.setenv("COMPANION_THREADS", "many")
        with pytest.raises(ValueError, match="COMPANION_THREADS"), using_threads():
            pass
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_teacher_forcing_agrees_with_greedy_decoding_up_to_the_first_error():
    transitions, start, accepting = random_dfa(5)
    w = torch.randint(0, 3, (8, 30), generator=torch.Generator().manual_seed(4))
    decoder = compile_dfa(transitions, start, accepting)
    assert torch.equal(forced_states(decoder, w), decode(decoder, w)[0])
    low = parity_decoder(torch.bfloat16)  # errs from m = 19 on 0101...
    w = torch.arange(40).remainder(2)[None]
    truth = run_dfa([[0, 1], [1, 0]], 0, w)
    first = [int((states != truth).long().argmax()) for states in (
        forced_states(low, w), decode(low, w)[0])]
    assert first[0] == first[1] > 0


def test_blocks_of_positions_do_not_change_the_answer(monkeypatch):
    decoder = compile_dfa(*random_dfa(6))
    w = torch.randint(0, 3, (4, 25), generator=torch.Generator().manual_seed(5))
    whole = forced_states(decoder, w)
    monkeypatch.setattr("companion.steps.SCORE_BUDGET", 64)  # blocks of one or two positions
    assert torch.equal(forced_states(decoder, w), whole)
    assert torch.equal(decode(decoder, w)[0], whole)


def test_exact_length_keeps_8_m_squared_in_the_significand_and_in_range():
    for dtype, bits in ((torch.float64, 53), (torch.float32, 24), (torch.bfloat16, 8)):
        m = exact_length(dtype)
        assert 8 * m**2 <= 2**bits < 8 * (m + 1) ** 2
    assert exact_length(torch.float16) == 2  # 8 * 3**2 * 1024 > 65504, float16's largest


def test_low_precision_errs_only_beyond_its_exact_length():
    for dtype in (torch.bfloat16, torch.float16):
        decoder, wrong = parity_decoder(dtype), []
        for m in range(1, 40):
            w = torch.arange(m).remainder(2)[None]
            wrong.append(not torch.equal(decode(decoder, w)[0], run_dfa([[0, 1], [1, 0]], 0, w)))
        assert not any(wrong[:exact_length(dtype)]), dtype


def test_activation_table_names_dimensions_and_positions():
    table = activation_table(parity_decoder(), "011", "a2")
    assert list(table.columns) == ["0:0", "1:1", "2:1", "3:START", "4:s0", "5:s1"]
    assert table.loc["next=1", "3:START"] == 0 and table.loc["next=1", "4:s0"] == 1
    assert table.loc["m", "5:s1"] == 3


def test_empty_string_gives_the_start_state_verdict():
    decoder = compile_dfa([[1], [0]], start=1, accepting=[1])
    states, verdict, stages = decode(decoder, "", record=True)
    assert states.shape == (1, 0) and verdict.tolist() == [True]
    assert forced_states(decoder, "").shape == (1, 0) and stages[0].shape == (1, 0, 11)


@pytest.mark.parametrize(("transitions", "start", "accepting", "error", "words"), [
    ("01", 0, [0], TypeError, "transitions"),
    ([], 0, [0], TypeError, "transitions"),
    ([[0, 1], [1]], 0, [0], ValueError, r"transitions\[1\]"),
    ([[0, 2], [1, 0]], 0, [0], ValueError, r"transitions\[0\]\[1\]"),
    ([[0, True], [1, 0]], 0, [0], TypeError, r"transitions\[0\]\[1\]"),
    ([[0, 1], [1, 0]], 2, [0], ValueError, "start"),
    ([[0, 1], [1, 0]], 0, "1", TypeError, "accepting"),
    ([[0, 1], [1, 0]], 0, [5], ValueError, "accepting"),
    ([[0] * 5] * 1000, 0, [0], ValueError,  # within MAX_STATES and MAX_SYMBOLS, not S * k
     r"transitions: .* at most 4096 \(state, symbol\) pairs .*got 1000 states x 5"),
    ([[0] * 100] * 41, 0, [0], ValueError, r"transitions: .*41 states x 100 symbols = 4100"),
])
def test_bad_automata_are_refused(transitions, start, accepting, error, words):
    with pytest.raises(error, match=words):
        compile_dfa(transitions, start, accepting)


def test_the_largest_automata_compile():
    """S * k = MAX_PAIRS (4096) pairs compile; the reference run_dfa has no such limit."""
    assert MAX_PAIRS == 4096
    decoder = compile_dfa([[(q + a) % 512 for a in range(8)] for q in range(512)], 0, [0])
    assert decoder.layers[1].W_F1.shape[0] == 4096
    assert run_dfa([[0] * 5] * 1000, 0, "01234").tolist() == [[0] * 5]


@pytest.mark.parametrize(("w", "error"), [
    ("012", ValueError), (torch.tensor([[0, 2]]), ValueError), (torch.tensor([0, 1]), ValueError),
    (torch.zeros(0, 3, dtype=torch.long), ValueError), (torch.tensor([[0.0, 1.0]]), TypeError),
    ([[0, 1]], TypeError),
])
def test_bad_strings_are_refused(w, error):
    with pytest.raises(error, match="w"):
        decode(parity_decoder(), w)


def test_other_bad_arguments_are_refused():
    with pytest.raises(TypeError, match="decoder"):
        decode(torch.nn.Linear(2, 2), "01")
    with pytest.raises(ValueError, match="stage"):
        activation_table(parity_decoder(), "01", "a3")
    with pytest.raises(ValueError, match="one nonempty string"):
        activation_table(parity_decoder(), "", "a2")
    with pytest.raises(TypeError, match="generators"):
        word_problem_dfa("(01)")
    with pytest.raises(ValueError, match="generators: cycle"):
        word_problem_dfa(["(05)"])
    with pytest.raises(TypeError, match="dtype"):
        parity_decoder(torch.long)
    with pytest.raises(TypeError, match="record"):
        decode(parity_decoder(), "01", record="yes")
    with pytest.raises(TypeError, match="decoder"):
        forced_states("parity", "01")
