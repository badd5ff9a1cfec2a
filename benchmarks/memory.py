"""``python -m benchmarks.memory MODEL N STRINGS``: time and peak memory of one evaluation
(``MODEL`` "figure2": the whole Figure 2 sweep of Chiang & Cholak, both languages and all three
versions, ``STRINGS`` strings at six lengths from 1000 to ``N``).

Prints ``{"seconds": ..., "peak_mib": ...}``: the peak CUDA memory allocated on a GPU, else
the growth of the process's peak resident memory during the evaluation (Linux: the high-water
mark is reset through ``/proc/self/clear_refs`` just before it).
"""

import json
import re
import sys
import time

import torch

from companion.constructions import first_transformer, parity_transformer, sharpen, with_eps
from companion.evaluation import cross_entropy_by_length, log_lengths
from companion.languages import first, parity, random_strings
from companion.runtime import device
from companion.transformer import random_encoder


def resident_mib(field: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (peak) of this process, in MiB."""
    with open("/proc/self/status") as status:
        return int(re.search(rf"{field}:\s+(\d+) kB", status.read()).group(1)) / 1024


def figure2_sweep(ns, batch: int):
    """Figure 2 of Chiang & Cholak: cross-entropy of the PARITY and FIRST solutions without
    layer norm, with eps = 1e-5 and with eps = 0 (Proposition 2's extra layer), ``batch``
    random strings of each length in ``ns`` (positions, with CLS), float64."""
    generator = torch.Generator().manual_seed(0)
    for build, language in ((parity_transformer, parity), (first_transformer, first)):
        sharp = sharpen(build(layernorm=True), 0.1).to(device())
        versions = {"none": build().to(device()), "eps": with_eps(sharp, 1e-5), "zero": sharp}
        cross_entropy_by_length(versions, language, [n - 1 for n in ns], batch, generator,
                                progress=False)


def main(which: str, n: int, batch: int):
    if device().type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    else:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")  # reset the peak resident memory to the current one
        before = resident_mib("VmRSS")
    start = time.perf_counter()
    if which == "figure2":
        figure2_sweep(log_lengths(1000, n, 6), batch)
    elif which == "parity":
        model = parity_transformer()
    else:  # random weights: every query differs, so attention costs n^2
        model = random_encoder(d=16, heads=2, layers=2, d_hid=4, d_ff=32, max_n=n, std=0.25,
                               generator=torch.Generator().manual_seed(0))
    if which != "figure2":
        model.to(device())
        w = random_strings(batch, n - 1, generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            model(w.to(device()))
    seconds = time.perf_counter() - start
    if device().type == "cuda":
        peak = torch.cuda.max_memory_allocated() / 2**20
    else:
        peak = resident_mib("VmHWM") - before
    print(json.dumps({"seconds": seconds, "peak_mib": peak}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
