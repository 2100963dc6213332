from __future__ import annotations

from django.db import models

from agents_app.models.language_models import LanguageModel


class Prompt(models.Model):
    """A prompt definition (the spec's ``definePrompt``).

    The system prompt is either ``text`` (plain) or, when it has parts, the
    ordered ``parts`` (text, include another prompt, env value). Tools are the
    ordered ``tool_entries``. Prompt-level env values are ``EnvValue`` rows.
    """

    class ToolChoice(models.TextChoices):
        AUTO = "auto", "auto: the model decides"
        NONE = "none", "none: never call tools"
        REQUIRED = "required", "required: must call a tool"

    name = models.CharField(max_length=128, unique=True)
    tool_description = models.TextField(
        blank=True, help_text="Shown to a model when this prompt is offered as a tool (sub-prompt)."
    )
    text = models.TextField(
        "system prompt",
        blank=True,
        help_text="Plain text system prompt. Leave empty when using parts below.",
    )
    model = models.ForeignKey(LanguageModel, on_delete=models.PROTECT, related_name="prompts")
    include_chat = models.BooleanField(
        default=False, help_text="Send the conversation history to the model."
    )
    include_past_tools = models.BooleanField(
        default=False, help_text="Send earlier tool calls and their results."
    )
    parallel_tool_calls = models.BooleanField(
        null=True,
        blank=True,
        help_text="Let the model call several tools at once (unset: provider default).",
    )
    tool_choice = models.CharField(
        max_length=16, choices=ToolChoice.choices, default=ToolChoice.AUTO
    )
    # JSON Schema of the arguments when this prompt is called as a tool.
    required_schema = models.JSONField(null=True, blank=True)
    # JSON Schema the final answer must match (structured output; docs/providers.md).
    response_schema = models.JSONField(null=True, blank=True)
    # Schema: runtime.core.spec.ReasoningConfig.
    reasoning = models.JSONField(null=True, blank=True)
    recent_image_threshold = models.PositiveIntegerField(default=10)
    # Hook ids (code-defined), run in order.
    hooks = models.JSONField(default=list, blank=True)
    step_budget_warning = models.BooleanField(
        default=True, help_text="Warn the model one step before the side's max steps is reached."
    )
    # Spec 0.2.0 ``variables``: list of runtime.core.spec.PromptVariable dumps.
    variables = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class PromptPart(models.Model):
    class Kind(models.TextChoices):
        TEXT = "text", "Text"
        INCLUDE = "include", "Include another prompt"
        ENV = "env", "Environment value"

    prompt = models.ForeignKey(Prompt, on_delete=models.CASCADE, related_name="parts")
    position = models.PositiveIntegerField(default=0)
    type = models.CharField(max_length=16, choices=Kind.choices, default=Kind.TEXT)
    content = models.TextField(blank=True)
    include = models.ForeignKey(
        Prompt, on_delete=models.PROTECT, null=True, blank=True, related_name="included_by"
    )
    env_key = models.CharField(max_length=128, blank=True)

    class Meta:
        ordering = ["position", "id"]

    def __str__(self) -> str:
        return f"{self.prompt} part {self.position}"


class PromptTool(models.Model):
    """One entry of a prompt's ``tools``: a code tool, a prompt (sub-prompt) or an agent.

    Which options apply depends on what the name resolves to; defaults mean a
    bare name in the definition file.
    """

    class ReceivesMessages(models.TextChoices):
        SIDE_A = "side_a", "Side A"
        SIDE_B = "side_b", "Side B"

    prompt = models.ForeignKey(Prompt, on_delete=models.CASCADE, related_name="tool_entries")
    position = models.PositiveIntegerField(default=0)
    name = models.CharField(max_length=200, help_text="A tool, prompt or agent name.")
    include_text_response = models.BooleanField(default=True)
    include_tool_calls = models.BooleanField(default=True)
    include_errors = models.BooleanField(default=True)
    init_user_message_property = models.CharField(max_length=128, blank=True)
    init_attachments_property = models.CharField(max_length=128, blank=True)
    init_agent_name_property = models.CharField(max_length=128, blank=True)
    optional = models.CharField(
        max_length=128, blank=True, help_text="Env key that must be true to offer this tool."
    )
    immediate = models.BooleanField(null=True, blank=True)
    blocking = models.BooleanField(null=True, blank=True)
    resumable = models.BooleanField(default=False)
    receives_messages = models.CharField(
        max_length=8, choices=ReceivesMessages.choices, default=ReceivesMessages.SIDE_A
    )
    max_instances = models.PositiveIntegerField(null=True, blank=True)
    # Env values for the tool call (PromptToolConfig.env); plain text, never secrets.
    env = models.JSONField(null=True, blank=True)
    # Subagent relationship options: parent env names copied into each child,
    # 'explicit' (no delivery when the child ends) or blank (implicit), hidden from listings.
    scoped_env = models.JSONField(null=True, blank=True)
    parent_communication = models.CharField(max_length=8, blank=True)
    hidden = models.BooleanField(default=False)
    # Calls that wait (runtime.core.waits): for a person's approval, or for the client to run them.
    requires_approval = models.BooleanField(null=True, blank=True)
    client = models.BooleanField(null=True, blank=True, help_text="The client runs this tool.")
    wait_timeout_seconds = models.PositiveIntegerField(null=True, blank=True)
    # A provider tool's options (ToolConfig.options), in the vendor's names.
    options = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["position", "id"]

    def __str__(self) -> str:
        return self.name
