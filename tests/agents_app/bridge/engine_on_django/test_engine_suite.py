"""The engine test modules, collected again here so they run over ``DjangoStore``
(the fixtures in this folder's conftest replace the in-memory store)."""

# Provider-run tools over the real adapters (the vendor is a replay server on 127.0.0.1).
from tests.runtime.core.test_env_refs import *  # noqa: F403
from tests.runtime.core.test_redaction_gaps import *  # noqa: F403
from tests.runtime.definitions.test_spec_0_2_0_definitions import *  # noqa: F403
from tests.runtime.delegation.test_spec_agents_as_tools import *  # noqa: F403
from tests.runtime.delegation.test_spec_subagents import *  # noqa: F403
from tests.runtime.loop.test_handler_sides import *  # noqa: F403
from tests.runtime.loop.test_spec_stop_conditions import *  # noqa: F403
from tests.runtime.providers.conftest import client, replay  # noqa: E402,F401
from tests.runtime.providers.test_provider_tools_engine import *  # noqa: E402,F403
from tests.runtime.step.test_attempt_ladder import *  # noqa: F403
from tests.runtime.step.test_context import *  # noqa: F403
from tests.runtime.step.test_spec_images import *  # noqa: F403
from tests.runtime.step.test_spec_structured_output import *  # noqa: F403
from tests.runtime.step.test_step_opening import *  # noqa: F403
from tests.runtime.store.test_files_store import *  # noqa: F403
from tests.runtime.store.test_store_protocol import *  # noqa: F403
from tests.runtime.test_logs_and_events import *  # noqa: F403
from tests.runtime.test_resume import *  # noqa: F403
from tests.runtime.test_spec_0_2_0_hooks_and_state import *  # noqa: F403
from tests.runtime.test_spec_agentbuilder_sides import *  # noqa: F403
from tests.runtime.test_spec_definitions_and_types import *  # noqa: F403
from tests.runtime.test_spec_engine_rules import *  # noqa: F403
from tests.runtime.test_spec_session_tools import *  # noqa: F403
from tests.runtime.test_subprompts import *  # noqa: F403
from tests.runtime.test_thread_state import *  # noqa: F403
from tests.runtime.test_unstorable_engine_text import *  # noqa: F403
from tests.runtime.tools.test_hooks import *  # noqa: F403
from tests.runtime.tools.test_spec_0_2_0_parent_hooks import *  # noqa: F403
from tests.runtime.tools.test_spec_tool_env import *  # noqa: F403
from tests.runtime.tools.test_tools import *  # noqa: F403

# Not run here: it renders an include of a prompt that does not exist. The database cannot
# hold such a definition (includes are foreign keys; validation rejects dangling names),
# so only the in-memory store can exercise the engine's "[Prompt not found]" fallback.
del test_system_prompt_renders_text_includes_and_env_parts  # noqa: F821
