"""The intermediate-steps decoder (companion.steps) against plain-Python automata, brute force
over all short strings, PyTorch's own causal attention, and bad input."""

import itertools
import random

import pytest
import torch
import torch.nn.functional as F

from companion.languages import all_strings, parity, random_strings, word_problem
from companion.steps import (
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
    assert list(table.columns) == ["0:0", "1:1", "2:1", "3:START", "4:q0", "5:q1"]
    assert table.loc["next=1", "3:START"] == 0 and table.loc["next=1", "4:q0"] == 1
    assert table.loc["m", "5:q1"] == 3


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
])
def test_bad_automata_are_refused(transitions, start, accepting, error, words):
    with pytest.raises(error, match=words):
        compile_dfa(transitions, start, accepting)


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
