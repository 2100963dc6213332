"""Env value forms. A value is written through the form and a secret is never read back.

The input is a separate form field (``value_input``), never the model's ``value``
property: Django renders read-only fields by looking the name up on the object,
and ``EnvValue.value`` would hand it the decrypted plaintext.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, cast

from django import forms
from django.contrib.auth import get_user_model
from django.forms.models import BaseInlineFormSet

from agents_app.base.encryption import DecryptionError
from agents_app.models import EnvValue

SECRET = EnvValue.Type.SECRET
TEXT = EnvValue.Type.TEXT
TYPE_CHOICES = [
    (SECRET, "Secret: write-only, never shown again"),
    (TEXT, "Text: shown to admins"),
]
_KEY_RE = re.compile(r"^\S+$")


class EnvValueForm(forms.ModelForm):
    """Key, type and a write-only value. Leaving the value empty keeps a stored secret."""

    value_input = forms.CharField(required=False, strip=False, label="Value")

    class Meta:
        model = EnvValue
        fields = ["key", "value_type", "value_input"]
        labels = {"key": "Name", "value_type": "Type"}
        help_texts = {"key": "The name tools and prompts use, for example WEATHER_API_KEY."}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "value_type" in self.fields:
            cast(forms.ChoiceField, self.fields["value_type"]).choices = TYPE_CHOICES
        field = self.fields.get("value_input")
        if field is None:  # a view-only page: the admin shows "set" / "not set" instead
            return
        if self._shows_stored_text():
            field.widget = forms.TextInput(attrs={"autocomplete": "off", "class": "vTextField"})
            field.initial = self._stored_text()
            field.help_text = "Text values are shown; what you type replaces the value."
        else:
            # render_value=False: not even a value typed into a form that failed validation
            # comes back in the page.
            field.widget = forms.PasswordInput(
                render_value=False, attrs={"autocomplete": "new-password", "class": "vTextField"}
            )
            field.help_text = (
                "Leave empty to keep the stored value. Secrets are never shown again."
                if self.instance.pk
                else "What you type is hidden. Text values are shown after saving."
            )

    def _shows_stored_text(self) -> bool:
        if self.instance.pk is None or self.instance.value_type != TEXT:
            return False
        # A text value being switched to secret in this very submission is not echoed back.
        posted = self.data.get(self.add_prefix("value_type")) if self.is_bound else None
        return posted in (None, TEXT)

    def _stored_text(self) -> str:
        try:
            return self.instance.value
        except DecryptionError:
            return ""

    def clean_key(self) -> str:
        key = (self.cleaned_data.get("key") or "").strip()
        if key and not _KEY_RE.match(key):
            raise forms.ValidationError(
                "A name cannot contain spaces. Use something like WEATHER_API_KEY."
            )
        return key

    def clean(self) -> dict[str, Any]:
        super().clean()
        cd = self.cleaned_data
        typed = cd.get("value_input") or ""
        kind = cd.get("value_type")
        was_secret = self.instance.pk is not None and self.instance.value_type == SECRET
        if kind == SECRET and not typed and not self.instance.ciphertext:
            self.add_error("value_input", "Enter the secret's value.")
        elif kind == TEXT and was_secret and not typed:
            # Flipping the type must not reveal a secret: the value is typed again instead.
            self.add_error(
                "value_input",
                "Secrets are never shown, so to make this a text value type the value again.",
            )
        return cd

    def save(self, commit: bool = True) -> Any:
        typed = self.cleaned_data.get("value_input") or ""
        keeps_secret = self.cleaned_data.get("value_type") == SECRET and not typed
        if not keeps_secret and (self.instance.pk is None or "value_input" in self.changed_data):
            self.instance.value = typed
        return super().save(commit)


class ScopedEnvValueForm(EnvValueForm):
    """A row of an env inline (on a prompt, agent or user page): the scope is fixed."""

    scope: ClassVar[str]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.instance.scope = self.scope


class PromptEnvValueForm(ScopedEnvValueForm):
    scope = EnvValue.Scope.PROMPT


class AgentEnvValueForm(ScopedEnvValueForm):
    scope = EnvValue.Scope.AGENT


class UserEnvValueForm(ScopedEnvValueForm):
    scope = EnvValue.Scope.USER


class EnvValueFormSet(BaseInlineFormSet):
    """An owner's env values: every name once (the inline holds all of that owner's rows)."""

    def clean(self) -> None:
        super().clean()
        seen: set[str] = set()
        for form in self.forms:
            cd = getattr(form, "cleaned_data", None) or {}
            if not cd or (self.can_delete and cd.get("DELETE")):
                continue
            key = cd.get("key")
            if key in seen:
                form.add_error("key", f"{key} is already set above; each name is used once.")
            elif key:
                seen.add(key)


class EnvValueAdminForm(EnvValueForm):
    """The env values page: instance values (everyone) and user values (one person)."""

    scope = forms.ChoiceField(
        label="Applies to",
        choices=[
            (EnvValue.Scope.INSTANCE, "Instance: everyone"),
            (EnvValue.Scope.USER, "User: one person"),
        ],
        help_text="A thread uses, in order, its own value, its agent's, its prompt's, its "
        "owner's user value, then the instance value.",
    )

    class Meta(EnvValueForm.Meta):
        fields = ["scope", "user", "key", "value_type", "value_input"]
        help_texts = {
            **EnvValueForm.Meta.help_texts,
            "user": "For a user value: whose value it is.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "user" in self.fields:
            users = cast(forms.ModelChoiceField, self.fields["user"])
            users.queryset = get_user_model().objects.order_by("username")

    def _owner(self, scope: str) -> dict[str, Any]:
        if scope == EnvValue.Scope.INSTANCE:
            return {}
        owner = "user" if scope == EnvValue.Scope.USER else scope
        if owner == "user" and "user" in self.fields:
            return {"user": self.cleaned_data.get("user")}
        return {owner: getattr(self.instance, owner)}

    def clean(self) -> dict[str, Any]:
        cd = super().clean()
        scope = cd.get("scope") or self.instance.scope
        if not scope:  # the scope field already says what is wrong
            return cd
        if "user" in self.fields:
            if scope == EnvValue.Scope.USER and not cd.get("user"):
                self.add_error("user", "Choose whose value this is.")
            elif scope == EnvValue.Scope.INSTANCE and cd.get("user"):
                self.add_error("user", "An instance value applies to everyone: leave this empty.")
        key = cd.get("key")
        if key and not self.has_error("user"):
            owner = self._owner(scope)
            taken = EnvValue.objects.filter(scope=scope, key=key, **owner)
            if taken.exclude(pk=self.instance.pk).exists():
                whose = "".join(f" for {o}" for o in owner.values())
                self.add_error(
                    "key", f"A value named {key} already exists{whose}. Edit that one instead."
                )
        return cd
