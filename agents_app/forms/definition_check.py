"""Validate a whole definition (form fields plus inline rows) and put each error where it belongs.

Validation itself lives in ``agents_app.services.definitions.rows`` (and ``runtime.definitions.validation``);
this module only builds the definition from form input and routes every
``DefinitionError`` (spec camelCase paths such as ``sideA.maxSteps``, ``tools.2``,
``prompt.0.prompt``) to the field or inline row it is about.

Why the parent form validates its inlines: Django admin validates the parent form
before its inline formsets and hands each formset only the parent *instance*.
A definition's rows (prompt parts, tools, fallbacks) are part of the definition,
so each ``DefinitionRowsFormSet`` announces itself on that shared instance and the
parent form's ``clean()`` validates everything at once. An error on any row makes
its formset invalid, so the admin saves nothing (it saves only when the form and
every formset are valid, inside one transaction).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

from django import forms
from django.db.models import Model
from django.forms.models import BaseInlineFormSet, BaseModelFormSet
from pydantic import BaseModel

from agents_app.services.definitions.rows import AnyDefinition, build_catalog, validate_definition
from runtime.core.spec import ModelDefinition, PromptDefinition
from runtime.definitions.validation import Catalog, DefinitionError, parse

_ROWS_ATTR = "_studio_definition_rows"


def rows_of(instance: Model) -> dict[str, DefinitionRowsFormSet]:
    """The definition formsets bound to this (parent) instance in the current request."""
    registry: dict[str, DefinitionRowsFormSet] = instance.__dict__.setdefault(_ROWS_ATTR, {})
    return registry


def camel_to_field(path: str) -> str:
    """``sideA.maxSteps`` → ``side_a_max_steps`` (form field names follow the columns)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", path.replace(".", "_")).lower()


class OrderedRowForm(forms.ModelForm):
    """A row with an editable 1-based "Order"; the stored ``position`` is renumbered on save."""

    order = forms.IntegerField(
        required=False,
        min_value=1,
        label="Order",
        help_text="Rows are used in this order. Leave empty to keep a row where it is.",
        widget=forms.NumberInput(attrs={"class": "studio-order"}),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.fields["order"].initial = self.instance.position + 1


class DefinitionRowsFormSet(BaseInlineFormSet):
    """Inline rows that belong to the parent's definition (see the module docstring)."""

    role: ClassVar[str] = ""
    ordered: ClassVar[bool] = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        rows_of(self.instance)[self.role] = self

    def rows(self) -> list[forms.ModelForm]:
        """Rows that will exist after saving, in the order they will have.

        Rows with an Order come first by that number; on a tie, the row whose Order
        was just typed wins (typing 1 moves a row to the top); rows without one keep
        their place at the end.
        """
        live: list[tuple[int, forms.ModelForm]] = [
            (i, f)
            for i, f in enumerate(cast(list[forms.ModelForm], self.forms))
            if f.cleaned_data and not (self.can_delete and f.cleaned_data.get("DELETE"))
        ]
        if not self.ordered:
            return [f for _, f in live]

        def key(item: tuple[int, forms.ModelForm]) -> tuple[bool, int, bool, int]:
            i, f = item
            order = f.cleaned_data.get("order")
            return (order is None, order or 0, "order" not in f.changed_data, i)

        return [f for _, f in sorted(live, key=key)]

    def save(self, commit: bool = True) -> list[Any]:
        if self.ordered:
            for position, form in enumerate(self.rows()):
                if form.instance.pk is None or form.instance.position != position:
                    form.instance.position = position
                    if "order" not in form.changed_data:
                        # Make the formset save this row even if nothing else changed.
                        form.changed_data.append("order")
        return super().save(commit)


def release_unique_values(formset: BaseModelFormSet, field: str) -> None:
    """Let rows swap the values of a unique field (fallback model, env name) in one save.

    Django saves changed rows one at a time, so a swap would briefly hold one value
    twice and break the unique constraint. The changed rows are deleted first; saving
    them then inserts them again under the same id (the UPDATE finds no row). Call it
    inside the admin's transaction, right before the formset saves.
    """
    changed = [
        form.instance.pk
        for form in formset.initial_forms
        if form.instance.pk is not None
        and field in form.changed_data
        and not (formset.can_delete and form.cleaned_data.get("DELETE"))
    ]
    if changed:
        type(formset.initial_forms[0].instance)._default_manager.filter(pk__in=changed).delete()


@dataclass
class RowsTarget:
    """Where errors about one inline go: ``rows[i]`` is definition item ``i``."""

    formset: DefinitionRowsFormSet
    rows: list[forms.ModelForm]
    # Last path segment (camelCase) → row field, when the names differ.
    fields: Mapping[str, str] = field(default_factory=dict)
    # The field of a row an error about the whole item goes to (``tools.2`` → name).
    default_field: str | None = None


@dataclass
class ErrorRoutes:
    """How a definition's error paths map onto one parent form and its inlines."""

    fields: Mapping[str, str] = field(default_factory=dict)
    rows: Mapping[str, RowsTarget] = field(default_factory=dict)
    # List-valued form fields whose errors name the item: ``script.1`` → "Script item 2: …".
    item_labels: Mapping[str, str] = field(default_factory=dict)


def _form_field(path: str, form: forms.BaseForm, overrides: Mapping[str, str]) -> str | None:
    segments = path.split(".")
    for n in range(len(segments), 0, -1):
        prefix = ".".join(segments[:n])
        if prefix in overrides:
            return overrides[prefix]
        if camel_to_field(prefix) in form.fields:
            return camel_to_field(prefix)
    return None


def _add_to_rows(target: RowsTarget, rest: list[str], message: str) -> None:
    if rest and rest[0].isdigit() and int(rest[0]) < len(target.rows):
        row = target.rows[int(rest[0])]
        leaf = rest[-1] if len(rest) > 1 else None
        name = (target.fields.get(leaf) or camel_to_field(leaf)) if leaf else target.default_field
        row.add_error(name if name in row.fields else None, message)
    else:
        target.formset.non_form_errors().append(message)


def route_errors(errors: list[DefinitionError], form: forms.BaseForm, routes: ErrorRoutes) -> None:
    """Attach each error to its field, inline row or (when nothing matches) the form itself."""
    for err in errors:
        head, *rest = err.path.split(".")
        if head in routes.rows:
            _add_to_rows(routes.rows[head], rest, err.message)
            continue
        message = err.message
        if head in routes.item_labels and rest and rest[0].isdigit():
            message = f"{routes.item_labels[head]} {int(rest[0]) + 1}: {message}"
        name = _form_field(err.path, form, routes.fields) if err.path else None
        form.add_error(name if name in form.fields else None, message)


def _rename(names: set[str], edges: dict[str, list[str]], old: str, new: str) -> None:
    names.discard(old)
    names.add(new)
    edges.pop(old, None)
    for targets in edges.values():
        targets[:] = [new if t == old else t for t in targets]


def catalog_for(defn: AnyDefinition, renamed_from: str | None) -> Catalog:
    """``build_catalog([defn])``, seen as if a rename in this form had already happened.

    The database still knows the edited row by its old name, and its include or
    fallback edges point to that name; without this, a rename could hide a cycle.
    """
    catalog = build_catalog([defn])
    if renamed_from and renamed_from != defn.name:
        if isinstance(defn, PromptDefinition):
            _rename(catalog.prompts, catalog.prompt_includes, renamed_from, defn.name)
        elif isinstance(defn, ModelDefinition):
            _rename(catalog.models, catalog.model_fallbacks, renamed_from, defn.name)
        else:
            catalog.agents.discard(renamed_from)
    return catalog


class DefinitionForm(forms.ModelForm):
    """A parent form that validates its whole definition in ``clean()``.

    Subclasses say which definition they build (``definition_model``), how
    (``definition_data``: camelCase, like a definition file) and where errors go
    (``error_routes``). Field-level problems (a required field left empty, a
    number that is not a number) are reported first; the definition rules run
    once the form and its rows are well-formed.
    """

    definition_model: ClassVar[type[BaseModel]]

    # Not a column: the note of the version this save records (services.definitions.versions).
    change_note = forms.CharField(
        label="Change note",
        required=False,
        max_length=500,
        help_text="Optional: what you changed and why, shown in this definition's history.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.original_name: str | None = self.instance.name if self.instance.pk else None
        self.definition: Any = None

    def definition_data(self, rows: Mapping[str, DefinitionRowsFormSet]) -> dict[str, Any]:
        raise NotImplementedError

    def error_routes(self, rows: Mapping[str, DefinitionRowsFormSet]) -> ErrorRoutes:
        return ErrorRoutes()

    def extra_errors(self, rows: Mapping[str, DefinitionRowsFormSet]) -> list[DefinitionError]:
        """Errors about how the form was filled in that a definition cannot express."""
        return []

    def locate_errors(
        self, errors: list[DefinitionError], defn: Any, catalog: Catalog
    ) -> list[DefinitionError]:
        """Point errors about the whole definition at the rows that cause them."""
        return errors

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        rows = rows_of(self.instance)
        if self.errors or not all(fs.is_valid() for fs in rows.values()):
            return cleaned
        defn, errors = parse(self.definition_model, self.definition_data(rows))
        if defn is not None:
            catalog = catalog_for(defn, self.original_name)  # type: ignore[arg-type]
            errors = self.locate_errors(validate_definition(defn, catalog), defn, catalog)  # type: ignore[arg-type]
        errors = self.extra_errors(rows) + errors
        route_errors(errors, self, self.error_routes(rows))
        self.definition = defn if not errors else None
        return cleaned


def row_data(form: forms.BaseForm, name: str, default: Any = None) -> Any:
    value = form.cleaned_data.get(name, default)
    return default if value in (None, "") else value


def without_none(data: dict[str, Any]) -> dict[str, Any]:
    """Leave unset optional properties out, as a definition file would."""
    return {k: v for k, v in data.items() if v is not None}
