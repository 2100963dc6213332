"""TypeScript type erasure: blank type-only syntax so the rest is plain JavaScript.

The tree-sitter TypeScript grammar finds the type-only nodes; they are
replaced by spaces (newlines kept), so every line and column of the erased
source is the line and column of the original and error positions need no
source map. Enums are the one construct with runtime meaning: they become the
same object TypeScript emits, written on the enum's first line and padded with
the newlines the declaration spanned. Constructs that need real code
generation (namespaces, parameter properties) are rejected with a
``TypeScriptError`` instead of being compiled half-way.

This runs in the sandbox's child process, so a hostile source costs the
child's CPU budget, not the host's.
"""

from __future__ import annotations

import json
from typing import NamedTuple

import tree_sitter
import tree_sitter_typescript

_LANGUAGE = tree_sitter.Language(tree_sitter_typescript.language_typescript())

# Nodes that are types wherever they appear.
_TYPE_NODES = frozenset(
    {
        "type_annotation",
        "type_arguments",
        "type_parameters",
        "type_predicate_annotation",
        "asserts_annotation",
        "opting_type_annotation",
        "omitting_type_annotation",
        "adding_type_annotation",
    }
)
# Declarations that exist only for the type checker.
_TYPE_DECLARATIONS = frozenset(
    {
        "interface_declaration",
        "type_alias_declaration",
        "ambient_declaration",
        "function_signature",
        "abstract_method_signature",
        "method_signature",
        "index_signature",
    }
)
# Modifier tokens that have no runtime meaning on the node kinds below.
_MODIFIER_PARENTS = frozenset(
    {"public_field_definition", "method_definition", "optional_parameter", "variable_declarator"}
)
_MODIFIER_TOKENS = frozenset(
    {"accessibility_modifier", "override_modifier", "readonly", "declare", "abstract", "?", "!"}
)
_UNSUPPORTED = {
    "internal_module": "namespaces are not supported; use ES modules",
    "module": "namespaces are not supported; use ES modules",
}


class TypeScriptError(Exception):
    """The source is not TypeScript we can erase (a parse error or an unsupported construct)."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


class _Edit(NamedTuple):
    # A NamedTuple, not a dataclass: the child imports this module on every
    # run, and dataclasses pulls in inspect.
    start: int
    end: int
    text: bytes | None = None  # None: blank the range


def erase_types(source: str) -> str:
    """Return ``source`` with its TypeScript types erased, positions preserved."""
    data = source.encode()
    tree = tree_sitter.Parser(_LANGUAGE).parse(data)
    root = tree.root_node
    if root.has_error:
        bad = _first_error(root)
        line, column = bad.start_point
        raise TypeScriptError("unexpected token", line + 1, column + 1)
    edits: list[_Edit] = []
    stack = [root]
    while stack:
        node = stack.pop()
        kind = node.type
        if kind in _UNSUPPORTED:
            raise TypeScriptError(
                _UNSUPPORTED[kind], node.start_point[0] + 1, node.start_point[1] + 1
            )
        if kind in _TYPE_NODES or kind in _TYPE_DECLARATIONS:
            edits.append(_Edit(*_statement_range(node)))
            continue
        if kind in ("as_expression", "satisfies_expression"):
            # Keep the expression, blank from the keyword to the end.
            keyword = node.children[1]
            edits.append(_Edit(keyword.start_byte, node.end_byte))
            stack.append(node.children[0])
            continue
        if kind == "non_null_expression":
            edits.append(_Edit(node.end_byte - 1, node.end_byte))
            stack.append(node.children[0])
            continue
        if kind == "enum_declaration":
            edits.append(_enum_edit(node, data))
            continue
        if kind in ("import_statement", "export_statement") and _is_type_only(node):
            edits.append(_Edit(node.start_byte, node.end_byte))
            continue
        if kind in ("import_specifier", "export_specifier") and _is_type_only(node):
            edits.append(_Edit(node.start_byte, _after_comma(node)))
            continue
        if kind == "required_parameter" and any(
            c.type == "accessibility_modifier" for c in node.children
        ):
            raise TypeScriptError(
                "parameter properties are not supported; assign the field in the constructor",
                node.start_point[0] + 1,
                node.start_point[1] + 1,
            )
        if kind == "public_field_definition" and any(c.type == "declare" for c in node.children):
            edits.append(_Edit(node.start_byte, node.end_byte))
            continue
        if kind == "abstract_class_declaration":
            edits.append(_Edit(node.children[0].start_byte, node.children[0].end_byte))
        if kind == "class_heritage":
            for child in node.children:
                if child.type == "implements_clause":
                    edits.append(_Edit(child.start_byte, child.end_byte))
        if kind in _MODIFIER_PARENTS:
            for child in node.children:
                if child.type in _MODIFIER_TOKENS:
                    edits.append(_Edit(child.start_byte, child.end_byte))
        stack.extend(child for child in node.children if child.is_named)
    return _apply(data, edits).decode()


def _first_error(root: tree_sitter.Node) -> tree_sitter.Node:
    stack = [root]
    while stack:
        node = stack.pop(0)
        if node.is_error or node.is_missing:
            return node
        stack[:0] = node.children
    return root


def _statement_range(node: tree_sitter.Node) -> tuple[int, int]:
    """A type-only declaration under ``export`` goes with its ``export``."""
    parent = node.parent
    if node.type in _TYPE_DECLARATIONS and parent is not None and parent.type == "export_statement":
        return parent.start_byte, parent.end_byte
    return node.start_byte, node.end_byte


def _is_type_only(node: tree_sitter.Node) -> bool:
    return any(child.type == "type" for child in node.children)


def _after_comma(node: tree_sitter.Node) -> int:
    sibling = node.next_sibling
    if sibling is not None and sibling.type == ",":
        return sibling.end_byte
    return node.end_byte


def _enum_edit(node: tree_sitter.Node, data: bytes) -> _Edit:
    """``enum E { A, B = 5 }`` becomes the object TypeScript emits, on one line."""
    name_node = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    if name_node is None or body is None:
        raise TypeScriptError("malformed enum", node.start_point[0] + 1, node.start_point[1] + 1)
    name = _text(name_node, data)
    parts = []
    for member in body.named_children:
        if member.type == "enum_assignment":
            key_node, value_node = member.children[0], member.children[-1]
            key = _member_name(key_node, data)
            value = _text(value_node, data)
            if value_node.type == "string":
                parts.append(f"E[{json.dumps(key)}] = {value};")
                continue
            parts.append(f"n = ({value}); E[E[{json.dumps(key)}] = n] = {json.dumps(key)};")
        elif member.type in ("property_identifier", "string"):
            key = _member_name(member, data)
            parts.append(f"n = n + 1; E[E[{json.dumps(key)}] = n] = {json.dumps(key)};")
    code = f"var {name} = (function (E) {{ let n = -1; {' '.join(parts)} return E; }})({{}});"
    newlines = data[node.start_byte : node.end_byte].count(b"\n")
    return _Edit(node.start_byte, node.end_byte, code.encode() + b"\n" * newlines)


def _member_name(node: tree_sitter.Node, data: bytes) -> str:
    text = _text(node, data)
    if node.type == "string":
        return str(json.loads(text)) if text.startswith('"') else text[1:-1]
    return text


def _text(node: tree_sitter.Node, data: bytes) -> str:
    return data[node.start_byte : node.end_byte].decode()


def _apply(data: bytes, edits: list[_Edit]) -> bytes:
    out = bytearray()
    cursor = 0
    for edit in sorted(edits, key=lambda e: e.start):
        if edit.start < cursor:  # nested inside an edit already applied
            continue
        out += data[cursor : edit.start]
        chunk = data[edit.start : edit.end]
        if edit.text is None:
            # One space per byte: a non-ASCII character inside a type moves
            # later columns on its line, a rare case not worth a source map.
            out += bytes(b if b == 0x0A else 0x20 for b in chunk)
        else:
            out += edit.text
        cursor = edit.end
    out += data[cursor:]
    return bytes(out)
