"""The book's table of contents (`_toc.yml`) as the list of its pages in reading order."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def toc_files() -> list[str]:
    """Every page of the book in reading order: the root, then each part's chapters, as paths
    relative to the repository without a suffix (``"book/intro"``)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [toc["root"]] + [chapter["file"] for part in toc["parts"]
                            for chapter in part["chapters"]]
