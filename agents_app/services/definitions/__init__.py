"""Definitions: agents, prompts, models and MCP servers as rows and as definition objects,
their validation, the one save path every writer uses (``saves.save_definitions``),
versions, drafts, definition files and the 0.1.0 → 0.2.0 conversion.
May import: ``env`` (secrets of a definition's env), ``operations.instance_info``.
"""
