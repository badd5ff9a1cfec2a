"""Hidden tests of the exercises of *Learning FIRST and PARITY; log-length scaling*
(``book/learnability.ipynb``)."""

import random

from course.hidden import HiddenTest, close


def _bootstrap(rng: random.Random, seeds: int, gain: tuple) -> HiddenTest:
    """``paired_bootstrap`` on per-seed scores whose differences are uniform on ``gain``,
    with a generator seeded here, so that both editions draw the same resamples."""
    standard = [round(rng.uniform(0.5, 0.95), 4) for _ in range(seeds)]
    scaled = [round(s + rng.uniform(*gain), 4) for s in standard]
    tensors = ", ".join(f"torch.tensor({v!r}, dtype=torch.float64)"
                        for v in (standard, scaled))
    return HiddenTest(f"paired_bootstrap({tensors}, {rng.choice([200, 500, 1000, 2000])}, "
                      f"torch.Generator().manual_seed({rng.randrange(2**31)}))",
                      close(rtol=1e-9, atol=1e-9))


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    exact = close(rtol=0, atol=0)
    scaled_cases = [  # each region of the answer: n = 2, c < 1 long, c >= 1, c just below 1
        (rng.uniform(0.1, 0.95), 2), (rng.uniform(0.1, 0.8), rng.randrange(50, 5000)),
        (rng.uniform(1.0, 2.0), rng.randrange(3, 5000)), (0.99, rng.randrange(5, 30))]
    return {
        "ex-learn-threshold": [HiddenTest(f"longest_length({rng.uniform(0.2, 6.0)!r})", exact)
                               for _ in range(3)],
        "ex-learn-scaled-c": [HiddenTest(f"bool(scaled_flawed_correct({c!r}, {n}))", exact)
                              for c, n in scaled_cases],
        "ex-learn-dilution": [HiddenTest(f"weight_on_first({rng.randrange(2, 2000)}, "
                                         f"{rng.uniform(0.1, 4.0)!r}, {scaled})")
                              for scaled in (False, True, False, True)],
        "ex-learn-bootstrap": [  # a steady gain, a steady loss, either, three seeds
            _bootstrap(rng, rng.randrange(6, 13), (0.005, 0.03)),
            _bootstrap(rng, rng.randrange(6, 13), (-0.03, -0.005)),
            _bootstrap(rng, rng.randrange(6, 13), (-0.05, 0.05)),
            _bootstrap(rng, 3, (-0.05, 0.05))],
    }
