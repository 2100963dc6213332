"""Deprecated path: ``runtime.results`` moved to ``runtime.extend`` (docs/writing-tools-hooks.md).
Its names still import from here, with a ``DeprecationWarning``."""

from runtime._moved import forwarding

__getattr__ = forwarding("runtime.results", "runtime.extend", ["ToolResult", "success", "failure"])
