# Every target creates .venv on first use (and refreshes it when requirements.txt changes).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
READY := $(VENV)/.ready

.PHONY: book test full assignments bench clean

$(READY): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(READY)

## book: execute every notebook (cached) and build the HTML book into _build/html
book: $(READY)
	$(BIN)/jupyter-book build --warningiserror --nitpick --keep-going .
	@echo "Open _build/html/index.html"

## test: unit tests, lint, every notebook under nbval (quick profile), no committed outputs, book build
test: $(READY)
	$(BIN)/ruff check companion tests benchmarks
	BOOK_SCALE=quick $(BIN)/python -m pytest

## full: every notebook under nbval at the papers' scale (meant for a GPU)
full: $(READY)
	BOOK_SCALE=full $(BIN)/python -m pytest book

## assignments: student (solutions removed) and instructor editions in _build/assignments
assignments: $(READY)
	$(BIN)/python -m companion.assignments book/*.ipynb --out _build/assignments

## bench: the timings and memory figures that matter (never asserted in unit tests)
bench: $(READY)
	$(BIN)/python -m benchmarks

clean:
	rm -rf _build .jupyter_cache
