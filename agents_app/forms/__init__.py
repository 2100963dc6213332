"""Studio (admin) forms, one module per concept.

Definition forms (models, prompts, agents) build a spec definition object from
their cleaned data and inline rows, validate it with
``agents_app.services.definitions.rows`` and attach each error to the field or row it
is about (``definition_check``). Env value forms are write-only for secrets.
"""

from agents_app.forms.agents import AgentForm
from agents_app.forms.env import (
    AgentEnvValueForm,
    EnvValueAdminForm,
    EnvValueFormSet,
    PromptEnvValueForm,
    UserEnvValueForm,
)
from agents_app.forms.language_models import (
    LanguageModelForm,
    ModelFallbackForm,
    ModelFallbackFormSet,
)
from agents_app.forms.prompts import (
    PromptForm,
    PromptPartForm,
    PromptPartFormSet,
    PromptToolForm,
    PromptToolFormSet,
)

__all__ = [
    "AgentEnvValueForm",
    "AgentForm",
    "EnvValueAdminForm",
    "EnvValueFormSet",
    "LanguageModelForm",
    "ModelFallbackForm",
    "ModelFallbackFormSet",
    "PromptEnvValueForm",
    "PromptForm",
    "PromptPartForm",
    "PromptPartFormSet",
    "PromptToolForm",
    "PromptToolFormSet",
    "UserEnvValueForm",
]
