"""Named basis directions of a vector space, as tracr's ``craft`` names the residual stream.

A hand-set construction declares its dimensions once, e.g. ``Layout("is_0", "is_1", "is_cls")``,
and then writes vectors and matrices by name, so the code reads like the papers' matrices and an
activation table can name every row (:func:`companion.tables.activation_table`).
"""

import torch

from companion._checks import check_number


class Layout:
    """An ordered list of distinct dimension names; ``layout["name"]`` is that dimension's index."""

    def __init__(self, *names: str):
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"names must be strs, got {name!r}")
        if len(set(names)) != len(names):
            raise ValueError(f"dimension names must be distinct, got {names}")
        self.names = list(names)
        self._index = {name: i for i, name in enumerate(names)}

    @property
    def d(self) -> int:
        return len(self.names)

    def __getitem__(self, name: str) -> int:
        if name not in self._index:
            raise KeyError(f"no dimension named {name!r}; the layout has {self.names}")
        return self._index[name]

    def vector(self, entries: dict, dtype=torch.float64) -> torch.Tensor:
        """A vector ``[d]`` that is zero except at the named entries."""
        v = torch.zeros(self.d, dtype=dtype)
        for name, value in _entries(entries).items():
            v[self[name]] = value
        return v

    def matrix(self, source: "Layout", entries: dict, dtype=torch.float64) -> torch.Tensor:
        """A matrix ``[self.d, source.d]`` mapping ``source`` vectors to ``self`` vectors
        (column convention), zero except ``entries[(row_name, column_name)]``."""
        if not isinstance(source, Layout):
            raise TypeError(f"source must be a Layout, got {type(source).__name__}")
        M = torch.zeros(self.d, source.d, dtype=dtype)
        for key, value in _entries(entries).items():
            if not (isinstance(key, tuple) and len(key) == 2):
                raise TypeError(f"entries must be keyed by (row_name, column_name) pairs, "
                                f"got {key!r}")
            M[self[key[0]], source[key[1]]] = value
        return M


def _entries(entries) -> dict:
    """``entries``, checked to be a dict whose values are finite numbers."""
    if not isinstance(entries, dict):
        raise TypeError(f"entries must be a dict, got {type(entries).__name__}")
    return {key: check_number(value, f"entries[{key!r}]") for key, value in entries.items()}
