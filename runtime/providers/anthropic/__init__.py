"""Anthropic's Messages API: the adapter (``provider``), its server tools (web search, code
execution …) and what its models offer (``offers``).
"""
