"""Where the book's code runs, at what scale, and with which random seed.

Two environment variables steer every chapter:

* ``COMPANION_DEVICE`` (e.g. ``cpu``, ``cuda``, ``cuda:1``) overrides the device; by default the
  first CUDA GPU is used when there is one, else the CPU.
* ``BOOK_SCALE`` is ``quick`` (each chapter in under two minutes on a 2-core CPU) or ``full`` (the
  papers' sample sizes, meant for a GPU). By default it is ``full`` on CUDA and ``quick`` on CPU.
* ``BOOK_SEED`` (an int, default 0) shifts every seed given to :func:`set_seed` and
  :func:`generator`, so that the whole book can be rerun on other random samples
  (``make robust``): an assertion about a sample must hold for any of them.
* ``COMPANION_THREADS`` (an int from 1 to :data:`MAX_THREADS`, default 1) is the number of CPU
  threads PyTorch computes with once :func:`set_seed` has run, and within
  :func:`using_threads` (see :func:`threads`).
"""

import contextlib
import os
import platform
import random
import re
import textwrap

import numpy as np
import torch

from companion._checks import check_device, check_int

SCALES = ("quick", "full")
MAX_THREADS = 1024
"""The most threads ``COMPANION_THREADS`` may ask for."""


def device() -> torch.device:
    """The device to compute on: ``COMPANION_DEVICE`` if set, else CUDA if present, else CPU."""
    requested = os.environ.get("COMPANION_DEVICE")
    if requested:
        return check_device(requested, "COMPANION_DEVICE")
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def describe_device(where: torch.device | None = None) -> str:
    """A short description of a device (default :func:`device`) for printed measurements, such
    as ``"cuda (NVIDIA H100 80GB HBM3)"`` or ``"cpu (AMD EPYC 7B13, 2 threads)"``."""
    where = check_device(where, "where") or device()
    if where.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(where)})"
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            names = [line.split(":", 1)[1].strip() for line in cpuinfo
                     if line.startswith("model name")]
        model = names[0] if names else model
    except OSError:
        pass
    return f"{where.type} ({model}, {torch.get_num_threads()} threads)"


def describe_profile(sizes: dict, where: torch.device | None = None) -> str:
    """The scale profile, the device and a chapter's sizes (``{name: value}``) for printing,
    one ``name=value`` pair after another, wrapped at 79 characters to fit a page."""
    if not isinstance(sizes, dict):
        raise TypeError(f"sizes must be a dict of name -> size, got {type(sizes).__name__}")
    pairs = ", ".join(f"{name}={value}" for name, value in sizes.items())
    head = f"profile {scale()} on {describe_device(where)}"
    return head + "\n" + textwrap.fill(pairs, 79, initial_indent="  ",
                                       subsequent_indent="  ", break_long_words=False)


def scale() -> str:
    """The scale profile, ``"quick"`` or ``"full"``: ``BOOK_SCALE`` if set, else by device."""
    requested = os.environ.get("BOOK_SCALE")
    if requested:
        if requested not in SCALES:
            raise ValueError(f"BOOK_SCALE={requested!r}; expected one of {SCALES}")
        return requested
    return "full" if device().type == "cuda" else "quick"


def effective_seed(seed: int) -> int:
    """``seed`` shifted by ``BOOK_SEED`` (``seed + 1_000_003 * BOOK_SEED`` modulo ``2**32``;
    ``seed`` itself when ``BOOK_SEED`` is unset or 0), so that distinct seeds stay distinct."""
    seed = check_int(seed, "seed", minimum=0, maximum=2**32 - 1)
    requested = os.environ.get("BOOK_SEED", "0")
    if not re.fullmatch(r"[+-]?[0-9]+", requested.strip()):  # ASCII digits: int() takes '١'
        raise ValueError(f"BOOK_SEED={requested!r} is not an integer (ASCII digits)")
    shift = int(requested)
    return (seed + 1_000_003 * shift) % 2**32


def generator(seed: int) -> torch.Generator:
    """A fresh CPU ``torch.Generator`` seeded with :func:`effective_seed` ``(seed)``."""
    return torch.Generator().manual_seed(effective_seed(seed))


def threads() -> int:
    """The number of intra-op CPU threads the book computes with: ``COMPANION_THREADS`` if
    set, else 1. :func:`set_seed` applies it (``torch.set_num_threads``).

    One thread, because the book's tensors are small. On an idle two-core machine a second
    thread makes a chapter at most 1.5 times faster; on a busy one (a laptop with a browser
    open) it made some up to 15 times slower, since every operation waits at a barrier for a
    thread that the system has not scheduled (the README records the chapters' times). And a
    reduction split among threads rounds differently with their number, so one thread also
    prints the same numbers on machines with different numbers of cores. On a many-core
    machine with nothing else to do, ``COMPANION_THREADS`` can ask for more, up to
    :data:`MAX_THREADS` (1024)."""
    requested = os.environ.get("COMPANION_THREADS") or "1"
    count = int(requested) if re.fullmatch(r"\+?[0-9]+", requested.strip()) else 0
    if not 1 <= count <= MAX_THREADS:
        raise ValueError(f"COMPANION_THREADS={requested!r}; expected an integer from 1 to "
                         f"{MAX_THREADS} (ASCII digits)")
    return count


@contextlib.contextmanager
def using_threads(count: int | None = None):
    """A ``with`` block in which PyTorch computes on ``count`` intra-op CPU threads (default
    :func:`threads`: one, unless ``COMPANION_THREADS`` says otherwise), and after which it
    computes on as many as before, even if the block raised. Functions that run thousands of
    small operations one after another use it (:func:`companion.steps.decode`): each
    operation split among threads would wait for a thread the system has not scheduled."""
    count = threads() if count is None else check_int(count, "count", minimum=1,
                                                      maximum=MAX_THREADS)
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield count
    finally:
        torch.set_num_threads(before)


def set_seed(seed: int) -> torch.Generator:
    """Seed Python's, NumPy's and PyTorch's generators (CPU and CUDA) with ``seed``, shifted by
    ``BOOK_SEED`` when that is set (see :func:`effective_seed`).

    Returns a fresh CPU ``torch.Generator`` seeded the same way, for functions that take an
    explicit ``generator``. Two runs with the same seed on the same device give the same numbers:
    where CUDA is present this also switches PyTorch to its deterministic kernels (CUDA's atomic
    additions, as in ``scatter_add`` and the backward pass of an embedding, otherwise sum in a
    varying order), warning about an operation that has none. It also sets the number of
    CPU threads to :func:`threads` (one, unless ``COMPANION_THREADS`` says otherwise).
    """
    seed = effective_seed(seed)  # checks seed before anything is changed
    torch.set_num_threads(threads())
    if torch.cuda.is_available():
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # cuBLAS's condition
        torch.use_deterministic_algorithms(True, warn_only=True)
    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 -- the global state is what a notebook's numpy uses
    torch.manual_seed(seed)  # also seeds every CUDA device
    return torch.Generator().manual_seed(seed)

