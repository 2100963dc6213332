from __future__ import annotations

from django.db import models

from agents_app.models.prompts import Prompt


class ToolActivity(models.TextChoices):
    HIDDEN = "hidden", "Hidden: only the answers"
    SUMMARY = "summary", "Summary: one line per tool call"
    FULL = "full", "Full: each call's arguments and result"


class MidRunMessages(models.TextChoices):
    """The policy for a message that arrives while the thread's session runs (labels in the
    studio's words: what the person chatting sees happen)."""

    QUEUE = "queue", "Queue: the agent reads it at its next step"
    ENQUEUE = "enqueue", "Enqueue: answered after the current reply"
    INTERRUPT = "interrupt", "Interrupt: the current reply stops, then the agent answers"
    REJECT = "reject", "Refuse: the person is asked to send it again after the reply"


class AgentState(models.TextChoices):
    """Whether the chat offers an agent: a draft is for staff (the studio's try page) only."""

    DRAFT = "draft", "Draft (staff only)"
    PUBLISHED = "published", "Published"


class Agent(models.Model):
    """An agent definition (the spec's ``defineAgent``). Side configs are columns, not JSON,
    so the studio edits them as forms and the database keeps prompt references intact."""

    State = AgentState

    class Type(models.TextChoices):
        AI_HUMAN = "ai_human", "AI ↔ human"
        DUAL_AI = "dual_ai", "AI ↔ AI (dual)"

    class Spec(models.TextChoices):
        """The spec generation the definition is written in (docs/definitions.md)."""

        V0_1 = "0.1.0", "0.1.0 (type: ai_human / dual_ai)"
        V0_2 = "0.2.0", "0.2.0 (each side backed by a prompt or a person)"

    name = models.CharField(max_length=128, unique=True)
    title = models.CharField(max_length=200, blank=True)
    # Who is on each side, derived from the sides in 0.2.0: ``ai_human`` has a person on
    # one side (side B, or side A when ``side_a_prompt`` is empty), ``dual_ai`` two AIs.
    type = models.CharField(max_length=16, choices=Type.choices, default=Type.AI_HUMAN)
    # Decides the definition's shape and how ``max_session_turns`` counts (turns in 0.1.0,
    # exchanges in 0.2.0).
    spec_version = models.CharField(max_length=8, choices=Spec.choices, default=Spec.V0_1)
    # Spec 0.2.0: False keeps the agent out of the chat's agent picker.
    primary = models.BooleanField(default=True)
    # Spec 0.2.0 packaging metadata {packageName, version, author, license}, as written.
    packaging = models.JSONField(default=dict, blank=True)
    # Spec 0.2.0 ``parentHooks``: ParentHookRequirement objects as written (camelCase), the
    # hooks this agent requires on the sides of agents that start it (runtime.tools.parent_hooks).
    parent_hooks = models.JSONField(default=list, blank=True)
    max_session_turns = models.IntegerField(null=True, blank=True)
    expose_as_tool = models.BooleanField(default=False)
    tool_description = models.TextField(blank=True)
    # What the chat shows people of tool calls ("": one line each for people who are not
    # staff, everything for staff; docs/chat.md, "Tool activity").
    tool_activity = models.CharField(max_length=16, choices=ToolActivity.choices, blank=True)
    description = models.TextField(blank=True)
    icon = models.CharField(max_length=500, blank=True)
    tags = models.JSONField(default=list, blank=True)
    # Reasons offered when a person rates a reply (list of short strings; services.threads.feedback).
    feedback_reasons = models.JSONField(default=list, blank=True)
    hooks = models.JSONField(default=list, blank=True)
    # What a message posted while a session runs does (docs/automation.md, "Mid-run messages").
    mid_run_messages = models.CharField(
        max_length=16, choices=MidRunMessages.choices, default=MidRunMessages.QUEUE
    )

    # Who the chat, ``GET /api/agents``, thread creation and ``/mcp`` offer the agent to
    # (``selectors.agents_for``): a draft to staff only; a published agent to everyone, or,
    # when audience groups are chosen, to members of those groups only (and staff).
    state = models.CharField(
        max_length=16, choices=AgentState.choices, default=AgentState.PUBLISHED
    )
    audience_groups = models.ManyToManyField(
        "auth.Group", blank=True, related_name="offered_agents"
    )

    side_a_label = models.CharField(max_length=100, blank=True)
    # Empty (and no handler): a person is on side A (spec 0.2.0).
    side_a_prompt = models.ForeignKey(
        Prompt, on_delete=models.PROTECT, related_name="side_a_of", null=True, blank=True
    )
    # Spec 0.2.0: the side handler (``define_handler``) that takes side A's turns, or "".
    side_a_handler = models.CharField(max_length=128, blank=True)
    side_a_stop_on_response = models.BooleanField(default=True)
    side_a_stop_tool = models.CharField(max_length=200, blank=True)
    side_a_stop_tool_response_property = models.CharField(max_length=128, blank=True)
    side_a_max_steps = models.IntegerField(null=True, blank=True)
    side_a_max_turns = models.IntegerField(null=True, blank=True)  # AgentBuilder ``maxTurns``
    side_a_end_session_tool = models.CharField(max_length=200, blank=True)
    # Spec SessionToolConfig: {"sessionStop"|"sessionFail"|"sessionStatus": SessionToolBinding}.
    side_a_session_tools = models.JSONField(default=dict, blank=True)
    # Spec 0.2.0 ``sideX.subagents``: SubagentRelationship objects as written (camelCase).
    side_a_subagents = models.JSONField(default=list, blank=True)

    side_b_label = models.CharField(max_length=100, blank=True)
    side_b_prompt = models.ForeignKey(
        Prompt, on_delete=models.PROTECT, related_name="side_b_of", null=True, blank=True
    )
    side_b_handler = models.CharField(max_length=128, blank=True)
    side_b_stop_on_response = models.BooleanField(default=True)
    side_b_stop_tool = models.CharField(max_length=200, blank=True)
    side_b_stop_tool_response_property = models.CharField(max_length=128, blank=True)
    side_b_max_steps = models.IntegerField(null=True, blank=True)
    side_b_max_turns = models.IntegerField(null=True, blank=True)  # AgentBuilder ``maxTurns``
    side_b_end_session_tool = models.CharField(max_length=200, blank=True)
    # Spec SessionToolConfig: {"sessionStop"|"sessionFail"|"sessionStatus": SessionToolBinding}.
    side_b_session_tools = models.JSONField(default=dict, blank=True)
    # Spec 0.2.0 ``sideX.subagents``: SubagentRelationship objects as written (camelCase).
    side_b_subagents = models.JSONField(default=list, blank=True)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            # A person may take one side, never both: some side runs a prompt or a handler.
            models.CheckConstraint(
                condition=models.Q(side_a_prompt__isnull=False)
                | models.Q(side_b_prompt__isnull=False)
                | ~models.Q(side_a_handler="")
                | ~models.Q(side_b_handler=""),
                name="agent_has_a_side_no_person_takes",
            )
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def side_a_human(self) -> bool:
        return self.side_a_prompt_id is None and not self.side_a_handler
