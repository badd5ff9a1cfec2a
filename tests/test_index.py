"""The book's general index is a concept index: each chapter puts its main concepts into it with
``{index}`` directives where it teaches them, and no entry names an API (the companion's
functions, PyTorch's classes)."""

import importlib
import inspect
import json
import pkgutil
import re
from pathlib import Path

import pytest

import companion

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"

# (concept, the chapter that teaches it): the concept is an index entry of that chapter, a main
# entry ("softmax") or one with its subentry ("attention; query").
TAUGHT = [
    ("self-attention", "self_attention"),
    ("attention; query", "self_attention"),
    ("attention; key", "self_attention"),
    ("attention; value", "self_attention"),
    ("scaled dot-product attention", "self_attention"),
    ("softmax", "self_attention"),
    ("attention matrix", "self_attention"),
    ("feed-forward network", "self_attention"),
    ("ReLU", "self_attention"),
    ("causal masking", "self_attention"),
    ("formal language", "recognizers"),
    ("PARITY", "recognizers"),
    ("FIRST", "recognizers"),
    ("MAJORITY", "recognizers"),
    ("recognizer", "recognizers"),
    ("CLS symbol", "recognizers"),
    ("positional encoding", "recognizers"),
    ("column convention", "recognizers"),
    ("hard attention", "recognizers"),
    ("residual connection", "layer_norm"),
    ("layer normalization", "layer_norm"),
    ("layer normalization; epsilon", "layer_norm"),
    ("post-norm", "layer_norm"),
    ("pre-norm", "layer_norm"),
    ("scale invariance", "layer_norm"),
    ("Lipschitz continuity", "layer_norm"),
    ("Boolean circuit", "circuits"),
    ("AC⁰", "circuits"),
    ("TC⁰", "circuits"),
    ("NC¹", "circuits"),
    ("uniformity", "circuits"),
    ("BFVP", "circuits"),
    ("word problem", "circuits"),
    ("Hahn's lemma", "exact_solutions"),
    ("cross-entropy", "exact_solutions"),
    ("PARITY; exact transformer", "exact_solutions"),
    ("FIRST; exact transformer", "exact_solutions"),
    ("floating-point precision", "exact_solutions"),
    ("layer normalization; with epsilon = 0", "layernorm_hahn"),
    ("sharpening", "layernorm_hahn"),
    ("bits and nats", "layernorm_hahn"),
    ("intermediate steps", "intermediate_steps"),
    ("greedy decoding", "intermediate_steps"),
    ("teacher forcing", "intermediate_steps"),
    ("Turing machine", "intermediate_steps"),
    ("B-RASP", "attention_logic"),
    ("C-RASP", "attention_logic"),
    ("unique-hard attention", "attention_logic"),
    ("length generalization", "learnability"),
    ("attention dilution", "learnability"),
    ("log-length scaled attention", "learnability"),
    ("bootstrap interval", "learnability"),
    ("in-context recall", "recall"),
    ("reparameterization", "recall"),
    ("Bayes-optimal loss", "recall"),
    ("normalized gradient descent", "recall"),
    ("scratchpad", "scratchpad"),
    ("sign test", "scratchpad"),
]

# A concept whose main entry belongs to one chapter alone: its first use or definition. A later
# chapter may add a subentry ("cross-entropy; made arbitrarily small"), not the entry itself.
FIRST_USE = ["softmax", "cross-entropy", "layer normalization", "Hahn's lemma", "PARITY",
             "FIRST", "MAJORITY", "log-length scaled attention", "recognizer",
             "teacher forcing"]


def _markdown(path: Path) -> str:
    if path.suffix == ".md":
        return path.read_text(encoding="utf-8")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def entries(path: Path) -> list[str]:
    """The index entries of a page: each ``{index}`` directive's comma-separated entries."""
    found = []
    for line in re.findall(r"^`{3,4}\{index\} (.*)$", _markdown(path), re.M):
        found += [entry.strip() for entry in line.split(",")]
    return found


def names(entry: str) -> set[str]:
    """What an entry lists: its main term, and the main term with its subentry."""
    parts = [part.strip() for part in entry.split(";")]
    return {parts[0], "; ".join(parts)}


PAGES = sorted(BOOK.glob("*.ipynb")) + sorted(BOOK.glob("*.md"))


@pytest.mark.parametrize(("concept", "chapter"), TAUGHT, ids=lambda x: x)
def test_a_chapter_indexes_what_it_teaches(concept, chapter):
    listed = set().union(*map(names, entries(BOOK / f"{chapter}.ipynb")))
    assert concept in listed, f"{chapter}: no {{index}} entry for {concept!r}"


@pytest.mark.parametrize("concept", FIRST_USE)
def test_a_concept_is_indexed_where_it_is_first_taught(concept):
    """The main entry of a concept points to one place, the chapter of the table above;
    any other chapter gives it a subentry."""
    [taught] = [chapter for c, chapter in TAUGHT if c == concept]
    others = [page.name for page in PAGES if page.stem != taught
              and concept in {entry.strip() for entry in entries(page)}]
    assert not others, f"{concept!r} is a main entry of {others} too"


def _api_names() -> set[str]:
    """The public names of every companion module (functions, classes, constants)."""
    found = set()
    for module in pkgutil.iter_modules(companion.__path__):
        loaded = importlib.import_module(f"companion.{module.name}")
        found |= {name for name, value in vars(loaded).items()
                  if not name.startswith("_") and not inspect.ismodule(value)
                  and getattr(value, "__module__", loaded.__name__) == loaded.__name__}
    return found


def names_an_api(entry: str, api: set[str]) -> bool:
    """Whether an index entry is a companion name (``layer_norm``), a call, a module path
    (``companion.``, PyTorch's ``nn.``) or code rather than a concept."""
    terms = {term.strip() for term in entry.split(";")}
    return bool(re.search(r"\(\)|`|\bcompanion\.|\bnn\.|\btorch\.|_", entry) or terms & api)


def test_the_index_names_no_api():
    """A concept index: no entry names an API."""
    api = _api_names()
    wrong = [f"{page.name}: {entry}" for page in PAGES for entry in entries(page)
             if names_an_api(entry, api)]
    assert not wrong, "\n".join(wrong)


def test_the_checks_catch_what_they_should():
    """The helpers read entries and subentries, and tell an API name from a concept."""
    assert names("attention; query") == {"attention", "attention; query"}
    api = _api_names()
    assert {"layer_norm", "parity_transformer", "Encoder"} <= api
    for entry in ("layer_norm", "sharpen", "companion.attention", "nn.TransformerEncoder",
                  "decode()", "attention; `attention_weights`", "transformer; Encoder"):
        assert names_an_api(entry, api), entry
    for entry in ("layer normalization; epsilon", "softmax", "AC⁰", "Hahn's lemma"):
        assert not names_an_api(entry, api), entry
