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


def hidden_tests(rng: random.Random) -> dict:
    m = rng.choice([4, 6, 8, 10])  # an even length has ties
    return {
        "ex-rec-previous": [HiddenTest("[W_Q, W_K, W_V]",
                                       _feedback(check_previous_position_layer))],
        "ex-rec-hard": [HiddenTest("[W_Q_tie]", _feedback(check_tied_queries))],
        "ex-rec-zero": [
            HiddenTest(f"no_margin(all_strings({m})).detach().double()", close(atol=1e-12)),
            HiddenTest("[len(tie_logits), str(tie_logits.dtype)]"),
            HiddenTest("tie_logits", close(atol=1e-15)),
        ],
    }
