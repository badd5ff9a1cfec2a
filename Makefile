# Every target creates .venv on first use (and refreshes it when requirements.txt changes).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
READY := $(VENV)/.ready
# the course tooling's own dependencies (course/requirements.txt), on top of the book's
COURSE_READY := $(VENV)/.course-ready

.PHONY: book test lab chromium latex bubblewrap slurm pdf full robust chapter-times assignments bench clean

$(READY): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(READY)

$(COURSE_READY): $(READY) course/requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r course/requirements.txt
	touch $(COURSE_READY)

# $(call build_book,FOLDER,OPTIONS): build the HTML book into FOLDER/_build/html, rereading every
# page (--all), so a chapter that failed before fails again (a failed notebook is never cached);
# a build with a failed chapter, or with a page that shows an error traceback, is moved aside
# to FOLDER/_build/html-failed and the target fails. Then the book's PDF, from the same executed
# notebooks through LaTeX (tools/latexbook.py), into FOLDER/_build/latex/book.pdf, copied to
# the HTML's root, where every page's download menu links it.
define build_book
	$(BIN)/jupyter-book build --all --warningiserror --nitpick --keep-going . \
		--path-output $(1) $(2) \
		|| { rm -rf $(1)/_build/html-failed; mv $(1)/_build/html $(1)/_build/html-failed; \
		     echo "a chapter failed; see $(1)/_build/html-failed/reports/"; exit 1; }
	@if grep -l 'class="output traceback' $(1)/_build/html/book/*.html; then \
		rm -rf $(1)/_build/html-failed; mv $(1)/_build/html $(1)/_build/html-failed; \
		echo "the pages above show an error; the build is in $(1)/_build/html-failed"; \
		exit 1; fi
	$(BIN)/jupyter-book build --builder pdflatex . --path-output $(1) $(2) >$(1)/_build/pdf.log \
		|| { tail -40 $(1)/_build/pdf.log; echo "the PDF failed; see $(1)/_build/latex/"; exit 1; }
	cp $(1)/_build/latex/book.pdf $(1)/_build/html/book.pdf
	@echo "Open $(1)/_build/html/index.html (the book as PDF: $(1)/_build/html/book.pdf)"
endef

## book: execute every notebook (cached in _build/.jupyter_cache) and build the HTML book into
## _build/html, with the book's PDF (_build/html/book.pdf)
book: $(READY) latex
	$(call build_book,.)

## lab: JupyterLab on the book's chapters, with jupyterlab-myst rendering their MyST (math,
## exercise, solution and theorem boxes) as the book does; solutions stay folded until opened
lab: $(READY)
	$(BIN)/jupyter-lab --notebook-dir=book $(if $(filter 0,$(shell id -u)),--allow-root)

## test: lint; unit tests; every chapter under nbval (quick profile) with one of make robust's
## seeds, its outputs kept (tools/nbval_outputs.py; tools/nbval_kernels.py starts a kernel that dies
## as it starts again); the slow whole-book checks last (the HTML
## and the PDF built from those outputs and checked in Chromium, each chapter's editions graded
## with the book's seed, every chapter and student edition opened in JupyterLab, a chapter run
## from a fresh venv). Each stage runs on
## TEST_JOBS pytest workers (pytest-xdist), each computing on one thread: nbval keeps a notebook
## on one worker (loadscope), the slow checks keep the book's build, and JupyterLab, on one
## worker each (tests/conftest.py). pytest prints the slowest tests.
TEST_JOBS ?= 2
XDIST = -n $(TEST_JOBS) --durations=25
EXECUTED = $(CURDIR)/_build/nbval
test: $(COURSE_READY) chromium latex bubblewrap slurm
	$(BIN)/ruff check companion course tests tools benchmarks
	BOOK_SCALE=quick $(BIN)/python -m pytest tests -m "not slow" $(XDIST)
	rm -rf $(EXECUTED)
	EXECUTED_NOTEBOOKS=$(EXECUTED) BOOK_SEED=1 BOOK_SCALE=quick \
		$(BIN)/python -m pytest book $(XDIST) --dist loadscope -p nbval_outputs -p nbval_kernels
	EXECUTED_NOTEBOOKS=$(EXECUTED) BOOK_SCALE=quick $(BIN)/python -m pytest tests -m slow $(XDIST)

## chromium: Debian's browser, for the browser check of the built book (installed when missing;
## Playwright drives this one and never downloads a browser of its own)
chromium:
	@command -v chromium >/dev/null || { \
		echo "installing Debian's chromium for the browser check"; \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$sudo apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq chromium >/dev/null; }

## bubblewrap: Debian's sandbox (bwrap), in which the autograder runs every submission
## (installed when missing; the grader refuses to run without it unless told --unsafe)
bubblewrap:
	@command -v bwrap >/dev/null || { \
		echo "installing Debian's bubblewrap for the autograder's sandbox"; \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$sudo apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq bubblewrap >/dev/null; }

## slurm: Debian's Slurm (slurmctld, slurmd, sbatch and the other commands) and munge, for
## the test that grades a class as a job array (course/slurm) on a one-node cluster that it
## starts in a temporary folder, with a configuration of its own (tests/test_slurm.py;
## installed when missing)
slurm:
	@command -v slurmd >/dev/null && command -v slurmctld >/dev/null && \
		command -v munged >/dev/null || { \
		echo "installing Debian's slurm-wlm and munge for the job-array test"; \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$sudo apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq slurm-wlm munge >/dev/null; }

## latex: TeX Live from Debian, for the book's PDF (installed when missing; about 50 s)
LATEX_PACKAGES := texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended \
	texlive-xetex latexmk fonts-freefont-otf
latex:
	@command -v xelatex >/dev/null && command -v latexmk >/dev/null || { \
		echo "installing TeX Live for the book's PDF"; \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install \
			-y -qq --no-install-recommends $(LATEX_PACKAGES) >/dev/null; }

## pdf: make book, then the PDF's outline and any page whose text runs past its margin, and
## a few pages rendered to PNG under _build/pdf-pages/ to look at
pdf: book
	$(BIN)/python tools/pdf.py _build/html/book.pdf _build/pdf-pages

## full: the book at the papers' scale (meant for a GPU; see the appendix "Reproducing at full
## scale"): every notebook executed once with BOOK_SCALE=full and no time limit per cell, cached
## in _build/full/_build/.jupyter_cache (apart from make book's quick results; a rerun after a
## failure executes only what failed or changed), and the HTML built from those executed
## notebooks into _build/full/_build/html; then the figures of the appendix "Reproducing at full
## scale" recorded from them into book/figures/full (tools/full_figures.py), to be committed
full: export BOOK_SCALE = full
full: $(READY)
	$(BIN)/python tools/book_config.py _build/full/_config.yml --execute cache --timeout -1
	$(call build_book,_build/full,--config _build/full/_config.yml)
	$(BIN)/python tools/full_figures.py _build/full/_build/jupyter_execute/book book/figures/full

## robust: every notebook under nbval with three other seeds (BOOK_SEED) and two CPU threads
## (COMPANION_THREADS; the book computes on one, so sums are split another way here)
ROBUST_SEEDS ?= 1 2 3
robust: $(READY)
	for seed in $(ROBUST_SEEDS); do \
		echo "== BOOK_SEED=$$seed, two threads"; \
		BOOK_SEED=$$seed COMPANION_THREADS=2 BOOK_SCALE=quick $(BIN)/python -m pytest book -p nbval_kernels \
			|| exit 1; \
	done

## chapter-times: every chapter's quick profile alone, one after another, beside two busy
## processes (as on a laptop with a browser open; the book aims at two minutes each): the
## seconds in _build/chapter-times/times.json, the executed chapters beside it
chapter-times: $(READY)
	BOOK_SCALE=quick $(BIN)/python tools/run_chapters.py _build/chapter-times \
		--one-at-a-time --busy 2 --limit 900

## assignments: student (solutions removed) and instructor editions in _build/assignments (and
## bubblewrap, for grading them); for graded work, COURSE_SEED=N hands out the course's variant
## of every exercise, and ROSTER=FILE (student names) each student's own
assignments: $(COURSE_READY) bubblewrap
	$(BIN)/python -m course.assignments book/*.ipynb --out _build/assignments \
		$(if $(COURSE_SEED),--course-seed $(COURSE_SEED)) $(if $(ROSTER),--roster $(ROSTER))

## bench: the timings and memory figures that matter (never asserted in unit tests)
bench: $(READY)
	$(BIN)/python -m benchmarks

clean:
	rm -rf _build
