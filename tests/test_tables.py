"""Tables for the PDF: a displayed DataFrame's LaTeX form holds the values the HTML shows."""

import re
from html.parser import HTMLParser

import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell

from companion.tables import latex_table, typeset_tables


class _Cells(HTMLParser):
    """The text of every body cell of pandas' HTML table, row by row (index cells included)."""

    def __init__(self):
        super().__init__()
        self.rows, self.body, self.cell = [], False, None

    def handle_starttag(self, tag, attrs):
        self.body |= tag == "tbody"
        if self.body and tag == "tr":
            self.rows.append([])
        if self.body and tag in ("td", "th"):
            self.cell = ""

    def handle_endtag(self, tag):
        if self.body and tag in ("td", "th"):
            self.rows[-1].append(self.cell.strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


FRAMES = [
    pd.DataFrame({"computed": [-0.027, 0.1234, 2.0], "printed": [1e-9, 0.5, 3.25],
                  "verdict": ["yes", "no", "yes"]}, index=["a", "b", "c"]).rename_axis("k"),
    pd.DataFrame([[1, 2, 3, 4], [5, 6, 7, 8]], index=["Origin-Linear", "Reparam-ReLU"],
                 columns=pd.MultiIndex.from_product([["alpha = 0.2", "alpha = 0.5"],
                                                     ["min", "max"]])),
    pd.DataFrame({"s": [4.080033, 0.002903]}, index=["s = 1", "s = 10"]).round(6),
]


def _latex_rows(latex: str) -> list[list[str]]:
    body = latex.split("\\endlastfoot\n")[1].split("\\end{longtable}")[0]
    assert "\\bottomrule" not in body
    return [[cell.strip() for cell in line.removesuffix("\\\\").split("&")]
            for line in body.strip().splitlines()]


@pytest.mark.parametrize("frame", FRAMES)
def test_the_latex_table_holds_what_the_html_shows(frame):
    """Row by row, the LaTeX body has the cells of pandas' own HTML (the index first)."""
    parser = _Cells()
    parser.feed(frame.to_html())
    assert _latex_rows(latex_table(frame, one_page=0)) == parser.rows


def test_a_short_table_stays_on_one_page():
    latex = latex_table(FRAMES[0])
    assert latex.startswith("\\begin{center}\n\\begin{tabular}{lrrl}")
    assert latex_table(FRAMES[0], one_page=2).startswith("\\begin{longtable}")


def test_the_header_repeats_on_every_page_and_text_is_escaped():
    frame = pd.DataFrame({"a_b": ["x & y", "50%"]}, index=["is_cls", "i/n"])
    latex = latex_table(frame, one_page=1)
    assert latex.startswith("\\begin{longtable}{ll}")
    head = latex.split("\\endfirsthead")[0].split("\\toprule")[1]
    assert head in latex.split("\\endfirsthead")[1].split("\\endhead")[0]
    assert "a\\_b" in head and "is\\_cls" in latex and "x \\& y" in latex and "50\\%" in latex
    assert re.search(r"\\begin\{longtable\}\{lrrl\}", latex_table(FRAMES[0], one_page=0))


def test_a_notebook_displays_a_dataframe_with_its_latex_form():
    shell = InteractiveShell.instance()
    formatter = shell.display_formatter.formatters["text/latex"]
    try:
        typeset_tables()
        data, _ = shell.display_formatter.format(FRAMES[0])
        assert data["text/latex"] == latex_table(FRAMES[0]) and "text/html" in data
    finally:
        formatter.pop(pd.DataFrame, None)
        InteractiveShell.clear_instance()


@pytest.mark.parametrize("bad, error", [(["not", "a", "frame"], TypeError),
                                        (pd.DataFrame(), ValueError)])
def test_bad_input_is_refused(bad, error):
    with pytest.raises(error, match="frame"):
        latex_table(bad)


def test_a_row_may_start_with_a_bracket():
    """"[i=k]/n" after a row's end is not read as the length argument of that "\\\\"."""
    latex = latex_table(pd.DataFrame({"v": [1.0, 0.0]}, index=["i/n", "[i=k]/n"]))
    assert "\\\\\n{}[i=k]/n &" in latex


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (2.5, TypeError), ("30", TypeError)])
def test_a_bad_page_length_is_refused(bad, error):
    with pytest.raises(error, match="one_page"):
        latex_table(FRAMES[0], one_page=bad)
