"""Fuzzing the validator: thousands of mutated programs, each accepted or rejected with issues, never a crash."""

from __future__ import annotations

import copy
import json
import math
import random
from collections.abc import Callable
from typing import Any

import pytest

from scellis.graph import CATALOG, Issue, Program, ProgramError, ValidProgram, validate
from scellis.graph.params import REQUIRED

CASES_PER_PROGRAM = 1200
MAX_MUTATIONS = 4


# -- the valid programs mutations start from -------------------------------------------------------


def mlp() -> dict[str, Any]:
    p = Program("mlp")
    x = p.input("x", [16])
    t = p.input("t", [3], role="labels")
    h = p.tanh(p.linear(p.gelu(p.linear(x, 32)), 32))
    skip = p.sigmoid(p.linear(x, 32, bias=False))
    out = p.linear(p.leaky_relu(p.concat([h, skip], axis=-1), 0.1), 3)
    p.set_loss(p.mse(out, t))
    p.add_metric(p.mean(p.abs(p.sub(out, t))))
    p.set_optimizer("sgd", lr=0.05, clip_norm=1.0)
    p.set_loop(epochs=3, batch_size=32, shuffle=True)
    return p.to_json()


def cnn() -> dict[str, Any]:
    p = Program("cnn")
    img = p.input("img", [1, 8, 8])
    y = p.input("y", [], dtype="int32", role="labels")
    c1 = p.relu(p.batch_norm(p.conv2d(img, 4, 3, padding=1)))
    c2 = p.relu(p.conv2d(p.max_pool2d(c1, 2), 8, 3, padding=1))
    flat = p.dropout(p.flatten(p.avg_pool2d(c2, 2)), 0.25)
    logits = p.linear(flat, 10)
    p.set_loss(p.cross_entropy(logits, y))
    p.add_metric(p.accuracy(logits, y))
    p.set_optimizer("momentum", lr=0.1, nesterov=True, schedule={"kind": "step", "step_size": 100, "gamma": 0.5})
    p.set_loop(epochs=2, batch_size=16)
    return p.to_json()


def attention() -> dict[str, Any]:
    p = Program("attention")
    x = p.input("x", [4, 8])
    y = p.input("y", [], dtype="int32", role="labels")
    q, k, v = p.linear(x, 8), p.linear(x, 8, bias=False), p.linear(x, 8)
    scores = p.mul(p.matmul(q, p.permute(k, [1, 0])), p.constant(0.35))
    mixed = p.matmul(p.softmax(scores, axis=-1), v)
    h = p.layer_norm(p.add(x, mixed))
    logits = p.linear(p.reshape(h, [-1]), 5)
    p.set_loss(p.cross_entropy(logits, y, reduction="sum"))
    p.add_metric(p.accuracy(logits, y))
    p.set_optimizer("adamw", lr=3e-4, weight_decay=0.01, schedule={"kind": "cosine", "warmup_steps": 10})
    p.set_loop(epochs=1, batch_size=8, shuffle=False)
    return p.to_json()


def tokens() -> dict[str, Any]:
    p = Program("tokens")
    tok = p.input("tok", [6], dtype="int32")
    y = p.input("y", [], dtype="int32", role="labels")
    every_other = p.slice(p.embedding(tok, 50, 8), [0, 0], [6, 8], [2, 1])
    m = p.var(every_other, [1], correction=1)
    gated = p.where(p.less(m, p.constant(0.5)), p.sqrt(m), p.exp(p.neg(m)))
    logits = p.linear(gated, 4)
    p.set_loss(p.cross_entropy(logits, y))
    p.add_metric(p.accuracy(logits, y))
    p.add_metric(p.max(p.log_softmax(logits)))
    p.set_optimizer("adam", lr=1e-3, beta1=0.8)
    return p.to_json()


PROGRAMS: dict[str, Callable[[], dict[str, Any]]] = {
    "mlp": mlp,
    "cnn": cnn,
    "attention": attention,
    "tokens": tokens,
}


# -- random JSON ------------------------------------------------------------------------------------

ATOMS: list[Any] = [
    None, True, False,
    0, 1, -1, 2, 3, 4, 8, 64, 65536, 65537, 2**31 - 1, 2**31, -(2**31), 2**53 + 1, 2**63, -(2**63) - 1,
    10**30, 10**400, -(10**400), 10**5000,
    0.0, -0.0, 0.5, 1.0, 3.0, -2.5, 1e-300, 5e-324, 1e308, -1e308, math.nan, math.inf, -math.inf,
    "", "x", "out", "in", "a" * 3000, "\x00", "ünï\u2028cødé", "nodes[0]", "scellis.program/1", "-1", "null",
]  # fmt: skip
KEYS = [
    "format", "name", "nodes", "edges", "loss", "metrics", "optimizer", "loop", "id", "op", "params", "label",
    "position", "from", "to", "node", "port", "kind", "lr", "schedule", "batch_size", "shape", "features", "axis",
    "", "__proto__", "0", "🙂",
]  # fmt: skip
PORTS = sorted({port.name for spec in CATALOG.values() for port in spec.inputs} | {"out"})
PARAMS = sorted({(param.name, param.kind) for spec in CATALOG.values() for param in spec.params})
OPS = sorted(CATALOG)


def atom(rng: random.Random, names: list[str]) -> Any:
    """A JSON scalar; often one that means something here (a node id, an op, a port)."""
    roll = rng.random()
    if roll < 0.15 and names:
        return rng.choice(names)
    if roll < 0.25:
        return rng.choice(OPS + PORTS)
    if roll < 0.3:
        return rng.randint(-(2**40), 2**40)
    if roll < 0.35:
        return rng.uniform(-10, 10)
    return rng.choice(ATOMS)


def random_json(rng: random.Random, names: list[str], depth: int = 0) -> Any:
    roll = rng.random()
    if depth >= 3 or roll < 0.6:
        return atom(rng, names)
    if roll < 0.8:
        return [random_json(rng, names, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(KEYS + names): random_json(rng, names, depth + 1) for _ in range(rng.randint(0, 4))}


def param_value(rng: random.Random, kind: str, names: list[str]) -> Any:
    """A value near what a parameter of this kind takes: the right type at the edges of its range, or not."""
    ints = [-2, -1, 0, 1, 2, 3, 5, 7, 100, 2**31 - 1, 2**31, 10**400]
    if kind in ("ints", "axes", "pair"):
        return rng.choice([[], [rng.choice(ints)], [rng.choice(ints) for _ in range(rng.randint(2, 4))], *ints])
    if kind == "int":
        return rng.choice(ints)
    if kind == "float":
        return rng.choice([0, 1, -1.0, 0.5, 0.99, 1.5, 1e-12, 1e30, math.nan, math.inf, 10**400])
    if kind == "bool":
        return rng.choice([True, False, 0, 1, "true"])
    return random_json(rng, names)


# -- mutations --------------------------------------------------------------------------------------


def node_list(program: Any) -> list[Any]:
    nodes = program.get("nodes") if isinstance(program, dict) else None
    return nodes if isinstance(nodes, list) else []


def node_dicts(program: Any) -> list[dict[str, Any]]:
    return [n for n in node_list(program) if isinstance(n, dict)]


def edge_list(program: Any) -> list[Any]:
    edges = program.get("edges") if isinstance(program, dict) else None
    return edges if isinstance(edges, list) else []


def ids_of(program: Any) -> list[str]:
    return [n["id"] for n in node_dicts(program) if isinstance(n.get("id"), str)]


def locations(value: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) in a JSON tree."""
    found: list[tuple[Any, Any]] = []
    stack = [value]
    while stack:
        item = stack.pop()
        keys = list(item) if isinstance(item, dict) else range(len(item)) if isinstance(item, list) else []
        for key in keys:
            found.append((item, key))
            stack.append(item[key])
    return found


def containers(value: Any, kind: type) -> list[Any]:
    return ([value] if isinstance(value, kind) else []) + [c[k] for c, k in locations(value) if isinstance(c[k], kind)]


def delete_node(rng: random.Random, program: Any) -> Any:
    if nodes := node_list(program):
        nodes.pop(rng.randrange(len(nodes)))
    return program


def duplicate_node(rng: random.Random, program: Any) -> Any:
    if nodes := node_list(program):
        twin = copy.deepcopy(rng.choice(nodes))
        if isinstance(twin, dict) and rng.random() < 0.5:
            twin["id"] = f"{twin.get('id')}_copy"
        nodes.insert(rng.randrange(len(nodes) + 1), twin)
    return program


def rename_node(rng: random.Random, program: Any) -> Any:
    if nodes := node_dicts(program):
        ids = ids_of(program) or ["ghost"]
        choices = [rng.choice(ids), "ghost", "9lives", "a.b", "", None]
        nodes[rng.randrange(len(nodes))]["id"] = rng.choice(choices) if rng.random() < 0.7 else random_json(rng, ids)
    return program


def change_op(rng: random.Random, program: Any) -> Any:
    if nodes := node_dicts(program):
        roll = rng.random()
        op = rng.choice(OPS) if roll < 0.7 else rng.choice(["Linear", "conv3d", "", "relu "]) if roll < 0.85 else None
        rng.choice(nodes)["op"] = op if op is not None else random_json(rng, ids_of(program))
    return program


def set_param(rng: random.Random, program: Any) -> Any:
    if nodes := node_dicts(program):
        node = rng.choice(nodes)
        spec = CATALOG.get(node.get("op")) if isinstance(node.get("op"), str) else None
        own = [(p.name, p.kind) for p in spec.params] if spec is not None and spec.params else []
        name, kind = rng.choice(own) if own and rng.random() < 0.8 else rng.choice(PARAMS)
        params = node.setdefault("params", {})
        if isinstance(params, dict):
            params[name] = param_value(rng, kind, ids_of(program))
        else:
            node["params"] = {name: param_value(rng, kind, ids_of(program))}
    return program


def delete_param(rng: random.Random, program: Any) -> Any:
    nodes = [n for n in node_dicts(program) if isinstance(n.get("params"), dict) and n["params"]]
    if nodes:
        params = rng.choice(nodes)["params"]
        del params[rng.choice(list(params))]
    return program


def delete_edge(rng: random.Random, program: Any) -> Any:
    if edges := edge_list(program):
        edges.pop(rng.randrange(len(edges)))
    return program


def duplicate_edge(rng: random.Random, program: Any) -> Any:
    if edges := edge_list(program):
        edges.insert(rng.randrange(len(edges) + 1), copy.deepcopy(rng.choice(edges)))
    return program


def endpoint(rng: random.Random, program: Any) -> dict[str, Any]:
    ids = ids_of(program) or ["ghost"]
    return {
        "node": rng.choice(ids) if rng.random() < 0.9 else rng.choice(["ghost", "", 3]),
        "port": rng.choice(PORTS) if rng.random() < 0.9 else rng.choice(["OUT", "", None]),
    }


def reroute_edge(rng: random.Random, program: Any) -> Any:
    edges = [e for e in edge_list(program) if isinstance(e, dict)]
    if edges:
        edges[rng.randrange(len(edges))][rng.choice(["from", "to"])] = endpoint(rng, program)
    return program


def add_edge(rng: random.Random, program: Any) -> Any:
    """An edge between existing nodes: often out -> a real port, so it may close a cycle."""
    ids = ids_of(program)
    edges = edge_list(program)
    if ids and isinstance(program.get("edges"), list):
        target = rng.choice(node_dicts(program))
        spec = CATALOG.get(target.get("op")) if isinstance(target.get("op"), str) else None
        port = rng.choice(spec.inputs).name if spec is not None and spec.inputs else rng.choice(PORTS)
        source = {"node": rng.choice(ids), "port": "out"} if rng.random() < 0.7 else endpoint(rng, program)
        edges.append({"from": source, "to": {"node": target.get("id"), "port": port}})
    return program


def add_node(rng: random.Random, program: Any) -> Any:
    """A node of a random catalog op, its inputs wired from random nodes."""
    ids = ids_of(program)
    nodes, edges = node_list(program), edge_list(program)
    if ids and isinstance(program.get("nodes"), list) and isinstance(program.get("edges"), list):
        spec = CATALOG[rng.choice(OPS)]
        new_id = f"new{rng.randrange(1000)}"
        params = {p.name: param_value(rng, p.kind, ids) for p in spec.params if rng.random() < 0.5}
        nodes.insert(rng.randrange(len(nodes) + 1), {"id": new_id, "op": spec.name, "params": params})
        for port in spec.inputs:
            edges.append({"from": {"node": rng.choice(ids), "port": "out"}, "to": {"node": new_id, "port": port.name}})
        if rng.random() < 0.3:
            program["loss"] = new_id
    return program


def replace_value(rng: random.Random, program: Any) -> Any:
    """Any JSON value anywhere, the whole program included, becomes random JSON."""
    places = locations(program)
    if not places or rng.random() < 0.03:
        return random_json(rng, ids_of(program))
    container, key = rng.choice(places)
    container[key] = random_json(rng, ids_of(program))
    return program


def drop_key(rng: random.Random, program: Any) -> Any:
    if objects := [o for o in containers(program, dict) if o]:
        obj = rng.choice(objects)
        del obj[rng.choice(list(obj))]
    return program


def add_key(rng: random.Random, program: Any) -> Any:
    if objects := containers(program, dict):
        rng.choice(objects)[rng.choice([*KEYS, "extra", "weights", "momentum", "units"])] = random_json(rng, [])
    return program


def wrong_top_level(rng: random.Random, program: Any) -> Any:
    if isinstance(program, dict):
        key = rng.choice(["format", "name", "nodes", "edges", "loss", "metrics", "optimizer", "loop"])
        options = [None, 0, "x", [], {}, [None], ["loss"], {"kind": "adam"}, True, math.nan, ids_of(program)]
        if rng.random() < 0.2:
            program.pop(key, None)
        else:
            program[key] = copy.deepcopy(rng.choice(options))
    return program


def wrong_program(rng: random.Random, program: Any) -> Any:
    return rng.choice([None, [], [program], "program", 0, 1.5, True, json.dumps(printable(program))])


def objectives(rng: random.Random, program: Any) -> Any:
    if isinstance(program, dict):
        ids = ids_of(program) or ["ghost"]
        if rng.random() < 0.5:
            program["loss"] = rng.choice([*ids, "ghost", None])
        else:
            program["metrics"] = rng.sample(ids, k=min(len(ids), rng.randint(0, 3))) + rng.choice([[], ["ghost"]])
    return program


SETTING_NAMES = [
    "kind", "lr", "momentum", "beta1", "eps", "clip_norm", "nesterov", "epochs", "batch_size", "shuffle", "step_size",
    "gamma", "total_steps", "min_lr", "warmup_steps",
]  # fmt: skip


def settings(rng: random.Random, program: Any) -> Any:
    if isinstance(program, dict):
        section = rng.choice(["optimizer", "loop"])
        value = program.setdefault(section, {})
        if not isinstance(value, dict):
            program[section] = value = {}
        target = value.setdefault("schedule", {}) if section == "optimizer" and rng.random() < 0.3 else value
        if isinstance(target, dict):
            name = rng.choice(SETTING_NAMES)
            target[name] = rng.choice(
                [param_value(rng, rng.choice(["int", "float", "bool"]), []), "sgd", "momentum", "adamw", "cosine"]
            )
    return program


def shuffle(rng: random.Random, program: Any) -> Any:
    lists = [x for x in (node_list(program), edge_list(program)) if x]
    if lists:
        rng.shuffle(rng.choice(lists))
    return program


MUTATIONS: dict[str, Callable[[random.Random, Any], Any]] = {
    f.__name__: f
    for f in (
        delete_node, duplicate_node, rename_node, change_op, set_param, delete_param, delete_edge, duplicate_edge,
        reroute_edge, add_edge, add_node, replace_value, drop_key, add_key, wrong_top_level, wrong_program,
        objectives, settings, shuffle,
    )
}  # fmt: skip
WEIGHTS = {name: 0.2 if name == "wrong_program" else 3.0 if name == "replace_value" else 1.0 for name in MUTATIONS}


def mutate(rng: random.Random, program: Any) -> tuple[Any, list[str]]:
    applied = rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()), k=rng.randint(1, MAX_MUTATIONS))
    for name in applied:
        program = MUTATIONS[name](rng, program)
    return program, applied


# -- mutations that keep the structure: they reach the shape and dtype checks -----------------------

SAME_PORTS: dict[tuple[str, ...], list[str]] = {}
for _spec in CATALOG.values():
    SAME_PORTS.setdefault(tuple(port.name for port in _spec.inputs), []).append(_spec.name)


def plausible(rng: random.Random, param: Any) -> Any:
    """A value of the parameter's own type, small, sometimes out of its range."""
    small = list(range(-3, 10))
    if param.kind == "int":
        return rng.choice(small)
    if param.kind == "pair":
        return rng.choice(small) if rng.random() < 0.5 else [rng.choice(small), rng.choice(small)]
    if param.kind in ("ints", "axes"):
        return None if param.kind == "axes" and rng.random() < 0.2 else rng.sample(small, k=rng.randint(0, 4))
    if param.kind == "float":
        return rng.choice([0, 0.5, 1e-5, 0.99, 2.0, -1.0])
    if param.kind == "bool":
        return rng.random() < 0.5
    # a choice, or for a name: a good one, a reserved one, or a bad one
    return rng.choice(param.choices or ("noise", "init", "x y", "", "9th"))


def reshape_input(rng: random.Random, program: Any) -> Any:
    inputs = [n for n in node_dicts(program) if n["op"] == "input"]
    node = rng.choice(inputs)
    node["params"]["shape"] = [rng.randint(1, 9) for _ in range(rng.randint(0, 4))]
    node["params"]["dtype"] = rng.choice(["float32", "float32", "int32"])
    return program


def swap_op(rng: random.Random, program: Any) -> Any:
    node = rng.choice([n for n in node_dicts(program) if n["op"] != "input"])
    spec = CATALOG[rng.choice(SAME_PORTS[tuple(port.name for port in CATALOG[node["op"]].inputs)])]
    node["op"] = spec.name
    node["params"] = {p.name: plausible(rng, p) for p in spec.params if p.default is REQUIRED or rng.random() < 0.5}
    return program


def retune(rng: random.Random, program: Any) -> Any:
    node = rng.choice([n for n in node_dicts(program) if CATALOG[n["op"]].params])
    param = rng.choice(CATALOG[node["op"]].params)
    node.setdefault("params", {})[param.name] = plausible(rng, param)
    return program


def grow(rng: random.Random, program: Any) -> Any:
    """A new node of any op, fed from earlier nodes: sometimes the new loss or a new metric."""
    ids = ids_of(program)
    spec = CATALOG[rng.choice(OPS)]
    new_id = f"grown{len(ids)}"
    params = {p.name: plausible(rng, p) for p in spec.params if p.default is REQUIRED or rng.random() < 0.3}
    program["nodes"].append({"id": new_id, "op": spec.name, "params": params})
    for port in spec.inputs:
        for _ in range(rng.randint(1, 3) if port.multiple else 1):
            program["edges"].append(
                {"from": {"node": rng.choice(ids), "port": "out"}, "to": {"node": new_id, "port": port.name}}
            )
    roll = rng.random()
    if roll < 0.3:
        program["loss"] = new_id
    elif roll < 0.5:
        program["metrics"] = [*program["metrics"], new_id]
    return program


TYPE_MUTATIONS: dict[str, Callable[[random.Random, Any], Any]] = {
    f.__name__: f for f in (reshape_input, swap_op, retune, grow)
}


# -- checking ---------------------------------------------------------------------------------------


def printable(value: Any, depth: int = 0) -> Any:
    """The program for a failure message: huge integers and deep nesting shortened, so it always prints."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"<int of {value.bit_length()} bits>"
    if depth > 12:
        return "<...>"
    if isinstance(value, dict):
        return {str(k): printable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [printable(v, depth + 1) for v in value]
    if isinstance(value, str) and len(value) > 80:
        return value[:40] + f"...<{len(value)} characters>"
    return value


def describe(label: str, program: Any) -> str:
    return f"{label}\nprogram:\n{json.dumps(printable(program), allow_nan=True)}"


def check(program: Any, label: str) -> str:
    """'valid' or 'rejected'; any other exception fails the test, naming the program."""
    try:
        result = validate(program)
    except ProgramError as err:
        found = err.issues
        assert found, describe(label, program)
        for issue in found:
            assert isinstance(issue, Issue) and str(issue) and issue.message, describe(f"{label}: {issue!r}", program)
            assert isinstance(issue.path, str) and isinstance(issue.node, str | None), describe(label, program)
        assert str(err).startswith(f"the program has {len(found)} problem(s)"), describe(label, program)
        return "rejected"
    except Exception as err:  # the failure the fuzzer looks for
        pytest.fail(describe(f"{label}: validate raised {type(err).__name__}: {err}", program))
    assert isinstance(result, ValidProgram), describe(label, program)
    seen: set[str] = set()
    for node in result.nodes:  # an accepted program is in topological order, its nodes all known ops
        sources = [s for group in node.inputs.values() for s in group]
        assert node.op in CATALOG and all(s in seen for s in sources), describe(label, program)
        seen.add(node.id)
    assert result.loss in seen and all(m in seen for m in result.metrics), describe(label, program)
    return "valid"


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_seed_program_is_valid(name: str) -> None:
    program = PROGRAMS[name]()
    assert validate(program).name == name
    assert validate(json.loads(json.dumps(program))).nodes == validate(program).nodes


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_mutated_programs_never_crash_the_validator(name: str) -> None:
    seed_program = PROGRAMS[name]()
    outcomes = {"valid": 0, "rejected": 0}
    used: set[str] = set()
    for case in range(CASES_PER_PROGRAM):
        rng = random.Random(f"{name}/{case}")
        program, applied = mutate(rng, copy.deepcopy(seed_program))
        used.update(applied)
        outcomes[check(program, f"{name} case {case}, mutations {applied}")] += 1
    assert sum(outcomes.values()) >= 1000
    assert used == set(MUTATIONS)
    assert outcomes["rejected"] >= 0.7 * CASES_PER_PROGRAM, outcomes  # the mutations do break programs
    assert outcomes["valid"] >= 1, outcomes  # and some leave them valid (reordering, duplicated multi-edges)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_well_formed_programs_of_any_types_never_crash_the_validator(name: str) -> None:
    """Ops swapped for others with the same ports, parameters and input shapes changed: the builders see it all."""
    seed_program = PROGRAMS[name]()
    outcomes = {"valid": 0, "rejected": 0}
    for case in range(300):
        rng = random.Random(f"types/{name}/{case}")
        program, applied = copy.deepcopy(seed_program), []
        for mutation in rng.choices(list(TYPE_MUTATIONS), k=rng.randint(1, 3)):
            program = TYPE_MUTATIONS[mutation](rng, program)
            applied.append(mutation)
        outcomes[check(program, f"{name} types case {case}, mutations {applied}")] += 1
    assert outcomes["rejected"] >= 50 and outcomes["valid"] >= 20, outcomes


def test_random_json_never_crashes_the_validator() -> None:
    count = 0
    for case in range(500):
        rng = random.Random(f"json/{case}")
        shape = random_json(rng, ["x", "h"])
        if case % 2:  # an object with the program's keys, holding anything
            shape = {key: random_json(rng, ["x", "h"]) for key in KEYS[:8] if rng.random() < 0.8}
        check(shape, f"random json case {case}")
        count += 1
    assert count == 500
