"""The studio's credential grant form: the API's ``PUT …/grants/{name}`` as a form.

One rule, two doors: ``clean`` asks ``services.users.grants.grant_check`` (what
``grant_put`` would refuse) and the admin saves with ``grant_put`` itself, so the studio
accepts exactly what the API accepts. Each refusal is shown under the field it is about.

The secret is write-only: a password input that never renders a value (not even one typed
into a form that failed), "leave empty to keep" on a stored grant. Who may use the grant is
chosen from what the code registry knows (tools, thread endpoints, user endpoints), plus
"any" (``"*"``) and any name stored before its code was deployed.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.contrib.auth import get_user_model

from agents_app.base.code_registry import get_registry
from agents_app.base.errors import Invalid
from agents_app.models import CredentialGrant
from agents_app.services.users import grants

KIND_CHOICES = [
    (
        "bearer",
        "Bearer token: sent as “Authorization: Bearer <secret>” (or in the header named below)",
    ),
    ("header", "Header: sent in the header named below, after the prefix if one is given"),
    ("query", "Query parameter: added to the URL as the parameter named below"),
    ("basic", "Basic auth: the username below with the secret as the password"),
]
# Form field → the ``inject`` key it sets.
INJECT_FIELDS = {
    "inject_header": "header",
    "inject_prefix": "prefix",
    "inject_param": "param",
    "inject_username": "username",
}
# Form field → the ``allow`` list it sets, and what "*" means there.
ALLOW_FIELDS = {
    "allow_tools": ("tools", "Any tool"),
    "allow_endpoints": ("endpoints", "Any thread endpoint"),
    "allow_user_endpoints": ("userEndpoints", "Any user endpoint"),
}
_INJECT_KEY = re.compile(r"^inject(?:\.(\w+)|: (\w+) is not|: .* needs (\w+))")
# "radiolist": the admin's class for choice lists, whose labels take their text's width
# (other labels in an aligned form are 160 px, which wraps every description).
CHOICES = {"class": "radiolist"}
NOT_REGISTERED = " (not registered: its code is not loaded)"


def registered_callers(kind: str) -> dict[str, str]:
    """The names a grant's ``allow.<kind>`` can hold, each with a line saying what it is,
    as the code registry knows them (the names ``state.fetch`` asks with)."""
    registry = get_registry()
    if kind == "tools":
        return {name: tool.description for name, tool in sorted(registry.tools.items())}
    if kind == "endpoints":
        return {
            e.name: f"{e.method or 'GET'} /api/threads/<id>{e.route or '/' + e.name}"
            for e in sorted(registry.endpoints.values(), key=lambda e: e.name)
        }
    out: dict[str, str] = {}
    for e in registry.user_endpoints.values():
        route = e.route or "/" + e.name
        out[route.lstrip("/")] = f"{e.method or 'GET'} /api/users/me{route}"
    return dict(sorted(out.items()))


def _choices(kind: str, anyone: str, stored: list[str]) -> list[tuple[str, str]]:
    known = registered_callers(kind)
    choices = [("*", f"{anyone} (*)")]
    for name, said in known.items():
        choices.append((name, f"{name}: {said}" if said else name))
    choices += [
        (name, name + NOT_REGISTERED) for name in stored if name != "*" and name not in known
    ]
    return choices


def _lines(text: str) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


class CredentialGrantForm(forms.ModelForm):
    """Owner, name, kind, the secret, where it may go, how it is sent and who may use it."""

    kind = forms.ChoiceField(
        choices=KIND_CHOICES, widget=forms.RadioSelect(attrs=CHOICES), label="Kind"
    )
    secret = forms.CharField(
        required=False,
        strip=False,
        max_length=grants.SECRET_MAX,
        label="Secret",
        widget=forms.PasswordInput(
            render_value=False, attrs={"autocomplete": "new-password", "class": "vTextField"}
        ),
    )
    origins = forms.CharField(
        label="Origins",
        widget=forms.Textarea(attrs={"rows": 3, "class": "vLargeTextField"}),
        help_text="One per line, as scheme://host[:port] (https://api.crm.example). The "
        "secret is sent only there; redirects are not followed.",
    )
    inject_header = forms.CharField(
        required=False,
        max_length=128,
        label="Header name",
        help_text="Header and bearer kinds: the header that carries it (bearer: Authorization "
        "when empty).",
    )
    inject_prefix = forms.CharField(
        required=False,
        strip=False,
        max_length=200,
        label="Prefix",
        help_text="Header kind only: text put before the secret (for example “Token ”).",
    )
    inject_param = forms.CharField(
        required=False, max_length=128, label="Query parameter", help_text="Query kind only."
    )
    inject_username = forms.CharField(
        required=False, max_length=200, label="Username", help_text="Basic kind only."
    )
    allow_tools = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple(attrs=CHOICES),
        label="Tools",
    )
    allow_endpoints = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple(attrs=CHOICES),
        label="Thread endpoints",
    )
    allow_user_endpoints = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple(attrs=CHOICES),
        label="User endpoints",
    )

    class Meta:
        model = CredentialGrant
        fields = ["user", "name", "kind"]
        labels = {"user": "Belongs to", "name": "Name"}
        help_texts = {
            "name": 'The name code asks for: state.fetch("crm", url). 1 to 64 letters, '
            "digits, '_', '.' or '-'.",
            "user": "A person's grant is used by their threads and user endpoints; leave empty "
            "for the instance's, used when the thread's owner has none of that name.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        stored = self.instance.config or {}
        allow = stored.get("allow") or {}
        inject = stored.get("inject") or {}
        # A view-only page leaves some fields out (the admin's read-only fields).
        for field, (kind, anyone) in ALLOW_FIELDS.items():
            choice = self.fields.get(field)
            if isinstance(choice, forms.MultipleChoiceField):
                choice.choices = _choices(kind, anyone, list(allow.get(kind, [])))
                choice.initial = list(allow.get(kind, []))
        owner = self.fields.get("user")
        if isinstance(owner, forms.ModelChoiceField):
            owner.queryset = get_user_model()._default_manager.order_by("username")
            owner.empty_label = "The instance (everyone's threads)"
        if not self.instance.pk:
            self._help("secret", "The credential itself. It is kept encrypted, never shown again.")
            return
        self._help(
            "secret",
            "Leave empty to keep the stored secret (it is never shown). Changing the kind, the "
            "origins or how it is sent needs the secret again.",
        )
        if "origins" in self.fields:
            self.fields["origins"].initial = "\n".join(stored.get("origins", []))
        for field, key in INJECT_FIELDS.items():
            if field in self.fields:
                self.fields[field].initial = inject.get(key, "")

    def _help(self, field: str, text: str) -> None:
        if field in self.fields:
            self.fields[field].help_text = text

    # --- what the form means, as the API's body ---------------------------------------------

    def _owner_and_name(self) -> tuple[int | None, str]:
        cd = self.cleaned_data
        user = cd.get("user") if "user" in self.fields else self.instance.user
        name = cd.get("name") if "name" in self.fields else self.instance.name
        return (user.pk if user is not None else None), name or ""

    def grant_settings(self) -> dict[str, Any]:
        """The API's body without ``kind`` and ``secret`` (metadata kept as stored)."""
        cd = self.cleaned_data
        allow = {kind: list(cd.get(field) or []) for field, (kind, _) in ALLOW_FIELDS.items()}
        stored = self.instance.config or {}
        return {
            "origins": _lines(cd.get("origins", "")),
            "inject": {key: cd[f] for f, key in INJECT_FIELDS.items() if cd.get(f)},
            # Nothing ticked: nobody may use it (the API's absent ``allow``).
            "allow": allow if any(allow.values()) else None,
            "metadata": stored.get("metadata") or {},
        }

    def grant_put_arguments(self) -> dict[str, Any]:
        user_id, name = self._owner_and_name()
        return {
            "user_id": user_id,
            "name": name,
            "kind": self.cleaned_data["kind"],
            "secret": self.cleaned_data.get("secret") or None,
            "settings": self.grant_settings(),
        }

    # --- checking ----------------------------------------------------------------------------

    def clean(self) -> dict[str, Any]:
        super().clean()
        if self.errors:
            return self.cleaned_data
        arguments = self.grant_put_arguments()
        if self.instance.pk is None and (
            CredentialGrant.objects.filter(
                user_id=arguments["user_id"], name=arguments["name"]
            ).exists()
        ):
            owner = self.cleaned_data.get("user") or "The instance"
            self.add_error(
                "name", f"{owner} already has a grant named {arguments['name']}; change that one."
            )
            return self.cleaned_data
        try:
            grants.grant_check(**arguments)
        except Invalid as exc:
            self.add_error(_field_of(exc.message, self.fields), exc.message)
        return self.cleaned_data

    def _get_validation_exclusions(self) -> set[str]:
        # ``clean`` checks a name once per owner, in words; the model's conditional unique
        # constraints would repeat it as "Constraint … is violated". (Django's own hook, absent
        # from django-stubs.)
        excluded: set[str] = super()._get_validation_exclusions()  # type: ignore[misc]
        return {*excluded, "user", "name"}


def _field_of(message: str, fields: dict[str, Any]) -> str | None:
    """The field a service refusal is about (``None``: the form as a whole)."""
    head = message.removeprefix("Invalid grant: ")
    if head.startswith("Invalid grant name"):
        return "name" if "name" in fields else None
    for prefix, field in (("secret", "secret"), ("kind", "kind"), ("origins", "origins")):
        if head.startswith(prefix):
            return field
    if head.startswith("inject"):
        # "inject.header: …", "inject: param is not a setting …", "inject: … needs username."
        said = _INJECT_KEY.search(head)
        key = next((k for k in said.groups() if k), None) if said else None
        return next((f for f, k in INJECT_FIELDS.items() if k == key), None)
    if head.startswith("allow"):
        for field, (kind, _) in ALLOW_FIELDS.items():
            if head.startswith(f"allow.{kind}"):
                return field
    return None
