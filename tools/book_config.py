"""The book's `_config.yml` with other execution settings, written elsewhere, for the builds
that execute the notebooks differently from `make book`: `make full` (cached, no cell time
limit) and the whole-book test (every notebook executed afresh).

    python tools/book_config.py OUT.yml [--execute MODE] [--timeout SECONDS]

Jupyter Book reads a configuration file given with `--config`; its local Sphinx extensions
(and the files the PDF's LaTeX needs) are found relative to that file, so their paths are made
absolute here.
"""

import argparse
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
MODES = ("cache", "force", "off")


def write_config(path: Path, execute: str | None = None, timeout: int | None = None) -> Path:
    """Write the book's configuration to ``path`` with ``execute.execute_notebooks = execute``
    and ``execute.timeout = timeout`` (seconds per cell, -1 for no limit) where given."""
    if execute is not None and execute not in MODES:
        raise ValueError(f"execute must be one of {MODES}, got {execute!r}")
    if timeout is not None and (timeout == 0 or timeout < -1):
        raise ValueError(f"timeout must be a positive number of seconds or -1, got {timeout}")
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    if execute is not None:
        config["execute"]["execute_notebooks"] = execute
    if timeout is not None:
        config["execute"]["timeout"] = timeout
    config["sphinx"]["local_extensions"] = {
        name: str(ROOT / folder) for name, folder in config["sphinx"]["local_extensions"].items()}
    sphinx = config["sphinx"]["config"]
    sphinx["latex_additional_files"] = [str(ROOT / f) for f in sphinx["latex_additional_files"]]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="where to write the configuration")
    parser.add_argument("--execute", choices=MODES, help="execute_notebooks mode")
    parser.add_argument("--timeout", type=int, help="seconds per cell, -1 for no limit")
    arguments = parser.parse_args()
    write_config(arguments.path, arguments.execute, arguments.timeout)


if __name__ == "__main__":
    main()
