"""Deprecated path: ``runtime.registry`` moved to ``runtime.extend`` (docs/writing-tools-hooks.md).
Its names still import from here, with a ``DeprecationWarning``."""

from runtime._moved import forwarding

__getattr__ = forwarding(
    "runtime.registry",
    "runtime.extend",
    [
        "Registry",
        "RegistryError",
        "DuplicateDefinitionError",
        "ToolDefinition",
        "HookDefinition",
        "EffectDefinition",
        "EndpointDefinition",
        "DefineToolOptions",
        "define_tool",
        "define_hook",
        "define_effect",
        "define_thread_endpoint",
        "discover",
    ],
)
