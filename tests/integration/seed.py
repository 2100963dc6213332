"""Seed the integration stack's database: personas with API keys and scripted agents.

Run as ``python -m tests.integration.seed`` with the stack's environment; prints
``{"keys": {username: raw_key}}`` as JSON on the last line.
"""

from __future__ import annotations

import json
import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.models import Permission  # noqa: E402

from agents_app.services.access.api_keys import api_key_create  # noqa: E402
from agents_app.services.definitions.saves import save_definitions  # noqa: E402
from runtime.core.spec import (  # noqa: E402
    AgentDefinition,
    ModelDefinition,
    PromptDefinition,
    SideConfig,
)

# name -> (script, streaming)
AGENTS = {
    # Streams its reply in small chunks.
    "greeter": (
        [{"content": "Hello Alice! How can I help you today?"}],
        {"chunkSize": 4, "chunkDelayMs": 15},
    ),
    # The first reply takes a while: messages sent meanwhile must queue.
    "slowpoke": (
        [
            {"content": "first answer", "delayMs": 1500},
            {"content": "second answer"},
            {"content": "third answer"},
        ],
        None,
    ),
    # A request long enough to stop (or to kill the worker) while it is in flight.
    "sleeper": ([{"content": "finally awake", "delayMs": 4000}, {"content": "still here"}], None),
    # Subagent children (tests/integration/test_subagents.py).
    "sub-child": ([{"content": "child result"}], None),
    "sub-slow-child": ([{"content": "slow result", "delayMs": 300}], None),
    "sub-fail-child": ([{"error": {"message": "child broke", "code": "invalid_request"}}], None),
    "sub-resumable-child": ([{"content": "answer one"}, {"content": "answer two"}], None),
    # Eval cases that take long enough to be in flight when a worker dies (test_evals_live).
    "eval-slow": ([{"content": "The answer is 42.", "delayMs": 1500}], None),
}

# Agents exposed as tools, served at /mcp (tests/integration/test_mcp_endpoint.py).
EXPOSED = {
    "mcp-oracle": "Answers questions about life, the universe and everything.",
    "mcp-sleeper": "Takes its time.",
}
AGENTS["mcp-sleeper"] = ([{"content": "too late", "delayMs": 40000}], None)
AGENTS["mcp-oracle"] = (
    [{"content": "The answer is 42.", "delayMs": 800}, {"content": "Still 42."}],
    None,
)

# Parents of subagents: name -> (tool entry, script).
SUBAGENT_PARENTS = {
    "sub-blocking-parent": (
        {"name": "sub-child", "blocking": True},
        [
            {"toolCalls": [{"name": "sub-child", "arguments": {"message": "count"}}]},
            {"content": "parent done"},
        ],
    ),
    "sub-async-parent": (
        {"name": "sub-slow-child", "blocking": False},
        [
            {"toolCalls": [{"name": "sub-slow-child", "arguments": {"message": "go"}}]},
            {"content": "waiting for the child"},
            {"content": "the child answered"},
        ],
    ),
    "sub-fail-parent": (
        {"name": "sub-fail-child", "blocking": False},
        [
            {"toolCalls": [{"name": "sub-fail-child", "arguments": {"message": "go"}}]},
            {"content": "waiting"},
            {"content": "the child failed"},
        ],
    ),
    "sub-resumable-parent": (
        {
            "name": "sub-resumable-child",
            "blocking": True,
            "resumable": {"receives_messages": "side_a", "maxInstances": 1},
        },
        [
            {
                "toolCalls": [
                    {
                        "name": "subagent_create",
                        "arguments": {
                            "agent": "sub-resumable-child",
                            "name": "Researcher",
                            "message": "Q1",
                        },
                    },
                    {
                        "name": "subagent_create",
                        "arguments": {
                            "agent": "sub-resumable-child",
                            "name": "Second",
                            "message": "Q2",
                        },
                    },
                ]
            },
            {"content": "created"},
            {
                "toolCalls": [
                    {
                        "name": "subagent_message",
                        "arguments": {"referenceId": "Researcher", "message": "Q3"},
                    }
                ]
            },
            {"content": "asked again"},
        ],
    ),
}


def subagent_parent_items() -> list[tuple[str, object]]:
    items: list[tuple[str, object]] = []
    for name, (entry, script) in SUBAGENT_PARENTS.items():
        model = ModelDefinition(
            name=f"{name}-model", provider="test", model="scripted", script=script
        )
        prompt = PromptDefinition.model_validate(
            {
                "name": f"{name}-prompt",
                "model": model.name,
                "prompt": "You delegate.",
                "includeChat": True,
                "includePastTools": True,
                "tools": [entry],
            }
        )
        agent = AgentDefinition(name=name, side_a=SideConfig(prompt=prompt.name))
        items += [(model.name, model), (prompt.name, prompt), (name, agent)]
    return items


# Agents whose prompt offers code tools of the project's agents/ folder: name -> (tools, script).
TOOL_AGENTS = {
    # ``state.queue_tool`` on an idle thread (tests/integration/test_spec_broadcast.py).
    "queue-tool-agent": (["lookup_order"], [{"content": "Your order has shipped."}]),
    # A model call, a tool call, a second model call (tests/integration/test_traces.py).
    "traced-agent": (
        ["lookup_order"],
        [
            {"toolCalls": [{"name": "lookup_order", "arguments": {"order_id": "A-1001"}}]},
            # The reference is planted as a secret by the test: spans show it redacted.
            {"content": "Order A-1001 has shipped. Ref sk-canary-traces-51d0e2."},
        ],
    ),
}


def tool_agent_items() -> list[tuple[str, object]]:
    items: list[tuple[str, object]] = []
    for name, (tools, script) in TOOL_AGENTS.items():
        model = ModelDefinition(
            name=f"{name}-model", provider="test", model="scripted", script=script
        )
        prompt = PromptDefinition.model_validate(
            {
                "name": f"{name}-prompt",
                "model": model.name,
                "prompt": "You look orders up.",
                "includeChat": True,
                "includePastTools": True,
                "tools": tools,
            }
        )
        agent = AgentDefinition(name=name, side_a=SideConfig(prompt=prompt.name))
        items += [(model.name, model), (prompt.name, prompt), (name, agent)]
    return items


def seed() -> dict[str, object]:
    User = get_user_model()
    keys = {}
    # ops is the operator: staff holding every permission of the studio's app (being staff
    # alone grants nothing since the one permission model, agents_app/base/permissions.py). Not a
    # superuser: the browser stack's load_demo creates its superuser "admin" only when none
    # exists.
    for name, staff in (("alice", False), ("bob", False), ("charlie", False), ("ops", True)):
        user = User.objects.create_user(name, password="pw-for-tests-1", is_staff=staff)
        if staff:
            user.user_permissions.set(
                Permission.objects.filter(content_type__app_label="agents_app")
            )
        keys[name] = api_key_create(user=user, name="integration")[1]
    items = []
    for name, (script, streaming) in AGENTS.items():
        model = ModelDefinition(
            name=f"{name}-model",
            provider="test",
            model="scripted",
            script=script,
            streaming=streaming,
        )
        prompt = PromptDefinition(
            name=f"{name}-prompt", model=model.name, prompt="You are helpful.", include_chat=True
        )
        agent = AgentDefinition(
            name=name,
            side_a=SideConfig.model_validate({"prompt": prompt.name, **SIDES.get(name, {})}),
            expose_as_tool=name in EXPOSED,
            tool_description=EXPOSED.get(name),
            mid_run_messages=MID_RUN.get(name, "queue"),
        )
        items += [(model.name, model), (prompt.name, prompt), (name, agent)]
    items += subagent_parent_items()
    items += tool_agent_items()
    save_definitions(items, strict_code_names=False)
    return {"keys": keys}


# Subagent robustness and create-or-continue (tests/integration/test_subagents.py).
AGENTS.update(
    {
        # Still thinking when its worker is killed.
        "sub-crash-child": ([{"content": "too late", "delayMs": 4000}], None),
        "sub-continue-child": (
            [{"content": "answer one"}, {"content": "answer two"}, {"content": "answer three"}],
            None,
        ),
    }
)
SUBAGENT_PARENTS.update(
    {
        "sub-crash-parent": (
            {"name": "sub-crash-child", "blocking": False},
            [
                {"toolCalls": [{"name": "sub-crash-child", "arguments": {"message": "go"}}]},
                {"content": "waiting"},
                {"content": "the child crashed"},
            ],
        ),
        "sub-continue-parent": (
            {
                "name": "sub-continue-child",
                "blocking": True,
                "resumable": {"receives_messages": "side_a", "maxInstances": 1},
            },
            [
                {
                    "toolCalls": [
                        {
                            "name": "subagent_create",
                            "arguments": {
                                "agent": "sub-continue-child",
                                "name": "Researcher",
                                "message": "Q1",
                            },
                        },
                        {
                            "name": "subagent_create",
                            "arguments": {
                                "agent": "sub-continue-child",
                                "name": "Second",
                                "message": "Q2",
                            },
                        },
                    ]
                },
                {"content": "created"},
                {
                    "toolCalls": [
                        {
                            "name": "subagent_message",
                            "arguments": {"referenceId": "Researcher", "message": "Q3"},
                        }
                    ]
                },
                {"content": "asked again"},
            ],
        ),
    }
)


# Session tools (tests/integration/test_subagents.py): side options by agent name.
SIDES: dict[str, dict[str, object]] = {
    "sub-session-child": {
        "sessionStatus": {"name": "report_status", "messageProperty": "status"},
        "sessionFail": {"name": "give_up", "messageProperty": "reason"},
    }
}
AGENTS["sub-session-child"] = (
    [
        {"toolCalls": [{"name": "report_status", "arguments": {"status": "Reading the files"}}]},
        {
            "toolCalls": [
                {"name": "give_up", "arguments": {"reason": "The files are unreadable."}}
            ],
            "delayMs": 3000,
        },
    ],
    None,
)
SUBAGENT_PARENTS["sub-session-parent"] = (
    {"name": "sub-session-child", "blocking": False},
    [
        {"toolCalls": [{"name": "sub-session-child", "arguments": {"message": "go"}}]},
        {"content": "waiting"},
        {"content": "the child gave up"},
    ],
)


# Tool calls that wait (tests/integration/test_tool_waits.py): the model calls lookup_order
# once, then answers; the call waits for approval (or for the client) in between.
_WAITING_SCRIPT = [
    {
        "toolCalls": [
            {"id": "call_wait_1", "name": "lookup_order", "arguments": {"order_id": "A-1001"}}
        ]
    },
    {"content": "all done"},
]
SUBAGENT_PARENTS.update(
    {
        "approval-agent": ({"name": "lookup_order", "requiresApproval": True}, _WAITING_SCRIPT),
        "approval-expiring": (
            {"name": "lookup_order", "requiresApproval": True, "waitTimeoutSeconds": 2},
            _WAITING_SCRIPT,
        ),
        "client-tool-agent": ({"name": "lookup_order", "client": True}, _WAITING_SCRIPT),
    }
)


# Mid-run policies (tests/integration/test_mid_run_live.py): slowpoke's script, one agent
# per policy other than the default queue.
MID_RUN = {f"slowpoke-{policy}": policy for policy in ("enqueue", "interrupt", "reject")}
AGENTS.update({name: AGENTS["slowpoke"] for name in MID_RUN})


if __name__ == "__main__":
    print(json.dumps(seed()))
