"""CSV exports a spreadsheet opens safely: every cell neutralised against formulas.

Every CSV the project exports is written by ``csv_text`` (a test holds that there is one
``csv.writer``): a reason is an agent author's, a username an SSO's, so any cell may start
like a formula."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(value: Any) -> Any:
    """``value`` as a CSV cell a spreadsheet shows as written: text that starts like a
    formula gets a leading ``'``. Numbers pass as numbers: the export writes them itself
    (a score of -1), so they are never someone's formula."""
    if isinstance(value, int | float):
        return value
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def csv_text(header: Iterable[str], rows: Iterable[Iterable[Any]]) -> str:
    """A CSV export: every cell of every row, whoever wrote it (a reason is an agent
    author's, a username an SSO's), through ``spreadsheet_cell``. Every CSV the project
    exports is written here."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([spreadsheet_cell(cell) for cell in header])
    writer.writerows([spreadsheet_cell(cell) for cell in row] for row in rows)
    return out.getvalue()
