"""The book as one LaTeX document (a Sphinx extension; only the LaTeX builder is affected).

* A students' edition: the solutions are left out (and, through sphinx-jupyterbook-latex,
  the model-answer cells, which are tagged hide-cell).
* One bibliography. Every chapter ends with a bibliography of the works it cites and the
  appendix lists them all; LaTeX gathers every bibliography entry at the end of the book, so
  each work would be listed several times. Here each work is kept once (from the fullest
  bibliography, the appendix's), every citation links to that entry, and the sections left
  empty (each chapter's References, the Bibliography and Index pages, which LaTeX replaces
  with its own bibliography and index) are dropped.
* Theorem numbers. sphinx-proof finds the chapter of a theorem by comparing section names
  with the chapter's title, which fails when the title has an apostrophe (smart quotes change
  the title, not the name) or when a section repeats the title: the theorem is printed
  without its number and links to it go nowhere. Here the chapter is the nearest enclosing
  node that records its document.
* Proofs get the title "Proof" (sphinx-proof's proof box has none, so LaTeX printed an empty
  title bar).
* The introduction (the root document, whose title is the book's) gets a heading, an entry in
  the table of contents and a bookmark.
* Math in a heading reaches the bookmarks as text ("Beyond TC⁰", "Why ε > 0"); hyperref
  would otherwise drop what it cannot spell.
* The students' edition leaves out the solutions and the appendix *For instructors*; a link to
  that appendix becomes its title and "in the HTML book".
* Tables as tables. A DataFrame that a notebook displays after
  :func:`companion.tables.typeset_tables` carries a LaTeX table (a ``tabular``, or a
  ``longtable`` when long) beside its HTML; myst-nb gives that output to the LaTeX builder as
  display math, and here it becomes the table it is, set in a smaller size.
* One number for every numbered thing, as in the HTML. sphinx-jupyterbook-latex sets
  ``numfig_secnum_depth`` to 2 for a book with parts, so that LaTeX numbers figures per
  chapter; but sphinx-exercise and sphinx-proof print the numbers Sphinx assigns with that
  depth, per section ("Exercise 7.8.1", "Proposition 6.2.1"). Here Sphinx assigns them with
  depth 1, per chapter ("Exercise 7.1", as the HTML), and LaTeX still gets depth 2.
  The appendices, unnumbered in the HTML, are unnumbered in the PDF too, and their figures
  are numbered 1, 2, … as the HTML numbers them (one count for all unnumbered pages).
"""

import re
import unicodedata
from collections import Counter

import sphinx_proof.nodes
from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx_exercise.nodes import solution_node
from sphinxcontrib.bibtex.nodes import raw_latex

_CITE = re.compile(r"cite\.([^}]*)")


def _docname(env, node, parent_tag=None):
    """The document of ``node``: the nearest enclosing node that records one (stands in for
    sphinx-proof's ``find_parent``, with its signature)."""
    while node is not None:
        node = node.parent
        if node is not None and node.get("docname"):
            return node["docname"]
    return None


def _empty(node) -> bool:
    """Whether ``node`` prints nothing but a title."""
    return isinstance(node, (nodes.title, nodes.target, nodes.comment)) or (
        isinstance(node, nodes.container) and all(map(_empty, node.children)))


class OneBibliography(SphinxPostTransform):
    """Each work once in the PDF's bibliography, every citation linked to it; the sections
    left empty are dropped."""

    # before sphinx-jupyterbook-latex (700) flattens the root document's sections and
    # before Sphinx (750) gathers the citations at the end of the book
    default_priority = 690
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        citations = list(self.document.findall(nodes.citation))
        if not citations:
            return
        fullest = Counter(c["docname"] for c in citations).most_common(1)[0][0]
        ordered = sorted(citations, key=lambda c: c["docname"] != fullest)  # stable
        kept, target = {}, {}
        for citation in ordered:
            label = citation[0].astext()
            first = kept.setdefault(label, citation)
            target[f"{citation['docname']}:{citation['ids'][0]}"] = (
                f"{first['docname']}:{first['ids'][0]}")
        for link in self.document.findall(raw_latex):  # sphinxcontrib-bibtex's \hyperlink{cite.
            link.rawsource = _CITE.sub(lambda m: "cite." + target.get(m[1], m[1]), link.rawsource)
        for citation in citations:
            citation.parent.remove(citation)
        self.document.extend(kept.values())
        for section in reversed(list(self.document.findall(nodes.section))):
            if all(map(_empty, section.children)):
                section.parent.remove(section)


class ProofTitle(SphinxPostTransform):
    """sphinx-proof's proof box has no title (its first paragraph starts "Proof. "), so LaTeX
    prints an empty title bar: the title becomes "Proof"."""

    default_priority = 690
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        for box in self.document.findall(nodes.admonition):
            first = box[0] if len(box) else None
            if "proof" not in box["classes"] or not isinstance(first, nodes.paragraph):
                continue
            text = first[0]
            name, dot, rest = text.astext().partition(". ")
            if isinstance(text, nodes.Text) and dot and name.lower() in box["classes"]:
                first.replace(text, nodes.Text(rest))
                box.insert(0, nodes.title(name, name))


class StudentEdition(SphinxPostTransform):
    """The PDF is the students' edition: no solutions (the model-answer cells, tagged
    hide-cell, are already left out by sphinx-jupyterbook-latex) and no appendix for
    instructors; a link to that appendix becomes its title, "in the HTML book"."""

    default_priority = 690
    formats = ("latex",)
    instructors = "book/instructors"

    def run(self, **kwargs) -> None:
        for solution in list(self.document.findall(solution_node)):
            solution.parent.remove(solution)
        for page in list(self.document.findall(addnodes.start_of_file)):
            if page["docname"] == self.instructors:
                page.parent.remove(page)
        for link in list(self.document.findall(nodes.reference)):
            if link.get("refuri", "").partition("#")[0] == f"%{self.instructors}":
                link.replace_self([nodes.emphasis("", link.astext()),
                                   nodes.Text(" in the HTML book")])


class IntroductionHeading(SphinxPostTransform):
    """The root document's title is the book's, which the title page prints; its text follows
    the table of contents under a heading "Introduction", listed in the contents and the
    bookmarks."""

    default_priority = 690
    formats = ("latex",)
    heading = (r"\chapter*{Introduction}\phantomsection"
               r"\addcontentsline{toc}{chapter}{Introduction}\markboth{Introduction}{}")

    def run(self, **kwargs) -> None:
        self.document.insert(0, nodes.raw("", self.heading, format="latex"))


_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
_SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def _greek(name: str) -> str:
    """The letter that TeX's ``\\name`` prints (``varepsilon`` is ε, Unicode spells lambda
    "lamda"), else the name."""
    letter = name.removeprefix("var").upper().replace("LAMBDA", "LAMDA")
    try:
        return unicodedata.lookup(f"GREEK SMALL LETTER {letter}")
    except KeyError:
        return name


def bookmark_text(tex: str) -> str:
    """Plain text for a heading's math: Greek letters spelled out, digits raised or lowered
    (``TC^0`` is TC⁰, ``S_5`` is S₅, ``1.5^{10}`` is 1.5¹⁰, ``\\varepsilon > 0`` is ε > 0)."""
    text = re.sub(r"\^\{?(\d+)\}?", lambda m: m[1].translate(_SUPERSCRIPT), tex)
    text = re.sub(r"_\{?(\d+)\}?", lambda m: m[1].translate(_SUBSCRIPT), text)
    return re.sub(r"\\([A-Za-z]+)", lambda m: _greek(m[1]), text)


class BookmarkMath(SphinxPostTransform):
    """A heading's math is typeset in the heading and spelled as text in its bookmark
    (``\\texorpdfstring``)."""

    default_priority = 690
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        for title in self.document.findall(nodes.title):
            for math in list(title.findall(nodes.math)):
                tex = math.astext()
                latex = rf"\texorpdfstring{{\protect\({tex}\protect\)}}{{{bookmark_text(tex)}}}"
                math.replace_self(nodes.raw("", latex, format="latex"))


class OutputTables(SphinxPostTransform):
    """A notebook's LaTeX output (a table, :func:`companion.tables.latex_table`) is printed as
    LaTeX, in a smaller size, and a ``tabular`` wider than the text is scaled down to fit it
    (``\\fitwidth``, defined in the preamble of ``_config.yml``); myst-nb, which supposes such an
    output is math, made it a display equation."""

    default_priority = 690
    formats = ("latex",)
    mark = "% a notebook's table\n"

    def run(self, **kwargs) -> None:
        for output in list(self.document.findall(nodes.math_block)):
            if "text_latex" in output["classes"]:
                latex = (output.astext().replace("\\begin{tabular}", "\\fitwidth{\\begin{tabular}")
                         .replace("\\end{tabular}", "\\end{tabular}}"))
                table = f"{self.mark}\\begingroup\\small\n{latex}\n\\endgroup\n"
                output.replace_self(nodes.raw("", table, format="latex"))


class PerChapterNumbers:
    """Sphinx assigns the numbers that sphinx-exercise and sphinx-proof print per chapter
    (``numfig_secnum_depth`` 1, as for the HTML); then the LaTeX writer gets back the depth
    that sphinx-jupyterbook-latex set, 2, which with parts tells LaTeX to number figures and
    tables per chapter (LaTeX numbers those itself)."""

    def __init__(self):
        self.latex_depth = None

    def builder_inited(self, app) -> None:
        if app.builder.format == "latex":
            self.latex_depth = app.config.numfig_secnum_depth
            app.config.numfig_secnum_depth = 1

    def numbers_assigned(self, app, env) -> list[str]:
        if self.latex_depth is not None:
            app.config.numfig_secnum_depth = self.latex_depth
        return []


class UnnumberedAppendices(SphinxPostTransform):
    """The pages after the numbered chapters (the appendices) are unnumbered, as in the HTML,
    and their figures and tables are numbered from 1 without a chapter number, as Sphinx
    numbers them in the HTML (one count for every unnumbered page)."""

    # after sphinx-jupyterbook-latex (700) turns the toctree captions into parts
    default_priority = 710
    formats = ("latex",)
    unnumbered = (r"\setcounter{secnumdepth}{-1}\setcounter{chapter}{0}"
                  r"\setcounter{figure}{0}\setcounter{table}{0}")

    def run(self, **kwargs) -> None:
        numbered = self.env.toc_secnumbers
        seen_numbered = False
        for page in self.document.findall(addnodes.start_of_file):
            if page["docname"] not in self.env.all_docs:  # a part, named by its caption
                continue
            if numbered.get(page["docname"]):
                seen_numbered = True
            elif seen_numbered:
                page.insert(0, nodes.raw("", self.unnumbered, format="latex"))
                return


def setup(app):
    """Register the extension with Sphinx."""
    sphinx_proof.nodes.find_parent = _docname
    app.add_post_transform(OneBibliography)
    app.add_post_transform(ProofTitle)
    app.add_post_transform(StudentEdition)
    app.add_post_transform(IntroductionHeading)
    app.add_post_transform(BookmarkMath)
    app.add_post_transform(OutputTables)
    app.add_post_transform(UnnumberedAppendices)
    numbers = PerChapterNumbers()
    # after sphinx-jupyterbook-latex's own builder-inited handler (priority 500)
    app.connect("builder-inited", numbers.builder_inited, priority=900)
    # after Sphinx's own env-get-updated handler (priority 500), which assigns the numbers
    app.connect("env-get-updated", numbers.numbers_assigned, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
