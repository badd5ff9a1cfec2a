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
    with pytest.raises(ValueError, match=r"printed has shape \[1\]"):
        matches_print(torch.zeros(2), ["0"])
    with pytest.raises(ValueError, match=r"shape \[2, 2\] but printed has shape \[4\]"):
        matches_print(torch.zeros(2, 2), ["0", "0", "0", "0"])
    assert matches_print(torch.zeros(1, 2), ["0", "0"])  # dimensions of size 1 aside
    with pytest.raises(TypeError, match="printed must hold strings"):
        matches_print(torch.zeros(1), [0.0])


def test_an_exponent_moves_the_last_place():
    # "1.5e-3" claims [1.45e-3, 1.55e-3]: half a unit is 5e-5, not 0.05.
    assert matches_print(1.5e-3 + 4e-5, "1.5e-3") and matches_print(1.5e-3 - 4e-5, "1.5e-3")
    assert not matches_print(1.5e-3 + 6e-5, "1.5e-3")
    assert not matches_print(0.0, "1.5e-3")
    # "2e5" claims [1.5e5, 2.5e5]: half a unit is 5e4, not 0.5.
    assert matches_print(2e5 + 4e4, "2e5") and matches_print(2e5 - 4e4, "2E+5")
    assert not matches_print(2e5 + 6e4, "2e5")
    assert matches_print(0.0123, "1.23e-2") and not matches_print(0.01236, "1.23e-2")


def test_printed_strings_that_are_not_finite_numbers_are_refused():
    with pytest.raises(ValueError, match="printed must hold numbers"):
        matches_print(1.0, "one")
    with pytest.raises(ValueError, match="printed must hold finite numbers"):
        matches_print(1.0, "nan")
