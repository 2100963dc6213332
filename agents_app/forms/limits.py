"""Studio forms for usage limits and spend budgets."""

from __future__ import annotations

from typing import Any

from django import forms

from agents_app.models import SpendBudget, UsageLimit


class UsageLimitForm(forms.ModelForm):
    class Meta:
        model = UsageLimit
        fields = ["user", "api_key", "action", "limit", "period"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        user, key = cleaned.get("user"), cleaned.get("api_key")
        if key is not None and user is not None and key.user_id != user.pk:
            self.add_error("api_key", f"This key belongs to {key.user}, not to {user}.")
        return cleaned


class SpendBudgetForm(forms.ModelForm):
    class Meta:
        model = SpendBudget
        fields = ["user", "agent", "monthly_limit_usd"]
