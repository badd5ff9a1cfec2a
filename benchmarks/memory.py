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
from companion.transformer import Encoder, EncoderLayer


def generic_encoder(d=16, heads=2):
    """A two-layer encoder with random weights: every query differs, so attention is O(n^2)."""
    generator = torch.Generator().manual_seed(0)
    layers = [EncoderLayer(d, 4, heads, 32) for _ in range(2)]
    with torch.no_grad():
        for p in (p for layer in layers for p in layer.parameters()):
            p.copy_(torch.randn(p.shape, generator=generator, dtype=torch.float64) / 4)
    word = torch.randn(3, d, generator=generator, dtype=torch.float64)
    def positions(n):  # a random vector per position: all queries distinct
        return torch.randn(n, d, generator=torch.Generator().manual_seed(n), dtype=torch.float64)

    return Encoder(word, positions, layers,
                   torch.randn(d, generator=generator, dtype=torch.float64))


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
    model = parity_transformer() if which == "parity" else generic_encoder()
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
