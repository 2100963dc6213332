"""Remote MCP servers with ``auth: oauth``: each person connects their own account in the
browser (``flow``), and tool calls use the thread owner's token (``tokens``); docs/mcp.md."""
