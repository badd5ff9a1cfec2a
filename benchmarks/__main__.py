"""``python -m benchmarks`` (``make bench``): the timings and memory figures that matter.

Nothing here is asserted; the numbers are printed for the record (see the README's notes on
what was measured, and on which machine).
"""

import json
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

from companion.attention import attention_flops, self_attention
from companion.constructions import parity_transformer
from companion.languages import random_strings
from companion.rasp import EXAMPLES, to_circuit
from companion.recall import MODEL_NAMES, RecallModels, RecallTask, train
from companion.runtime import describe_device, device, set_seed, using_threads
from companion.steps import (
    TM_EXAMPLES,
    Cache,
    compile_dfa,
    compile_tm,
    decode,
    parity_decoder,
    tm_max_positions,
    word_problem_dfa,
)
from companion.training import Grid, Recognizer
from companion.training import train as train_grid


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
    print(f"\nself_attention, batch {batch}, d = d_k = d_v = {d}, float32, on {device()}")
    print(f"{'n':>6} {'seconds':>10} {'GFLOP/s':>9}")
    for n in (64, 128, 256, 512, 1024):
        X = torch.randn(batch, n, d, generator=generator).to(device())
        W = [torch.randn(d, d, generator=generator).to(device()) for _ in range(3)]
        seconds = time_call(lambda X=X, W=W: self_attention(X, *W))
        flops = batch * attention_flops(n, d, d, d)
        print(f"{n:>6} {seconds:>10.4f} {flops / seconds / 1e9:>9.1f}")


def bench_parity(batch=1000, m=999):
    """The book's performance yardstick: PARITY on 1000 random strings of n = 1000 positions,
    float64 (the README records what it measured)."""
    model = parity_transformer().to(device())
    w = random_strings(batch, m, generator=set_seed(0)).to(device())
    with torch.no_grad():
        seconds = time_call(lambda: model(w), repeats=3)
    print(f"\nparity_transformer, {batch} strings of n = {m + 1}, float64, on {device()}: "
          f"{seconds:.2f} s")


def decoding_macs(decoder, positions: int, written: int) -> int:
    """The multiply-adds of one string's greedy decoding by ``decoder`` over ``positions``
    positions, ``written`` of which write a token, counted from its own matrices and the rows
    its :class:`~companion.steps.Cache` keeps: at position ``i``, each layer's query, key and
    value projections (``d (2 r_K + r_V)`` per head), its scores and weighted sum over the
    ``i + 1`` positions so far (``(i + 1)(r_K + r_V)`` per head) and its FFN (``2 d d_ff``);
    at a writing position, the output layer. (The layer-norm hash of a Turing machine's
    decoder, ``O(d)``, is left out.)"""
    d, total = decoder.layout.d, written * decoder.output_weight.numel()
    for layer, (_, W_K, W_V) in zip(decoder.layers, Cache(decoder, 1, 1).weights, strict=True):
        heads, r_K, r_V = W_K.shape[0], W_K.shape[1], W_V.shape[1]
        total += positions * heads * d * (2 * r_K + r_V)
        total += positions * (positions + 1) // 2 * heads * (r_K + r_V)
        total += positions * 2 * d * layer.W_F1.shape[0]
    return total


def decoding_bytes(decoder, positions: int, written: int) -> int:
    """The bytes one string's greedy decoding by ``decoder`` must move through memory per
    string, over ``positions`` positions, ``written`` of which write a token: at position ``i``
    each head of each layer reads the ``i + 1`` cached keys and values it attends over
    (``r_K + r_V`` numbers each) and writes its own, 8 bytes a number (float64). The weights
    are shared by the batch and left out, as are the activations of one position, which stay
    in cache: once a batch's keys and values outgrow the caches, this traffic is what a
    step cannot avoid."""
    total = 0
    for _, W_K, W_V in Cache(decoder, 1, 1).weights:
        heads, width = W_K.shape[0], W_K.shape[1] + W_V.shape[1]
        total += (positions * (positions + 1) // 2 + positions) * heads * width * 8
    return total


def matmul_rate(batch: int, width: int = 256) -> float:
    """Multiply-adds per second of a float64 matmul ``[batch, width] @ [width, width]`` (the
    shape of the S5 decoder's FFN, ``d = 249``, 240 units) on :func:`device`, on the threads
    :func:`companion.steps.decode` uses: the machine's speed at the decoders' arithmetic."""
    generator = set_seed(0)
    x, W = (torch.randn(n, width, generator=generator, dtype=torch.float64).to(device())
            for n in (batch, width))
    with using_threads():
        return batch * width * width / time_call(lambda: x @ W, repeats=20)


def copy_rate(numbers: int = 2**25) -> float:
    """Bytes per second that a copy of ``numbers`` float64 numbers (256 MiB, far beyond any
    cache) moves, read and write counted, on the threads :func:`companion.steps.decode` uses:
    the machine's memory bandwidth as the decoders can use it."""
    source = torch.ones(numbers, dtype=torch.float64, device=device())
    target = torch.empty_like(source)
    with using_threads():
        return 2 * 8 * numbers / time_call(lambda: target.copy_(source), repeats=5)


def profile_decoding(decoder, strings, top: int = 5) -> str:
    """The ``top`` operations by their own CPU time in ``decode(decoder, strings)``, as
    ``torch.profiler`` reports them: what a decoder's time goes to."""
    with using_threads(), torch.profiler.profile() as profiler:
        decode(decoder, strings)
    return profiler.key_averages().table(sort_by="self_cpu_time_total", row_limit=top)


def bench_decoding(batch=1000, m=1000):
    """Greedy decoding with intermediate steps (:func:`companion.steps.decode`), float64:
    written tokens per second of the PARITY decoder and the S5 decoder (``word_problem_dfa()``)
    on ``batch`` random strings of length ``m``, and of the increment Turing machine on
    ``batch`` strings ``1^m'``, its longest run (``m' + 1`` moves), ``m'`` the largest length up
    to ``m`` that float64 decodes exactly (its ``max_positions`` at most 675). Beside each, two
    bounds on the machine it runs on: the arithmetic's (:func:`decoding_macs` at the speed of
    :func:`matmul_rate`) and the memory's (:func:`decoding_bytes` at the bandwidth of
    :func:`copy_rate`), and the fraction of the lower of the two that decoding reaches. Where
    that fraction is below a third, a profile of the whole batch at a quarter of the length
    says where the time goes."""
    rate, bandwidth = matmul_rate(batch), copy_rate()
    m_tm = min(m, (tm_max_positions(torch.float64) - 1) // 2)
    w = random_strings(batch, m, generator=set_seed(0))
    cases = {"PARITY": (parity_decoder(), w),
             "S5 word problem": (compile_dfa(*word_problem_dfa()), w),
             "TM increment": (compile_tm(*TM_EXAMPLES["increment"], max_positions=2 * m_tm + 1),
                              torch.ones(batch, m_tm, dtype=torch.long))}
    with using_threads():  # the threads decode computes on
        where = describe_device()
    print(f"\ngreedy decoding, float64, {batch} strings, on {where}; float64 matmul "
          f"[{batch}, 256] @ [256, 256]: {rate / 1e9:.2f} G multiply-adds/s; copy of 256 MiB: "
          f"{bandwidth / 1e9:.2f} GB/s")
    print(f"{'decoder':>16} {'m':>5} {'MACs/token':>11} {'bytes/token':>12} {'tokens/s':>10} "
          f"{'arithmetic':>11} {'memory':>10} {'fraction':>9}")
    slow = []
    for name, (decoder, strings) in cases.items():
        decoder = decoder.to(device())
        decode(decoder, strings[:2, :10])  # warm-up
        if device().type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        written = decode(decoder, strings)[0]
        if device().type == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        steps = written.shape[1]
        positions = 2 * steps if name != "TM increment" else strings.shape[1] + steps
        macs = decoding_macs(decoder, positions, steps) / steps  # per written token
        moved = decoding_bytes(decoder, positions, steps) / steps
        measured, by_arithmetic, by_memory = batch * steps / seconds, rate / macs, bandwidth / moved
        fraction = measured / min(by_arithmetic, by_memory)
        print(f"{name:>16} {strings.shape[1]:>5} {macs:>11,.0f} {moved:>12,.0f} "
              f"{measured:>10,.0f} {by_arithmetic:>11,.0f} {by_memory:>10,.0f} "
              f"{fraction:>9.3f}")
        if fraction < 1 / 3:
            slow.append((name, decoder, strings[:, :max(1, strings.shape[1] // 4)]))
    for name, decoder, strings in slow:
        print(f"\n{name}: below a third of the lower bound; where the time goes "
              f"({len(strings)} strings of length {strings.shape[1]}):")
        print(profile_decoding(decoder, strings))


def bench_figure2(batch=1000):
    """Figure 2 at the paper's scale: 2 languages x 3 versions x n = 50, 100, ..., 1000,
    ``batch`` strings per point, float64 (the authors' code: one string at a time in float32,
    about 6 minutes for five lengths on one core)."""
    from benchmarks.memory import figure2_sweep

    ns = list(range(50, 1001, 50))
    start = time.perf_counter()
    figure2_sweep(ns, batch)
    print(f"\nFigure 2 sweep, 2 languages x 3 versions x {len(ns)} lengths to n = 1000, "
          f"{batch} strings each, float64, on {device()}: {time.perf_counter() - start:.1f} s")


def train_one_by_one(grid, epochs, seed=0):
    """The authors' way: each model of ``grid`` (standard attention) trained alone as a PyTorch
    :class:`~companion.training.Recognizer`, one string per step, then tested string by string
    on 100 strings of length 1000; the same strings as :func:`companion.training.train`."""
    for model in range(len(grid)):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(grid.seed(model, seed))
            recognizer = Recognizer(grid.language)
        optimizer = torch.optim.Adam(recognizer.parameters(), lr=3e-4)
        generator = torch.Generator().manual_seed(grid.seed(model, seed))
        for _ in range(epochs):
            for w in random_strings(100, grid.lengths[model], generator):
                loss = F.binary_cross_entropy_with_logits(recognizer(w[None]),
                                                          w[None, 0].float())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            with torch.no_grad():
                for w in random_strings(100, 1000, generator):
                    recognizer(w[None])


def bench_training(runs=2, epochs=1):
    """Figure 4's training (FIRST, train lengths 10-300, 100 steps per epoch, tests at length
    1000): the batched grid of :func:`companion.training.train` against the same models
    trained one after another, as the authors did, on the CPU."""
    grid = Grid("first", (10, 30, 100, 300), runs=runs, variants=("standard",))
    start = time.perf_counter()
    train_grid(grid, epochs=epochs, device="cpu", progress=False)
    batched = time.perf_counter() - start
    start = time.perf_counter()
    train_one_by_one(grid, epochs)
    alone = time.perf_counter() - start
    print(f"\nFigure 4 training, {len(grid)} models x {epochs} epoch(s), CPU: batched "
          f"{batched:.1f} s, one model at a time {alone:.1f} s ({alone / batched:.0f}x)")
    full = Grid("first", (10, 30, 100, 300), runs=20)
    start = time.perf_counter()
    train_grid(full, epochs=2, device="cpu", progress=False)
    per_epoch = (time.perf_counter() - start) / 2
    sequential = alone / epochs / len(grid) * len(full)  # per epoch, from the sample above
    print(f"the full grid ({len(full)} models, both variants): {per_epoch:.2f} s per epoch, "
          f"{100 * per_epoch / 60:.1f} min for 100 epochs; one model at a time (extrapolated "
          f"from the {len(grid)} above): {100 * sequential / 3600:.1f} h, "
          f"{sequential / per_epoch:.0f}x slower")


def bench_memory():
    """Each case runs in a fresh process (``benchmarks.memory``), so peaks do not mix."""
    where = "GPU memory allocated" if device().type == "cuda" else "growth of resident memory"
    print(f"\npeak {where}, one evaluation in a fresh process, float64, on {device()}")
    print(f"{'model':>28} {'n':>8} {'strings':>8} {'seconds':>8} {'peak MiB':>9}")
    cases = [("parity", 10_000, 10),
             ("parity", 100_000, 10), ("parity", 100_000, 100),
             ("random weights (n^2 scores)", 10_000, 1),
             ("figure2", 100_000, 100)]
    for case in cases:
        command = [sys.executable, "-m", "benchmarks.memory", *map(str, case)]
        result = json.loads(subprocess.run(command, capture_output=True, text=True,
                                           check=True).stdout)
        print(f"{case[0]:>28} {case[1]:>8} {case[2]:>8} {result['seconds']:>8.2f} "
              f"{result['peak_mib']:>9.0f}")


def bench_recall(steps=5):
    """One step of normalized gradient descent for the nine models of Table 1 at the paper's
    scale (H = 256, batch 512), one seed and five: what the full profile of *In-context recall*
    pays 2000 times for each of its four settings."""
    print(f"\nrecall: nine models, H = 256, batch 512, alpha = 0.5, on {device()}")
    print(f"{'seeds':>6} {'s/step':>8} {'4 x 2000 steps (min)':>21}")
    generator = set_seed(0)
    for seeds in (1, 5):
        models = RecallModels(RecallTask(length=256, alpha=0.5), MODEL_NAMES, range(seeds))
        seconds = time_call(lambda models=models: train(
            models, steps, 512, 0.1, generator, progress=False), repeats=3) / steps
        print(f"{seeds:>6} {seconds:>8.3f} {seconds * 8000 / 60:>21.1f}")


def bench_threads_under_load(busy=2):
    """One CPU thread against two, on an idle machine and beside ``busy`` processes that keep
    a core busy each (a laptop with a browser open): the training step of Figure 4 (one epoch
    of the quick grid) and a sweep of the exact PARITY transformer over lengths (as in
    *Hahn's lemma and exact solutions*). :func:`companion.runtime.threads` explains the book's
    choice of one thread."""
    grid = Grid("first", (10, 30, 100, 300), runs=16)
    model = parity_transformer()
    sweep = [random_strings(100, m, generator=set_seed(0)) for m in (9, 99, 999)]

    def evaluate():
        with torch.no_grad():
            for w in sweep:
                model(w)

    work = {"Figure 4 training, 1 epoch": lambda: train_grid(
                grid, epochs=1, device="cpu", progress=False),
            "PARITY transformer, 300 strings": evaluate}
    print(f"\nseconds on the CPU, idle and beside {busy} busy processes")
    print(f"{'':>34} {'1 thread':>9} {'2 threads':>10}")
    before = torch.get_num_threads()
    for load in ("idle", "busy"):
        spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                    for _ in range(busy if load == "busy" else 0)]
        try:
            for name, function in work.items():
                times = []
                for count in (1, 2):
                    torch.set_num_threads(count)
                    times.append(time_call(function, repeats=1))
                print(f"{name + ', ' + load:>34} {times[0]:>9.2f} {times[1]:>10.2f}")
        finally:
            for spinner in spinners:
                spinner.kill()
                spinner.wait()
    torch.set_num_threads(before)


def bench_rasp_circuits(batch=1000, lengths=(64, 128, 256)):
    """Compiling example programs into circuits, and evaluating them batched."""
    print(f"\nrasp.to_circuit and Circuit.evaluate, {batch} random strings, on the CPU")
    print(f"{'program':>13} {'m':>5} {'depth':>6} {'gates':>8} {'wires':>9} {'compile s':>10} "
          f"{'evaluate s':>11} {'gate-strings/s':>15}")
    for name in ("no_10", "dyck1_depth2", "majority", "dyck1"):
        for m in lengths:
            start = time.perf_counter()
            circuit = to_circuit(EXAMPLES[name], m)
            compiled = time.perf_counter() - start
            w = random_strings(batch, m, torch.Generator().manual_seed(0))
            seconds = time_call(lambda c=circuit, w=w: c.evaluate(w), repeats=3)
            wires = sum(len(inputs) for _, inputs in circuit.gates)
            print(f"{name:>13} {m:>5} {circuit.depth:>6} {circuit.size:>8} {wires:>9} "
                  f"{compiled:>10.2f} {seconds:>11.2f} {circuit.size * batch / seconds:>15.3g}")


if __name__ == "__main__":
    bench_parity()
    bench_decoding()
    bench_figure2()
    bench_memory()
    bench_self_attention()
    bench_recall()
    bench_training()
    bench_threads_under_load()
    bench_rasp_circuits()
