"""Hidden tests of the exercises of *Learning FIRST and PARITY; log-length scaling*
(``book/learnability.ipynb``), and their graded variants (:mod:`course.variants`)."""

import math
import random

from course.hidden import HiddenTest, close
from course.variants import Variant


def _threshold(rng: random.Random) -> Variant:
    m = round(0.025 * rng.randrange(1, 9), 3)  # up to 0.2, so that n = 2 keeps it at c = 1
    ratio = f"(1 - {2 * m:g}) / (1 + {2 * m:g})"
    return Variant(f"every logit beyond a margin of {m}", {
        "with attention logit $c > 0$ classifies every string correctly.": (
            f"with attention logit $c \\ge 1$ classifies every string correctly with a\nmargin "
            f"of {m}: its logit is above {m} on the strings that start with 1 and below $-{m}$ "
            "on\nthe others."),
        "return math.ceil(1 + math.exp(c)) - 1":
            f"return math.ceil(1 + math.exp(c) * {ratio}) - 1",
        "for c in (0.3, 1.0, 2.5, 3.0, 5.0):": (
            "def longest_with_margin(model, max_n):\n"
            "    for n in range(2, max_n + 1):\n"
            "        worst = torch.tensor([[1] + [0] * (n - 2), [0] + [1] * (n - 2)])\n"
            "        s = evaluation.logits(model, worst)\n"
            f"        if not (s[0] > {m} and s[1] < -{m}):\n"
            "            return n - 1\n"
            "    return max_n\n\n"
            "for c in (1.0, 2.5, 3.0, 5.0):"),
        "longest_correct(model, 400)": "longest_with_margin(model, 400)",
        "the network is right up to": f"the network keeps the margin {m} up to",
        ("Every string with $n$ positions ($n - 1$ symbols) is right iff $e^c > n - 1$, that is\n"
         "$n < 1 + e^c$. The largest such integer is $\\lceil 1 + e^c \\rceil - 1$ (when "
         "$1 + e^c$ is\nitself an integer, $n = 1 + e^c$ gives a logit of exactly 0 on "
         "$1\\,0\\cdots0$, which is\nrejected)."): (
            "The smallest logit on a string that starts with 1 is that of $1\\,0\\cdots0$,\n"
            "$(e^c + 1 - n) / (2(e^c + n - 1))$, and the largest on a string that starts with 0 "
            "is that of\n$0\\,1\\cdots1$, $(n - 3 - e^c) / (2(e^c + n - 1))$, which is below "
            f"$-{m}$ whenever the first is above\n{m}. So every string keeps the margin iff "
            f"$e^c + 1 - n > {2 * m:g}(e^c + n - 1)$, that is\n$n < 1 + e^c {ratio}$. The "
            f"largest such integer is\n$\\lceil 1 + e^c {ratio} \\rceil - 1$ (at equality the "
            f"logit of $1\\,0\\cdots0$ is exactly {m}, which is\nrejected)."),
    }, {"margin": m})


BASES = [2, 3, 4, 5, 8, 10]  # of the logarithm that scales the logits, in a variant


def _scaled_c(rng: random.Random) -> Variant:
    base = rng.choice(BASES)
    t = math.log(base)  # c for the check: below, just below, just above and above ln(base)
    checked = (round(t / 2, 2), round(0.9 * t, 2), math.ceil(100 * t) / 100, round(1.5 * t, 2))
    power = f"n^{{c / \\ln {base}}}"
    return Variant(f"logits scaled by log_{base} n", {
        ("scaled by $\\log n$, the flawed transformer's weight on position 1 is\n$n^c$. Write "
         "`scaled_flawed_correct(c, n)`:"): (
            f"scaled by $\\log_{{{base}}} n$ (the logarithm to base {base}) instead of "
            f"$\\ln n$,\nthe flawed transformer's weight on position 1 is "
            f"$e^{{c \\log_{{{base}}} n}}$. Write\n`scaled_flawed_correct(c, n)`:"),
        "return n**c > n - 1": f"return n**(c / math.log({base})) > n - 1",
        "for c in (0.5, 0.9, 1.0, 1.5):": f"for c in {checked}:",
        "flawed_first_transformer(c=c, log_length=True)": (
            f"flawed_first_transformer(c=c / math.log({base}), log_length=True)"),
        ("Replace $e^c$ by $n^c$ in the condition: every string is right iff $n^c > n - 1$. "
         "For\n$c \\ge 1$ this holds at every $n \\ge 2$, since $n^c \\ge n > n - 1$. For "
         "$c < 1$ it fails for\nlong strings, because $n^c / (n - 1) \\to 0$"): (
            f"Replace $e^c$ by $e^{{c \\log_{{{base}}} n}} = {power}$ in the condition: every "
            f"string is right iff\n${power} > n - 1$. For $c \\ge \\ln {base} \\approx "
            f"{math.log(base):.3f}$ this holds at every $n \\ge 2$, since\n"
            f"${power} \\ge n > n - 1$. For $c < \\ln {base}$ it fails for long strings, "
            f"because\n${power} / (n - 1) \\to 0$"),
    })


MEASURES = {  # name: (what it is, the answer's value, the network's, the solution)
    "weight_on_cls": (
        "the weight CLS puts on itself (position 0)", "1 / (top + n - 1)",
        "row[0].item()",
        "CLS's own logit is 0, like that of every position but 1, so without scaling its "
        "weight is\n$1 / (e^c + n - 1)$, which falls like $1/n$, and with scaling (logit "
        "$c \\log n$ on position 1)\n$1 / (n^c + n - 1)$, which falls faster when $c > 1$, "
        "like $n^{-c}$. On long strings CLS keeps\nalmost nothing for itself: what position 1 "
        "does not get is shared evenly by the\nother $n - 1$ positions, CLS among them."),
    "weight_elsewhere": (
        "the total weight on every position but 1 (CLS included)", "(n - 1) / (top + n - 1)",
        "(row[0] + row[2:].sum()).item()",
        "Without scaling the weight elsewhere is $(n - 1) / (e^c + n - 1)$, which tends to 1: "
        "the\ndilution of the figure. With scaling the logit becomes $c \\log n$, the weight "
        "elsewhere\n$(n - 1) / (n^c + n - 1)$, which tends to 0 for $c > 1$, to $1/2$ for "
        "$c = 1$, and to 1 for\n$c < 1$."),
    "attention_entropy": (
        "the entropy (in nats) of CLS's attention weights", "math.log(top + n - 1) - "
        "top * math.log(top) / (top + n - 1)",
        "-(row * row.log()).sum().item()",
        "With $t = e^c$ (or $t = n^c$ with scaling) and $Z = t + n - 1$, position 1 has "
        "weight $t/Z$\nand the others $1/Z$ each, so the entropy is "
        "$-\\frac{t}{Z}\\ln\\frac{t}{Z} - \\frac{n - 1}{Z}\\ln\\frac{1}{Z} = \\ln Z - "
        "\\frac{t}{Z}\\ln t$.\nWithout scaling it grows like $\\ln n$, as for uniform "
        "attention: the dilution of the\nfigure. With scaling it tends to 0 for $c > 1$ "
        "(the attention settles on position 1), and\ngrows like $\\frac12 \\ln n$ for "
        "$c = 1$ and like $\\ln n$ for $c < 1$."),
}


def _dilution(rng: random.Random) -> Variant:
    name = rng.choice(sorted(MEASURES))
    words, value, network, solution = MEASURES[name]
    return Variant(words, {
        "How much attention does position 1 get?": "Where does CLS's attention go?",
        "`weight_on_first(n, c, scaled)`: that attention weight, with": (
            f"`dilution_measure(n, c, scaled)`: {words},\nwith"),
        "The check reads the weight": "The check reads the attention",
        "weight_on_first(": "dilution_measure(",  # one name for every variant (N22)
        "return top / (top + n - 1)": f"return {value}",
        "network = trace.attention[1][0, 0, 0, 1].item()  # layer 2, CLS": (
            "row = trace.attention[1][0, 0, 0]  # layer 2, CLS\n"
            f"            network = {network}"),
        ("Without scaling the weight is $e^c / (e^c + n - 1)$, which falls like $e^c / n$: "
         "the dilution\nof the figure. With scaling the logit becomes $c \\log n$, the weight\n"
         "$n^c / (n^c + n - 1)$, which tends to 1 for $c > 1$, to $1/2$ for $c = 1$, and to 0 "
         "for\n$c < 1$."): solution,
    }, {"function": "dilution_measure"})


LEVELS = {0.8: ("10th", "90th"), 0.9: ("5th", "95th"), 0.98: ("1st", "99th"),
          0.99: ("0.5th", "99.5th")}


def _bootstrap_variant(rng: random.Random) -> Variant:
    level = rng.choice(sorted(LEVELS))
    low, high = LEVELS[level]
    tail, article = round((1 - level) / 2, 3), "an" if level == 0.8 else "a"
    return Variant(f"{article} {level:.0%} interval", {
        "a 95% percentile bootstrap interval": f"{article} {level:.0%} percentile bootstrap "
                                               "interval",
        "2.5th and 97.5th": f"{low} and {high}",
        "[0.025, 0.975]": f"[{tail}, {1 - tail:g}]",
        ("from companion.exercises import check_paired_bootstrap\n\n"
         "own = [(r.score[:, 0], r.score[:, 1]) for r in benchmarks]  # the benchmark's\n"
         "feedback = check_paired_bootstrap(paired_bootstrap, pairs=own)\n"
         "print(feedback)\nassert feedback, feedback.message"): (
            "own = [(r.score[:, 0].double(), r.score[:, 1].double()) for r in benchmarks]\n"
            "steady = (torch.tensor([0.70, 0.64, 0.81, 0.59, 0.73, 0.68]),\n"
            "          torch.tensor([0.74, 0.66, 0.86, 0.60, 0.77, 0.71]))\n"
            "for standard, scaled in [*own, steady]:\n"
            "    mean, low, high, excludes = paired_bootstrap(\n"
            "        standard, scaled, 1000, torch.Generator().manual_seed(0))\n"
            "    rows = torch.randint(len(standard), (1000, len(standard)),\n"
            "                         generator=torch.Generator().manual_seed(0))\n"
            "    means = (scaled - standard)[rows].mean(dim=1)  # the same resamples\n"
            f"    ends = torch.tensor([{tail}, {1 - tail:g}], dtype=means.dtype)\n"
            "    want = torch.quantile(means, ends).tolist()\n"
            "    assert abs(mean - (scaled - standard).mean().item()) < 1e-12, (\n"
            "        f\"the mean difference scaled - standard is not {mean}\")\n"
            "    assert abs(low - want[0]) < 1e-9 and abs(high - want[1]) < 1e-9, (\n"
            f"        f\"the {level:.0%} interval is [{{want[0]:.6f}}, {{want[1]:.6f}}], \"\n"
            "        f\"not [{low:.6f}, {high:.6f}]\")\n"
            "    assert excludes == (want[0] > 0 or want[1] < 0), (\n"
            "        f\"excludes_zero is {excludes} for [{want[0]:.6f}, {want[1]:.6f}]\")\n"
            f"print(\"the mean and its {level:.0%} interval are right on\", len(own) + 1,\n"
            "      \"sets of paired scores\")"),
    }, {"level": level})


VARIANTS = {"ex-learn-threshold": _threshold, "ex-learn-scaled-c": _scaled_c,
            "ex-learn-dilution": _dilution, "ex-learn-bootstrap": _bootstrap_variant}


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


def _scaled_cases(rng: random.Random) -> HiddenTest:
    """Cases of ``scaled_flawed_correct`` with logits scaled by ``log_base n``, for every base of
    :data:`BASES` (the same cases whatever the variant: N22), shuffled: for each base one case
    where ``ln n`` scaling would answer otherwise, one right and one wrong at every long
    length; and one at ``n = 2``."""
    cases = [(rng.uniform(0.1, 3), 2)]
    for base in BASES:
        while True:
            c, n = rng.uniform(0.1, 3.0), rng.randrange(3, 5000)
            if (n**c > n - 1) != (n**(c / math.log(base)) > n - 1):
                break
        t = math.log(base)
        cases += [(c, n), (rng.uniform(t, 2 * t), rng.randrange(3, 5000)),
                  (rng.uniform(0.1 * t, 0.8 * t), rng.randrange(50, 5000))]
    rng.shuffle(cases)
    return HiddenTest(f"[bool(scaled_flawed_correct(c, n)) for c, n in {cases!r}]",
                      close(rtol=0, atol=0))


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    exact = close(rtol=0, atol=0)
    scaled_cases = [  # each region of the answer: n = 2, c < 1 long, c >= 1, c just below 1
        (rng.uniform(0.1, 0.95), 2), (rng.uniform(0.1, 0.8), rng.randrange(50, 5000)),
        (rng.uniform(1.0, 2.0), rng.randrange(3, 5000)), (0.99, rng.randrange(5, 30))]
    tests = {
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
    if "ex-learn-threshold" in variants:  # c large enough that the margin moves the answer
        tests["ex-learn-threshold"] = [HiddenTest(f"longest_length({rng.uniform(2.5, 6.0)!r})",
                                                  exact) for _ in range(3)]
    if "ex-learn-scaled-c" in variants:
        tests["ex-learn-scaled-c"] = [_scaled_cases(rng) for _ in range(3)]
    if "ex-learn-dilution" in variants:  # c <= 2: no value below the tolerance of close()
        function = variants["ex-learn-dilution"].params["function"]
        tests["ex-learn-dilution"] = [
            HiddenTest(f"{function}({rng.randrange(2, 2000)}, {rng.uniform(0.1, 2.0)!r}, "
                       f"{scaled})") for scaled in (False, True, False, True)]
    if "ex-learn-bootstrap" in variants:  # five seeds: three leave the tails tied
        tests["ex-learn-bootstrap"][3] = _bootstrap(rng, 5, (-0.05, 0.05))
    return tests
