"""Form fields and widgets that let people edit JSON columns without writing JSON."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from decimal import Decimal
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.template.response import SimpleTemplateResponse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from agents_app.base.storable_text import find_unstorable


class CommaSeparatedField(forms.CharField):
    """A list of names typed as ``a, b, c`` (hooks, tags, included providers)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return ", ".join(str(v) for v in value)
        return value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        if isinstance(value, list | tuple):
            return [str(v) for v in value]
        text = super().to_python(value) or ""
        return [item.strip() for item in text.split(",") if item.strip()]

    def has_changed(self, initial: Any, data: Any) -> bool:
        return self.to_python(initial or []) != self.to_python(data)


class LinesField(forms.CharField):
    """A list of short texts typed one per line (feedback reasons: they may hold commas)."""

    widget = forms.Textarea(attrs={"rows": 3})

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return "\n".join(str(v) for v in value)
        return value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        if isinstance(value, list | tuple):
            return [str(v) for v in value]
        text = super().to_python(value) or ""
        return [line.strip() for line in text.splitlines() if line.strip()]

    def has_changed(self, initial: Any, data: Any) -> bool:
        return self.to_python(initial or []) != self.to_python(data)


class PrettyJSONField(forms.JSONField):
    """JSON in a textarea, shown indented, with a parse error that says where the mistake is."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 8, "class": "studio-code"}))
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        if value is None:  # not set: an empty box, not the word "null"
            return ""
        return json.dumps(value, ensure_ascii=False, indent=2)

    def bound_data(self, data: Any, initial: Any) -> Any:
        # Shown again as typed when it cannot be stored: re-encoding a parsed lone
        # surrogate into the page would fail (a 500 instead of the form's error).
        value = super().bound_data(data, initial)
        if find_unstorable(value):
            return forms.fields.InvalidJSONInput(data)
        return value

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and value.strip():
            try:
                parsed = json.loads(value, parse_constant=_no_constants)
            except json.JSONDecodeError as exc:
                raise ValidationError(
                    "This is not valid JSON: %(msg)s (line %(line)s, column %(col)s, at %(at)s).",
                    code="invalid",
                    params={
                        "msg": json_mistake(exc.msg),
                        "line": exc.lineno,
                        "col": exc.colno,
                        "at": _excerpt(value, exc.pos),
                    },
                ) from exc
            except ValueError as exc:
                raise ValidationError(str(exc), code="invalid") from exc
            # "\ud800" or "\u0000" escapes parse, but PostgreSQL cannot store the result.
            found = find_unstorable(parsed)
            if found:
                where, reason = found
                raise ValidationError(f"{reason} (at {where or 'the top level'}).", code="invalid")
        return super().to_python(value)


# The json module's messages, in words a person who does not write JSON can act on.
_MISTAKES = {
    "Expecting ',' delimiter": "a comma is missing between two items",
    "Expecting ':' delimiter": 'a colon is missing after a name (write "name": value)',
    "Expecting property name enclosed in double quotes": (
        'a name must be in double quotes, or there is a comma too many before "}"'
    ),
    "Expecting value": "a value is missing (text goes in double quotes)",
    "Unterminated string starting at": "a text is not closed with a double quote",
    "Extra data": "there is more after the end (only one value is allowed)",
    "Invalid control character at": "a text holds a line break; write \\n instead",
}


def json_mistake(message: str) -> str:
    """The json module's parse error ``message`` in plain words."""
    return next((words for key, words in _MISTAKES.items() if message.startswith(key)), message)


def _excerpt(text: str, pos: int) -> str:
    """A few characters around ``pos``, with ⟨here⟩ marking the place."""
    start = max(0, pos - 15)
    before, after = text[start:pos], text[pos : pos + 15]
    return f"“{'…' if start else ''}{before}⟨here⟩{after}{'…' if pos + 15 < len(text) else ''}”"


def _no_constants(name: str) -> Any:
    # Python reads NaN and Infinity, but they are not JSON and PostgreSQL refuses to store them.
    raise ValueError(f"{name} is not allowed in JSON; write a number or a string instead.")


class KeyValueLinesField(forms.CharField):
    """A flat ``{NAME: value}`` map typed one ``NAME=value`` per line (plain text, no secrets)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 2}))
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return "\n".join(f"{k}={v}" for k, v in value.items())
        return value

    def to_python(self, value: Any) -> dict[str, str] | None:  # type: ignore[override]
        if isinstance(value, dict):
            return value or None
        text = super().to_python(value) or ""
        out: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            key, sep, val = line.partition("=")
            if not sep or not key.strip():
                raise ValidationError(
                    "Line %(n)s: write each value as NAME=value.", params={"n": number}
                )
            out[key.strip()] = val.strip()
        return out or None

    def has_changed(self, initial: Any, data: Any) -> bool:
        try:
            return self.to_python(initial) != self.to_python(data)
        except ValidationError:
            return True


class DefaultYesNoSelect(forms.NullBooleanSelect):
    """Yes / No / the default, for settings where "not set" means "use the default"."""

    def __init__(self, default_label: str = "Default", attrs: dict[str, Any] | None = None):
        super().__init__(attrs)
        self.choices = [("unknown", default_label), ("true", "Yes"), ("false", "No")]


# One page's render: what its suggestion sources returned and which shared lists it wrote.
_page: ContextVar[dict[Any, Any] | None] = ContextVar("studio_suggestions_page", default=None)


@contextmanager
def one_page() -> Iterator[None]:
    """Within it, each suggestion source is read once and each shared ``<datalist>`` is
    written once: a prompt with twenty tool rows read every tool, prompt and agent name
    twenty times and sent the same list twenty times."""
    token = _page.set({})
    try:
        yield
    finally:
        _page.reset(token)


def rendered_as_one_page(view: Callable[[], HttpResponse]) -> HttpResponse:
    """``view()``'s response, rendered inside ``one_page`` (a template response renders
    after the view returns, outside any scope the view opened)."""
    with one_page():
        response = view()
        if isinstance(response, SimpleTemplateResponse):
            response.render()
    return response


def once_per_page(key: Any, make: Callable[[], Any]) -> Any:
    """``make()``, read once per ``one_page`` under ``key`` (every time outside one)."""
    page = _page.get()
    if page is None:
        return make()
    if key not in page:
        page[key] = make()
    return page[key]


class SuggestionsInput(forms.TextInput):
    """A text input with a ``<datalist>`` of known names; any other name may still be typed.

    ``suggestions`` is called at render time so the list is never stale (once per page
    inside ``one_page``). With ``shared_list`` every input of the kind points at one list,
    written with the first of them in a page (each writes its own outside ``one_page``).
    """

    def __init__(
        self,
        suggestions: Callable[[], Iterable[tuple[str, str]]],
        attrs: dict[str, Any] | None = None,
        shared_list: str | None = None,
    ):
        super().__init__(attrs)
        self.suggestions = suggestions
        self.shared_list = shared_list

    def render(
        self,
        name: str,
        value: Any,
        attrs: dict[str, Any] | None = None,
        renderer: Any = None,
    ) -> SafeString:
        list_id = self.shared_list or re.sub(
            r"[^A-Za-z0-9_-]", "_", f"{(attrs or {}).get('id') or name}_names"
        )
        attrs = {**(attrs or {}), "list": list_id, "autocomplete": "off"}
        box = super().render(name, value, attrs, renderer)
        page = _page.get()
        if self.shared_list and page is not None:
            written = page.setdefault("datalists written", set())
            if list_id in written:
                return box
            written.add(list_id)
        options = once_per_page(
            self.suggestions,
            lambda: format_html_join("", '<option value="{}">{}</option>', self.suggestions()),
        )
        return format_html('{}<datalist id="{}">{}</datalist>', box, list_id, options)


class PriceInput(forms.NumberInput):
    """A price in dollars as people write it: ``1.50``, ``0.075`` (never ``1.500000``, the
    column's six decimal places)."""

    def __init__(self) -> None:
        super().__init__(attrs={"step": "any", "min": "0", "class": "studio-price"})

    def format_value(self, value: Any) -> str | None:
        if value in (None, ""):
            return None
        try:
            amount = Decimal(str(value)).normalize()
            if int(amount.as_tuple().exponent) >= -2:
                amount = amount.quantize(Decimal("0.01"))
        except (ArithmeticError, ValueError):  # what was typed, shown back as typed
            return str(value)
        return f"{amount:f}"
