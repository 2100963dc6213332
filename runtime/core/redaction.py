"""Redaction by value: every secret env value the thread can resolve, in every form we store.

The engine may *send* a secret (prompt env parts inline secrets into the system
prompt that goes to the provider), but nothing it *keeps or shows* may contain
one: messages, logs, event frames, streamed chunks, error texts. A
``Redactor`` replaces each secret, and its common encodings, with
``[REDACTED:NAME]``:

- the raw value;
- base64 (standard and URL-safe alphabets, with and without ``=`` padding),
  also when the secret sits inside a longer base64 text at any byte offset;
- URL-encoding (``quote`` and ``quote_plus``);
- the JSON-escaped form (``json.dumps(value)[1:-1]``, ASCII and non-ASCII).

Secrets shorter than ``MIN_SECRET_LENGTH`` (4) characters are ignored: they
would match ordinary text everywhere and redact nothing useful.

A secret learned with an empty name is replaced with a bare ``[REDACTED]``. The
store does that for values the thread's users do not own (instance, agent and
prompt tiers): anyone can echo a guess into a thread, so a named marker would
tell them the name of the operator's secret their guess matched. A form known
under a name and without one keeps the name (the caller's own secret wins).

Streamed deltas go through ``StreamRedactor``, which holds back the last
``longest variant - 1`` characters so a secret split across chunks is caught.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import urllib.parse
from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any

MIN_SECRET_LENGTH = 4
_MIN_B64_FRAGMENT = 8  # shorter base64 fragments would match unrelated text

current_redactor: ContextVar[Redactor | None] = ContextVar("current_redactor", default=None)


def marker(name: str) -> str:
    """What a secret named ``name`` is replaced with (``[REDACTED]`` for an empty name)."""
    return f"[REDACTED:{name}]" if name else "[REDACTED]"


def _b64_forms(raw: bytes) -> set[str]:
    forms: set[str] = set()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        full = encode(raw).decode("ascii")
        forms.update({full, full.rstrip("=")})
        # The secret inside a longer base64 text starts at byte offset 1 or 2 of a
        # 3-byte group: only the characters of whole groups of secret bytes are fixed.
        for shift in (1, 2):
            shifted = encode(b"\0" * shift + raw).decode("ascii").rstrip("=")
            whole = (shift + len(raw)) // 3 * 4
            middle = shifted[4:whole]
            if len(middle) >= _MIN_B64_FRAGMENT:
                forms.add(middle)
        stable = full[: len(raw) // 3 * 4]
        if len(stable) >= _MIN_B64_FRAGMENT:
            forms.add(stable)
    return forms


def variants(value: str) -> set[str]:
    """Every form of ``value`` that is redacted (empty for too-short values)."""
    if len(value) < MIN_SECRET_LENGTH:
        return set()
    forms = {value, urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value)}
    forms.add(json.dumps(value)[1:-1])
    forms.add(json.dumps(value, ensure_ascii=False)[1:-1])
    forms |= _b64_forms(value.encode("utf-8"))
    return {f for f in forms if len(f) >= MIN_SECRET_LENGTH}


class Redactor:
    """Replaces known secret values (and their encodings) with ``[REDACTED:NAME]``."""

    def __init__(self, secrets: Iterable[tuple[str, str]] = ()) -> None:
        self._names: dict[str, str] = {}
        self._pattern: re.Pattern[str] | None = None
        self.longest = 0
        self.add(secrets)

    def add(self, secrets: Iterable[tuple[str, str]]) -> None:
        """Learn more ``(name, value)`` secrets (e.g. after ``state.set_env``); an empty name
        marks without naming (see the module doc)."""
        changed = False
        for name, value in secrets:
            for form in variants(value):
                known = self._names.get(form)
                if known is None:
                    changed = True
                if known is None or (name and not known):
                    self._names[form] = name
        if changed:
            # Longest first, so a longer form wins over a shorter one it contains.
            ordered = sorted(self._names, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(f) for f in ordered))
            self.longest = len(ordered[0])

    def __bool__(self) -> bool:
        return self._pattern is not None

    def _replace(self, match: re.Match[str]) -> str:
        return marker(self._names[match.group(0)])

    def text(self, value: str) -> str:
        """``value`` with every secret form replaced."""
        if self._pattern is None or not value:
            return value
        return self._pattern.sub(self._replace, value)

    def data(self, value: Any) -> Any:
        """A redacted copy of a JSON-like value (strings in dicts, lists and tuples; keys too)."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.data(k): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.data(v) for v in value)
        return value

    def contains(self, value: str) -> bool:
        """Whether ``value`` holds any secret form."""
        return self._pattern is not None and self._pattern.search(value) is not None

    def stream(self) -> StreamRedactor:
        """A redactor for one stream of deltas."""
        return StreamRedactor(self)


class StreamRedactor:
    """Redacts a text that arrives in pieces; ``feed`` each delta, then ``flush`` at the end.

    A secret may be split across deltas, so the last ``longest - 1`` characters
    are held back until the next delta (or ``flush``) shows how they continue.
    """

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self._buffer = ""

    def feed(self, delta: str) -> str:
        """What of the text so far can be shown now (possibly ``''``)."""
        pattern = self.redactor._pattern
        if pattern is None:
            return delta
        self._buffer += delta
        cut = len(self._buffer) - (self.redactor.longest - 1)
        if cut <= 0:
            return ""
        out: list[str] = []
        pos = 0
        for match in pattern.finditer(self._buffer):
            if match.start() >= cut:
                break
            out.append(self._buffer[pos : match.start()])
            out.append(marker(self.redactor._names[match.group(0)]))
            pos = match.end()
        cut = max(cut, pos)
        out.append(self._buffer[pos:cut])
        self._buffer = self._buffer[cut:]
        return "".join(out)

    def flush(self) -> str:
        """The held-back rest of the text, redacted."""
        rest, self._buffer = self._buffer, ""
        return self.redactor.text(rest)


def redact_text(value: str) -> str:
    """``value`` redacted with the redactor of the current session (if any)."""
    redactor = current_redactor.get()
    return redactor.text(value) if redactor is not None else value


class RedactingLogFilter(logging.Filter):
    """Redacts log records (message and traceback) with the current session's redactor.

    The redactor is found through a context variable that ``Recorder.ready``
    sets, so it covers whatever the session's task (and tasks it starts) logs.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        redactor = current_redactor.get()
        if not redactor:
            return True
        message = record.getMessage()
        redacted = redactor.text(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redactor.text(record.exc_text)
        return True


LOG_FILTER = RedactingLogFilter()


def install_log_filter(logger: logging.Logger) -> None:
    """Redact what ``logger`` and its children log (idempotent).

    Logger filters only see records logged on that very logger, so the filter
    goes on the handlers that exist when called and on the engine's loggers.
    """
    for name in (
        "runtime.loop.session",
        "runtime.tools.hooks",
        "runtime.tools.toolset",
        "runtime.step.prompting",
    ):
        child = logging.getLogger(name)
        if LOG_FILTER not in child.filters:
            child.addFilter(LOG_FILTER)
    if LOG_FILTER not in logger.filters:
        logger.addFilter(LOG_FILTER)
