# Every target creates .venv on first use (and refreshes it when requirements.txt changes).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
READY := $(VENV)/.ready
# the course tooling's own dependencies (course/requirements.txt), on top of the book's
COURSE_READY := $(VENV)/.course-ready

.PHONY: book test chromium pdf full robust assignments bench clean

$(READY): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(READY)

$(COURSE_READY): $(READY) course/requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r course/requirements.txt
	touch $(COURSE_READY)

## book: execute every notebook (cached) and build the HTML book into _build/html
# --all re-reads every page, so a chapter that failed before fails again (a failed notebook is
# never cached); a page that shows an error traceback is moved aside with the rest of the build.
book: $(READY)
	$(BIN)/jupyter-book build --all --warningiserror --nitpick --keep-going . \
		|| { rm -rf _build/html-failed; mv _build/html _build/html-failed; \
		     echo "make book: a chapter failed; see _build/html-failed/reports/"; exit 1; }
	@if grep -l 'class="output traceback' _build/html/book/*.html; then \
		rm -rf _build/html-failed; mv _build/html _build/html-failed; \
		echo "make book: the pages above show an error; the build is in _build/html-failed"; \
		exit 1; fi
	@echo "Open _build/html/index.html"

## test: lint; unit tests; every chapter under nbval (quick profile) with one of make robust's
## seeds on one thread; the slow whole-book checks last (every chapter executed with the book's
## seed and the HTML built from it, each chapter's editions graded). pytest prints their times.
test: $(COURSE_READY) chromium
	$(BIN)/ruff check companion course tests tools benchmarks
	BOOK_SCALE=quick $(BIN)/python -m pytest tests -m "not slow"
	BOOK_SEED=1 OMP_NUM_THREADS=1 BOOK_SCALE=quick $(BIN)/python -m pytest book --durations=3
	BOOK_SCALE=quick $(BIN)/python -m pytest tests -m slow --durations=3

## chromium: Debian's browser, for the browser check of the built book (installed when missing;
## Playwright drives this one and never downloads a browser of its own)
chromium:
	@command -v chromium >/dev/null || { \
		echo "installing Debian's chromium for the browser check"; \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$sudo apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq chromium >/dev/null; }

## pdf: the whole book as one PDF, _build/book.pdf: every page of make book's HTML printed by
## headless Chromium once MathJax has typeset it, in the table of contents' order; the first
## pages are rendered to PNG under _build/pdf-pages/ to look at
pdf: book chromium
	$(BIN)/python tools/pdf.py _build/html _build/book.pdf _build/pdf-pages

## full: every notebook under nbval at the papers' scale (meant for a GPU)
full: $(READY)
	BOOK_SCALE=full $(BIN)/python -m pytest book

## robust: every notebook under nbval with three other seeds (BOOK_SEED) and one thread
ROBUST_SEEDS ?= 1 2 3
robust: $(READY)
	for seed in $(ROBUST_SEEDS); do \
		echo "== BOOK_SEED=$$seed, one thread"; \
		BOOK_SEED=$$seed OMP_NUM_THREADS=1 BOOK_SCALE=quick $(BIN)/python -m pytest book \
			|| exit 1; \
	done

## assignments: student (solutions removed) and instructor editions in _build/assignments
assignments: $(COURSE_READY)
	$(BIN)/python -m course.assignments book/*.ipynb --out _build/assignments

## bench: the timings and memory figures that matter (never asserted in unit tests)
bench: $(READY)
	$(BIN)/python -m benchmarks

clean:
	rm -rf _build .jupyter_cache
