"""Usage limits and spend budgets: the studio's overrides of the ``STUDIO_RATE_*`` and
``STUDIO_BUDGET_*`` settings (docs/security.md, "Limits, quotas and budgets")."""

from __future__ import annotations

from django.contrib import admin

from agents_app.forms.limits import SpendBudgetForm, UsageLimitForm
from agents_app.models import SpendBudget, UsageLimit
from agents_app.services.access import limits


@admin.register(UsageLimit)
class UsageLimitAdmin(admin.ModelAdmin):
    form = UsageLimitForm
    list_display = ("user", "api_key", "action", "limit", "period")
    list_filter = ("action", "period")
    search_fields = ("user__username", "api_key__name")
    list_select_related = ("user", "api_key")
    autocomplete_fields = ("user", "api_key")


@admin.register(SpendBudget)
class SpendBudgetAdmin(admin.ModelAdmin):
    empty_help = (
        "No spend budgets yet: nothing caps what the models cost. Add one to stop new "
        "requests once a user, an agent or the whole instance has spent a set amount in its "
        "period."
    )
    form = SpendBudgetForm
    list_display = ("scope", "monthly_limit_usd", "spent_this_month")
    search_fields = ("user__username", "agent__name")
    list_select_related = ("user", "agent")
    autocomplete_fields = ("user", "agent")

    @admin.display(description="For")
    def scope(self, obj: SpendBudget) -> str:
        return f"user {obj.user}" if obj.user_id else f"agent {obj.agent}"

    @admin.display(description="Spent this month (USD)")
    def spent_this_month(self, obj: SpendBudget) -> str:
        spent = limits.user_spend(obj.user_id) if obj.user_id else limits.agent_spend(obj.agent_id)
        return f"{spent:.2f}"
