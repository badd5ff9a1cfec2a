"""One author-year citation style for the whole book (a Sphinx extension).

Loaded by ``_config.yml`` (``sphinx.local_extensions``). It registers two styles:

* ``author_year_round``, the in-text style: ``{cite:t}`key``` gives
  "Chiang and Cholak (2022)", ``{cite:p}`key``` gives "(Chiang and Cholak, 2022)"
  and ``{cite:p}`key{§4}``` gives "(Chiang and Cholak, 2022, §4)";
* ``author_year``, the bibliography style: entries sorted by author, year and
  title, each labelled with the same author-year text as its citations
  ("Chiang and Cholak, 2022"; three or more authors give "Strobl et al., 2024").

Two works by the same authors in the same year get the year suffixes a, b, ... in the
order of their titles ("Merrill and Sabharwal, 2023a"), in the citations and the
bibliography alike: ``disambiguate_years`` adds them to the parsed entries when the
builder starts, after sphinxcontrib-bibtex has read ``references.bib``.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from string import ascii_lowercase

import pybtex.plugin
import sphinxcontrib.bibtex.plugin
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting.author_year_title import SortingStyle
from sphinxcontrib.bibtex.style.referencing import BracketStyle
from sphinxcontrib.bibtex.style.referencing.author_year import (
    AuthorYearReferenceStyle,
)


def _round() -> BracketStyle:
    return BracketStyle(left="(", right=")")


@dataclass
class RoundAuthorYearReferenceStyle(AuthorYearReferenceStyle):
    """Author-year citations in round brackets, as in most textbooks."""

    bracket_parenthetical: BracketStyle = field(default_factory=_round)
    bracket_textual: BracketStyle = field(default_factory=_round)
    bracket_author: BracketStyle = field(default_factory=_round)
    bracket_label: BracketStyle = field(default_factory=_round)
    bracket_year: BracketStyle = field(default_factory=_round)


def author_year_label(entry) -> str:
    """'Hahn, 2020', 'Chiang and Cholak, 2022' or 'Strobl et al., 2024'."""
    last_names = [
        " ".join(part.render_as("text") for part in person.rich_last_names)
        for person in entry.persons["author"]
    ]
    if len(last_names) == 1:
        authors = last_names[0]
    elif len(last_names) == 2:
        authors = " and ".join(last_names)
    else:
        authors = f"{last_names[0]} et al."
    return f"{authors}, {entry.fields['year']}"


def disambiguate_years(entries) -> None:
    """Append a, b, ... to the year of works that would share an author-year label.

    ``entries`` maps keys to pybtex entries; their ``year`` fields are changed in place,
    the suffixes following the order of the titles. Calling it again gives the same years.
    """
    same_label = defaultdict(list)
    for entry in entries.values():
        entry.fields["year"] = entry.fields["year"].rstrip(ascii_lowercase)
        same_label[author_year_label(entry)].append(entry)
    for group in same_label.values():
        if len(group) > 1:
            ordered = sorted(group, key=_title_key)
            for index, entry in enumerate(ordered):
                entry.fields["year"] += ascii_lowercase[index]


def _title_key(entry) -> str:
    return entry.fields["title"].replace("{", "").replace("}", "").lower()


def _disambiguate_book_years(app) -> None:
    disambiguate_years(app.env.get_domain("cite").bibdata.data.entries)


class AuthorYearLabelStyle(BaseLabelStyle):
    """Bibliography labels that read like the in-text citations."""

    def format_labels(self, sorted_entries):
        for entry in sorted_entries:
            yield author_year_label(entry)


class AuthorYearStyle(UnsrtStyle):
    """pybtex's unsrt formatting, sorted by author, year and title, author-year labels."""

    default_label_style = AuthorYearLabelStyle
    default_sorting_style = SortingStyle


pybtex.plugin.register_plugin("pybtex.style.formatting", "author_year", AuthorYearStyle)
sphinxcontrib.bibtex.plugin.register_plugin(
    "sphinxcontrib.bibtex.style.referencing",
    "author_year_round",
    RoundAuthorYearReferenceStyle,
)


def setup(app):
    """Sphinx entry point: the styles are registered on import; the year suffixes are added
    once sphinxcontrib-bibtex has read the bibliography (its handler has the default
    priority, 500)."""
    app.connect("builder-inited", _disambiguate_book_years, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
