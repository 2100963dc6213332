"""Who may do what, and how much: API keys, sign-in tokens and tickets, socket credentials,
OpenID Connect identities, SCIM provisioning, the audit log, rate limits and budgets, and
people's own OAuth connections to MCP servers (``mcp_connect``, ``mcp_tokens``).
Imports no other service package.
"""
