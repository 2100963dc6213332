"""``/mcp``: the agents exposed as tools to MCP clients (``server``, over streamable HTTP).

May import: ``orchestration`` (``agent_calls`` runs the asked agent), ``services``,
``selectors``, ``models`` and the shared leaves. Only ``studio.urls`` imports it.
"""
