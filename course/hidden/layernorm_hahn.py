"""Hidden tests of the exercises of *Layer normalization against Hahn's lemma*
(``book/layernorm_hahn.ipynb``)."""

import random

from course.hidden import HiddenTest, close, log_uniform


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    return {
        "ex-lnh-scale": [HiddenTest(f"output_scale({log_uniform(rng, 1e-4, 2.0)!r}, "
                                    f"{2 * rng.randrange(1, 30)})") for _ in range(3)],
        "ex-lnh-crossover": [HiddenTest(f"crossover_length({log_uniform(rng, 3e-5, 1e-2)!r})",
                                        close(rtol=0, atol=0)) for _ in range(2)],
        "ex-lnh-accuracy": [HiddenTest(f"predicted_accuracy({rng.uniform(-0.49, 0.49)!r}, "
                                       f"{rng.randrange(4, 40)})") for _ in range(3)],
    }
