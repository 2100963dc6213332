"""The public extension API: everything code in an agents folder imports.

Tools, hooks, effects, thread endpoints, user endpoints, controllers and side handlers
written in Python import from here, and this module's names are a contract: the engine's
packages may move
(issue #53 moved them once and broke every agents folder), this module keeps the same
names. The older paths (``runtime.registry``, ``runtime.controllers``, ``runtime.results``,
``runtime.memory_store``, from before the layout step) keep working with a
``DeprecationWarning``; ``runtime.tools.registry`` and ``runtime.tools.controllers``, which
the docs named after it, keep working too. docs/writing-tools-hooks.md lists the names.
"""

from __future__ import annotations

from runtime.core.results import ToolResult, failure, success
from runtime.core.user_scope import ReentrantUserCall, UserEndpointError
from runtime.state import EnvNotFound, ThreadState
from runtime.store.protocol import ThreadUser
from runtime.tools.controllers import ControllerDefinition, define_controller
from runtime.tools.handlers import HandlerDefinition, HandlerError, define_handler
from runtime.tools.registry import (
    DefineToolOptions,
    DuplicateDefinitionError,
    EffectDefinition,
    EndpointDefinition,
    HookDefinition,
    Registry,
    RegistryError,
    ThreadEndpointAuth,
    ToolDefinition,
    define_effect,
    define_hook,
    define_thread_endpoint,
    define_tool,
    discover,
)
from runtime.tools.user_endpoints import (
    UserEndpointDefinition,
    UserRequest,
    UserState,
    UserThread,
    define_user_endpoint,
)

__all__ = [
    "ControllerDefinition",
    "DefineToolOptions",
    "DuplicateDefinitionError",
    "EffectDefinition",
    "EndpointDefinition",
    "EnvNotFound",
    "HandlerDefinition",
    "HandlerError",
    "HookDefinition",
    "ReentrantUserCall",
    "Registry",
    "RegistryError",
    "ThreadEndpointAuth",
    "ThreadState",
    "ThreadUser",
    "ToolDefinition",
    "ToolResult",
    "UserEndpointDefinition",
    "UserEndpointError",
    "UserRequest",
    "UserState",
    "UserThread",
    "define_controller",
    "define_effect",
    "define_handler",
    "define_hook",
    "define_thread_endpoint",
    "define_tool",
    "define_user_endpoint",
    "discover",
    "failure",
    "success",
]
