"""Hidden tests and variants of the template exercise ``ex-hw-last`` (``homework.ipynb``):
copy this folder out of the repository, and write your own exercises in its format."""

import random

from course.hidden import HiddenTest
from course.variants import Variant

ORDINALS = {2: "second", 3: "third", 4: "fourth", 5: "fifth", 6: "sixth"}


def _kth_last(rng: random.Random) -> Variant:
    """The k-th last 1 instead of the last."""
    k = rng.choice(sorted(ORDINALS))
    return Variant(f"the {ORDINALS[k]} last 1", {
        "the position of its last 1, or -1": f"the position of its {ORDINALS[k]} last 1 "
                                             f"(the last is the first),\nor -1",
        "where it has none": f"where it has fewer than {k}",
        "The last 1 is the largest": f"The {ORDINALS[k]} last 1 is the {ORDINALS[k]} largest",
        ".max(dim=1).values": f".sort(dim=1, descending=True).values[:, {k - 1}]",
        "w.sum(dim=1) > 0": f"w.sum(dim=1) >= {k}",
        "a string without a 1": f"a string with fewer than {k} 1s",
        ".eq(0).all(), \"no 1 should come after it\"":
            f".eq({k - 1}).all(), \"exactly {k - 1} 1s should come after it\"",
    }, {"k": k})


VARIANTS = {"ex-hw-last": _kth_last}


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    """Three batches of strings the check does not use: long ones, and short ones with few
    1s, where "none" and "too few" are likely."""
    def batch(n: int, ones: float) -> str:
        rows = [[int(rng.random() < ones) for _ in range(n)] for _ in range(20)]
        return f"last_one(torch.tensor({rows}))"
    return {"ex-hw-last": [HiddenTest(batch(rng.randrange(20, 40), 0.5)),
                           HiddenTest(batch(rng.randrange(6, 12), 0.2)),
                           HiddenTest(batch(rng.randrange(6, 12), 0.4))]}
