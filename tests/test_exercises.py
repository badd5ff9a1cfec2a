import numpy as np
import pytest
import sympy
import torch

from companion import circuits
from companion.attention import attention_weights
from companion.exercises import (
    EXERCISE_KEYS,
    Feedback,
    _first_nonpositive,
    check_circuit_family,
    check_paired_bootstrap,
    check_previous_position_layer,
    check_tied_queries,
    previous_position_inputs,
)
from companion.languages import majority, parity
from companion.length_generalization import bootstrap_difference

# A solution derived from the exercise's hint: s[i, j] = 2(i - 1) j - j^2, maximal at j = i - 1
# (and at j = 0 when i = 0).
W_Q = [[0, -2, 2, 0, 0], [0, -1, 0, 0, 0]]
W_K = EXERCISE_KEYS
W_V = [[0] * 5, [0] * 5, [0] * 5, [0] * 5, [1, 0, 0, 0, 0]]


def first_wrong_position(W_Q, W_K, n: int, offset: int = 1):
    """Brute force, independent of the check: run the layer on random inputs of length n in
    float64 and return the first position whose fifth row is not x_(i-offset) (x_0 for
    i < offset), or None."""
    x = torch.randn(3, n, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    X = torch.stack([previous_position_inputs(row) for row in x])
    W_Q, W_K = (torch.as_tensor(W, dtype=torch.float64) for W in (W_Q, W_K))
    alpha = attention_weights((W_Q @ X).transpose(1, 2) @ (W_K @ X), kind="average_hard")
    copied = (alpha @ x[:, :, None])[..., 0]
    wanted = x[:, (torch.arange(n) - offset).clamp(min=0)]
    wrong = ((copied - wanted).abs() > 1e-9).any(dim=0).nonzero().flatten()
    return int(wrong[0]) if len(wrong) else None


def test_correct_layer_passes():
    feedback = check_previous_position_layer(W_Q, W_K, W_V)
    assert isinstance(feedback, Feedback) and feedback.passed, feedback.message
    scaled = [[3 * v for v in row] for row in W_Q]  # any positive scale of the scores
    assert check_previous_position_layer(scaled, W_K, W_V)


@pytest.mark.parametrize("b", [-1.01, -1.02, -0.99])
def test_answers_right_only_for_short_lengths_fail(b):
    # q_i = [2i - 2, b]: right for every n <= 24, wrong from some longer n on (review of
    # issue 12: the old check tried n = 1..24 only and passed these)
    almost = [[0, -2, 2, 0, 0], [0, b, 0, 0, 0]]
    assert first_wrong_position(almost, W_K, 25) is None
    feedback = check_previous_position_layer(almost, W_K, W_V)
    assert not feedback
    n = int(feedback.message.split("n = ")[1].split(",")[0])
    position = int(feedback.message.split("position ")[1].split(" ")[0])
    assert first_wrong_position(almost, W_K, n) == position
    assert first_wrong_position(almost, W_K, n - 1) is None


@pytest.mark.parametrize("offset", [1, 3])
def test_exact_verdict_agrees_with_brute_force_on_perturbed_answers(offset):
    generator = torch.Generator().manual_seed(0)
    verdicts = []
    for _ in range(40):  # perturb up to two of the six entries that shape the scores
        delta = torch.zeros(6)
        where = torch.randperm(6, generator=generator)[:int(torch.randint(3, (1,)))]
        delta[where] = torch.randint(-3, 4, (len(where),), generator=generator) / 64
        delta = delta.view(2, 3).tolist()
        queries = [[0, -2 * offset + delta[0][0], 2 + delta[0][1], delta[0][2], 0],
                   [0, -1 + delta[1][0], delta[1][1], delta[1][2], 0]]
        feedback = check_previous_position_layer(queries, W_K, W_V, offset=offset)
        verdicts.append(feedback.passed)
        if feedback:
            assert first_wrong_position(queries, W_K, 400, offset) is None
        else:
            n = int(feedback.message.split("n = ")[1].split(",")[0])
            assert first_wrong_position(queries, W_K, n, offset) is not None, feedback.message
    assert any(verdicts) and not all(verdicts)


@pytest.mark.parametrize("offset", [2, 3, 5])
def test_layer_with_an_offset_copies_x_i_minus_offset(offset):
    answer = [[0, -2 * offset, 2, 0, 0], [0, -1, 0, 0, 0]]  # q_i = [2i - 2 offset, -1]
    assert check_previous_position_layer(answer, W_K, W_V, offset=offset)
    assert first_wrong_position(answer, W_K, 20, offset) is None
    assert not check_previous_position_layer(answer, W_K, W_V)
    feedback = check_previous_position_layer(W_Q, W_K, W_V, offset=offset)  # reads x_(i-1)
    assert not feedback
    n = int(feedback.message.split("n = ")[1].split(",")[0])
    position = int(feedback.message.split("position ")[1].split(" ")[0])
    assert first_wrong_position(W_Q, W_K, n, offset) == position


def test_offset_must_be_a_positive_int():
    for check, weights in ((check_previous_position_layer, (W_Q, W_K, W_V)),
                           (check_tied_queries, (W_Q,))):
        with pytest.raises(ValueError, match="offset"):
            check(*weights, offset=0)
        for wrong in (1.5, True, "2"):
            with pytest.raises(TypeError, match="offset"):
                check(*weights, offset=wrong)


def test_layer_attending_to_the_current_position_fails_with_a_message():
    attends_to_self = [[0, 0, 2, 0, 0], [0, -1, 0, 0, 0]]  # s = 2ij - j^2: maximal at j = i
    feedback = check_previous_position_layer(attends_to_self, W_K, W_V)
    assert not feedback and "should read x_0" in feedback.message


def test_scores_that_depend_on_the_input_fail():
    uses_x = [[1, -2, 2, 0, 0], [0, -1, 0, 0, 0]]  # q_i gains x_i j
    feedback = check_previous_position_layer(uses_x, W_K, W_V)
    assert not feedback and "depend on the input x" in feedback.message
    key_uses_x = [[1, 0, 1, 0, 0], [0, 0, 0, 1, 0]]  # k_j gains x_j
    assert "depend on the input x" in check_previous_position_layer(
        W_Q, key_uses_x, W_V).message


def test_value_that_disturbs_other_rows_fails():
    W_V_bad = [row[:] for row in W_V]
    W_V_bad[0][0] = 1
    assert "W_V must write x_j" in check_previous_position_layer(W_Q, W_K, W_V_bad).message
    W_V_bad = [row[:] for row in W_V]
    W_V_bad[4][2] = 1e-6  # adds j / 10^6: invisible at short lengths
    assert not check_previous_position_layer(W_Q, W_K, W_V_bad)


def test_malformed_weights_fail_cleanly():
    assert "W_V must be a [5, 5]" in check_previous_position_layer(W_Q, W_K, [[1]]).message
    assert "[d_hid, 5]" in check_previous_position_layer([[1, 2]], W_K, W_V).message
    assert "numeric" in check_previous_position_layer("abc", W_K, W_V).message
    assert "rows" in check_previous_position_layer(W_Q[:1], W_K, W_V).message
    nan = [[float("nan")] * 5]
    assert "finite" in check_previous_position_layer(nan, nan, W_V).message


def test_tied_queries():
    assert check_tied_queries([[0, -1, 2, 0, 0], [0, -1, 0, 0, 0]])  # q_i = [2i - 1, -1]
    assert "not tied" in check_tied_queries(W_Q).message
    # a(i) = -2i^2 + 13i - 6, b(i) = i - 6: tied at every i, maximal only while i <= 5, so
    # the book's old check at n = 6 passed it
    late = [[0, -6, 13, -2, 0], [0, -6, 1, 0, 0]]
    feedback = check_tied_queries(late)
    assert not feedback and "for n = 7, the tied scores" in feedback.message
    assert first_tie_broken(late, 6) is None and first_tie_broken(late, 7) == 6
    assert "depend on the input x" in check_tied_queries([[1, -1, 2, 0, 0],
                                                          [0, -1, 0, 0, 0]]).message
    assert "W_Q_tie must be a [2, 5]" in check_tied_queries([[0, 1, 2]]).message


def first_tie_broken(W_Q_tie, n: int, offset: int = 1):
    """Brute force: the first position i >= offset whose maximal scores are not exactly
    {i - offset, i - offset + 1} at length n, or None."""
    X = previous_position_inputs(torch.zeros(n))
    scores = (torch.tensor(W_Q_tie).double() @ X).T @ (torch.tensor(W_K).double() @ X)
    for i in range(offset, n):
        top = (scores[i] == scores[i].max()).nonzero().flatten().tolist()
        if top != [i - offset, i - offset + 1]:
            return i
    return None


@pytest.mark.parametrize("offset", [2, 4])
def test_tied_queries_with_an_offset(offset):
    tie = [[0, 1 - 2 * offset, 2, 0, 0], [0, -1, 0, 0, 0]]  # q_i = [2i - 2 offset + 1, -1]
    assert check_tied_queries(tie, offset=offset)
    assert first_tie_broken(tie, 20, offset) is None
    assert not check_tied_queries(tie)
    assert "not tied" in check_tied_queries([[0, -1, 2, 0, 0], [0, -1, 0, 0, 0]],
                                            offset=offset).message
    # as `late` above, tied at every i but with b(i) = i - 6, maximal only while i <= 5
    late = [[0, 6 - 12 * offset, 11 + 2 * offset, -2, 0], [0, -6, 1, 0, 0]]
    feedback = check_tied_queries(late, offset=offset)
    assert not feedback and "for n = 7, the tied scores" in feedback.message
    assert first_tie_broken(late, 6, offset) is None and first_tie_broken(late, 7, offset) == 6


def test_first_nonpositive_matches_brute_force():
    x = sympy.Symbol("i")
    generator = torch.Generator().manual_seed(0)
    for _ in range(200):
        degree = int(torch.randint(0, 4, (1,), generator=generator))
        coefficients = torch.randint(-20, 21, (degree + 1,), generator=generator).tolist()
        coefficients[0] = coefficients[0] or 1
        p = sympy.Poly(coefficients, x, domain="QQ")
        start = int(torch.randint(0, 4, (1,), generator=generator))
        # every real root is below 21 (Cauchy's bound), so the sign is settled by 100
        brute = next((i for i in range(start, 100) if p.eval(i) <= 0), None)
        assert _first_nonpositive(p, start) == brute, (coefficients, start)
    assert _first_nonpositive(sympy.Poly(0, x, domain="QQ"), 3) == 3


def test_inputs_are_the_exercise_columns():
    X = previous_position_inputs(torch.tensor([7.0, 8.0, 9.0]))
    expected = torch.tensor([[7, 8, 9], [1, 1, 1], [0, 1, 2], [0, 1, 4], [0, 0, 0]])
    assert torch.equal(X, expected.double())


def test_circuit_family_checker():
    assert check_circuit_family(circuits.parity_tree, parity, circuit_class="NC")
    assert check_circuit_family(circuits.majority_gate, majority)
    wrong_language = check_circuit_family(circuits.parity_tree, majority)
    assert not wrong_language and "wrong answer" in wrong_language.message
    not_nc = check_circuit_family(circuits.parity_dnf, parity, circuit_class="NC",
                                  sampled_lengths=())
    assert not not_nc and "gate rules of NC" in not_nc.message
    too_deep = check_circuit_family(circuits.parity_tree, parity, max_depth=4)
    assert not too_deep and "more than 4" in too_deep.message

    def broken(n):
        raise RuntimeError("not yet")

    assert "raised RuntimeError" in check_circuit_family(broken, parity).message


def test_circuit_family_right_only_on_short_lengths_fails():
    def two_ones(n):  # right for n <= 10, then accepts every string
        circuit = circuits.Circuit(n)
        if n > 10:
            return circuit.set_output(circuit.gate("AND"))
        pairs = [circuit.gate("AND", i, j) for i in range(n) for j in range(i + 1, n)]
        return circuit.set_output(circuit.gate("OR", *pairs))

    at_least_two = lambda w: w.sum(dim=1) >= 2  # noqa: E731
    assert check_circuit_family(two_ones, at_least_two, sampled_lengths=())
    feedback = check_circuit_family(two_ones, at_least_two)
    assert not feedback and "family(16) gives the wrong answer" in feedback.message

    def majority_until_ten(n):  # MAJORITY, but with a wrong threshold from n = 11 on
        circuit = circuits.Circuit(n)
        if n <= 10:
            return circuit.set_output(circuit.gate("MAJORITY", *range(n)))
        return circuit.set_output(circuit.gate("MAJORITY", *range(n - 1)))

    assert not check_circuit_family(majority_until_ten, majority)


def paired_bootstrap(standard, scaled, samples, generator, pairs=True, sign=1):
    """An answer to the paired bootstrap exercise, written with NumPy's percentiles; with
    ``pairs=False`` it resamples the two columns separately, a wrong answer."""
    n = len(standard)
    difference = (scaled - standard).numpy() * sign
    picks = torch.randint(n, (samples, n), generator=generator).numpy()
    if pairs:
        means = difference[picks].mean(axis=1)
    else:
        other = torch.randint(n, (samples, n), generator=generator).numpy()
        means = scaled.numpy()[picks].mean(axis=1) - standard.numpy()[other].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return difference.mean(), low, high, bool(low > 0 or high < 0)


def test_paired_bootstrap_checker_accepts_right_answers():
    feedback = check_paired_bootstrap(paired_bootstrap)
    assert isinstance(feedback, Feedback) and feedback, feedback.message
    # torch's quantile, tensors and a NumPy bool are right too, and extra pairs are tried
    def with_torch(standard, scaled, samples, generator):
        difference = scaled - standard
        picks = torch.randint(len(difference), (samples, len(difference)),
                              generator=generator)
        low, high = torch.quantile(difference[picks].mean(dim=1),
                                   torch.tensor([0.025, 0.975], dtype=torch.float64))
        return difference.mean(), low, high, np.bool_(low > 0 or high < 0)

    feedback = check_paired_bootstrap(with_torch, pairs=[([0.1, 0.2], [0.3, 0.1])], samples=300)
    assert feedback and "5 sets of paired scores, with 300 resamples" in feedback.message


def test_paired_bootstrap_checker_rejects_wrong_answers_with_a_reason():
    def reversed_sign(*args):
        return paired_bootstrap(*args, sign=-1)

    assert "scaled - standard, not standard - scaled" in check_paired_bootstrap(
        reversed_sign).message

    def unpaired(*args):
        return paired_bootstrap(*args, pairs=False)

    feedback = check_paired_bootstrap(unpaired)
    assert not feedback and "resampling the two columns separately" in feedback.message

    def always_excludes(*args):
        return (*paired_bootstrap(*args)[:3], True)

    feedback = check_paired_bootstrap(always_excludes)
    assert not feedback and "contains 0, but excludes_zero is True" in feedback.message

    def other_draws(standard, scaled, samples, generator):
        generator.manual_seed(12345)  # the checker cannot repeat these draws
        return paired_bootstrap(standard, scaled, samples, generator)

    feedback = check_paired_bootstrap(other_draws)
    assert not feedback and "Resample whole seeds with torch.randint" in feedback.message

    def broken(*args):
        raise RuntimeError("not yet")

    assert "raised RuntimeError: not yet" in check_paired_bootstrap(broken).message
    assert "must return a tuple" in check_paired_bootstrap(lambda *a: 0.1).message
    assert "low must be a number" in check_paired_bootstrap(
        lambda *a: (0.1, "x", 0.2, True)).message
    assert "excludes_zero must be True or False" in check_paired_bootstrap(
        lambda *a: (*paired_bootstrap(*a)[:3], "yes")).message


def test_the_checkers_refuse_their_own_bad_arguments():
    """A checker's arguments are the instructor's: a bad one is named, never blamed on the
    student's answer (and an empty list of lengths does not pass every family)."""
    family = circuits.parity_tree
    for kwargs, error, words in [
        ({"lengths": [], "sampled_lengths": ()}, ValueError, "both empty"),
        ({"lengths": [-1]}, ValueError, "lengths must be >= 0"),
        ({"lengths": range(0, 25)}, ValueError, "lengths must be <= 20"),
        ({"sampled_lengths": (10**5,)}, ValueError, "sampled_lengths must be <= 4096"),
        ({"max_depth": "3"}, TypeError, "max_depth"),
        ({"samples": -1}, ValueError, "samples"),
        ({"seed": -1}, ValueError, "seed"),
        ({"circuit_class": "XY"}, ValueError, "circuit_class"),
    ]:
        with pytest.raises(error, match=words):
            check_circuit_family(family, parity, **kwargs)
    with pytest.raises(TypeError, match="language must be callable"):
        check_circuit_family(family, None)
    def right(standard, scaled, samples, generator):
        mean, low, high = bootstrap_difference(standard, scaled, samples, generator)
        return mean, low, high, bool(low > 0 or high < 0)

    for kwargs, error, words in [
        ({"pairs": [([0.1, float("nan")], [0.2, 0.3])]}, ValueError, "finite"),
        ({"pairs": [(1,)]}, TypeError, "pairs must hold"),
        ({"pairs": [([0.1, 0.2], [0.3])]}, ValueError, "one length"),
        ({"seed": "0"}, TypeError, "seed"),
        ({"samples": 0}, ValueError, "samples"),
    ]:
        with pytest.raises(error, match=words):
            check_paired_bootstrap(right, **kwargs)
    with pytest.raises(TypeError, match="passed must be True or False"):
        Feedback("no", "a message")
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        previous_position_inputs([1.0, 2.0])
    with pytest.raises(ValueError, match="1-d"):
        previous_position_inputs(torch.zeros(2, 2))
