"""``run_code``: the sandbox's isolation, limits, bridges and result shape (spec ``runCode``)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest

from runtime.sandbox.options import SandboxLimits
from runtime.sandbox.result import CodeExecutionResult
from runtime.sandbox.runner import CodeExecution, run_code

MIB = 1024 * 1024
# The ECMAScript intrinsics the engine defines; anything else on globalThis would be ambient.
STANDARD_GLOBALS = set(
    [
        "Error",
        "EvalError",
        "RangeError",
        "ReferenceError",
        "SyntaxError",
        "TypeError",
        "URIError",
        "InternalError",
        "AggregateError",
        "Array",
        "Object",
        "Function",
        "Iterator",
        "parseInt",
        "parseFloat",
        "isNaN",
        "isFinite",
        "decodeURI",
        "decodeURIComponent",
        "encodeURI",
        "encodeURIComponent",
        "escape",
        "unescape",
        "Infinity",
        "NaN",
        "undefined",
        "eval",
        "Number",
        "Boolean",
        "String",
        "Math",
        "Reflect",
        "Symbol",
        "globalThis",
        "BigInt",
        "Date",
        "RegExp",
        "JSON",
        "Proxy",
        "Map",
        "Set",
        "WeakMap",
        "WeakSet",
        "ArrayBuffer",
        "SharedArrayBuffer",
        "Uint8ClampedArray",
        "Int8Array",
        "Uint8Array",
        "Int16Array",
        "Uint16Array",
        "Int32Array",
        "Uint32Array",
        "BigInt64Array",
        "BigUint64Array",
        "Float16Array",
        "Float32Array",
        "Float64Array",
        "DataView",
        "Atomics",
        "Promise",
        "WeakRef",
        "FinalizationRegistry",
    ]
)


async def run(source: str, **options: Any) -> CodeExecutionResult:
    return await run_code(source, options)


async def wait_for_report(handle: CodeExecution) -> None:
    """Wait until the sandbox has reported, i.e. its code is running."""
    for _ in range(3000):
        if handle.reports:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the sandbox never reported")


# --- termination and limits -----------------------------------------------------------


async def test_spec_terminate_stops_an_infinite_loop_within_100ms() -> None:
    handle = run_code("report('looping'); while (true) {}", {"report": lambda value: None})
    await wait_for_report(handle)
    assert handle.running
    started = time.monotonic()
    handle.terminate("out of budget")
    result = await handle
    elapsed = time.monotonic() - started
    assert elapsed < 0.1, f"terminate took {elapsed * 1000:.1f} ms"
    assert result.status == "terminated"
    assert result.error is not None and result.error.message == "out of budget"
    assert result.reports == ["looping"]
    assert not handle.running


async def test_spec_terminate_is_idempotent() -> None:
    handle = run_code("report(1); while (true) {}", {"report": lambda value: None})
    await wait_for_report(handle)
    handle.terminate("first")
    handle.terminate("second")
    result = await handle
    handle.terminate("after the end")
    assert result.status == "terminated" and result.error is not None
    assert result.error.message == "first"


async def test_terminate_before_the_child_starts_still_settles_terminated() -> None:
    handle = run_code("export default 1")
    handle.terminate()
    result = await handle
    assert result.status == "terminated"
    assert result.error is not None and result.error.message == "terminated by the caller"


async def test_cancelling_the_awaiting_caller_kills_the_child() -> None:
    handle = run_code("report(1); while (true) {}", {"report": lambda value: None})
    await wait_for_report(handle)
    process = handle._process
    assert process is not None

    async def awaiting() -> None:
        await handle

    task = asyncio.ensure_future(awaiting())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(asyncio.CancelledError):
        await handle
    assert process.returncode is not None  # killed and reaped
    assert not handle.running


async def test_spec_memory_bomb_ends_with_memory_and_the_host_survives() -> None:
    result = await run(
        "const hoard = []; for (;;) hoard.push({ n: hoard.length, text: 'y'.repeat(100) });",
        memory_limit_bytes=32 * MIB,
    )
    assert result.status == "memory", result.error
    assert result.error is not None and result.error.message == "out of memory"
    # The host process is this test: it is still here, and the next run works.
    after = await run("export default 6 * 7")
    assert (after.status, after.result) == ("success", 42)


async def test_spec_a_single_huge_allocation_ends_with_memory() -> None:
    # The allocation that aborted the whole host with an in-process engine.
    result = await run(
        "export default () => new Uint8Array(2 ** 30).length", memory_limit_bytes=32 * MIB
    )
    assert result.status == "memory"


async def test_the_cpu_time_cap_terminates_a_run_nobody_stops() -> None:
    result = await run_code("while (true) {}", limits=SandboxLimits(cpu_seconds=1))
    assert result.status == "terminated"
    assert result.error is not None and "CPU time limit" in result.error.message


async def test_output_flood_is_cut_off_by_the_output_limit() -> None:
    result = await run_code(
        "for (;;) console.log('x'.repeat(1000));", limits=SandboxLimits(max_output_bytes=64 * 1024)
    )
    assert result.status == "terminated"
    assert result.error is not None and result.error.name == "OutputLimit"


async def test_the_child_has_no_environment_and_os_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANDBOX_TEST_SECRET", "sk-do-not-leak")
    handle = run_code(
        "report(1); while (true) {}", {"report": lambda value: None, "memory_limit_bytes": 16 * MIB}
    )
    await wait_for_report(handle)
    process = handle._process
    assert process is not None
    proc = Path(f"/proc/{process.pid}")
    environ = (proc / "environ").read_bytes()
    limits = (proc / "limits").read_text()
    session = os.getsid(process.pid)
    handle.terminate()
    await handle
    assert environ == b""
    assert session == process.pid  # its own session and process group
    rows = {line[:26].strip(): line[26:].split() for line in limits.splitlines()[1:]}
    assert rows["Max open files"][:2] == ["0", "0"]
    assert rows["Max core file size"][:2] == ["0", "0"]
    assert rows["Max file size"][:2] == ["0", "0"]
    assert rows["Max cpu time"][0] == str(SandboxLimits().cpu_seconds)
    expected_space = 16 * MIB + SandboxLimits().address_space_headroom_bytes
    assert rows["Max address space"][0] == str(expected_space)


# --- no ambient capabilities ----------------------------------------------------------


async def test_spec_no_host_objects_fetch_require_process_timers() -> None:
    names = [
        "fetch", "require", "process", "module", "exports", "global", "window", "self", "document",
        "Deno", "Bun", "setTimeout", "setInterval", "setImmediate", "queueMicrotask", "XMLHttpRequest",
        "WebSocket", "Request", "Response", "URL", "performance", "std", "os", "print", "scriptArgs",
    ]  # fmt: skip
    result = await run(f"export default {names!r}.map((name) => [name, eval('typeof ' + name)])")
    assert result.status == "success"
    assert dict(result.result) == dict.fromkeys(names, "undefined")


async def test_spec_globalThis_holds_only_standard_intrinsics() -> None:
    result = await run("export default Object.getOwnPropertyNames(globalThis)")
    assert result.status == "success"
    assert set(result.result) <= STANDARD_GLOBALS


async def test_spec_host_modules_cannot_be_imported() -> None:
    for specifier in ("os", "std", "fs", "node:fs"):
        result = await run(f"import * as m from '{specifier}'; export default Object.keys(m)")
        assert result.status == "link_error", specifier
        assert result.error is not None and result.error.specifier == specifier


# --- modules and linking -------------------------------------------------------------


async def test_spec_url_imports_fail_at_link_time() -> None:
    reports: list[Any] = []
    result = await run(
        "report('evaluated'); import { x } from 'https://example.com/x.js'; export default x",
        report=reports.append,
    )
    assert result.status == "link_error"
    assert result.error is not None and result.error.specifier == "https://example.com/x.js"
    assert reports == [] and result.reports == []  # nothing ran: it failed before evaluation


async def test_spec_relative_modules_link_within_the_graph() -> None:
    result = await run(
        "import { double } from './lib/math.js'; export default double(21)",
        modules={
            "./lib/math.js": "import { one } from '../util.js'; export const double = (n) => n * 2 * one;",
            "./util.js": "export const one = 1;",
        },
        language="javascript",
    )
    assert (result.status, result.result) == ("success", 42)


async def test_spec_entry_imports_resolve_from_filename() -> None:
    result = await run(
        "import { name } from './sibling.js'; export default name",
        filename="src/main.ts",
        modules={"./src/sibling.js": "export const name = 'sibling';"},
    )
    assert (result.status, result.result) == ("success", "sibling")


async def test_spec_imports_outside_the_graph_fail_to_link() -> None:
    result = await run("import { x } from '../../outside.js'; export default x")
    assert result.status == "link_error"
    assert result.error is not None and result.error.specifier is not None


async def test_spec_missing_named_export_is_a_link_error() -> None:
    result = await run(
        "import { absent } from './m.js'; export default absent",
        modules={"./m.js": "export const present = 1;"},
    )
    assert result.status == "link_error"


async def test_spec_parse_errors_are_link_errors() -> None:
    javascript = await run("export default (((", language="javascript")
    typescript = await run("const x: = 1;\nexport default x")
    assert javascript.status == "link_error" and typescript.status == "link_error"
    assert javascript.error is not None and javascript.error.name == "SyntaxError"
    assert typescript.error is not None and typescript.error.line == 1


async def test_top_level_await_is_awaited() -> None:
    result = await run("const value = await Promise.resolve(5); export default value * 2")
    assert (result.status, result.result) == ("success", 10)


# --- bridges ------------------------------------------------------------------------


async def test_spec_bridged_imports_call_sync_and_async_host_functions() -> None:
    calls: list[Any] = []

    def add(a: int, b: int) -> int:
        calls.append(("add", a, b))
        return a + b

    async def load(key: str) -> dict[str, Any]:
        await asyncio.sleep(0.01)
        calls.append(("load", key))
        return {"key": key, "items": [1, 2]}

    result = await run(
        """
        import { add, load } from 'host';
        import config from 'config';
        export default async () => {
          const sum = await add(2, 3);
          const loaded = await load('k');
          return { sum, loaded, config, isPromise: add(1, 1) instanceof Promise };
        };
        """,
        imports={"host": {"add": add, "load": load}, "config": {"default": {"mode": "strict"}}},
    )
    assert result.status == "success", result.error
    assert result.result == {
        "sum": 5,
        "loaded": {"key": "k", "items": [1, 2]},
        "config": {"mode": "strict"},
        "isPromise": True,
    }
    assert ("add", 2, 3) in calls and ("load", "k") in calls


async def test_host_function_errors_reject_inside_the_sandbox_without_host_frames() -> None:
    def explode() -> None:
        raise KeyError("no such thing")

    result = await run(
        """
        import { explode } from 'host';
        export default async () => {
          try { await explode(); } catch (error) { return [error.name, error.message, error.stack.includes('.py')]; }
        };
        """,
        imports={"host": {"explode": explode}},
    )
    assert result.status == "success"
    assert result.result == ["KeyError", "'no such thing'", False]


async def test_spec_globals_are_module_scope_bindings_not_on_globalThis() -> None:
    async def get_message() -> str:
        return "latest user message"

    result = await run(
        "export default async () => [greeting, await getMessage(), typeof globalThis.greeting, 'getMessage' in globalThis]",
        globals={"greeting": "hello", "getMessage": get_message},
    )
    assert result.result == ["hello", "latest user message", "undefined", False]


async def test_spec_report_bridge_live_view_final_reports_and_sink() -> None:
    seen: list[Any] = []
    handle = run_code(
        "report({ step: 1 }); report('two'); export default 'done'", {"report": seen.append}
    )
    result = await handle
    assert result.reports == [{"step": 1}, "two"] == seen
    assert list(handle.reports) == result.reports


async def test_spec_no_report_global_without_a_sink() -> None:
    result = await run("export default typeof report")
    assert result.result == "undefined" and result.reports == []


async def test_spec_console_is_captured_into_logs() -> None:
    before = int(time.time() * 1000)
    result = await run(
        "console.log('a', 1, { b: [true, null] }); console.info('i'); console.warn('w'); "
        "console.error('e'); console.debug('d'); export default 0"
    )
    assert [(log.level, log.args) for log in result.logs] == [
        ("log", ["a", 1, {"b": [True, None]}]),
        ("info", ["i"]),
        ("warn", ["w"]),
        ("error", ["e"]),
        ("debug", ["d"]),
    ]
    assert all(before <= log.timestamp <= int(time.time() * 1000) for log in result.logs)


async def test_spec_a_caller_console_replaces_capture() -> None:
    lines: list[Any] = []
    result = await run(
        "console.log('to the caller'); export default 1", globals={"console": {"log": lines.append}}
    )
    assert result.status == "success"
    assert lines == ["to the caller"] and result.logs == []


# --- execute, results, errors ---------------------------------------------------------------


async def test_spec_execute_calls_the_named_export_with_args() -> None:
    result = await run(
        "export function increment(n, by) { return n + by } export default () => 'unused'",
        execute={"fn": "increment", "args": [100, 5]},
    )
    assert (result.status, result.result) == ("success", 105)


async def test_spec_a_non_function_export_is_the_result_and_takes_no_args() -> None:
    value = await run("export const answer = { n: 42 };", execute={"fn": "answer"})
    with_args = await run("export const answer = 42;", execute={"fn": "answer", "args": [1]})
    missing = await run("export const answer = 42;", execute={"fn": "question"})
    assert (value.status, value.result) == ("success", {"n": 42})
    assert with_args.status == "error" and missing.status == "error"


async def test_spec_undefined_is_a_valid_success_result() -> None:
    result = await run("export default () => undefined")
    assert (result.status, result.result, result.error) == ("success", None, None)


async def test_results_are_marshaled_as_deep_copies() -> None:
    result = await run(
        "const o = { m: new Map([['k', 1]]), s: new Set([1, 2]), d: new Date(0), big: 10n, "
        "list: [1, undefined], nan: NaN }; o.self = o; export default o"
    )
    assert result.result == {
        "m": {"k": 1},
        "s": [1, 2],
        "d": "1970-01-01T00:00:00.000Z",
        "big": "10",
        "list": [1, None],
        "nan": "NaN",
        "self": "[Circular]",
    }


async def test_spec_errors_carry_sandbox_frames_only() -> None:
    result = await run(
        "import { fail } from './lib/fail.ts';\nexport default () => fail('boom');",
        modules={
            "./lib/fail.ts": "export function fail(message: string): never {\n  throw new TypeError(message);\n}"
        },
    )
    assert result.status == "error" and result.error is not None
    error = result.error
    assert (error.name, error.message) == ("TypeError", "boom")
    assert (
        error.stack is not None
        and "lib/fail.ts:2:" in error.stack
        and "<runCode>:2:" in error.stack
    )
    for leak in ("/work", ".py", "<root>", "<prelude>", "internal-", "scope-", "<input>"):
        assert leak not in error.stack, leak
    assert (error.filename, error.line) == ("lib/fail.ts", 2)


async def test_spec_error_positions_are_the_original_source_positions() -> None:
    result = await run("const a: number = 1;\nexport default () => { null.x; }")
    assert result.error is not None
    assert (result.error.filename, result.error.line) == ("<runCode>", 2)


async def test_spec_duration_ms_is_the_wall_clock_time_of_the_run() -> None:
    started = time.monotonic()
    result = await run("export default 1")
    elapsed_ms = (time.monotonic() - started) * 1000
    assert 0 < result.duration_ms <= elapsed_ms


async def test_a_run_awaiting_nothing_that_can_settle_ends_with_an_error() -> None:
    result = await run("export default () => new Promise(() => {})")
    assert result.status == "error" and result.error is not None
    assert "never" in result.error.message or "nothing will settle" in result.error.message


async def test_spec_unknown_options_and_bad_limits_are_rejected() -> None:
    with pytest.raises(ValueError):
        run_code("1", {"timeout": 5})
    with pytest.raises(ValueError):
        run_code("1", {"memory_limit_bytes": -1})
    with pytest.raises(ValueError):
        run_code("1", {"globals": {"not an identifier": 1}})
    with pytest.raises(ValueError):
        run_code("1", {"imports": {"./relative.js": {}}})
    with pytest.raises(ValueError):
        run_code("1", {"globals": {"value": object()}})
