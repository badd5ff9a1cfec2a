"""``python -m benchmarks.memory MODEL N STRINGS``: time and peak memory of one evaluation.

Prints ``{"seconds": ..., "peak_mib": ...}``: the peak CUDA memory allocated on a GPU, else
the growth of the process's peak resident memory during the evaluation (Linux: the high-water
mark is reset through ``/proc/self/clear_refs`` just before it).
"""

import json
import re
import sys
import time

import torch

from companion.constructions import parity_transformer
from companion.languages import random_strings
from companion.runtime import device
from companion.transformer import random_encoder


def resident_mib(field: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (peak) of this process, in MiB."""
    with open("/proc/self/status") as status:
        return int(re.search(rf"{field}:\s+(\d+) kB", status.read()).group(1)) / 1024


def main(which: str, n: int, batch: int):
    if device().type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    else:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")  # reset the peak resident memory to the current one
        before = resident_mib("VmRSS")
    start = time.perf_counter()
    if which == "parity":
        model = parity_transformer()
    else:  # random weights: every query differs, so attention costs n^2
        model = random_encoder(d=16, heads=2, layers=2, d_hid=4, d_ff=32, max_n=n, std=0.25,
                               generator=torch.Generator().manual_seed(0))
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
