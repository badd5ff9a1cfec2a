"""Hidden tests of the exercises of *Self-attention* (``book/self_attention.ipynb``)."""

import random

from course.hidden import HiddenTest, close, tensor_literal


def _small(got, expected) -> str:
    """A judge: the error of an exact identity is zero up to float64 rounding."""
    if isinstance(got, bool) or not isinstance(got, int | float):
        return f"the value is {got!r}, expected a float"
    return "" if abs(got) < 1e-9 else f"the error is {got!r}, expected about 0"


def hidden_tests(rng: random.Random) -> dict:
    def permuted(n):
        order = list(range(n))
        rng.shuffle(order)
        return f"{tensor_literal(rng, (n, 8))}, torch.tensor({order})"

    n_plain, n_masked = rng.randrange(3, 20), rng.randrange(3, 20)
    return {
        "ex-sa-permutation": [
            HiddenTest(f"equivariance_error({permuted(n_plain)})", _small),
            HiddenTest(f"equivariance_error({permuted(n_masked)}, "
                       f"mask=future_mask({n_masked}))", close(rtol=1e-6)),
        ],
        "ex-sa-temperature": [HiddenTest("limit", close(atol=1e-12))],
        "ex-sa-crossover": [HiddenTest(f"crossover_length({2 * rng.randrange(1, 5000)})",
                                       close(rtol=0, atol=0)) for _ in range(3)],
        "ex-sa-strict": [HiddenTest("naive"), HiddenTest("weights")],
    }
