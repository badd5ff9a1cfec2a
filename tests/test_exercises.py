import torch

from companion.exercises import Feedback, check_previous_position_layer, previous_position_inputs

# A solution derived from the exercise's hint: s[i, j] = 2(i - 1) j - j^2, maximal at j = i - 1
# (and at j = 0 when i = 0).
W_Q = [[0, -2, 2, 0, 0], [0, -1, 0, 0, 0]]
W_K = [[0, 0, 1, 0, 0], [0, 0, 0, 1, 0]]
W_V = [[0] * 5, [0] * 5, [0] * 5, [0] * 5, [1, 0, 0, 0, 0]]


def test_correct_layer_passes():
    feedback = check_previous_position_layer(W_Q, W_K, W_V)
    assert isinstance(feedback, Feedback) and feedback.passed, feedback.message


def test_layer_attending_to_the_current_position_fails_with_a_message():
    attends_to_self = [[0, 0, 2, 0, 0], [0, -1, 0, 0, 0]]  # s = 2ij - j^2: maximal at j = i
    feedback = check_previous_position_layer(attends_to_self, W_K, W_V)
    assert not feedback and "should read x_0" in feedback.message


def test_value_that_disturbs_other_rows_fails():
    W_V_bad = [row[:] for row in W_V]
    W_V_bad[0][0] = 1
    assert not check_previous_position_layer(W_Q, W_K, W_V_bad)


def test_malformed_weights_fail_cleanly():
    assert "W_V must be a [5, 5]" in check_previous_position_layer(W_Q, W_K, [[1]]).message
    assert "[d_hid, 5]" in check_previous_position_layer([[1, 2]], W_K, W_V).message
    assert "numeric" in check_previous_position_layer("abc", W_K, W_V).message


def test_inputs_are_the_exercise_columns():
    X = previous_position_inputs(torch.tensor([7.0, 8.0, 9.0]))
    expected = torch.tensor([[7, 8, 9], [1, 1, 1], [0, 1, 2], [0, 1, 4], [0, 0, 0]])
    assert torch.equal(X, expected.double())


def test_circuit_family_checker():
    from companion import circuits
    from companion.exercises import check_circuit_family
    from companion.languages import majority, parity

    assert check_circuit_family(circuits.parity_tree, parity, circuit_class="NC")
    assert check_circuit_family(circuits.majority_gate, majority)
    wrong_language = check_circuit_family(circuits.parity_tree, majority)
    assert not wrong_language and "wrong answer" in wrong_language.message
    not_nc = check_circuit_family(circuits.parity_dnf, parity, circuit_class="NC")
    assert not not_nc and "gate rules of NC" in not_nc.message
    too_deep = check_circuit_family(circuits.parity_tree, parity, max_depth=4)
    assert not too_deep and "more than 4" in too_deep.message

    def broken(n):
        raise RuntimeError("not yet")

    assert "raised RuntimeError" in check_circuit_family(broken, parity).message
