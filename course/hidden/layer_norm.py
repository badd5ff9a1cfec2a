"""Hidden tests of the exercises of *Layer normalization* (``book/layer_norm.ipynb``)."""

import random

from course.hidden import HiddenTest, close, log_uniform, tensor_literal


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    def layer_norm_test(shape, eps):
        d = shape[-1:]
        arguments = ", ".join([tensor_literal(rng, shape), repr(eps), tensor_literal(rng, d),
                               tensor_literal(rng, d)])
        return HiddenTest(f"my_layer_norm({arguments})", close(atol=1e-10))

    return {
        "ex-ln-scratch": [
            layer_norm_test((rng.randrange(2, 6), rng.randrange(3, 12)), 0.0),
            layer_norm_test((2, rng.randrange(2, 4), rng.randrange(3, 12)), 1e-5),
            layer_norm_test((rng.randrange(3, 12),), log_uniform(rng, 1e-3, 1.0)),
        ],
        "ex-ln-sigma-eps": [HiddenTest(f"sigma_plus_eps_lipschitz({log_uniform(rng, 1e-6, 1)!r})")
                            for _ in range(3)],
        "ex-ln-prenorm": [HiddenTest(f"prenorm_signal({rng.randrange(1, 40)}, "
                                     f"{round(rng.uniform(0.1, 2.0), 3)!r})")
                          for _ in range(3)],
    }
