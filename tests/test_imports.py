"""The import graph of py/scellis, built from the source with `ast` (imports inside functions count too):
no module reaches itself through its imports. Together with tests/test_layout.py's stage order, the
package reads top to bottom."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "py" / "scellis"


def module_name(path: Path, top: Path) -> str:
    parts = list(path.relative_to(top).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(top: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (a name imported from a module counts as that module;
    a submodule importing its own package's __init__ does not count: Python runs that first anyway)."""
    files = {module_name(p, top): p for p in sorted((top / "scellis").rglob("*.py"))}

    def resolve(name: str) -> str:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in (resolve(t) for t in targets if t.split(".")[0] == "scellis"):
                if target and target != name and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative: no
    recursion limit), each sorted, in order of discovery."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(graph[root])))]
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while not component or component[-1] != node:
                        component.append(stack.pop())
                        on_stack.discard(component[-1])
                    if len(component) > 1:
                        found.append(sorted(component))
            elif target not in index:
                index[target] = low[target] = len(index)
                stack.append(target)
                on_stack.add(target)
                work.append((target, iter(sorted(graph[target]))))
            elif target in on_stack:
                low[node] = min(low[node], index[target])
    return found


def test_the_package_has_no_import_loops() -> None:
    assert cycles(import_graph(ROOT / "py")) == []


def test_the_loop_check_sees_a_loop_through_a_function_local_import(tmp_path: Path) -> None:
    package = tmp_path / "scellis"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text('"""x"""\n')
    (package / "sub" / "__init__.py").write_text('"""x"""\n')
    (package / "a.py").write_text('"""x"""\nfrom scellis.sub.b import thing\n')
    (package / "sub" / "b.py").write_text('"""x"""\ndef thing():\n    from scellis import a\n')
    (package / "c.py").write_text('"""x"""\nimport scellis.a\n')
    graph = import_graph(tmp_path)
    assert graph["scellis.c"] == {"scellis.a"}
    assert cycles(graph) == [["scellis.a", "scellis.sub.b"]]
