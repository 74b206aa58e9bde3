"""The templates of wgsl/ and how codegen fills them in (codegen.wgsl_template): what is left out, how
each kind of placeholder is replaced, and that every template is read once and used."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scellis.codegen import wgsl_template
from scellis.codegen.wgsl_expr import lane_tree
from scellis.codegen.wgsl_template import END, MARKER, fragment, parse, template

ROOT = Path(__file__).resolve().parents[2]
NAMES = sorted(p.stem for p in (ROOT / "wgsl").glob("*.wgsl"))
EXAMPLE = f"""// a comment above: left out
const N: u32 = 1u;
alias T = f32;
fn ELEM(x: f32) -> T {{ return T(x); }}
fn BODY() {{}}
{MARKER}
fn main() {{
  // a comment below: left out too
  let n: T = ELEM(f32(N));
  BODY();
    BODY();
}}
"""


def test_the_head_and_comment_lines_are_left_out_and_placeholders_replaced() -> None:
    t = parse("example", EXAMPLE)
    assert (t.values, t.statements) == ({"N", "T", "ELEM"}, {"BODY"})
    filled = t.fill(N="7u", T="f16", ELEM="", BODY=["let a = 1;", "", "let b = 2;"])
    assert (
        filled
        == "fn main() {\n  let n: f16 = (f32(7u));\n  let a = 1;\n\n  let b = 2;\n    let a = 1;\n\n    let b = 2;\n}"
    )


FRAGMENT = f"""// a fragment: its head opens the function its statements stand in
const N: u32 = 1u;
fn INNER() {{}}
fn fragment() {{
{MARKER}
  let n = N;
  if (n > 0u) {{
    // left out
    INNER();
  }}
{END}
}}
// and what follows the end is left out
"""


def test_a_fragment_is_its_statements_unindented_and_takes_the_including_placeholder_s_indentation() -> None:
    t = parse("fragment", FRAGMENT)
    assert (t.values, t.statements) == ({"N"}, {"INNER"})
    lines = t.fill(N="2u", INNER=["a;", "b;"]).split("\n")
    assert lines == ["let n = 2u;", "if (n > 0u) {", "  a;", "  b;", "}"]
    outer = parse("example", EXAMPLE).fill(N="1u", T="f32", ELEM="", BODY=lines)
    assert "\n  let n = 2u;\n  if (n > 0u) {\n    a;\n    b;\n  }\n    let n = 2u;\n" in outer


def test_a_tree_includes_its_step_once_a_stride_from_32_down_to_1() -> None:
    assert fragment("lane_tree", STRIDE="8u", COMBINE="max(s, o)")[0].startswith("if (lid.x < 8u) {")
    steps = lane_tree("lane_tree", COMBINE="(s + o)")
    assert [line.split(")")[0] for line in steps[::2]] == [f"if (lid.x < {s}u" for s in (32, 16, 8, 4, 2, 1)]
    assert set(steps[1::2]) == {"workgroupBarrier();"}


def test_statements_take_a_text_in_place_or_lines_that_may_be_none() -> None:
    t = parse("example", EXAMPLE)
    assert "\n  x;\n    x;\n" in t.fill(N="1u", T="f32", ELEM="f32", BODY="x;")
    assert t.fill(N="1u", T="f32", ELEM="f32", BODY="").endswith("(f32(1u));\n  \n    \n}")
    assert t.fill(N="1u", T="f32", ELEM="f32", BODY=[]).endswith("(f32(1u));\n}")


def test_a_value_for_no_placeholder_or_none_for_one_is_refused_naming_the_file() -> None:
    t = parse("example", EXAMPLE)
    with pytest.raises(ValueError, match=r"wgsl/example.wgsl: no value for \['BODY'\], no placeholder for \['M'\]"):
        t.fill(N="1u", T="f32", ELEM="", M="2u")
    with pytest.raises(ValueError, match="BODY is not used as its declaration says"):
        parse("example", EXAMPLE.replace("  let n", "  let m = BODY;\n  let n")).fill(
            N="1u", T="f32", ELEM="", BODY="x"
        )


def test_a_comment_after_code_is_refused() -> None:
    with pytest.raises(ValueError, match=r"wgsl/bad\.wgsl: a comment must have its own line"):
        parse("bad", f"{MARKER}\nlet x = 1; // why\n")


@pytest.mark.parametrize("name", NAMES)
def test_every_placeholder_is_used_and_every_template_by_codegen(name: str) -> None:
    t = template(name)
    body = "\n".join(t.lines)
    unused = [p for p in t.values | t.statements if not re.search(rf"\b{p}\b", body)]
    assert not unused, f"wgsl/{name}.wgsl declares placeholders it never uses: {unused}"
    assert MARKER not in body
    sources = "".join(p.read_text() for p in (ROOT / "py" / "scellis" / "codegen").glob("wgsl*.py"))
    assert f'"{name}"' in sources or f"'{name}'" in sources, f"wgsl/{name}.wgsl is used by no renderer"


def test_templates_are_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from scellis.checks.cases import CASES
    from scellis.codegen import render
    from scellis.levels import Level
    from scellis.lower import lower

    reads: list[str] = []
    real = wgsl_template.read_asset
    monkeypatch.setattr(wgsl_template, "read_asset", lambda name: reads.append(name) or real(name))
    template.cache_clear()
    try:
        for _ in range(2):
            for case in CASES:
                schedule = lower(case.build(), Level.PROD)
                for kernel in schedule.kernels:
                    render(kernel, schedule)
    finally:
        template.cache_clear()
    assert len(reads) > 10 and len(reads) == len(set(reads))
