"""The studio's admin, one module per concept; importing this package registers them all.

Admin classes stay thin: forms (``agents_app.forms``) build and validate definitions
through ``agents_app.services.definitions.rows``; engine-written rows are read-only.
"""

from agents_app.admin import (  # noqa: F401 (imported to register)
    a2a_agents,
    agents,
    api_keys,
    audit,
    effects,
    env,
    evals,
    feedback,
    grants,
    knowledge,
    language_models,
    limits,
    logs,
    mcp_servers,
    messages,
    oauth_clients,
    prompts,
    retention,
    schedules,
    threads,
    triggers,
    webhooks,
)
