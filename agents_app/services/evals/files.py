"""Eval datasets as files (docs/observability.md, "Dataset files"): a repository keeps its
cases in a JSON file, CI imports it into a fresh database and runs it (``manage.py run_eval
--dataset-file``), and the studio downloads and uploads the same file.

JSON, not YAML: the server reads it with the standard library (PyYAML is only a development
tool here), and JSON is what the API already speaks. The file::

    {"format": "standard-agents/eval-dataset", "version": 1,
     "name": "support-set", "description": "…",
     "cases": [{"name": "…", "messages": [{"role": "user", "content": "…"}],
                "checks": [{"type": "contains", "text": "…"}], "env": {…}, "notes": "…"}]}

or the same as JSON Lines (``file_lines``: the head on the first line, a case a line); a
reader takes either, told apart by the first line.

Importing a file over an existing dataset of the same name makes the dataset what the file
says: cases are matched by name (updated in place, so earlier runs keep their results),
new ones are added and the ones the file no longer has are deleted."""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction

from agents_app.base.errors import Invalid
from agents_app.base.storable_text import describe_unstorable, find_unstorable
from agents_app.models import EvalCase, EvalDataset
from agents_app.services.evals import file_lines
from agents_app.services.evals.words import check_problems, env_problems, message_problems

FORMAT = "standard-agents/eval-dataset"
VERSION = 1
CASE_KEYS = {"name", "messages", "checks", "env", "notes"}
# A file is read whole; this bounds what one upload or one CI step can make the server hold.
MAX_BYTES = 20 * 2**20


def dataset_data(dataset: EvalDataset) -> dict[str, Any]:
    """The dataset as the file holds it (cases in their order)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "name": dataset.name,
        "description": dataset.description,
        "cases": [
            {
                "name": case.name,
                "messages": case.messages,
                "checks": case.checks,
                **({"env": case.env} if case.env else {}),
                **({"notes": case.notes} if case.notes else {}),
            }
            for case in dataset.cases.order_by("id")
        ],
    }


def dataset_text(dataset: EvalDataset) -> str:
    return json.dumps(dataset_data(dataset), ensure_ascii=False, indent=2) + "\n"


def dataset_lines(dataset: EvalDataset) -> str:
    """The dataset as JSON Lines: the head, then a case a line."""
    return file_lines.to_lines(dataset_data(dataset))


def file_name(dataset: EvalDataset, suffix: str = "json") -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in dataset.name)
    return f"{safe or 'dataset'}.eval.{suffix}"


def read_file(raw: bytes | str) -> dict[str, Any]:
    """A dataset file's content, checked: ``Invalid`` naming the case and the check."""
    if len(raw) > MAX_BYTES:
        raise Invalid(f"The file is larger than {MAX_BYTES // 2**20} MiB.")
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        data = (
            file_lines.from_lines(text) if file_lines.looks_like_lines(text) else json.loads(text)
        )
    except (ValueError, UnicodeDecodeError) as exc:
        # The decoder's own words ("Expecting value: line 1 column 25 (char 24)") repeat
        # the place in a programmer's terms; a person needs the place and what was wrong.
        if isinstance(exc, json.JSONDecodeError):
            raise Invalid(
                f"This is not a JSON dataset file (line {exc.lineno}, column {exc.colno}): "
                f"{_json_reason(exc.msg)}."
            ) from None
        if isinstance(exc, UnicodeDecodeError):
            raise Invalid("This is not a JSON dataset file: it is not UTF-8 text.") from None
        raise Invalid(f"This is not a JSON dataset file: {exc}") from None
    head = {k: v for k, v in data.items() if k != "cases"} if isinstance(data, dict) else data
    unstorable = find_unstorable(head)  # in a case, the case's check below names it
    if unstorable:
        raise Invalid(describe_unstorable(unstorable).replace("Invalid request", "The file", 1))
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise Invalid(f'This is not an eval dataset file: it needs "format": "{FORMAT}".')
    if data.get("version") != VERSION:
        raise Invalid(
            f"This dataset file is version {data.get('version')!r}; this server reads version {VERSION}."
        )
    name = data.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 128:
        raise Invalid('The file needs a "name": the dataset\'s name (at most 128 characters).')
    cases = data.get("cases")
    if not isinstance(cases, list) or not cases:
        raise Invalid('The file needs "cases": a list with at least one case.')
    problems: list[str] = []
    seen: set[str] = set()
    for number, case in enumerate(cases, start=1):
        problems += [f"Case {number}: {p}" for p in _case_problems(case, seen)]
    if problems:
        raise Invalid(" ".join(problems[:20]) + (" …" if len(problems) > 20 else ""))
    return data


def _case_problems(case: Any, seen: set[str]) -> list[str]:
    if not isinstance(case, dict):
        return ["a case is an object with a name, messages and checks."]
    extra = sorted(set(case) - CASE_KEYS)
    if extra:
        return [f"“{extra[0]}” is not part of a case (it has {', '.join(sorted(CASE_KEYS))})."]
    name = case.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        return ["it needs a name (at most 200 characters)."]
    label = f"(“{name}”)"
    if name in seen:
        return [f"{label} another case has the same name: names must differ."]
    seen.add(name)
    unstorable = find_unstorable(case)
    if unstorable:  # a NUL or a lone surrogate: PostgreSQL would refuse the row
        return [f"{label} {unstorable[1]} (at {unstorable[0] or 'the case'})."]
    found = message_problems(case.get("messages"))
    found += check_problems(case.get("checks", []))
    found += env_problems(case.get("env", {}))
    if not isinstance(case.get("notes", ""), str):
        found.append("the notes must be text.")
    return [f"{label} {p}" for p in found]


@transaction.atomic
def dataset_import(data: dict[str, Any]) -> tuple[EvalDataset, dict[str, int]]:
    """Make the dataset named in ``data`` (checked by ``read_file``) hold exactly its cases;
    the dataset and what changed (``added``, ``updated``, ``removed``)."""
    dataset, _ = EvalDataset.objects.select_for_update().get_or_create(name=data["name"].strip())
    description = data.get("description")
    if isinstance(description, str) and description != dataset.description:
        dataset.description = description
        dataset.save(update_fields=["description"])
    kept = {c.name: c for c in dataset.cases.all()}
    counts = {"added": 0, "updated": 0, "removed": 0}
    for item in data["cases"]:
        fields = {
            "messages": item["messages"],
            "checks": item.get("checks", []),
            "env": item.get("env") or {},
            "notes": item.get("notes", ""),
        }
        row = kept.pop(item["name"], None)
        if row is None:
            EvalCase.objects.create(dataset=dataset, name=item["name"], **fields)
            counts["added"] += 1
        elif any(getattr(row, k) != v for k, v in fields.items()):
            for key, value in fields.items():
                setattr(row, key, value)
            row.save(update_fields=list(fields))
            counts["updated"] += 1
    if kept:
        EvalCase.objects.filter(pk__in=[c.pk for c in kept.values()]).delete()
        counts["removed"] = len(kept)
    return dataset, counts


def import_text(raw: bytes | str) -> tuple[EvalDataset, dict[str, int]]:
    return dataset_import(read_file(raw))


def counts_text(counts: dict[str, int]) -> str:
    """ "2 cases added, 1 updated, none removed" """
    added, updated, removed = counts["added"], counts["updated"], counts["removed"]
    return (
        f"{added} case{'s' if added != 1 else ''} added, {updated or 'none'} updated, "
        f"{removed or 'none'} removed"
    )


def _json_reason(message: str) -> str:
    """The JSON decoder's reason in a person's words, where it has a common one."""
    known = {
        "Expecting value": "a value is missing or the file ends too soon",
        "Unterminated string starting at": "a text in quotes is not closed",
        "Expecting property name enclosed in double quotes": (
            "a name must be in double quotes (or a comma is one too many)"
        ),
        "Expecting ',' delimiter": "a comma is missing",
        "Expecting ':' delimiter": "a colon is missing after a name",
        "Extra data": "there is more after the end of the dataset",
    }
    return known.get(message, message[:1].lower() + message[1:])
