"""Hidden tests of the exercises of *Transformers as language recognizers*
(``book/recognizers.ipynb``): the weights come back as numbers and are checked exactly, for
every length, in the grader's process."""

import random

from companion.exercises import check_previous_position_layer, check_tied_queries
from course.hidden import HiddenTest, close


def _feedback(check):
    def judge(got, expected) -> str:
        try:
            feedback = check(*got)
        except (TypeError, ValueError) as error:
            return f"not a weight matrix ({error})"
        return "" if feedback else feedback.message
    return judge


def _ties_near_zero(got, expected) -> str:
    """A judge: as many logits as the instructor's, each 0 up to float64 rounding."""
    if not (isinstance(got, list) and len(got) == len(expected)):
        return "not one logit per tie"
    if not all(isinstance(v, float) and abs(v) < 1e-14 for v in got):
        return "a tie's logit is not 0 up to rounding"
    return ""


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    m, tied = rng.sample([4, 6, 8, 10, 14], 2)  # even lengths have ties
    odd = rng.choice([5, 7, 9, 11])
    strings = [[rng.randrange(2) for _ in range(odd)] for _ in range(rng.randrange(5, 20))]
    return {
        "ex-rec-previous": [HiddenTest("[W_Q, W_K, W_V]",
                                       _feedback(check_previous_position_layer))],
        "ex-rec-hard": [HiddenTest("[W_Q_tie]", _feedback(check_tied_queries))],
        "ex-rec-zero": [  # tie_logits is 0 up to rounding: zeros would pass, so it is not graded
            HiddenTest(f"no_margin(all_strings({m})).detach().double()", close(atol=1e-12)),
            HiddenTest(f"no_margin(torch.tensor({strings})).detach().double()",
                       close(atol=1e-12)),
            HiddenTest(f"(lambda w: no_margin(w[2 * w.sum(dim=1) == {tied}]).detach().double())"
                       f"(all_strings({tied}))", _ties_near_zero),
        ],
    }
