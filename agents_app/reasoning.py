"""Whether an agent's replies carry reasoning, so the chat page offers "Show reasoning" only then.

The spec's ``ModelCapabilities`` has no reasoning flag; what decides it is the side prompt's
``reasoning`` config (``ReasoningConfig``: an effort or a token budget asks the model to reason,
``exclude`` asks the provider to drop it from the reply), and the provider: OpenAI's Chat
Completions never returns reasoning text (docs/providers.md). Models that reason on their own
(without a config) are caught by the thread's stored rows: a message with reasoning text.
"""

from __future__ import annotations

from pydantic import ValidationError

from agents_app.models import Agent, LanguageModel, Message, Prompt, Thread
from runtime.core.spec import ReasoningConfig


def prompt_returns_reasoning(prompt: Prompt | None) -> bool:
    if prompt is None or not prompt.reasoning:
        return False
    try:
        config = ReasoningConfig.model_validate(prompt.reasoning)
    except ValidationError:  # refused at save; an old row that fails now shows no toggle
        return False
    asked = config.effort is not None or config.max_tokens is not None or bool(config.include)
    returned = prompt.model.provider != LanguageModel.Provider.OPENAI
    return asked and returned and not config.exclude


def agent_returns_reasoning(agent: Agent) -> bool:
    """Either side's prompt asks for reasoning it returns (needs ``side_*_prompt`` loaded)."""
    return prompt_returns_reasoning(agent.side_a_prompt) or prompt_returns_reasoning(
        agent.side_b_prompt
    )


def thread_shows_reasoning(thread: Thread) -> bool:
    """The thread's agent returns reasoning, or some stored message already has it."""
    if agent_returns_reasoning(thread.agent):
        return True
    return (
        Message.objects.filter(thread=thread, reasoning_content__isnull=False)
        .exclude(reasoning_content="")
        .exists()
    )
