import pytest
import torch

from companion.verify import matches_print


def test_precision_is_read_off_the_print():
    assert matches_print(0.7679, "0.768")
    assert not matches_print(0.7679, "0.769")
    assert matches_print(0.7679, "0.77")
    assert matches_print(16.9455, "16.95") and not matches_print(16.9188, "16.95")
    assert matches_print(3.0, "3") and not matches_print(3.6, "3")


def test_nested_prints_are_checked_element_by_element():
    A = torch.tensor([[0.0454, 0.7679], [1.0, -0.25]])
    assert matches_print(A, [["0.045", "0.768"], ["1.0", "-0.25"]])
    assert not matches_print(A, [["0.045", "0.768"], ["1.0", "-0.26"]])


def test_shape_and_type_mismatches_are_refused():
    with pytest.raises(ValueError, match="printed has 1"):
        matches_print(torch.zeros(2), ["0"])
    with pytest.raises(TypeError, match="printed must hold strings"):
        matches_print(torch.zeros(1), [0.0])
