"""Hidden tests of the exercises of *Hahn's lemma and exact solutions*
(``book/exact_solutions.ipynb``)."""

import random

from companion.evaluation import loglog_slope
from course.hidden import HiddenTest, close


def _slope(expected_slope: float, sizes):
    """A judge: the changes fall like n^expected_slope (n = m + 1) to within 0.1, whatever
    strings the submission drew (the log-log slope is computed here, from the values)."""
    def judge(got, expected) -> str:
        if not (isinstance(got, list) and len(got) == len(sizes)
                and all(isinstance(g, float) and g > 0 for g in got)):
            return f"expected {len(sizes)} positive floats, got {got!r}"
        slope = loglog_slope([m + 1 for m in sizes], got)
        wrong = abs(slope - expected_slope) > 0.1
        return f"the changes fall like n^{slope:.2f}, not n^{expected_slope}" if wrong else ""
    return judge


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    def step(k):
        low = rng.randrange(-30, 0)
        return HiddenTest(f"step_indicator(torch.arange({low}.0, {k + 40}.0), {k}).double()",
                          close(rtol=0, atol=0))

    m = rng.randrange(40, 100)
    sizes = [m, 4 * m, 16 * m]
    changes = {name: HiddenTest(f"[largest_flip_change(models[{name!r}][0], m) for m in {sizes}]",
                                _slope(slope, sizes))
               for name, slope in (("FIRST", -1), ("PARITY", -2))}
    return {
        "ex-exact-triangle": [step(rng.randrange(-5, 15)), step(rng.randrange(15, 2000))],
        "ex-exact-sensitivity": list(changes.values()),
        "ex-exact-large-c": [HiddenTest("first_limit", close(atol=1e-9)),
                             HiddenTest("log_c_logits", close(atol=1e-9))],
    }
