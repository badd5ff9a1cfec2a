"""tools/nbval_kernels.py starts a notebook's kernel again when it dies as it starts."""

import nbval.kernel
import nbval_kernels
import pytest

DIED = RuntimeError("Kernel died before replying to kernel_info")


def starts(outcomes):
    """A stand-in for nbval's start_new_kernel that raises or returns each of ``outcomes`` in
    turn, and the list of the calls it received."""
    calls, queue = [], list(outcomes)

    def start(*args, **kwargs):
        calls.append((args, kwargs))
        outcome = queue.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return start, calls


def test_nbval_starts_its_kernels_through_the_plugin():
    assert nbval.kernel.start_new_kernel is nbval_kernels.start_new_kernel


def test_a_kernel_that_dies_as_it_starts_is_started_again(monkeypatch):
    start, calls = starts([DIED, DIED, "manager and client"])
    monkeypatch.setattr(nbval_kernels, "_start", start)
    assert nbval_kernels.start_new_kernel(startup_timeout=5, cwd="/tmp") == "manager and client"
    assert calls == [((), {"startup_timeout": 5, "cwd": "/tmp"})] * 3


def test_a_kernel_that_keeps_dying_or_fails_otherwise_fails_the_notebook(monkeypatch):
    start, calls = starts([DIED] * nbval_kernels.ATTEMPTS)
    monkeypatch.setattr(nbval_kernels, "_start", start)
    with pytest.raises(RuntimeError, match="died before replying"):
        nbval_kernels.start_new_kernel()
    assert len(calls) == nbval_kernels.ATTEMPTS
    start, calls = starts([RuntimeError("Kernel didn't respond in 60 seconds")])
    monkeypatch.setattr(nbval_kernels, "_start", start)
    with pytest.raises(RuntimeError, match="respond in 60"):
        nbval_kernels.start_new_kernel()
    assert len(calls) == 1
