"""Stage: code. The WGSL templates of the top-level `wgsl/` folder, each read once and filled in by the
renderers (see wgsl/README.md for the file format).

A template is a WGSL file that a WGSL parser accepts as it is. What stands above its line
`// ---- template ----` only makes it valid on its own (bindings, stubs of helper functions, and the
declarations of its placeholders) and is left out; so are comment lines, and whatever follows a line
`// ---- end ----`. Each placeholder is a CAPITALISED name: a `const` (or `alias`, `var`, `fn` with
parameters) is a piece of an expression and is replaced by a text; a `fn NAME() {}` stands for
statements, used as `NAME();`, and is replaced by a text or, alone on its line, by a list of lines
indented like it (blank lines stay empty; no lines remove it).

A fragment is a template of statements that a placeholder of another one includes (`fragment` gives its
lines): a piece several kernels share, or the part of a kernel family that differs. Its head opens a
function for the statements to stand in, `// ---- end ----` comes before the `}` that closes it, and
its lines lose the indentation they have in that function, so that they take the placeholder's.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from scellis.assets import read_asset

MARKER = "// ---- template ----"
END = "// ---- end ----"
DECLARED = re.compile(r"\b(const|alias|var(?:<[^>]*>)?|fn)\s+([A-Z][A-Z0-9_]*)\b(\(\))?")
NAME = re.compile(r"\b([A-Z][A-Z0-9_]*)\b(\(\);)?")
ALONE = re.compile(r"(\s*)([A-Z][A-Z0-9_]*)\(\);")

Value = str | list[str]


@dataclass(frozen=True)
class Template:
    name: str
    lines: tuple[str, ...]  # the template's text, line by line, without the comment lines
    values: frozenset[str]  # placeholders replaced by a text
    statements: frozenset[str]  # placeholders used as `NAME();`

    def fill(self, **values: Value) -> str:
        """The template's text with every placeholder replaced; ValueError when a placeholder gets no
        value or a value names none (a renderer and its template disagree)."""
        declared = self.values | self.statements
        if set(values) != declared:
            missing, extra = sorted(declared - set(values)), sorted(set(values) - declared)
            raise ValueError(f"wgsl/{self.name}.wgsl: no value for {missing}, no placeholder for {extra}")
        out: list[str] = []
        for line in self.lines:
            alone = ALONE.fullmatch(line)
            if alone and alone[2] in self.statements and isinstance(values[alone[2]], list):
                out += [alone[1] + text if text else "" for text in values[alone[2]]]
            else:
                out.append(NAME.sub(lambda m: self._replace(m, values), line))
        return "\n".join(out)

    def _replace(self, match: re.Match[str], values: dict[str, Value]) -> str:
        name, call = match[1], match[2]
        if name not in values:
            return match[0]
        value = values[name]
        if not isinstance(value, str) or (name in self.statements) != bool(call):
            raise ValueError(f"wgsl/{self.name}.wgsl: {name} is not used as its declaration says")
        return value if name in self.statements else value + (call or "")


def parse(name: str, text: str) -> Template:
    """The template `name` of the WGSL `text` (a file's, ending with a newline)."""
    lines = text.removesuffix("\n").split("\n")
    head, body = (lines[: lines.index(MARKER)], lines[lines.index(MARKER) + 1 :]) if MARKER in lines else ([], lines)
    body = body[: body.index(END)] if END in body else body
    values: set[str] = set()
    statements: set[str] = set()
    for kind, declared, empty in DECLARED.findall("\n".join(head)):
        (statements if kind == "fn" and empty else values).add(declared)
    kept = [line for line in body if not line.lstrip().startswith("//")]
    if any("//" in line for line in kept):
        raise ValueError(f"wgsl/{name}.wgsl: a comment must have its own line (codegen leaves those out)")
    indent = min((len(line) - len(line.lstrip(" ")) for line in kept if line.strip()), default=0)
    return Template(name, tuple(line[indent:] for line in kept), frozenset(values), frozenset(statements))


@functools.cache
def template(name: str) -> Template:
    """`wgsl/<name>.wgsl`, read (from the installed package or the checkout) the first time it is asked for."""
    return parse(name, read_asset(f"wgsl/{name}.wgsl").decode())


def fragment(name: str, **values: Value) -> list[str]:
    """The lines of the fragment `name` filled in, for the statement placeholder that includes it."""
    return template(name).fill(**values).split("\n")


def text(name: str) -> str:
    """A template without placeholders (helper functions), as it is."""
    return template(name).fill()
