"""``run_code`` TypeScript: types are erased, positions kept, and the module runs."""

from __future__ import annotations

import pytest

from runtime.sandbox.runner import run_code
from runtime.sandbox.typescript import TypeScriptError, erase_types

TYPED_MODULE = """
import type { Shape } from './shapes.ts';
import { area, type Unit } from './shapes.ts';

interface Box<T> { readonly value: T; label?: string }
type Pair<A, B> = [A, B];
declare const ambient: number;

export enum Color { Red, Green = 5, Blue, Named = "named" }

abstract class Base<T> implements Box<T> {
  private readonly secret: string = 's';
  declare tag: string;
  abstract describe(): string;
  constructor(public_value: T) { this.value = public_value; }
  value!: T;
}

class Item<T> extends Base<T> {
  override describe(): string { return `item:${String(this.value)}`; }
}

function first<T>(items: T[]): T | undefined;
function first<T>(items: T[]): T | undefined { return items[0]; }

const unit = 'cm' as Unit;
const shape = { kind: 'square', side: 3 } satisfies Shape;
const pair: Pair<number, string> = [1, 'one'];

export default function main(scale: number = 1, suffix?: string): Record<string, unknown> {
  const item = new Item<number>(42);
  const value = <number>item.value;
  return {
    area: area(shape) * scale,
    unit,
    first: first<string>(['a', 'b'])!,
    pair,
    describe: item.describe() + (suffix ?? ''),
    value,
    colors: [Color.Red, Color.Green, Color.Blue, Color.Named, Color[5]],
  };
}
"""

SHAPES = """
export interface Shape { kind: 'square'; side: number }
export type Unit = 'cm' | 'in';
export const area = (shape: Shape): number => shape.side * shape.side;
"""


async def test_spec_a_typescript_module_with_types_runs() -> None:
    result = await run_code(
        TYPED_MODULE, {"modules": {"./shapes.ts": SHAPES}, "execute": {"args": [2]}}
    )
    assert result.status == "success", result.error
    assert result.result == {
        "area": 18,
        "unit": "cm",
        "first": "a",
        "pair": [1, "one"],
        "describe": "item:42",
        "value": 42,
        "colors": [0, 5, 6, "named", "Green"],
    }


async def test_spec_javascript_language_skips_erasure() -> None:
    result = await run_code("const x: number = 1; export default x", {"language": "javascript"})
    assert result.status == "link_error"  # a type annotation is a syntax error in JavaScript


def test_erasure_keeps_every_line_and_column() -> None:
    source = "const a: number = 1;\nfunction f<T>(x: T): T {\n  return x as T;\n}\nexport default f(a);\n"
    erased = erase_types(source)
    assert erased.splitlines() == [
        "const a         = 1;",
        "function f   (x   )    {",
        "  return x     ;",
        "}",
        "export default f(a);",
    ]


def test_erasure_blanks_type_only_imports_and_exports() -> None:
    erased = erase_types(
        "import type { A } from './a';\nimport { type B, c } from './b';\nexport type { A };\n"
    )
    assert erased.split("\n")[0].strip() == ""
    assert erased.split("\n")[1].replace(" ", "") == "import{c}from'./b';"
    assert erased.split("\n")[2].strip() == ""


def test_enum_keeps_the_line_count() -> None:
    source = "enum E {\n  A,\n  B,\n}\nexport default E.B;\n"
    erased = erase_types(source)
    assert erased.count("\n") == source.count("\n")
    assert erased.splitlines()[-1] == "export default E.B;"


@pytest.mark.parametrize(
    "source",
    [
        "namespace N { export const x = 1; }",
        "class C { constructor(private x: number) {} }",
        "const x: = 1;",
    ],
)
def test_constructs_needing_code_generation_or_unparsable_source_are_rejected(source: str) -> None:
    with pytest.raises(TypeScriptError):
        erase_types(source)
