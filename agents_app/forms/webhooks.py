"""The webhook subscription form for people (issue #55): events are ticked from sentences,
the signing secret is picked from the env values' names (with a link to create one), and
every refusal is a sentence on its field instead of the API's ``field: reason``."""

from __future__ import annotations

from typing import Any

from django import forms
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from agents_app.base.errors import DomainError
from agents_app.models import EnvValue, WebhookSubscription
from agents_app.models.webhooks import EVENTS
from agents_app.services.automation import webhooks

# Each event as a person would name it, and when it is sent (docs/automation.md, "Webhooks").
EVENT_WORDS: dict[str, tuple[str, str]] = {
    "session.finished": (
        "The agent finished its turn",
        "Sent when the agent has answered: with its final reply and what the conversation "
        "has cost so far.",
    ),
    "message.completed": (
        "A final reply is ready",
        "Sent at the same moment, once for each final reply, with the reply's own id: for "
        "storing or forwarding every answer.",
    ),
    "session.failed": (
        "A conversation failed",
        "Sent when the agent's turn ended in an error (the provider refused, a tool "
        "failed), with what went wrong.",
    ),
    "tool.waiting_approval": (
        "A tool call waits for a decision",
        "Sent when the agent wants to use a tool that needs a person's approval.",
    ),
    "schedule.run_failed": (
        "A scheduled run could not start",
        "Sent when a schedule's run is refused (a budget used up, a usage limit, the agent "
        "no longer available), with the reason.",
    ),
}
assert set(EVENT_WORDS) == set(EVENTS), "every event needs its words"
EGRESS = ": refused by the egress policy"
PLAIN = {
    "an http(s) URL with a host": "Write an address that starts with https:// (or http://) and "
    "a host name",
    "no credentials in the URL (sign with the secret instead)": "Remove the user name and "
    "password from the address: requests are signed with the secret instead",
}


def event_choice(code: str) -> SafeString:
    title, help_text = EVENT_WORDS[code]
    return format_html(
        '<span class="studio-event-title">{}</span> <span class="studio-event-help">{}</span>',
        title,
        help_text,
    )


def events_in_words(codes: list[str]) -> str:
    """A subscription's events as their names ("A conversation failed, …")."""
    return ", ".join(EVENT_WORDS.get(c, (c, ""))[0] for c in codes or []) or "–"


def url_in_words(message: str) -> str:
    """The API's refusal of a URL ("url: … refused by the egress policy (… STUDIO_EGRESS_ALLOW)")
    as a sentence for the form's field."""
    text = message.removeprefix("url: ")
    if EGRESS in text:
        subject = text.split(EGRESS, 1)[0]
        return (
            f"Webhooks are not sent to this address: {subject}. This server only sends them "
            "to public internet addresses. If the receiver is on your own network, ask your "
            "operator to add it to the allowed addresses (the egress allow-list, the "
            "STUDIO_EGRESS_ALLOW setting)."
        )
    text = PLAIN.get(text, text)
    if text.startswith("not "):
        text = "This is " + text
    text = text[:1].upper() + text[1:]
    return text if text.endswith(".") else text + "."


class SecretNameInput(forms.TextInput):
    """A text box suggesting the names of the env values that can sign (a ``<datalist>``)."""

    def __init__(self) -> None:
        super().__init__(attrs={"list": "studio-secret-names", "autocomplete": "off"})

    def render(self, name: str, value: Any, attrs: Any = None, renderer: Any = None) -> SafeString:
        box = super().render(name, value, attrs, renderer)
        names = (
            EnvValue.objects.filter(scope__in=(EnvValue.Scope.INSTANCE, EnvValue.Scope.AGENT))
            .order_by("key")
            .values_list("key", flat=True)
            .distinct()
        )
        options = format_html_join("", '<option value="{}">', ((n,) for n in names))
        return format_html('{}<datalist id="studio-secret-names">{}</datalist>', box, options)


class WebhookSubscriptionForm(forms.ModelForm):
    # Declared for its scheme: an address typed without one is taken as https:// (Django 6's
    # default; the model field's form would assume http:// and warn that this changes).
    url = forms.URLField(
        max_length=2000,
        assume_scheme="https",
        label="Send to (URL)",
        help_text="The address of the service that receives the events, like "
        "https://example.com/hooks/agents. Each event is a POST request with JSON.",
        error_messages={
            "invalid": "Write the receiver's whole address, like https://example.com/hooks."
        },
    )
    events = forms.MultipleChoiceField(
        label="Send when",
        choices=[(code, event_choice(code)) for code in EVENTS],
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Tick at least one event to send."},
    )

    class Meta:
        model = WebhookSubscription
        fields = ("agent", "url", "secret_env", "events", "active")
        labels = {"secret_env": "Signing secret", "active": "Sending"}
        widgets = {"secret_env": SecretNameInput()}
        error_messages = {"secret_env": {"required": "Choose the secret that signs requests."}}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        agent = self.fields.get("agent")
        if isinstance(agent, forms.ModelChoiceField):
            agent.empty_label = "Every agent"
            agent.help_text = "Whose events are sent. Every agent: all agents of this studio."
        secret = self.fields.get("secret_env")
        if secret is not None:
            add = reverse("admin:agents_app_envvalue_add") + "?scope=instance&value_type=secret"
            secret.help_text = format_html(
                "The name of a secret env value: each request is signed with it (the "
                "Webhook-Signature header) so the receiver knows it comes from here. The "
                "agent's own value is used first, else the instance's. <a href=\"{}\">Create "
                "a secret</a> under Env values if you have none yet; its value is never "
                "shown here.",
                add,
            )
        active = self.fields.get("active")
        if active is not None:
            active.help_text = "Untick to stop sending without deleting the subscription."

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        # The same checks as the API, on the field and in words: URLField lets through ports
        # out of range and addresses the egress policy refuses.
        url = data.get("url") or self.data.get(self.add_prefix("url"), "")
        if url:
            try:
                webhooks.check_url(url)
            except DomainError as exc:
                # The reason replaces URLField's own "not a valid address", which says less.
                self.errors.pop("url", None)
                self.add_error("url", url_in_words(exc.message))
        name = data.get("secret_env") or ""
        if name:
            try:
                webhooks.secret_of(WebhookSubscription(agent=data.get("agent"), secret_env=name))
            except DomainError:
                whose = (
                    "this agent or the instance has" if data.get("agent") else "the instance has"
                )
                self.add_error(
                    "secret_env",
                    f"There is no secret named {name}: add it under Env values first (none "
                    f"{whose} by that name), or pick one of the names offered as you type.",
                )
        return data
