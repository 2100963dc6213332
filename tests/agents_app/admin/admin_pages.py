"""Drive admin forms the way a browser does: read the page's form, change fields, post it.

Reading the rendered form (instead of writing POST data by hand) means the tests
post exactly what a person would: every default, hidden field and management
form included, and new inline rows copied from the page's empty-row template.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

from django.test import Client

Data = dict[str, Any]


class _FormReader(HTMLParser):
    """Collects the successful controls of the admin's change form (``<form id="…_form">``)."""

    def __init__(self) -> None:
        super().__init__()
        self.data: Data = {}
        self.in_form = False
        self._select: str | None = None
        self._select_first: str | None = None
        self._select_multiple = False
        self._selected: list[str] = []
        self._option_value: str | None = None
        self._option_text = ""
        self._textarea: str | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs_list: list[tuple[str, str | None]]) -> None:
        attrs = {k: v or "" for k, v in attrs_list}
        if tag == "form" and attrs.get("id", "").endswith("_form"):
            self.in_form = True
        if not self.in_form:
            return
        name = attrs.get("name")
        if tag == "input" and name:
            kind = attrs.get("type", "text")
            if kind in ("submit", "button", "file", "image", "reset"):
                return
            if kind in ("checkbox", "radio"):
                if "checked" in attrs:
                    self.data[name] = attrs.get("value") or "on"
                return
            self.data[name] = attrs.get("value", "")
        elif tag == "select" and name:
            self._select, self._select_first, self._selected = name, None, []
            self._select_multiple = "multiple" in attrs
        elif tag == "option" and self._select is not None:
            self._option_value = attrs.get("value")
            self._option_text = ""
            if "selected" in attrs:
                self._selected.append(self._option_value or "")
        elif tag == "textarea" and name:
            self._textarea, self._text = name, ""

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self._text += data
        if self._option_value is None and self._select is not None:
            self._option_text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.in_form = False
        elif tag == "option" and self._select is not None:
            value = self._option_value if self._option_value is not None else self._option_text
            if self._select_first is None:
                self._select_first = value
            self._option_value = None
        elif tag == "select" and self._select is not None:
            if self._select_multiple:
                self.data[self._select] = self._selected
            else:
                chosen = self._selected[-1] if self._selected else self._select_first
                self.data[self._select] = chosen or ""
            self._select = None
        elif tag == "textarea" and self._textarea is not None:
            # Browsers drop the one newline that follows <textarea>.
            self.data[self._textarea] = self._text.removeprefix("\n")
            self._textarea = None


def read_form(client: Client, url: str) -> Data:
    response = client.get(url)
    assert response.status_code == 200, response.status_code
    reader = _FormReader()
    reader.feed(response.content.decode())
    return reader.data


def _set(data: Data, name: str, value: Any) -> None:
    if value is False or value is None:
        data.pop(name, None)  # an unticked checkbox is not sent
    elif value is True:
        data[name] = "on"
    else:
        data[name] = value if isinstance(value, list) else str(value)


def set_rows(data: Data, prefix: str, rows: list[dict[str, Any]]) -> Data:
    """Replace the blank (extra) rows of inline ``prefix`` with ``rows``, like "Add another"."""
    initial = int(data[f"{prefix}-INITIAL_FORMS"])
    template = {
        k.removeprefix(f"{prefix}-__prefix__-"): v
        for k, v in data.items()
        if k.startswith(f"{prefix}-__prefix__-")
    }
    row_key = re.compile(rf"^{re.escape(prefix)}-(\d+)-")
    for key in [k for k in data if (m := row_key.match(k)) and int(m.group(1)) >= initial]:
        del data[key]
    for offset, row in enumerate(rows):
        index = initial + offset
        for field, value in template.items():
            data[f"{prefix}-{index}-{field}"] = value
        for field, value in row.items():
            _set(data, f"{prefix}-{index}-{field}", value)
    data[f"{prefix}-TOTAL_FORMS"] = str(initial + len(rows))
    return data


def change_row(data: Data, prefix: str, index: int, **fields: Any) -> Data:
    for field, value in fields.items():
        _set(data, f"{prefix}-{index}-{field}", value)
    return data


def fill(data: Data, **fields: Any) -> Data:
    for name, value in fields.items():
        _set(data, name, value)
    return data


def post(client: Client, url: str, data: Data) -> Any:
    # The empty-row template is not a row; browsers send it too, Django ignores it.
    return client.post(url, {k: v for k, v in data.items() if "__prefix__" not in k})


def errors_of(response: Any) -> dict[str, Any]:
    """Field errors of the main form and of every inline row, for readable assertions."""
    out: dict[str, Any] = {}
    ctx = response.context
    if ctx is None or "adminform" not in ctx:
        return out
    form = ctx["adminform"].form
    out.update({name: list(errs) for name, errs in form.errors.items()})
    for inline in ctx["inline_admin_formsets"]:
        fs = inline.formset
        if fs.non_form_errors():
            out[f"{fs.prefix}"] = list(fs.non_form_errors())
        for i, errs in enumerate(fs.errors):
            for name, msgs in errs.items():
                out[f"{fs.prefix}-{i}-{name}"] = list(msgs)
    return out
