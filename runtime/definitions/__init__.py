"""Definitions beyond their shapes (those are ``runtime.core.spec``): validation and the
entry rules, the loader that reads them through the store, the ledger of every field,
and TypeScript definition files read without running them.

May import: ``runtime.mcp``, ``runtime.providers``, ``runtime.store``, ``runtime.core``.
"""
