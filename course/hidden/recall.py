"""Hidden tests of the exercises of *In-context recall* (``book/recall.ipynb``)."""

import random

from course.hidden import HiddenTest, close, log_uniform


def _tokens(rng, batch, length, vocab):
    rows = [[rng.randrange(vocab) for _ in range(length)] for _ in range(batch)]
    return f"torch.tensor({rows})"


def _near(got, expected) -> str:
    """A judge: the loss of a fresh sample is within 5% of the instructor's."""
    if isinstance(got, bool) or not isinstance(got, int | float):
        return "the value is not a number"
    near = abs(got - expected) <= 0.05 * expected
    return "" if near else "the loss is more than 5% away from the right one"


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    def count_test():
        batch, length, vocab = rng.randrange(5, 40), rng.randrange(3, 30), rng.randrange(2, 5)
        pairs = [f"torch.tensor({[rng.randrange(vocab) for _ in range(batch)]})"
                 for _ in range(2)]
        tokens = _tokens(rng, batch, length, vocab)
        return HiddenTest(f"bigram_counts({tokens}, {', '.join(pairs)})", close(rtol=0, atol=0))

    return {
        "ex-recall-count": [count_test() for _ in range(2)],
        "ex-recall-closed-form": [
            HiddenTest(f"loss_with_count({log_uniform(rng, 0.05, 20)!r}, {rng.randrange(1, 6)}, "
                       f"{rng.randrange(2, 200)})") for _ in range(3)],
        "ex-recall-limits": [HiddenTest("swapped_loss", _near)],
    }
