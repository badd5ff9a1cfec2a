"""Fixtures shared by the tests, and the Hypothesis profiles: ``ci`` (the default: few
examples, derandomized, no deadline, nothing stored) and ``long`` (chosen with
``HYPOTHESIS_PROFILE=long``: many random examples).

The tests compute on the book's number of threads (one, unless ``COMPANION_THREADS`` says
otherwise), as the chapters do: ``make test`` runs two pytest workers side by side, and two
threads each would spin against each other on a two-core machine."""

import os

import pytest
import torch
from hypothesis import HealthCheck, settings

from companion.runtime import threads

torch.set_num_threads(threads())

# make test runs the tests on pytest-xdist workers (-n 2). The tests of these modules share a
# module fixture that costs minutes (the book's build, a JupyterLab server, the toy chapter's
# recorded runs), so each module goes to one worker whole; any other test goes to whichever
# worker is free.
WHOLE_MODULES = {"tests/test_book.py", "tests/test_lab.py", "tests/test_grade_parallel.py"}


def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scheduler for its default mode (``--dist load``): WHOLE_MODULES whole,
    every other test alone. (pytest-xdist's own ``loadgroup`` cannot group under pytest 9: it
    renames a test by a private attribute that pytest 9 no longer reads.)"""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class WholeModules(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in WHOLE_MODULES else nodeid

    return WholeModules(config, log)

settings.register_profile("ci", max_examples=8, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def cache_executed(tmp_path):
    """A function that stores an executed notebook (a dict in nbformat 4) in a Jupyter Cache
    folder under ``tmp_path``, as Jupyter Book's execution would, and returns the folder and
    the notebook without its outputs (what the book commits)."""
    import json

    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    def store(executed: dict, uri: str):
        notebook = nbformat.from_dict({"metadata": {}, "nbformat": 4, "nbformat_minor": 5,
                                       **json.loads(json.dumps(executed))})
        for number, cell in enumerate(notebook.cells):
            cell.setdefault("id", f"cell-{number}")
            if cell.cell_type == "code":
                cell.setdefault("execution_count", 1)
        get_cache(tmp_path / "cache").cache_notebook_bundle(
            CacheBundleIn(notebook, uri), check_validity=False)
        committed = nbformat.from_dict(json.loads(json.dumps(notebook)))
        for cell in committed.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        return tmp_path / "cache", committed

    return store
