"""MCP servers: their definitions and the seam the engine calls tools through (``servers``),
and the SDK-backed client (``client``).

May import: ``runtime.core`` only.
"""
