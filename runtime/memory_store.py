"""Deprecated path: ``runtime.memory_store`` moved to ``runtime.store.memory`` (docs/writing-tools-hooks.md).
Its names still import from here, with a ``DeprecationWarning``."""

from runtime._moved import forwarding

__getattr__ = forwarding("runtime.memory_store", "runtime.store.memory", ["MemoryStore"])
