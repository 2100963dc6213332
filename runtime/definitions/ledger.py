"""Every field of every definition schema, and what becomes of it (issue #38).

A setting that is accepted and then silently ignored is worse than a missing one: the author
believes it works. So each field of the definition schemas (agent, side, session tool binding,
prompt and its parts, tool entry, resumable, reasoning, model, its capabilities and test script,
MCP server, the thread creation body) has one row here naming where it is honoured and the
test that shows it, or the contexts in which it is refused. ``tests/runtime/definitions/test_definition_ledger.py``
walks the pydantic schemas and fails on a field without a row, on a row whose test does not
exist, and on a stale ``docs/definitions.md`` (rendered by :func:`render_markdown`).

``OPEN`` marks a field honoured only in part, with the gap named: the ledger says so rather
than pretending; each is an item of issue #38 still to close.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

HONOURED, REFUSED, OPEN = "honoured", "refused", "open"
_IMPORT_API_STUDIO = "import, definition API and studio"


@dataclass(frozen=True)
class Row:
    status: str
    where: str  # the module (and function) that reads it, or that refuses it
    test: str  # tests/<path>.py::<test function>
    note: str = ""


def _h(where: str, test: str, note: str = "") -> Row:
    return Row(HONOURED, where, test, note)


def _r(where: str, test: str, note: str) -> Row:
    return Row(REFUSED, where, test, note)


def _o(where: str, test: str, note: str) -> Row:
    return Row(OPEN, where, test, note)


_RT = "tests/runtime/"
_AA = "tests/agents_app/"
_REFUSALS = _AA + "spec/test_spec_integrity_refusals.py::"
_INTEGRITY = _RT + "test_spec_integrity_engine.py::"
_STOPS = _RT + "loop/test_spec_stop_conditions.py::"
_SESSION_TOOLS = _RT + "test_spec_session_tools.py::"
_SUBAGENTS = _RT + "delegation/test_spec_subagents.py::"
_SUBPROMPTS = _RT + "test_subprompts.py::"
_TEST_PROVIDER = _RT + "providers/test_test_provider.py::"
_IMAGES = _RT + "step/test_spec_images.py::"
_VALIDATION = _AA + "services/test_validation_rules.py::"
_MCP = _AA + "orchestration/test_mcp_servers.py::"
_A2A = _AA + "api/test_a2a_client.py::"
_MCP_OAUTH = _AA + "mcp_remote/"
_CONFIGURED_CLIENT = "test_mcp_configured_client.py::test_a_configured_client_and_scope_are_what_the_connect_flow_uses"
_THREADS = _AA + "api/test_api_threads.py::"
_ENTRY_KINDS = "runtime.definitions.entry_rules.tool_entry_option_errors"
_SPEC2_RT = _RT + "definitions/test_spec_0_2_0_definitions.py::"
_SPEC2_FILES = _AA + "services/test_spec_0_2_0_files.py::"
_SPEC2_STUDIO = _AA + "api/test_spec_0_2_0_studio.py::"
_SPEC2_VENDOR = _RT + "providers/test_spec_0_2_0_capabilities.py::"
_SIDE_SUB = _RT + "delegation/test_spec_0_2_0_side_subagents.py::"
_SIDE_SUB_AA = _AA + "services/test_spec_0_2_0_side_subagents.py::"
_SIDE_SUB_REFUSED = _SIDE_SUB_AA + "test_A4_what_cannot_run_is_refused_at_import_naming_the_field"
_SIDE_SUB_RULES = "runtime.definitions.side_subagents"
_PARENT_HOOKS_RT = _RT + "tools/test_spec_0_2_0_parent_hooks.py::"
_PARENT_HOOKS_AA = _AA + "services/test_spec_0_2_0_parent_hooks.py::"
_PARENT_HOOKS_REFUSED = (
    _PARENT_HOOKS_AA + "test_A7_a_requirement_that_cannot_run_is_refused_at_import_naming_the_field"
)
_ENTRY_REFUSED = (
    _REFUSALS + "test_spec_item5_entry_options_refused_identically_by_import_api_and_studio"
)

# schema name → field (as written, camelCase) → row
LEDGER: dict[str, dict[str, Row]] = {
    "AgentDefinition": {
        "name": _h(
            "runtime.tools.registry (catalog key)",
            _RT
            + "tools/test_registry.py::test_registry_catalog_lists_names_descriptions_and_schemas",
        ),
        "title": _h(
            "agents_app.api.catalog (agent listing)",
            _AA + "api/test_api_catalog_env.py::test_catalog_shapes",
        ),
        "type": _h(
            "runtime.core.spec.agent_generation (0.1.0: mapped to side backings), "
            "runtime.loop.session (ai_human vs dual_ai loop)",
            _SPEC2_RT + "test_A1_type_is_mapped_to_side_backings",
            f"spec 0.1.0 only; beside 0.2.0-only keys it is refused ({_IMPORT_API_STUDIO})",
        ),
        "maxSessionTurns": Row(
            HONOURED,
            "runtime.loop.session (0.1.0: turns; 0.2.0: exchanges, _exchange_cap); 0.1.0 "
            "ai_human refused by runtime.definitions.entry_rules.agent_option_errors",
            _SPEC2_RT + "test_A10_max_session_turns_counts_turns_in_0_1_0_and_exchanges_in_0_2_0",
            f"0.1.0: dual_ai only, counts turns, refused on ai_human ({_IMPORT_API_STUDIO}); "
            "0.2.0: exchanges (a person's message is their side's turn) on every agent",
        ),
        "sideA": _h(
            "runtime.loop.session",
            _STOPS + "test_spec_5_1_stop_on_response_ends_turn_on_text_without_tool_calls",
        ),
        "sideB": Row(
            HONOURED,
            "runtime.loop.session; 0.1.0 ai_human refused by runtime.definitions.entry_rules.agent_option_errors",
            _REFUSALS + "test_spec_item5_max_session_turns_and_side_b_refused_on_ai_human",
            f"0.1.0: dual_ai only, refused on ai_human ({_IMPORT_API_STUDIO}); 0.2.0: "
            "required, a prompt or a person",
        ),
        "exposeAsTool": _h(
            "runtime.tools.toolset (agent offered as a tool)",
            _RT
            + "delegation/test_spec_agents_as_tools.py::test_spec_7_2_agent_as_tool_runs_in_new_thread_and_returns_result",
        ),
        "toolDescription": _h(
            "runtime.tools.toolset",
            _RT
            + "delegation/test_spec_agents_as_tools.py::test_spec_7_1_tool_description_is_shown_to_the_llm",
        ),
        "toolActivity": _h(
            "agents_app.wire (chat frames)",
            "tests/browser/test_chat_tool_activity.py::test_an_agent_that_hides_tools_shows_only_answers_and_the_form_keeps_the_setting",
        ),
        "description": _h(
            "agents_app.api.catalog", _AA + "api/test_api_catalog_env.py::test_catalog_shapes"
        ),
        "icon": _h(
            "agents_app.api.catalog", _AA + "api/test_api_catalog_env.py::test_catalog_shapes"
        ),
        "tags": _h(
            "agents_app.api.catalog (listed with the agent)",
            _AA + "api/test_api_catalog_env.py::test_catalog_shapes",
            "metadata for clients; the engine does not read it",
        ),
        "hooks": Row(
            HONOURED,
            "runtime.tools.hooks.hook_ids (for each prompt that lists none, sub-prompts too); "
            "never-run hooks refused by runtime.definitions.entry_rules.agent_hooks_errors",
            "tests/agents_app/spec/test_spec_integrity_agent_hooks.py::"
            "test_spec_agent_hooks_that_no_prompt_of_the_agent_would_run_are_refused_by_import_api_and_studio",
            "a prompt's hooks replace the agent's (reference); hooks no prompt of the agent would "
            f"run (each lists its own) are refused, from either side ({_IMPORT_API_STUDIO})",
        ),
        "env": _h(
            "agents_app.services.definitions.rows (the agent env tier), runtime.store (resolve_env)",
            _SPEC2_FILES + "test_A8_agent_env_and_its_old_name_tenvs_fill_the_agent_tier",
            "spec 0.2.0's name; exported as env (0.1.0 export: tenvs)",
        ),
        "tenvs": _h(
            "read as env (runtime.core.spec.AgentDefinition); both given: refused by "
            "runtime.definitions.validation",
            _SPEC2_FILES + "test_A8_agent_env_and_its_old_name_tenvs_fill_the_agent_tier",
            "0.1.0's name of env (a deprecated alias in 0.2.0)",
        ),
        "primary": _h(
            "agents_app.api.catalog (listed with primary), static/chat/app.js (the picker "
            "leaves it out)",
            _SPEC2_FILES
            + "test_A6_a_non_primary_agent_is_listed_with_primary_false_and_reached_by_name",
            "spec 0.2.0; still reached by name (threads, tools, subagents)",
        ),
        **{
            key: _h(
                "agents_app.services.definitions.rows (stored as written, exported)",
                _SPEC2_FILES + "test_A9_packaging_metadata_is_kept_through_import_and_export",
                "spec 0.2.0 packaging metadata; the engine does not read it",
            )
            for key in ("packageName", "version", "author", "license")
        },
        "parentHooks": _h(
            "runtime.tools.parent_hooks.required_hooks (each direct parent side that declares "
            "the child), runtime.tools.hooks.HookRunner (the order); saved rules in "
            "runtime.definitions.parent_hooks",
            _PARENT_HOOKS_RT
            + "test_A7_child_hooks_run_on_the_parent_side_around_its_own_hooks_with_source_child",
            "spec 0.2.0; only with exposeAsTool; a hook not registered, repeated or without a "
            f"reason is refused ({_IMPORT_API_STUDIO}); one gone from code later fails the "
            "parent's step; listed as written; 0.1.0 export refuses it",
        ),
        "feedbackReasons": _h(
            "agents_app.services.threads.feedback",
            _AA
            + "admin/test_admin_agents.py::test_feedback_reasons_survive_a_studio_save_and_are_edited_there",
        ),
        "midRunMessages": _h(
            "agents_app.services.definitions.rows → consumer policy",
            _AA
            + "orchestration/test_mid_run_messages.py::test_the_policy_round_trips_through_definitions_and_refuses_unknown_values",
        ),
        "state": _h(
            "agents_app.services.definitions.rows (draft/published)",
            _AA
            + "orchestration/test_agent_publishing.py::test_state_and_audience_round_trip_and_default_to_published_for_everyone",
        ),
        "audience": _h(
            "agents_app.services.definitions.rows (who may start it)",
            _AA
            + "orchestration/test_agent_publishing.py::test_state_and_audience_round_trip_and_default_to_published_for_everyone",
        ),
    },
    "SideConfig": {
        "prompt": _h(
            "runtime.loop.session",
            _STOPS + "test_spec_5_1_stop_on_response_ends_turn_on_text_without_tool_calls",
        ),
        "human": _h(
            "runtime.loop.session (the session ends after the AI's turn; a person's side to "
            "act: awaiting_human)",
            _SPEC2_RT + "test_A2_a_person_on_side_a_writes_first_and_the_ai_answers_as_side_b",
            "spec 0.2.0; both sides human refused; a person's side takes only a label",
        ),
        "handler": _h(
            "runtime.loop.handler_turn (once per received message, at most once; a "
            "registered handler only: runtime.definitions.validation._handler_rules)",
            _RT
            + "loop/test_handler_sides.py::test_A3_handler_side_takes_each_inbound_message_once",
            "spec 0.2.0 defineHandler; a handler's side takes only a label",
        ),
        "label": _h(
            "agents_app.admin.agent_structure, chat side labels",
            _AA + "admin/test_admin_agents.py::test_a_dual_ai_agent_with_both_sides",
        ),
        "stopOnResponse": _h(
            "runtime.loop.stops",
            _STOPS + "test_spec_5_1_stop_on_response_false_keeps_the_side_going",
        ),
        "stopTool": _h(
            "runtime.loop.stops",
            _STOPS + "test_spec_5_2_stop_tool_ends_turn_and_records_response_property",
        ),
        "stopToolResponseProperty": _h(
            "runtime.loop.stops._property (from the stop tool's result, else its argument)",
            _INTEGRITY
            + "test_spec_stop_tool_response_property_is_extracted_from_the_stop_tool_result",
        ),
        "maxSteps": _h(
            "runtime.loop.stops.max_side_steps (the side's steps in the session)",
            _INTEGRITY + "test_spec_max_steps_counts_the_sides_steps_when_every_step_is_a_turn",
        ),
        "maxTurns": _h(
            "runtime.loop.session._decide, runtime.loop.stops.out_of_turns (the side's turns)",
            _RT
            + "test_spec_agentbuilder_sides.py::test_spec_agentbuilder_max_turns_is_the_maximum_turns_this_side_can_take_before_stopping",
            "AgentBuilder: per side in a dual_ai session; in the conversation for ai_human",
        ),
        "endSessionTool": _h(
            "runtime.loop.stops", _STOPS + "test_spec_5_3_end_session_tool_ends_the_whole_session"
        ),
        "sessionStop": _h(
            "runtime.loop.stops, runtime.step.tool_half",
            _SESSION_TOOLS + "test_spec_session_stop_tool_ends_session_with_its_message_property",
        ),
        "sessionFail": _h(
            "runtime.loop.stops",
            _SESSION_TOOLS
            + "test_spec_session_fail_child_failure_is_received_by_the_parent_as_failure",
        ),
        "sessionStatus": _h(
            "runtime.step.tool_half",
            _SESSION_TOOLS
            + "test_spec_session_status_tool_sets_parent_registry_status_without_ending",
        ),
        "subagents": _h(
            "runtime.loop.session._scope → runtime.delegation.subagents.lifecycle_tools (built "
            "per side at run time); stored in Agent.side_X_subagents",
            _SIDE_SUB_AA + "test_A4_side_subagents_import_export_and_list_as_written",
            "spec 0.2.0; refused on a person's or handler's side; 0.1.0 subagent entries in a "
            f"prompt written in 0.2.0 are refused ({_IMPORT_API_STUDIO})",
        ),
    },
    "ParentHookRequirement": {
        "hook": _h(
            "runtime.tools.parent_hooks (run on the parent's ThreadState with source: child)",
            _PARENT_HOOKS_REFUSED,
            f"must be registered, once per agent ({_IMPORT_API_STUDIO}); gone from code "
            "later: the parent's step fails with a sentence",
        ),
        "reason": _h(
            "agents_app.pages.agent_structure (shown on the agent and Structure pages)",
            _PARENT_HOOKS_AA
            + "test_A7_the_studio_shows_parent_hooks_in_words_and_a_form_save_keeps_them",
            f"a blank reason is refused ({_IMPORT_API_STUDIO})",
        ),
        "stage": _h(
            "runtime.tools.hooks.HookRunner (before_parent: before the parent's own hooks; "
            "after_parent, the default: after them)",
            _PARENT_HOOKS_RT
            + "test_A7_child_hooks_run_on_the_parent_side_around_its_own_hooks_with_source_child",
            "unset is after_parent, as in the reference",
        ),
    },
    "SubagentRelationship": {
        "agent": _h(
            "runtime.delegation.subagents.relationships; exposeAsTool targets only ("
            + _SIDE_SUB_RULES
            + ")",
            _SIDE_SUB + "test_A4_side_subagents_give_this_agent_s_side_the_lifecycle_tools",
            f"spec 0.2.0; a target without exposeAsTool is refused ({_IMPORT_API_STUDIO})",
        ),
        "as": _h(
            "runtime.delegation.subagents (the relationship's name: subagent_create's agent, "
            "the registry's relationship)",
            _SIDE_SUB + "test_A5_blocking_defaults_to_false_and_as_names_the_relationship",
        ),
        "description": _h(
            "runtime.delegation.subagents._create_schema (replaces the child's toolDescription)",
            _SIDE_SUB + "test_A4_side_subagents_give_this_agent_s_side_the_lifecycle_tools",
        ),
        "blocking": _h(
            "runtime.delegation.subagents (default false)",
            _SIDE_SUB + "test_A5_blocking_true_waits_for_the_answer",
        ),
        "maxInstances": _h(
            "runtime.delegation.subagents._new_instance",
            _SIDE_SUB + "test_A5_max_instances_at_the_top_level",
        ),
        "immediate": _h(
            "runtime.delegation.subagents.spawn_immediate; the object form refused by "
            + _SIDE_SUB_RULES,
            _SIDE_SUB
            + "test_A4_hidden_relationship_is_not_offered_to_create_but_starts_immediately",
            f"true only; {{nameEnv, descriptionEnv, scopedEnv}} refused ({_IMPORT_API_STUDIO})",
        ),
        "optional": _h(
            "runtime.delegation.subagents.relationships",
            _SIDE_SUB + "test_A4_optional_relationship_exists_only_when_its_env_is_true",
        ),
        "scopedEnv": _h(
            "runtime.delegation.subagents.scoped_env",
            _SIDE_SUB + "test_A4_scoped_env_and_explicit_parent_communication",
        ),
        "hidden": _h(
            "runtime.delegation.subagents.lifecycle_tools (not offered to subagent_create, "
            "left out of the listing)",
            _SIDE_SUB
            + "test_A4_hidden_relationship_is_not_offered_to_create_but_starts_immediately",
        ),
        "parentCommunication": _h(
            "runtime.delegation.subagents._settle",
            _SIDE_SUB + "test_A4_scoped_env_and_explicit_parent_communication",
        ),
        "initUserMessageProperty": _r(
            _SIDE_SUB_RULES,
            _SIDE_SUB_REFUSED,
            f"subagent_create's own message argument is the first message ({_IMPORT_API_STUDIO})",
        ),
        "initAttachmentsProperty": _r(
            _SIDE_SUB_RULES,
            _SIDE_SUB_REFUSED,
            f"subagent_create's own attachments argument carries the files ({_IMPORT_API_STUDIO})",
        ),
        "initAgentNameProperty": _r(
            _SIDE_SUB_RULES,
            _SIDE_SUB_REFUSED,
            f"subagent_create's own name argument is the child's name ({_IMPORT_API_STUDIO})",
        ),
    },
    "SessionToolBinding": {
        "name": _h(
            "runtime.tools.toolset",
            _SESSION_TOOLS + "test_spec_session_tool_bare_string_is_the_tool_name",
        ),
        "messageProperty": _h(
            "runtime.loop.stops",
            _SESSION_TOOLS + "test_spec_session_stop_child_result_is_its_message_property",
        ),
        "attachmentsProperty": _h(
            "runtime.step.tool_half (copied to the parent)",
            _SESSION_TOOLS
            + "test_spec_session_stop_attachments_are_copied_to_the_parent_with_new_paths",
        ),
    },
    "PromptVariable": {
        key: _h(
            "agents_app.pages.variable_scan (/api/variables/*), runtime.tools.tool_env "
            "(required ones checked before the first request)",
            test,
        )
        for key, test in (
            (
                "name",
                _SPEC2_FILES
                + "test_B1_prompt_variables_are_stored_exported_and_listed_by_the_variable_scans",
            ),
            (
                "type",
                _SPEC2_FILES
                + "test_B1_prompt_variables_are_stored_exported_and_listed_by_the_variable_scans",
            ),
            (
                "required",
                _SPEC2_RT
                + "test_B1_a_required_prompt_variable_left_unset_stops_before_any_request",
            ),
            (
                "scoped",
                _SPEC2_FILES
                + "test_B1_prompt_variables_are_stored_exported_and_listed_by_the_variable_scans",
            ),
            (
                "description",
                _SPEC2_FILES
                + "test_B1_prompt_variables_are_stored_exported_and_listed_by_the_variable_scans",
            ),
        )
    },
    "PromptDefinition": {
        "name": _h(
            "runtime.tools.registry",
            _RT
            + "tools/test_registry.py::test_registry_catalog_lists_names_descriptions_and_schemas",
        ),
        "toolDescription": _h(
            "runtime.tools.toolset (sub-prompt offered as a tool)",
            _SUBPROMPTS + "test_subprompt_is_offered_with_its_required_schema",
        ),
        "prompt": _h(
            "runtime.step.prompting (system prompt)",
            _RT + "step/test_context.py::test_system_prompt_renders_text_includes_and_env_parts",
        ),
        "model": _h(
            "runtime.step.llm_half",
            _RT + "step/test_attempt_ladder.py::test_I10_two_failures_then_the_fallback_answers",
        ),
        "includeChat": _h(
            "runtime.step.history",
            _RT + "step/test_context.py::test_with_include_chat_the_whole_conversation_is_sent",
        ),
        "includePastTools": _h(
            "runtime.step.history",
            _RT + "step/test_context.py::test_with_include_past_tools_earlier_tool_rows_are_kept",
        ),
        "parallelToolCalls": _h(
            "runtime.providers (request body)",
            _RT
            + "step/test_context.py::test_the_request_carries_the_prompt_tools_tool_choice_and_parallel_flag",
        ),
        "toolChoice": _h(
            "runtime.providers (request body)",
            _RT
            + "step/test_context.py::test_the_request_carries_the_prompt_tools_tool_choice_and_parallel_flag",
        ),
        "requiredSchema": _h(
            "runtime.tools.toolset, runtime.delegation.delegate",
            _SUBPROMPTS + "test_subprompt_arguments_are_validated_against_required_schema",
        ),
        "responseSchema": _h(
            "runtime.step.structured, runtime.providers",
            _RT
            + "step/test_spec_structured_output.py::test_spec_tool_calls_are_not_checked_against_the_response_schema",
        ),
        "tools": _h(
            "runtime.tools.toolset",
            _RT
            + "step/test_context.py::test_the_request_carries_the_prompt_tools_tool_choice_and_parallel_flag",
        ),
        "reasoning": _h(
            "runtime.providers",
            _RT
            + "providers/test_provider_openrouter.py::test_reasoning_details_are_sent_back_on_the_assistant_turn",
        ),
        "recentImageThreshold": _h(
            "runtime.step.media",
            _IMAGES + "test_spec_recent_image_threshold_default_keeps_the_newest_ten_images",
        ),
        "hooks": _h(
            "runtime.tools.hooks, runtime.delegation.delegate",
            _AA + "admin/test_admin_prompts.py::test_an_unregistered_hook_is_rejected",
        ),
        "env": _h(
            "runtime.state (prompt-level env tier)",
            _SESSION_TOOLS + "test_spec_state_user_instance_env_and_runtime_context",
            "secret by default; thread and agent values outrank it",
        ),
        "stepBudgetWarning": _h(
            "runtime.loop.session",
            _STOPS + "test_spec_5_4_budget_warning_can_be_turned_off_by_the_prompt",
        ),
        "variables": _h(
            "agents_app.pages.variable_scan, runtime.tools.tool_env.needed_env",
            _SPEC2_FILES
            + "test_B1_prompt_variables_are_stored_exported_and_listed_by_the_variable_scans",
            "spec 0.2.0",
        ),
        "exposeAsTool": _h(
            "every prompt is a tool (runtime.tools.toolset); false refused by "
            "runtime.definitions.validation",
            _SPEC2_FILES + "test_B2_prompt_expose_as_tool_and_tenvs_are_read_as_deprecated_names",
            "deprecated in 0.2.0: true changes nothing (not stored or exported); false is "
            f"refused ({_IMPORT_API_STUDIO})",
        ),
        "tenvs": _h(
            "read as env (runtime.core.spec.PromptDefinition); both given: refused",
            _SPEC2_FILES + "test_B2_prompt_expose_as_tool_and_tenvs_are_read_as_deprecated_names",
            "deprecated name of env (0.2.0)",
        ),
    },
    "PromptTextPart": {
        "type": _h(
            "runtime.step.prompting",
            _RT + "step/test_context.py::test_system_prompt_renders_text_includes_and_env_parts",
        ),
        "content": _h(
            "runtime.step.prompting",
            _RT + "step/test_context.py::test_system_prompt_renders_text_includes_and_env_parts",
        ),
    },
    "PromptIncludePart": {
        "type": _h(
            "runtime.step.prompting",
            _RT + "step/test_context.py::test_system_prompt_renders_text_includes_and_env_parts",
        ),
        "prompt": _h(
            "runtime.step.prompting",
            _RT + "step/test_context.py::test_system_prompt_renders_text_includes_and_env_parts",
        ),
    },
    "PromptEnvPart": {
        "type": _h(
            "runtime.step.prompting",
            _RT + "step/test_context.py::test_system_prompt_renders_text_includes_and_env_parts",
        ),
        "property": _h(
            "runtime.step.prompting (state.env)",
            _RT + "step/test_context.py::test_system_prompt_renders_text_includes_and_env_parts",
        ),
    },
    "ReasoningConfig": {
        "effort": _h(
            "runtime.providers.*",
            _RT
            + "providers/test_provider_openrouter.py::test_reasoning_details_are_sent_back_on_the_assistant_turn",
        ),
        "maxTokens": Row(
            HONOURED,
            "runtime.providers.anthropic.provider/google/openrouter; OpenAI: runtime.definitions.entry_rules.reasoning_option_errors",
            _REFUSALS + "test_spec_item6_reasoning_options_a_provider_never_reads_are_refused",
            "refused on OpenAI models (import, definition API and studio)",
        ),
        "exclude": _h(
            "runtime.providers.*",
            _RT
            + "providers/test_provider_openrouter.py::test_reasoning_details_are_sent_back_on_the_assistant_turn",
        ),
        "include": Row(
            HONOURED,
            "runtime.providers.anthropic.provider/openrouter (reasoning kept in history, thinking on); OpenAI/Google: runtime.definitions.entry_rules.reasoning_option_errors",
            _REFUSALS + "test_spec_item6_reasoning_options_a_provider_never_reads_are_refused",
            "refused on OpenAI and Google models (import, definition API and studio)",
        ),
    },
    "ToolConfig": {
        "name": _h(
            "runtime.tools.toolset",
            _RT
            + "step/test_context.py::test_the_request_carries_the_prompt_tools_tool_choice_and_parallel_flag",
        ),
        "includeTextResponse": Row(
            HONOURED,
            "runtime.delegation.delegate; other kinds: " + _ENTRY_KINDS,
            _SUBPROMPTS + "test_subprompt_include_text_and_tool_calls_flags",
            f"sub-prompts only; refused on other kinds ({_IMPORT_API_STUDIO})",
        ),
        "includeToolCalls": Row(
            HONOURED,
            "runtime.delegation.delegate; other kinds: " + _ENTRY_KINDS,
            _SUBPROMPTS + "test_subprompt_include_text_and_tool_calls_flags",
            f"sub-prompts only; refused on other kinds ({_IMPORT_API_STUDIO})",
        ),
        "includeErrors": Row(
            HONOURED,
            "runtime.delegation.delegate; other kinds: " + _ENTRY_KINDS,
            _SUBPROMPTS + "test_subprompt_include_errors_flag",
            f"sub-prompts only; refused on other kinds ({_IMPORT_API_STUDIO})",
        ),
        "initUserMessageProperty": Row(
            HONOURED,
            "runtime.delegation.delegate, runtime.loop.session._hand_off; other kinds: "
            + _ENTRY_KINDS,
            _SUBPROMPTS + "test_subprompt_init_user_message_property",
            f"prompts, agents, handoffs; refused on tools ({_IMPORT_API_STUDIO})",
        ),
        "initAttachmentsProperty": Row(
            HONOURED,
            "runtime.delegation.delegate; other kinds: " + _ENTRY_KINDS,
            _SESSION_TOOLS + "test_spec_init_attachments_property_gives_a_subprompt_the_files",
            f"prompts, agents, handoffs; refused on tools ({_IMPORT_API_STUDIO})",
        ),
        "initAgentNameProperty": Row(
            HONOURED,
            "runtime.delegation.delegate; other kinds: " + _ENTRY_KINDS,
            _SESSION_TOOLS + "test_spec_init_attachments_and_agent_name_properties_reach_a_child",
            f"agents only; refused elsewhere ({_IMPORT_API_STUDIO})",
        ),
        "env": _h(
            "runtime.state.env (prompt-level), runtime.step.tool_half (redacted); mcp/provider refused by "
            + _ENTRY_KINDS,
            _INTEGRITY + "test_spec_item7_thread_values_override_a_prompt_tool_entry_env",
            "prompt-level: thread/agent values outrank it, a literal is a secret (redacted)",
        ),
        "optional": _h(
            "runtime.tools.toolset (entry skipped when its env value is unset)",
            _RT
            + "tools/test_spec_tool_env.py::test_spec_prompt_tool_entry_env_satisfies_a_required_declaration",
        ),
        "immediate": Row(
            HONOURED,
            "runtime.delegation.subagents; other kinds: " + _ENTRY_KINDS,
            _SUBAGENTS + "test_spec_immediate_subagent_starts_with_the_first_flow_once",
            f"subagents only; refused elsewhere ({_IMPORT_API_STUDIO})",
        ),
        "blocking": Row(
            HONOURED,
            "runtime.delegation.subagents; other kinds: " + _ENTRY_KINDS,
            _SUBAGENTS + "test_spec_subagent_blocking_returns_child_result_with_reference",
            f"agents only; refused on prompts/tools ({_IMPORT_API_STUDIO})",
        ),
        "resumable": Row(
            HONOURED,
            "runtime.delegation.subagents; other kinds: " + _ENTRY_KINDS,
            _SUBAGENTS + "test_spec_subagent_resumable_messaging_and_registry",
            f"agents only; refused on prompts/tools ({_IMPORT_API_STUDIO})",
        ),
        "scopedEnv": Row(
            HONOURED,
            "runtime.delegation.subagents; other kinds: " + _ENTRY_KINDS,
            _SESSION_TOOLS + "test_spec_scoped_env_copies_parent_values_into_the_child",
            f"agents only; refused elsewhere ({_IMPORT_API_STUDIO})",
        ),
        "parentCommunication": Row(
            HONOURED,
            "runtime.delegation.subagents; other kinds: " + _ENTRY_KINDS,
            _SESSION_TOOLS + "test_spec_parent_communication_explicit_delivers_nothing_at_the_end",
            f"subagents only; refused elsewhere ({_IMPORT_API_STUDIO})",
        ),
        "hidden": Row(
            HONOURED,
            "runtime.delegation.subagents; other kinds: " + _ENTRY_KINDS,
            _SESSION_TOOLS + "test_spec_hidden_relationship_is_left_out_of_the_subagents_listing",
            f"subagents only; refused elsewhere ({_IMPORT_API_STUDIO})",
        ),
        "requiresApproval": _h(
            "runtime.step.tool_half, runtime.core.waits; refused where it cannot work by runtime.definitions.validation",
            _RT
            + "tools/test_tool_waits.py::test_spec_requires_approval_is_refused_where_it_cannot_work",
        ),
        "client": _h(
            "runtime.step.tool_half, runtime.core.waits",
            _RT + "tools/test_tool_waits.py::test_spec_client_tool_result_is_what_the_model_reads",
        ),
        "waitTimeoutSeconds": _h(
            "runtime.step.tool_half, runtime.core.waits",
            _RT
            + "tools/test_tool_waits.py::test_spec_requires_approval_is_refused_where_it_cannot_work",
        ),
        "options": _h(
            "runtime.core.provider_tools (provider: entries; checked against the offer)",
            _AA
            + "admin/test_admin_prompts_structured.py::test_provider_tool_options_are_checked_against_the_offer_admin",
        ),
    },
    "ResumableConfig": {
        "receivesMessages": _h(
            "runtime.delegation.subagents",
            _SUBAGENTS + "test_spec_subagent_resumable_messaging_and_registry",
        ),
        "maxInstances": _h(
            "runtime.delegation.subagents",
            _SUBAGENTS + "test_spec_subagent_max_instances_refused_with_clear_error",
        ),
    },
    "ModelDefinition": {
        "name": _h(
            "runtime.tools.registry",
            _RT
            + "tools/test_registry.py::test_registry_catalog_lists_names_descriptions_and_schemas",
        ),
        "provider": _h(
            "runtime.providers.registry", _TEST_PROVIDER + "test_unknown_provider_is_a_clear_error"
        ),
        "model": _h(
            "runtime.providers (request body)",
            _RT
            + "providers/test_provider_openrouter.py::test_routing_preferences_and_reported_usage",
        ),
        "includedProviders": Row(
            HONOURED,
            "runtime.providers.openrouter.provider; others: runtime.definitions.entry_rules.model_option_errors",
            _RT
            + "providers/test_provider_openrouter.py::test_routing_preferences_and_reported_usage",
            f"OpenRouter only; refused elsewhere ({_IMPORT_API_STUDIO})",
        ),
        "fallbacks": _h(
            "runtime.step.llm_half (attempt ladder)",
            _RT + "step/test_attempt_ladder.py::test_I10_two_failures_then_the_fallback_answers",
        ),
        "inputPrice": _h(
            "runtime.providers.pricing",
            _RT + "test_logs_and_events.py::test_each_llm_request_has_a_log_with_tokens_and_cost",
        ),
        "outputPrice": _h(
            "runtime.providers.pricing",
            _RT + "test_logs_and_events.py::test_each_llm_request_has_a_log_with_tokens_and_cost",
        ),
        "cachedPrice": _h(
            "runtime.providers.pricing",
            _RT
            + "test_logs_and_events.py::test_cost_uses_input_price_for_cached_tokens_without_a_cached_price",
        ),
        "capabilities": _h(
            "runtime.step.media, runtime.step.attempts, runtime.definitions.entry_rules",
            _IMAGES + "test_spec_vision_false_replaces_images_with_a_placeholder_naming_the_file",
        ),
        "baseUrl": _h(
            "runtime.providers (endpoint); checked by runtime.core.egress",
            _AA + "admin/test_model_curl.py::test_a_base_url_must_be_a_plain_url",
        ),
        "providerTools": _h(
            "runtime.core.provider_tools",
            _RT
            + "definitions/test_model_api_rules.py::test_provider_tools_round_trip_through_the_definition",
        ),
        "api": Row(
            HONOURED,
            "runtime.providers.openai.chat_completions (chat vs responses)",
            _RT + "definitions/test_model_api_rules.py::test_api_is_for_openai_models_only",
            f"OpenAI only; refused elsewhere ({_IMPORT_API_STUDIO})",
        ),
        "script": _h(
            "runtime.providers.test_provider",
            _TEST_PROVIDER + "test_script_on_the_model_definition_replays_per_thread",
        ),
        "streaming": _h(
            "runtime.providers.test_provider",
            _TEST_PROVIDER + "test_streaming_simulation_chunks_text",
        ),
    },
    "ModelCapabilities": {
        "vision": _h(
            "runtime.step.media (placeholder instead of the image)",
            _IMAGES + "test_spec_vision_false_replaces_images_with_a_placeholder_naming_the_file",
        ),
        "functionCalling": Row(
            HONOURED,
            "runtime.step.attempts; tools on such a model: runtime.definitions.entry_rules.function_calling_errors",
            _REFUSALS + "test_spec_item3_tools_on_a_model_without_function_calling_are_refused",
            f"false with tools is refused ({_IMPORT_API_STUDIO})",
        ),
        "structuredOutputs": Row(
            HONOURED,
            "runtime.step.structured; responseSchema without it refused by runtime.definitions.validation",
            _AA
            + "admin/test_admin_prompts_structured.py::test_spec_response_schema_refused_at_save_when_the_model_has_no_structured_outputs",
        ),
        "supportsImages": _h(
            "runtime.step.media (placeholder instead of the image)",
            _SPEC2_RT + "test_C1_supports_images_false_replaces_images_with_the_placeholder",
            "0.2.0's name of vision",
        ),
        "supportsToolCalls": _h(
            "runtime.step.attempts; tools on such a model refused by "
            "runtime.definitions.entry_rules.function_calling_errors",
            _SPEC2_RT + "test_C1_supports_tool_calls_false_offers_no_tools",
            "0.2.0's name of functionCalling",
        ),
        "supportsStreaming": _h(
            "runtime.providers.registry (false: one whole reply); with a test script's "
            "streaming refused by runtime.definitions.validation",
            _SPEC2_VENDOR
            + "test_C1_supports_streaming_false_and_max_output_tokens_shape_the_request",
        ),
        "supportsJsonMode": _h(
            "runtime.definitions.validation.response_schema_errors",
            _SPEC2_FILES
            + "test_C1_capabilities_in_0_2_0_names_import_export_and_gate_the_response_schema",
            "0.2.0's name of structuredOutputs",
        ),
        "maxContextTokens": _h(
            "runtime.step.attempts.over_context (a larger request goes to the fallback)",
            _SPEC2_RT + "test_C1_max_context_tokens_hands_an_oversized_request_to_the_fallback",
            "the request is estimated at four characters a token",
        ),
        "maxOutputTokens": _h(
            "runtime.step.llm_half.Stepper.prepare (each reply's cap)",
            _SPEC2_VENDOR
            + "test_C1_supports_streaming_false_and_max_output_tokens_shape_the_request",
        ),
        "reasoningLevels": _h(
            "runtime.definitions.entry_rules.reasoning_level_errors (an effort it does not "
            "offer is refused at save)",
            _SPEC2_FILES + "test_C1_reasoning_levels_refuse_an_effort_the_model_does_not_offer",
        ),
    },
    "ScriptedResponse": {
        "content": _h(
            "runtime.providers.test_provider",
            _TEST_PROVIDER + "test_responses_come_in_order_and_the_script_runs_out_clearly",
        ),
        "toolCalls": _h(
            "runtime.providers.test_provider",
            _TEST_PROVIDER + "test_tool_calls_stream_with_json_arguments",
        ),
        "reasoningContent": _h(
            "runtime.providers.test_provider",
            _AA
            + "api/test_chat_page_api.py::test_reasoning_is_offered_when_the_thread_already_holds_some",
        ),
        "finishReason": _h(
            "runtime.providers.test_provider",
            _AA
            + "orchestration/test_mcp_servers.py::test_refresh_caches_the_tools_or_says_what_failed",
        ),
        "usage": _h(
            "runtime.providers.test_provider",
            _TEST_PROVIDER + "test_usage_is_scripted_or_estimated",
        ),
        "error": _h(
            "runtime.providers.test_provider",
            _TEST_PROVIDER + "test_scripted_error_is_a_provider_error_with_retryable_flag",
        ),
        "delayMs": _h(
            "runtime.providers.test_provider",
            _TEST_PROVIDER + "test_delay_ms_is_honoured_without_timing_assertions",
        ),
        "expectInput": _h(
            "runtime.providers.test_provider",
            _TEST_PROVIDER + "test_expect_input_violations_raise_invalid_request",
        ),
        "images": _h(
            "runtime.providers.test_provider, runtime.step.generated",
            _IMAGES + "test_spec_generated_images_are_stored_attached_and_streamed",
        ),
    },
    "ScriptedToolCall": {
        "name": _h(
            "runtime.providers.test_provider",
            _TEST_PROVIDER + "test_tool_calls_stream_with_json_arguments",
        ),
        "arguments": _h(
            "runtime.providers.test_provider",
            _TEST_PROVIDER + "test_tool_calls_stream_with_json_arguments",
        ),
        "id": _h(
            "runtime.providers.test_provider",
            _TEST_PROVIDER + "test_default_tool_call_ids_are_stable_per_thread_and_position",
        ),
    },
    "ScriptedUsage": {
        "promptTokens": _h(
            "runtime.providers.test_provider",
            _TEST_PROVIDER + "test_usage_is_scripted_or_estimated",
        ),
        "completionTokens": _h(
            "runtime.providers.test_provider",
            _RT + "step/test_attempt_ladder.py::test_thread_cost_is_the_sum_of_every_attempts_log",
        ),
        "reasoningTokens": _h(
            "runtime.providers.test_provider",
            _RT + "test_logs_and_events.py::test_each_llm_request_has_a_log_with_tokens_and_cost",
        ),
        "cachedTokens": _h(
            "runtime.providers.test_provider",
            _RT + "test_logs_and_events.py::test_each_llm_request_has_a_log_with_tokens_and_cost",
        ),
    },
    "ScriptedError": {
        "message": _h(
            "runtime.providers.test_provider",
            _TEST_PROVIDER + "test_scripted_error_is_a_provider_error_with_retryable_flag",
        ),
        "code": _h(
            "runtime.providers.test_provider",
            _TEST_PROVIDER + "test_scripted_error_is_a_provider_error_with_retryable_flag",
        ),
        "status": _h(
            "runtime.providers.test_provider",
            _TEST_PROVIDER + "test_scripted_error_is_a_provider_error_with_retryable_flag",
        ),
    },
    "InputExpectation": {
        "containsMessage": _h(
            "runtime.providers.test_provider",
            _TEST_PROVIDER + "test_expect_input_violations_raise_invalid_request",
        ),
        "containsToolResult": _h(
            "runtime.providers.test_provider", _TEST_PROVIDER + "test_expect_tool_result"
        ),
        "messageCount": _h(
            "runtime.providers.test_provider",
            _TEST_PROVIDER + "test_expect_input_violations_raise_invalid_request",
        ),
        "systemPromptContains": _h(
            "runtime.providers.test_provider",
            _TEST_PROVIDER + "test_expect_input_violations_raise_invalid_request",
        ),
        "imageCount": _h(
            "runtime.providers.test_provider",
            _IMAGES + "test_spec_vision_image_attachment_is_sent_as_an_image_part",
        ),
        "documentCount": _h(
            "runtime.providers.test_provider",
            _IMAGES + "test_pdf_becomes_a_document_part_and_other_files_a_text_reference",
        ),
        "attachmentNames": _h(
            "runtime.providers.test_provider", _IMAGES + "test_expect_input_names_what_differs"
        ),
        "attachmentTypes": _h(
            "runtime.providers.test_provider",
            _IMAGES + "test_pdf_becomes_a_document_part_and_other_files_a_text_reference",
        ),
    },
    "ToolResultExpectation": {
        "toolName": _h(
            "runtime.providers.test_provider", _TEST_PROVIDER + "test_expect_tool_result"
        ),
        "resultContains": _h(
            "runtime.providers.test_provider", _TEST_PROVIDER + "test_expect_tool_result"
        ),
    },
    "ScriptedImage": {
        "mimeType": _h(
            "runtime.providers.test_provider",
            _IMAGES + "test_spec_generated_images_are_stored_attached_and_streamed",
        ),
        "data": _h(
            "runtime.providers.test_provider",
            _IMAGES + "test_a_scripted_image_that_is_not_base64_is_refused_at_definition_time",
        ),
    },
    "StreamingSimulation": {
        "chunkSize": _h(
            "runtime.providers.test_provider",
            _TEST_PROVIDER + "test_streaming_simulation_chunks_text",
        ),
        "chunkDelayMs": _h(
            "runtime.providers.test_provider",
            "tests/browser/test_chat_outcomes.py::test_stop_keeps_the_partial_reply_and_reads_as_stopped",
        ),
    },
    "McpServerDefinition": {
        "name": _h(
            "runtime.mcp.servers (mcp:<server>/<tool>)",
            _MCP + "test_agent_calls_mcp_tools_through_the_service",
        ),
        "transport": Row(
            HONOURED,
            "runtime.mcp.client",
            _MCP + "test_stdio_server_refused_unless_the_setting_allows_it",
            "stdio refused while the setting is off",
        ),
        "url": _h("runtime.mcp.client", _MCP + "test_agent_calls_mcp_tools_through_the_service"),
        "command": _h(
            "runtime.mcp.client (stdio)",
            _MCP + "test_stdio_server_refused_unless_the_setting_allows_it",
        ),
        "args": _h(
            "runtime.mcp.client (stdio)", _MCP + "test_definition_files_round_trip_mcp_servers"
        ),
        "headers": _h(
            "runtime.mcp.client (${NAME} from env)",
            _RT + "mcp/test_mcp_tools.py::test_secret_canary_in_header_or_env_never_kept",
        ),
        "env": _h(
            "runtime.mcp.client",
            _RT + "mcp/test_mcp_tools.py::test_secret_canary_in_header_or_env_never_kept",
        ),
        "timeoutMs": _h(
            "runtime.mcp.client",
            _RT + "mcp/test_mcp_tools.py::test_text_image_failure_and_timeout_become_tool_results",
        ),
        "allowedTools": _h(
            "runtime.mcp.servers.McpServer.offered",
            _MCP + "test_definition_files_round_trip_mcp_servers",
        ),
        "enabled": _h(
            "runtime.tools.toolset (disabled servers offer nothing)",
            _RT + "mcp/test_mcp_tools.py::test_unknown_or_disabled_server_tools_are_not_offered",
        ),
        "auth": Row(
            HONOURED,
            "services.access.mcp_tokens (each person's own token on the call)",
            _MCP_OAUTH + "test_mcp_remote_oauth.py::"
            "test_a_person_connects_once_and_the_tool_call_uses_their_token",
            "modes other than none and oauth refused at save",
        ),
        "oauthClientId": _h(
            "services.access.mcp_connect (instead of dynamic registration)",
            _MCP_OAUTH + _CONFIGURED_CLIENT,
        ),
        "oauthClientSecret": _h(
            "services.access.mcp_connect (${NAME}: an instance env value)",
            _MCP_OAUTH + _CONFIGURED_CLIENT,
        ),
        "oauthScope": _h(
            "services.access.mcp_connect (the authorization request's scope)",
            _MCP_OAUTH + _CONFIGURED_CLIENT,
        ),
    },
    "A2aAgentDefinition": {
        "name": _h(
            "runtime.tools.a2a_tools (a2a:<name>; the tool's name)",
            _A2A
            + "test_a_remote_agent_is_one_tool_its_answer_the_result_its_context_kept_per_thread",
        ),
        "url": _h(
            "agents_app.services.doors.a2a_client (card, then its JSON-RPC endpoint)",
            _A2A
            + "test_a_remote_agent_is_one_tool_its_answer_the_result_its_context_kept_per_thread",
        ),
        "description": _h(
            "agents_app.services.doors.a2a_client (the tool's description)",
            _A2A + "test_failures_come_back_as_tool_errors_in_words",
        ),
        "headers": _h(
            "agents_app.services.doors.a2a_client (${NAME} from env)",
            _A2A + "test_failures_come_back_as_tool_errors_in_words",
        ),
        "timeoutMs": _h(
            "agents_app.services.doors.a2a_client",
            _A2A + "test_failures_come_back_as_tool_errors_in_words",
        ),
        "enabled": _h(
            "runtime.tools.toolset (a disabled agent is not offered)",
            _A2A + "test_failures_come_back_as_tool_errors_in_words",
        ),
    },
    "ThreadIn": {
        "agent_id": _h(
            "agents_app.api.threads.create", _THREADS + "test_create_answers_like_the_reference"
        ),
        "tags": _h(
            "agents_app.api.threads.create", _THREADS + "test_create_answers_like_the_reference"
        ),
        "env": _h(
            "agents_app.orchestration.thread_creation (thread env tier)",
            _THREADS + "test_create_keeps_text_types",
        ),
        "env_types": _h(
            "agents_app.orchestration.thread_creation", _THREADS + "test_create_keeps_text_types"
        ),
        "tenvs": Row(
            HONOURED,
            "agents_app.api.threads (alias of env; both given: 400)",
            "tests/agents_app/spec/test_spec_integrity_thread_env.py::test_tenvs_beside_env_on_thread_creation_is_refused",
            "the legacy name of env; given beside env it is refused (API)",
        ),
        "properties": _r(
            "agents_app.api.threads._UNSUPPORTED_CREATE_FIELDS",
            _THREADS + "test_create_refuses_configuration_it_would_ignore",
            "refused unless empty (API)",
        ),
        "initial_messages": _r(
            "agents_app.api.threads._UNSUPPORTED_CREATE_FIELDS",
            _THREADS + "test_create_refuses_configuration_it_would_ignore",
            "refused unless empty (API)",
        ),
        "data": _r(
            "agents_app.api.threads._UNSUPPORTED_CREATE_FIELDS",
            _THREADS + "test_create_refuses_configuration_it_would_ignore",
            "refused unless null (API)",
        ),
    },
}


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    out: list[type[BaseModel]] = []
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        out.append(annotation)
    for arg in typing.get_args(annotation):
        out += _models_in(arg)
    return out


def schema_fields(roots: list[type[BaseModel]]) -> dict[str, list[str]]:
    """Every schema reachable from ``roots`` → its fields as written on the wire."""
    found: dict[str, list[str]] = {}

    def walk(cls: type[BaseModel]) -> None:
        if cls.__name__ in found:
            return
        found[cls.__name__] = [f.alias or name for name, f in cls.model_fields.items()]
        for f in cls.model_fields.values():
            for sub in _models_in(f.annotation):
                walk(sub)

    for root in roots:
        walk(root)
    return found


def missing_rows(roots: list[type[BaseModel]]) -> list[str]:
    """``Schema.field`` for each field the ledger has no row for."""
    return [
        f"{schema}.{field}"
        for schema, fields in schema_fields(roots).items()
        for field in fields
        if field not in LEDGER.get(schema, {})
    ]


def size() -> int:
    return sum(len(rows) for rows in LEDGER.values())


def render_markdown() -> str:
    """The ledger as the Markdown section of docs/definitions.md."""
    lines = [
        "<!-- generated by runtime.definitions.ledger.render_markdown; do not edit by hand -->",
        f"Every field of every definition schema ({size()} rows). *honoured*: read where named, "
        "shown by the test; *refused*: a save that sets it fails with the field named; "
        "*open*: honoured only in part, the gap named (issue #38).",
        "",
    ]
    for schema, rows in LEDGER.items():
        lines += [
            f"#### {schema}",
            "",
            "| Field | Status | Where | Test | Note |",
            "|---|---|---|---|---|",
        ]
        for field, row in rows.items():
            test = row.test.split("::")[-1]
            lines.append(f"| `{field}` | {row.status} | {row.where} | `{test}` | {row.note} |")
        lines.append("")
    return "\n".join(lines)


DOC_BEGIN, DOC_END = "<!-- ledger:begin -->", "<!-- ledger:end -->"


def write_doc(path: str = "docs/definitions.md") -> None:
    """Rewrite the ledger section of ``path`` (``python -m runtime.definitions.ledger``)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    head, rest = text.split(DOC_BEGIN, 1)
    tail = rest.split(DOC_END, 1)[1]
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{head}{DOC_BEGIN}\n{render_markdown().strip()}\n{DOC_END}{tail}")


if __name__ == "__main__":
    write_doc()
