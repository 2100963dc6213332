"""Deprecated path: ``runtime.controllers`` moved to ``runtime.extend`` (docs/writing-tools-hooks.md).
Its names still import from here, with a ``DeprecationWarning``."""

from runtime._moved import forwarding

__getattr__ = forwarding(
    "runtime.controllers", "runtime.extend", ["ControllerDefinition", "define_controller"]
)
