"""A notebook as Jupyter Book executed it, from myst-nb's execution cache.

myst-nb writes each notebook it builds into ``jupyter_execute``, but with its outputs only
when the build executed it: a notebook whose outputs came from the cache is written there as
read, without them. The cache itself (Jupyter Cache, ``_build/.jupyter_cache``) holds the
outputs of every notebook it executed, matched by the notebook's code, and how long each ran
(its record's ``data["execution_seconds"]``, which *Execution statistics* shows).
"""

from pathlib import Path

import nbformat

# Where a notebook that ``nbval_outputs`` wrote carries how long it ran (seconds), and where a
# Jupyter Cache record carries it for myst-nb's execution table (as myst-nb itself writes it).
SECONDS = "execution_seconds"


def from_cache(cache: Path, source: Path):
    """The notebook at ``source`` with the outputs that the Jupyter Cache folder ``cache``
    holds for its current code (an ``nbformat.NotebookNode``), or None where the cache has
    none."""
    if not (Path(cache) / "global.db").is_file():
        return None
    from jupyter_cache import get_cache
    try:
        return get_cache(cache).merge_match_into_notebook(
            nbformat.read(source, as_version=4))[1]
    except KeyError:  # never executed with this code
        return None


def into_cache(folder: Path, cache: Path) -> list[str]:
    """Store every executed notebook in ``folder`` (``*.ipynb``, as ``nbval_outputs`` writes
    them) in the Jupyter Cache folder ``cache``, where a build finds each by its code, with the
    time it ran (its metadata's :data:`SECONDS`) as its record's, and return their file names.
    A build of a notebook whose code has changed since finds none."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    stored, jupyter_cache = [], get_cache(cache)
    for path in sorted(Path(folder).glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        seconds = notebook.metadata.pop(SECONDS, None)
        data = {} if seconds is None else {SECONDS: seconds}
        jupyter_cache.cache_notebook_bundle(
            CacheBundleIn(notebook, str(path), data=data), check_validity=False)
        stored.append(path.name)
    return stored
