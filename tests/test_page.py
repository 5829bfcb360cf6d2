"""The report page's contents box (analysis.page). No process."""

import re

from analysis.page import page


def test_a_headings_sub_list_sits_inside_its_item_so_columns_keep_them_together():
    """Issue 68: the Contents box split "Figures" from its figures: the sub-list was a sibling
    of its heading's <li>, which the columns' break-inside rule does not hold together."""
    h = page(
        "t", "", [(1, "r", "Results"), (2, "f", "Figures"), (3, "x", "X"), (1, "e", "End")], ""
    )
    nav = re.search("<nav>.*</nav>", h).group(0)
    assert "<li><a href='#f'>Figures</a><ul><li><a href='#x'>X</a></li></ul></li>" in nav
    assert nav.count("<ul>") == nav.count("</ul>") and nav.count("<li>") == nav.count("</li>")
