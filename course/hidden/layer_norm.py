"""Hidden tests of the exercises of *Layer normalization* (``book/layer_norm.ipynb``), and their
graded variants (:mod:`course.variants`)."""

import random

from course.hidden import HiddenTest, close, log_uniform, tensor_literal
from course.variants import Variant

NORMALIZATIONS = {  # another denominator than sqrt(Var + eps) with the biased variance
    "the unbiased variance": {
        "$\\sqrt{\\operatorname{Var} + \\varepsilon}$ and the biased variance":
            "$\\sqrt{\\operatorname{Var} + \\varepsilon}$ and the unbiased variance\n(dividing "
            "by $d - 1$)",
        "with PyTorch's `F.layer_norm` on random inputs":
            "with a formula built on `torch.var` on random inputs",
        "divide by the square root of the mean squared\ndeviation plus $\\varepsilon$":
            "divide by the square root of the unbiased\nvariance (the sum of the squared "
            "deviations over $d - 1$) plus $\\varepsilon$",
        "(`torch.var` would divide by $d - 1$ unless told\n`correction=0`.)":
            "(`torch.var` divides by $d - 1$ too, and `F.layer_norm` by\n$d$.)",
        "centered.square().mean(dim=-1, keepdim=True)":
            "centered.square().sum(dim=-1, keepdim=True) / (x.shape[-1] - 1)",
        "theirs = F.layer_norm(v, shape[-1:], g, b, eps=eps)":
            "theirs = g * (v - v.mean(dim=-1, keepdim=True)) / torch.sqrt(\n"
            "        v.var(dim=-1, keepdim=True) + eps) + b",
        '["1.46", "0.33", "-1.18", "-0.61"]': '["1.26", "0.29", "-1.02", "-0.53"]',
    },
    "the root mean square, as RMSNorm": {
        "$\\sqrt{\\operatorname{Var} + \\varepsilon}$ and the biased variance":
            "the root mean square of the entries,\n$\\sqrt{\\operatorname{mean}(x_i^2) + "
            "\\varepsilon}$, without subtracting the mean first (RMSNorm)",
        "(no `layer_norm` of any library)": "(no `layer_norm` or `rms_norm` of any library)",
        "with PyTorch's `F.layer_norm` on random inputs":
            "with PyTorch's `F.rms_norm` (plus `beta`) on random inputs",
        "Subtract the mean over the last dimension, divide by the square root of the mean "
        "squared\ndeviation plus $\\varepsilon$":
            "Divide by the square root of the mean square over the last dimension (the mean "
            "is not\nsubtracted) plus $\\varepsilon$",
        "(`torch.var` would divide by $d - 1$ unless told\n`correction=0`.)":
            "(RMSNorm is layer normalization without its centering\nstep; `F.rms_norm` has no "
            "`bias`, so the check adds `beta` itself.)",
        "    centered = x - x.mean(dim=-1, keepdim=True)\n"
        "    variance = centered.square().mean(dim=-1, keepdim=True)\n"
        "    return gamma * centered / torch.sqrt(variance + eps) + beta":
            "    mean_square = x.square().mean(dim=-1, keepdim=True)\n"
            "    return gamma * x / torch.sqrt(mean_square + eps) + beta",
        "theirs = F.layer_norm(v, shape[-1:], g, b, eps=eps)":
            "theirs = F.rms_norm(v, shape[-1:], g, eps=eps) + b",
        '["1.46", "0.33", "-1.18", "-0.61"]': '["1.76", "0.88", "-0.29", "0.15"]',
    },
    "sigma + eps": {
        "$\\sqrt{\\operatorname{Var} + \\varepsilon}$ and the biased variance":
            "$\\sigma + \\varepsilon$, as the textbook does\n($\\sigma$ the square root of the "
            "biased variance)",
        "with PyTorch's `F.layer_norm` on random inputs":
            "with the chapter's `sigma_plus_eps` on random inputs",
        "divide by the square root of the mean squared\ndeviation plus $\\varepsilon$":
            "divide by the standard deviation (the square root of the mean\nsquared "
            "deviation) plus $\\varepsilon$",
        "(`torch.var` would divide by $d - 1$ unless told\n`correction=0`.)":
            "(`torch.var` would divide by $d - 1$ unless told\n`correction=0`; PyTorch's "
            "`F.layer_norm` adds $\\varepsilon$ to the variance instead.)",
        "torch.sqrt(variance + eps)": "(variance.sqrt() + eps)",
        "theirs = F.layer_norm(v, shape[-1:], g, b, eps=eps)":
            "theirs = g * sigma_plus_eps(v, eps) + b",
    },
}


def _scratch(rng: random.Random) -> Variant:
    words = rng.choice(sorted(NORMALIZATIONS))
    return Variant(f"layer normalization with {words}", NORMALIZATIONS[words])


COMPOSED = {2: ("two", "1/\\varepsilon"), 3: ("three", "\\varepsilon^{-3/2}"),
            4: ("four", "1/\\varepsilon^2")}  # k: its word, PyTorch's constant for k in a row


def _sigma_eps(rng: random.Random) -> Variant:
    k = rng.choice(sorted(COMPOSED))
    words, pytorch = COMPOSED[k]
    composed = " \\circ ".join(["f"] * k)
    return Variant(f"{words} textbook normalizations in a row", {
        "Write `sigma_plus_eps_lipschitz(eps)`: its Lipschitz\nconstant for $d \\ge 3$":
            f"Write `sigma_plus_eps_lipschitz(eps)`: the Lipschitz\nconstant of ${composed}$, "
            f"{words} of them applied in a row,\nfor $d \\ge 3$",
        "Is it larger or smaller than\n$1/\\sqrt{\\varepsilon}$ for PyTorch's "
        "$\\varepsilon = 10^{-5}$?":
            f"Is it larger or smaller than\n${pytorch}$, the constant of {words} of PyTorch's "
            "in a row, for\n$\\varepsilon = 10^{-5}$?",
        "The check measures the Jacobian\nof $f$": f"The check measures the Jacobian\nof "
                                                  f"${composed}$",
        "the constant is $1/\\varepsilon$.\nFor $\\varepsilon = 10^{-5}$ that is $10^5$, more "
        "than 300 times PyTorch's $1/\\sqrt{\\varepsilon}\n\\approx 316$:":
            "$f$'s constant is $1/\\varepsilon$.\nLipschitz constants multiply under "
            f"composition, so that of ${composed}$ is at most $\\varepsilon^{{-{k}}}$, and it "
            "is\nreached: near a constant vector $f$ keeps the direction of $\\mathbf{c}$ and "
            "gives a vector near the\nconstant vector 0, so a direction orthogonal to "
            "$\\mathbf{1}$ and $\\mathbf{c}$ is stretched by nearly $1/\\varepsilon$ at\neach "
            f"step. For $\\varepsilon = 10^{{-5}}$ that is $10^{{{5 * k}}}$, the square of "
            f"PyTorch's ${pytorch} \\approx 316^{k}$ for\n{words} in a row:",
        "return 1 / eps": f"return 1 / eps**{k}",
        "jacobian = torch.func.vmap(torch.func.jacrev(sigma_plus_eps),":
            f"def composed(v, eps):  # f applied {k} times\n"
            f"    for _ in range({k}):\n"
            "        v = sigma_plus_eps(v, eps)\n"
            "    return v\n\n"
            "jacobian = torch.func.vmap(torch.func.jacrev(composed),",
        # near the constant vectors, where the sup is, for k steps: sigma << eps^k
        "for eps in (1e-1, 1e-3, 1e-5):": "for eps in (0.5, 1e-1, 1e-2):",
        "torch.logspace(-9, 1, 200)": "torch.logspace(-14, 1, 200)",
    }, {"k": k})


SUBLAYERS = {2: ("two", "attention and a feed-forward network"),
             3: ("three", "self-attention, cross-attention and a feed-forward network, as "
                          "in the\ndecoder of an encoder-decoder model")}


def _prenorm(rng: random.Random) -> Variant:
    s = rng.choice(sorted(SUBLAYERS))
    words, which = SUBLAYERS[s]
    return Variant(f"{words} sublayers per layer", {
        "In the pre-norm stack of this chapter, $\\mathbf{x}_\\ell = \\mathbf{x}_{\\ell-1} +\n"
        "\\mathbf{W}_\\ell \\operatorname{LN}(\\mathbf{x}_{\\ell-1})$ with $\\mathbf{W}_\\ell$ "
        "equal to":
            f"A pre-norm transformer layer has {words} sublayers ({which}), and each adds to "
            "the\nresidual stream. Take each of $L$ layers to be "
            f"{words} steps $\\mathbf{{x}} \\mapsto \\mathbf{{x}} +\n\\mathbf{{W}} "
            "\\operatorname{LN}(\\mathbf{x})$ of the pre-norm stack of this chapter, each with "
            "its own $\\mathbf{W}$ equal to",
        "$|\\mathbf{x}_\\ell|^2$ $= |\\mathbf{x}_{\\ell-1}|^2$ $+ 2\\,\\mathbf{x}_{\\ell-1}^"
        "\\top\\mathbf{W}_\\ell\n\\operatorname{LN}(\\mathbf{x}_{\\ell-1})$ $+ |\\mathbf{W}_"
        "\\ell \\operatorname{LN}(\\mathbf{x}_{\\ell-1})|^2$.":
            "One step gives $|\\mathbf{x} + \\mathbf{W}\\operatorname{LN}(\\mathbf{x})|^2$ $= "
            "|\\mathbf{x}|^2$ $+ 2\\,\\mathbf{x}^\\top\\mathbf{W}\n"
            "\\operatorname{LN}(\\mathbf{x})$ $+ |\\mathbf{W}\\operatorname{LN}(\\mathbf{x})|^2$.",
        "($\\mathbf{W}_\\ell$ and $-\\mathbf{W}_\\ell$ are equally likely)":
            "($\\mathbf{W}$ and $-\\mathbf{W}$ are equally likely)",
        "$\\sigma^2 |\\operatorname{LN}(\\mathbf{x}_{\\ell-1})|^2 = \\sigma^2 d$":
            "$\\sigma^2 |\\operatorname{LN}(\\mathbf{x})|^2 = \\sigma^2 d$",
        "So\neach layer adds $\\sigma^2$ to $\\mathbb{E}|\\mathbf{x}|^2/d$: the answer is "
        "$1 + L\\sigma^2$, linear\ngrowth, against exponential growth $(1 + \\sigma^2)^L$":
            "So\neach step adds $\\sigma^2$ to $\\mathbb{E}|\\mathbf{x}|^2/d$, and each layer "
            f"${s}\\sigma^2$: the answer is $1 + {s}L\\sigma^2$,\nlinear growth, against "
            f"exponential growth $(1 + \\sigma^2)^{{{s}L}}$",
        "return 1 + L * sigma**2": f"return 1 + {s} * L * sigma**2",
        "random_stack(12, sigma,": f"random_stack({12 * s}, sigma,",
        "signal[:, L].mean()": f"signal[:, {s} * L].mean()",
    }, {"sublayers": s})


VARIANTS = {"ex-ln-scratch": _scratch, "ex-ln-sigma-eps": _sigma_eps,
            "ex-ln-prenorm": _prenorm}


def hidden_tests(rng: random.Random, variants: dict) -> dict:
    def layer_norm_test(shape, eps):
        d = shape[-1:]
        arguments = ", ".join([tensor_literal(rng, shape), repr(eps), tensor_literal(rng, d),
                               tensor_literal(rng, d)])
        return HiddenTest(f"my_layer_norm({arguments})", close(atol=1e-10))

    def eps(book_eps):  # a variant's: sigma + eps and sqrt(Var + eps) agree at eps = 0
        return log_uniform(rng, 1e-3, 1.0) if "ex-ln-scratch" in variants else book_eps

    return {
        "ex-ln-scratch": [
            layer_norm_test((rng.randrange(2, 6), rng.randrange(3, 12)), eps(0.0)),
            layer_norm_test((2, rng.randrange(2, 4), rng.randrange(3, 12)), eps(1e-5)),
            layer_norm_test((rng.randrange(3, 12),), log_uniform(rng, 1e-3, 1.0)),
        ],
        "ex-ln-sigma-eps": [HiddenTest(f"sigma_plus_eps_lipschitz({log_uniform(rng, 1e-6, 1)!r})")
                            for _ in range(3)],
        "ex-ln-prenorm": [HiddenTest(f"prenorm_signal({rng.randrange(1, 40)}, "
                                     f"{round(rng.uniform(0.1, 2.0), 3)!r})")
                          for _ in range(3)],
    }
