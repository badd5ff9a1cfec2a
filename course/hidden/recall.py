"""Hidden tests of the exercises of *In-context recall* (``book/recall.ipynb``), and their
graded variants (:mod:`course.variants`)."""

import random

from course.hidden import HiddenTest, close, log_uniform
from course.variants import Variant


def _tokens(rng, batch, length, vocab):
    rows = [[rng.randrange(vocab) for _ in range(length)] for _ in range(batch)]
    return f"torch.tensor({rows})"


def _near(got, expected) -> str:
    """A judge: the loss of a fresh sample is within 5% of the instructor's."""
    if isinstance(got, bool) or not isinstance(got, int | float):
        return "the value is not a number"
    near = abs(got - expected) <= 0.05 * expected
    return "" if near else "the loss is more than 5% away from the right one"


GAPS = range(2, 9)  # how far apart the two words of a variant's pairs are


def _count(rng: random.Random) -> Variant:
    gap = rng.choice(GAPS)
    between = "word" if gap == 2 else "words"
    return Variant(f"pairs {gap} apart", {
        "Counting bigrams": f"Counting pairs {gap} apart",
        "$z_{h-1} = x$ and $z_h = y$,": (
            f"$z_{{h-{gap}}} = x$ and $z_h = y$\n($x$, then {gap - 1} other {between}, then "
            "$y$),"),
        "without its last token": f"without its last {gap} tokens",
        "without its first token": f"without its first {gap} tokens",
        "`[B, H-1]`": f"`[B, H-{gap}]`", "marks the bigrams": "marks the pairs",
        "tokens[:, :-1]": f"tokens[:, :-{gap}]", "tokens[:, 1:]": f"tokens[:, {gap}:]",
        "words[b, h - 1]": f"words[b, h - {gap}]", "range(1, 12)": f"range({gap}, 12)",
    })


def _closed_form(rng: random.Random) -> Variant:
    decoys = rng.choice([1, 2, 3])
    times, planted = {1: ("once", "one decoy"), 2: ("twice", "two decoys"),
                      3: ("three times", "three decoys")}[decoys]
    return Variant(f"{planted} (q, y') beside the bigram", {
        "Two copies of the bigram": "Copies of the bigram, and decoys",
        "in which the bigram occurs `count` times.": (
            "in which the bigram occurs `count` times\nand a *decoy* bigram $(q, y')$, with "
            f"another output word $y' \\ne y$, occurs {times}."),
        "copy of the bigram in real sentences": f"copy of the bigram and {planted} in real "
                                                "sentences",
        "return math.log1p((n_words - 1) * math.exp(-count * lam))": (
            f"return math.log1p(math.exp(({decoys} - count) * lam)\n"
            "                     + (n_words - 2) * math.exp(-count * lam))"),
        "first >= 3": f"first >= {2 * decoys + 3}",
        "task.validate(tokens, target)\n": (
            "task.validate(tokens, target)\n"
            "decoy = task.n_triggers + (target + 1 - task.n_triggers) % task.n_outputs\n"
            f"for start in range(2, {2 + 2 * decoys}, 2):  # {decoys} (q, y'), y' != y\n"
            "    tokens[:, start], tokens[:, start + 1] = tokens[:, -1], decoy\n"),
        ("Every copy of the bigram puts weight $\\lambda$ on a position that holds $y$, so the "
         "logit of\n$y$ is $C\\lambda$ and every other logit stays 0: the loss is\n"
         "$-\\ln\\frac{e^{C\\lambda}}{e^{C\\lambda} + N - 1} = \\ln(1 + (N-1)e^{-C\\lambda})$. "
         "More copies\nmake the model more confident, at the same $\\lambda$."): (
            "Every copy of the bigram puts weight $\\lambda$ on a position that holds $y$, and "
            "every decoy\nweight $\\lambda$ on one that holds $y'$, so the logit of $y$ is "
            f"$C\\lambda$, that of $y'$ is ${decoys}\\lambda$,\nand every other logit stays 0: "
            "the loss is\n$-\\ln\\frac{e^{C\\lambda}}{e^{C\\lambda} + e^{"
            f"{decoys}\\lambda}} + N - 2}} = \\ln(1 + e^{{({decoys} - C)\\lambda}} + "
            "(N-2)e^{-C\\lambda})$.\nMore copies make the model more confident, at the same "
            f"$\\lambda$, and decoys less so: if $C < {decoys}$\nit prefers $y'$ and its loss "
            f"grows like $({decoys} - C)\\lambda$, and if $C = {decoys}$ it tends to $\\ln 2$."),
    }, {"decoys": decoys})


def _limits(rng: random.Random) -> Variant:
    # smaller or larger than the book's 1000 by a factor of 1.5 at least
    s = rng.randrange(250, 650, 50) if rng.random() < 0.5 else rng.randrange(1500, 5500, 500)
    return Variant(f"s = {s}", {
        "$s = 1000$": f"$s = {s}$",
        "fill_(1000.0)": f"fill_({s}.0)",
        'assert swapped_loss > 5, f"{swapped_loss} is small: is lambda 0 and s 1000?"': (
            "fresh = torch.Generator().manual_seed(0)\n"
            "sentences, _ = RecallTask(length=LENGTH).sample(1000, fresh)\n"
            "most = torch.nn.functional.one_hot(sentences).sum(dim=1).amax(dim=1)\n"
            "# the solution's estimate s (max_j n_j - 1) / H\n"
            f"estimate = {s} * (most - 1).double().mean().item() / LENGTH\n"
            "assert abs(swapped_loss - estimate) < 0.2 * estimate, (\n"
            "    f\"{swapped_loss} is far from s (max_j n_j - 1) / H = {estimate:.1f}: \"\n"
            f"    \"is lambda 0 and s {s}?\")"),
    }, {"s": s})


VARIANTS = {"ex-recall-count": _count, "ex-recall-closed-form": _closed_form,
            "ex-recall-limits": _limits}


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    def count_test(batch, length):
        vocab = rng.randrange(2, 5)
        pairs = [f"torch.tensor({[rng.randrange(vocab) for _ in range(batch)]})"
                 for _ in range(2)]
        tokens = _tokens(rng, batch, length, vocab)
        return HiddenTest(f"bigram_counts({tokens}, {', '.join(pairs)})", close(rtol=0, atol=0))

    def loss_test(lam):
        return HiddenTest(f"loss_with_count({lam!r}, {rng.randrange(1, 6)}, "
                          f"{rng.randrange(2, 200)})")

    if "ex-recall-count" in variants:  # long enough for every variant's gap: one range (N22)
        count = [count_test(rng.randrange(20, 40), rng.randrange(max(GAPS) + 6, 30))
                 for _ in range(2)]
    else:
        count = [count_test(rng.randrange(5, 40), rng.randrange(3, 30)) for _ in range(2)]
    # lambda <= 3 with decoys: a decoy changes the loss by more than the tolerance
    most = 3 if "ex-recall-closed-form" in variants else 20
    return {
        "ex-recall-count": count,
        "ex-recall-closed-form": [loss_test(log_uniform(rng, 0.05, most)) for _ in range(3)],
        "ex-recall-limits": [HiddenTest("swapped_loss", _near)],
    }
