"""``python -m benchmarks``: time self-attention on a batch as the sequence grows."""

import time

import torch

from companion.attention import attention_flops, self_attention
from companion.runtime import device, set_seed


def time_call(function, repeats=5):
    """Median wall-clock seconds of ``function()`` over ``repeats`` runs after one warm-up."""
    function()
    times = []
    for _ in range(repeats):
        if device().type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        function()
        if device().type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def bench_self_attention(batch=32, d=64):
    generator = set_seed(0)
    print(f"self_attention, batch {batch}, d = d_k = d_v = {d}, float32, on {device()}")
    print(f"{'n':>6} {'seconds':>10} {'GFLOP/s':>9}")
    for n in (64, 128, 256, 512, 1024):
        X = torch.randn(batch, n, d, generator=generator).to(device())
        W = [torch.randn(d, d, generator=generator).to(device()) for _ in range(3)]
        seconds = time_call(lambda X=X, W=W: self_attention(X, *W))
        flops = batch * attention_flops(n, d, d, d)
        print(f"{n:>6} {seconds:>10.4f} {flops / seconds / 1e9:>9.1f}")


if __name__ == "__main__":
    bench_self_attention()
