"""Definition files written as TypeScript, read without running them.

The reference keeps definitions as ``agents/agents/<name>.ts`` holding
``export default defineAgent({...})`` (likewise ``definePrompt``, ``defineModel``).
Such a file is read statically: the tree-sitter TypeScript grammar finds the default
export, and its object literal becomes the same JSON object a ``.json`` definition
file holds. Nothing is executed, so only literal values are accepted (strings,
numbers, booleans, null, arrays, objects, template strings without ``${}``);
``as const`` and ``satisfies T`` are looked through, imports and comments ignored.
Anything else (a variable, a function call, a spread) is refused with its line,
because a value computed by code would need the code to run.
"""

from __future__ import annotations

import codecs
import json
from typing import Any

import tree_sitter
import tree_sitter_typescript

_LANGUAGE = tree_sitter.Language(tree_sitter_typescript.language_typescript())
DEFINE_FUNCTIONS = {"agents": "defineAgent", "prompts": "definePrompt", "models": "defineModel"}
_WRAPPERS = frozenset({"as_expression", "satisfies_expression", "parenthesized_expression"})
_IGNORED_STATEMENTS = frozenset(
    {
        "import_statement",
        "comment",
        "empty_statement",
        "interface_declaration",
        "type_alias_declaration",
    }
)


class SourceError(ValueError):
    """The file is not one ``export default defineX({...})`` of literal values."""


def read_ts_definition(source: bytes, kind: str) -> dict[str, Any]:
    """The definition object of a ``.ts`` definition file of ``kind`` (agents, prompts, models)."""
    define = DEFINE_FUNCTIONS[kind]
    root = tree_sitter.Parser(_LANGUAGE).parse(source).root_node
    if root.has_error:
        raise SourceError(f"line {_first_error_line(root)}: not valid TypeScript.")
    exports = []
    for statement in root.named_children:
        if statement.type == "export_statement" and any(
            c.type == "default" for c in statement.children
        ):
            exports.append(statement)
        elif statement.type not in _IGNORED_STATEMENTS:
            raise SourceError(
                f"line {_line(statement)}: only imports and `export default {define}({{...}})` "
                "may appear (definition files are read, not run)."
            )
    if len(exports) != 1:
        raise SourceError(f"expected one `export default {define}({{...}})`.")
    value = exports[0].named_children[-1]
    call = _unwrap(value)
    function = call.child_by_field_name("function") if call.type == "call_expression" else None
    if function is None or function.text != define.encode():
        raise SourceError(f"line {_line(value)}: the default export must be {define}({{...}}).")
    args = call.child_by_field_name("arguments")
    literal_args = [a for a in (args.named_children if args else []) if a.type != "comment"]
    if len(literal_args) != 1 or _unwrap(literal_args[0]).type != "object":
        raise SourceError(f"line {_line(call)}: {define} takes one object literal.")
    data = _value(_unwrap(literal_args[0]))
    assert isinstance(data, dict)
    return data


def _unwrap(node: tree_sitter.Node) -> tree_sitter.Node:
    while node.type in _WRAPPERS:
        node = node.named_children[0]
    return node


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", errors="replace")


def _line(node: tree_sitter.Node) -> int:
    return node.start_point[0] + 1


def _first_error_line(node: tree_sitter.Node) -> int:
    stack = [node]
    while stack:
        current = stack.pop(0)
        if current.type == "ERROR" or current.is_missing:
            return _line(current)
        stack[:0] = current.children
    return _line(node)


def _value(node: tree_sitter.Node) -> Any:
    node = _unwrap(node)
    kind = node.type
    if kind == "object":
        return _object(node)
    if kind == "array":
        return [_value(c) for c in node.named_children if c.type != "comment"]
    if kind in ("string", "template_string"):
        return _string(node)
    if kind == "number":
        return _number(_text(node))
    if kind in ("true", "false", "null"):
        return json.loads(kind)
    if kind == "unary_expression" and node.children[0].type in ("-", "+"):
        operand = _unwrap(node.named_children[0])
        if operand.type == "number":
            sign = -1 if node.children[0].type == "-" else 1
            return sign * _number(_text(operand))
    text = _text(node)
    raise SourceError(
        f"line {_line(node)}: `{text[:60]}` is not a literal value "
        "(definition files are read, not run: write the value itself)."
    )


def _object(node: tree_sitter.Node) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for member in node.named_children:
        if member.type == "comment":
            continue
        if member.type != "pair":
            raise SourceError(
                f"line {_line(member)}: only `key: value` pairs are read in a definition object."
            )
        key_node = member.child_by_field_name("key")
        value_node = member.child_by_field_name("value")
        assert key_node is not None and value_node is not None
        if key_node.type in ("string",):
            key = _string(key_node)
        elif key_node.type in ("property_identifier", "number"):
            key = _text(key_node)
        else:
            raise SourceError(f"line {_line(key_node)}: computed keys are not read.")
        out[key] = _value(value_node)
    return out


def _string(node: tree_sitter.Node) -> str:
    parts: list[str] = []
    for child in node.children:
        if child.type == "string_fragment":
            parts.append(_text(child))
        elif child.type == "escape_sequence":
            parts.append(_unescape(_text(child)))
        elif child.type == "template_substitution":
            raise SourceError(f"line {_line(child)}: template strings with ${{…}} are not read.")
    return "".join(parts)


def _unescape(sequence: str) -> str:
    if sequence[1:2] in ("'", '"', "`", "\\", "/", "$"):
        return sequence[1:]
    if sequence.startswith("\\u{"):
        return chr(int(sequence[3:-1], 16))
    if sequence.startswith("\\\n") or sequence.startswith("\\\r"):
        return ""  # a line continuation
    return codecs.decode(sequence, "unicode_escape")


def _number(text: str) -> int | float:
    clean = text.replace("_", "")
    lowered = clean.lower()
    for prefix, base in (("0x", 16), ("0o", 8), ("0b", 2)):
        if lowered.startswith(prefix):
            return int(clean[2:], base)
    value = float(clean)
    return int(value) if value.is_integer() and not any(c in lowered for c in ".e") else value
