"""Tools that are prompts or agents: sub-prompts, agents in child threads, handoffs
(``delegate``), subagents and their link to the parent (``subagents``, ``link``), and
``InlineHost``, which runs woken threads as tasks.

May import: ``runtime.step`` and every layer below.
"""
