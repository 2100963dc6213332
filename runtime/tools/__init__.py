"""Code-defined parts and what a prompt offers: the registry of tools, hooks, effects and
controllers, running hooks, tool env declarations, and which tools a prompt offers
(``toolset``).

May import: ``runtime.definitions`` and the layers below it (mcp, providers, store, core).
"""
