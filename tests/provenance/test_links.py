"""Provenance (scellis.provenance): the Guide's links from each program node to its IR ops, kernels and
code, for the example programs at several levels and memory settings; checked against the Guide's own
texts and against each other (recomputation and float16 storage add ops to a node, never move them)."""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from scellis.codegen import render
from scellis.examples import char_transformer, digits_cnn, digits_mlp, mlp
from scellis.graph import Program
from scellis.guide import guide_links, guide_of, step_schedule
from scellis.levels import Level
from scellis.lower import lower
from scellis.pipeline import Compiled, compile_program
from scellis.provenance import LOOP
from scellis.runtime.cpu.device import RUN_ORDER

F16 = frozenset({"shader-f16"})
NO_KERNEL = {"reshape", "expand", "permute", "slice", "const"}  # ops that lower to views or inline values
RULES = [
    {"on": "step", "if": {"non_finite": ["loss", "gradients"]}, "then": ["skip_batch"]},
    {"on": "evaluation", "if": {"plateau": {"metric": "loss", "patience": 3}}, "then": [{"set_lr": {"scale": 0.5}}]},
]


def with_memory(program: dict[str, Any], **memory: Any) -> dict[str, Any]:
    return {**program, "memory": {**program.get("memory", {}), **memory}}


def with_rules(data: dict[str, Any]) -> dict[str, Any]:
    optimizer = {
        "kind": "adamw",
        "clip_norm": 1.0,
        "weight_decay": 0.01,
        "schedule": {"kind": "cosine", "warmup_steps": 5},
    }
    return {**data, "loop": {**data["loop"], "rules": RULES}, "optimizer": optimizer}


def branches() -> dict[str, Any]:
    """Two branches joined by a concat (its parts written by a kernel each), SGD with momentum."""
    p = Program("branches")
    x, y = p.input("x", [6]), p.input("y", [], dtype="int32", role="labels")
    joined = p.concat([p.tanh(p.linear(x, 4, id="left")), p.sigmoid(p.linear(x, 3, id="right"))], axis=1, id="join")
    p.set_loss(p.cross_entropy(p.linear(joined, 5, id="out"), y, id="loss"))
    p.set_optimizer("momentum", lr=0.1)
    p.set_loop(epochs=1, batch_size=8)
    return p.to_json()


CASES: dict[str, tuple[Callable[[], Compiled], Level, frozenset[str]]] = {
    "digits_mlp": (lambda: compile_program(digits_mlp()), Level.PROD, frozenset()),
    "digits_cnn": (lambda: compile_program(digits_cnn()), Level.DEBUG, frozenset()),
    "char_transformer": (lambda: compile_program(char_transformer()), Level.PROD, frozenset()),
    "cnn_float16_checkpointed": (
        lambda: compile_program(with_memory(digits_cnn(), storage="float16", checkpoint=True)),
        Level.FAST,
        F16,
    ),
    "transformer_checkpointed": (
        lambda: compile_program(with_memory(char_transformer(), checkpoint=True)),
        Level.PROD,
        frozenset(),
    ),
    "branches": (lambda: compile_program(branches()), Level.DEBUG, frozenset()),
    "mlp_loss_scaled": (lambda: compile_program(mlp(64, [1026, 1026], 10, 512)), Level.FAST, F16),
    "mlp_rules_resident": (
        lambda: compile_program(with_memory(with_rules(digits_mlp()), data="resident"), examples=500),
        Level.PROD,
        frozenset(),
    ),
}


@functools.cache
def case(name: str) -> tuple[Compiled, dict[str, Any], dict[str, Any]]:
    """The compiled program, its links and its Guide."""
    build, level, features = CASES[name]
    compiled = build()
    return compiled, guide_links(compiled.at(level, features)), guide_of(compiled.at(level, features))


def op_kinds(links: dict[str, Any], guide: dict[str, Any], text: str) -> list[str]:
    """The op of each numbered line of one of the linked IR texts, read from the Guide's own text."""
    where = links["texts"][text]
    lines = guide["stages"][where["stage"]][1].split("\n")[where["first_op_line"] :]
    kinds = []
    for n, line in enumerate(lines):
        if not line.startswith(f"  %{n} = "):
            break
        kinds.append(line.split(" = ", 1)[1].split("(")[0].split("[")[0].split(" ")[0])
    return kinds


def node(links: dict[str, Any], node_id: str) -> dict[str, Any]:
    return next(n for n in links["nodes"] if n["id"] == node_id)


@pytest.mark.parametrize("name", CASES)
def test_every_node_that_computes_has_ops_and_kernels(name: str) -> None:
    compiled, links, guide = case(name)
    step = op_kinds(links, guide, "step")
    inputs = {n.id for n in compiled.program.nodes if n.op == "input"}
    for entry in links["nodes"]:
        if entry["id"] not in inputs | {LOOP}:
            assert entry["ir"]["forward"], f"{entry['id']} lowers to no forward op"
        if any(step[i] not in NO_KERNEL for i in entry["ir"]["step"]):
            assert entry["kernels"], f"{entry['id']} computes ops but no kernel is listed"
    assert node(links, compiled.program.loss)["ir"]["backward"], "the loss starts the backward"


@pytest.mark.parametrize("name", CASES)
def test_every_kernel_maps_back_and_the_nodes_cover_the_schedule(name: str) -> None:
    _, links, _ = case(name)
    ids = [n["id"] for n in links["nodes"]]
    assert ids[-1] == LOOP
    for kernel in links["kernels"]:
        assert kernel["nodes"], f"kernel {kernel['index']} maps to no program node"
        assert kernel["nodes"] == sorted(kernel["nodes"], key=ids.index)
    listed = {i for n in links["nodes"] for i in n["kernels"]}
    assert listed == set(range(len(links["kernels"])))
    for entry in links["nodes"]:
        assert entry["kernels"] == [k["index"] for k in links["kernels"] if entry["id"] in k["nodes"]]


@pytest.mark.parametrize("name", CASES)
def test_every_op_of_every_text_has_an_owner(name: str) -> None:
    """Each text's ops are all some node's (the backward and optimizer lists: the ops that stage adds)."""
    _, links, guide = case(name)
    counts = {text: len(op_kinds(links, guide, text)) for text in links["texts"]}
    owned = {text: set().union(*(n["ir"][text] for n in links["nodes"])) for text in links["texts"]}
    assert owned["forward"] == set(range(counts["forward"]))
    assert owned["step"] == set(range(counts["step"]))
    assert len(owned["backward"]) == counts["backward"] - counts["forward"]
    assert len(owned["optimizer"]) == counts["step"] - counts["backward"]
    assert owned["optimizer"] <= owned["step"]


@pytest.mark.parametrize("name", CASES)
def test_each_kernels_nodes_own_the_ops_it_computes(name: str) -> None:
    _, links, _ = case(name)
    for kernel in links["kernels"]:
        owners = {n["id"] for n in links["nodes"] if set(n["ir"]["step"]) & set(kernel["ops"])}
        if kernel["ops"]:  # a copy computes no op: it belongs to what it copies
            assert set(kernel["nodes"]) <= owners, kernel["index"]


@pytest.mark.parametrize("name", ["digits_mlp", "cnn_float16_checkpointed", "mlp_loss_scaled"])
def test_kernels_give_the_code_the_guide_shows(name: str) -> None:
    _, links, guide = case(name)
    wgsl = dict(guide["stages"])["WGSL (training step)"]
    assert [guide["stages"][s][0] for s in links["kernel_stages"]] == [
        "kernel schedule (training step)",
        "WGSL (training step)",
    ]
    for k in links["kernels"]:
        assert f"// k{k['index']}: {k['label']}, bindings {k['bindings']}, dispatch {tuple(k['dispatch'])}\n" in wgsl
        shader = "\n".join(wgsl.split("\n")[slice(*k["wgsl_lines"])])
        assert "@compute" in shader and k["wgsl_lines"][0] >= 1
        assert len(k["dispatch"]) == 3 and all(d >= 1 for d in k["dispatch"])
        assert k["cpu"] and set(k["cpu"]) <= set(RUN_ORDER)
    json.dumps(links)  # JSON-ready


@pytest.mark.parametrize("name", ["digits_mlp", "cnn_float16_checkpointed", "branches"])
def test_a_kernel_points_at_its_own_shader_in_the_wgsl_stage_and_holds_no_copy(name: str) -> None:
    """Known answer: each kernel's lines of the Guide's WGSL stage are the kernel rendered on its own
    (codegen.render), and its entry holds no WGSL, only where it is."""
    compiled, links, guide = case(name)
    _, level, features = CASES[name]
    schedule = step_schedule(compiled.at(level, features))
    lines = guide["stages"][links["kernel_stages"][1]][1].split("\n")
    assert len(links["kernels"]) == len(schedule.kernels)
    for entry, kernel in zip(links["kernels"], schedule.kernels, strict=True):
        assert not any(isinstance(v, str) and "@compute" in v for v in entry.values()), entry["index"]
        assert "wgsl" not in entry
        first, end = entry["wgsl_lines"]
        assert "\n".join(lines[first:end]) == render(kernel, schedule).source, entry["index"]
        assert lines[first - 1].startswith(f"// k{entry['index']}: ")  # its header line, just before
    assert guide["links"] == links  # the Guide's own links point alike


def test_a_linear_node_owns_its_matmuls_and_its_adam_updates() -> None:
    compiled, links, guide = case("digits_mlp")
    logits = node(links, "logits")
    text = {t: op_kinds(links, guide, t) for t in links["texts"]}
    assert [text["forward"][i] for i in logits["ir"]["forward"]] == ["matmul", "add"]
    assert sorted(text["backward"][i] for i in logits["ir"]["backward"]) == ["matmul", "matmul", "reshape", "sum"]
    kernels = [links["kernels"][i] for i in logits["kernels"]]
    # each parameter's moments and update run in its gradient's kernel (lower.merge): the weight's in the
    # matmul making it, the bias's in the sum over the batch, which takes the softmax's gradient as prologue
    # and the dx, one invocation per output, runs in a series with the loss's sum (lower.series)
    assert Counter(k["kind"] for k in kernels) == {"matmul": 2, "reduce": 1, "series": 1}
    (series,) = (k for k in kernels if k["kind"] == "series")
    assert [(p["kind"], p["variant"]) for p in series["parts"]] == [("matmul", "dot"), ("reduce", "serial")]
    assert series["cpu"] == [call for p in series["parts"] for call in p["cpu"]]
    matmuls = sorted((k["label"], k["cpu"]) for k in (*kernels, *series["parts"]) if k["kind"] == "matmul")
    tape = ["sc_cpu_matmul", "sc_cpu_tape"]  # the epilogue: + bias forward, relu's backward after the dx, Adam
    assert matmuls == [("matmul+1", tape), ("matmul+24", tape), ("matmul+3", tape)]
    (bias,) = (k for k in kernels if k["kind"] == "reduce")
    assert bias["cpu"] == ["sc_cpu_tape", "sc_cpu_reduce", "sc_cpu_tape"]  # prologue, the sum, Adam
    schedule = lower(compiled.step, Level.PROD)
    written = {b: name for name, b in schedule.outputs}
    writes = (v.buffer for k in kernels for v in schedule.kernels[k["index"]].writes)
    updates = {written[b] for b in writes if b in written} - {"loss"}  # (the loss's sum shares the dx's series)
    params = ("logits.weight", "logits.bias")
    assert updates == {f"{what}/{p}" for p in params for what in ("param", "state/opt.m", "state/opt.v")}
    relu = node(links, "relu")
    assert [text["backward"][i] for i in relu["ir"]["backward"]] == ["const", "less", "cast", "mul"]


def test_a_fused_kernel_lists_each_node_it_fuses() -> None:
    _, links, guide = case("digits_mlp")
    step = op_kinds(links, guide, "step")
    # the gradient through logits' weight, with relu's backward as its epilogue (a series' part)
    parts = [p for k in links["kernels"] for p in k.get("parts", [k])]
    (fused,) = [p for p in parts if p["kind"] == "matmul" and "less" in {step[i] for i in p["ops"]}]
    assert fused["label"] == "matmul+3"
    (holder,) = [k for k in links["kernels"] if fused in k.get("parts", [k])]
    assert {"relu", "logits"} <= set(holder["nodes"])
    _, links, guide = case("digits_cnn")
    step = op_kinds(links, guide, "step")
    relu3 = [i for i in node(links, "relu3")["ir"]["step"] if step[i] == "relu"]
    fused = [k for k in links["kernels"] if set(relu3) & set(k["ops"])]  # the relu in its product's epilogue
    assert [k["nodes"] for k in fused] == [["hidden", "relu3"]] and fused[0]["kind"] == "matmul"
    drop = [k for k in links["kernels"] if k["kind"] == "random" and "drop" in k["nodes"]]
    assert len(drop) == 2  # the dropout mask drawn where it is applied, and again in backward
    _, links, guide = case("branches")
    step = op_kinds(links, guide, "step")
    (join,) = [i for i in node(links, "join")["ir"]["step"] if step[i] == "concat"]
    (joined,) = [k for k in links["kernels"] if join in k["ops"]]  # both parts are in buffers: one kernel
    assert joined["kind"] == "concat" and "join" in joined["nodes"] and joined["cpu"] == ["sc_cpu_tape"] * 2


@pytest.mark.parametrize("name", ["mlp_rules_resident", "mlp_loss_scaled", "cnn_float16_checkpointed"])
def test_outputs_kernels_belong_to_their_nodes_and_the_loop(name: str) -> None:
    compiled, links, _ = case(name)
    _, level, features = CASES[name]
    schedule = lower(compiled.at(level, features).step, level, features)
    written = {b: name for name, b in schedule.outputs}
    params = {p.name: p.node_id for p in compiled.forward.params}
    for k in links["kernels"]:
        output = written.get(k["bindings"][-1], "")
        if output.startswith(("state/opt.step", "state/loop.", "state/opt.loss_scale", "state/opt.finite", "lr")):
            assert k["nodes"] == [LOOP], output
        elif output.startswith(("param/", "state/opt.")):
            assert k["nodes"] == [params[output.rsplit("/", 1)[1]]], output
    if name == "mlp_rules_resident":  # the batch is gathered on the device, by the input node
        assert node(links, "pixels")["kernels"] and node(links, "pixels")["ir"]["forward"]


@pytest.mark.parametrize(
    ("plain", "rewritten"),
    [("digits_cnn", "cnn_float16_checkpointed"), ("char_transformer", "transformer_checkpointed")],
)
def test_recomputation_and_float16_add_ops_to_nodes_without_moving_any(plain: str, rewritten: str) -> None:
    """Per node and text, the rewritten step's ops are the plain step's plus casts and recomputed copies
    of the node's own forward ops: the walk from the outputs follows every rewrite."""
    _, a, guide_a = case(plain)
    _, b, guide_b = case(rewritten)
    moved = 0
    for text in ("forward", "backward", "optimizer"):
        kinds_a, kinds_b = op_kinds(a, guide_a, text), op_kinds(b, guide_b, text)
        for x, y in zip(a["nodes"], b["nodes"], strict=True):
            before = Counter(kinds_a[i] for i in x["ir"][text] if kinds_a[i] != "const")
            after = Counter(kinds_b[i] for i in y["ir"][text] if kinds_b[i] != "const")
            own_copies = Counter(kinds_a[i] for i in x["ir"]["forward"]) if text == "backward" else Counter()
            assert not before - after - own_copies, (text, x["id"])  # or ops the plain backward recomputes
            own = Counter(kinds_a[i] for i in x["ir"]["forward"]) if text == "backward" else Counter()
            extra = after - before
            assert set(extra) <= set(own) | {"cast"}, (text, x["id"], extra)
            moved += sum(extra.values())
    assert moved, "the rewrite added ops"


@pytest.mark.parametrize("name", ["digits_cnn", "mlp_loss_scaled"])
def test_links_change_nothing_the_stages_compute(name: str) -> None:
    build, level, features = CASES[name]
    compiled = build()
    step = compiled.at(level, features).step
    before = (compiled.at(level, features).key, lower(step, level, features), guide_of(compiled.at(level, features)))
    links = guide_links(compiled.at(level, features))
    after = (compiled.at(level, features).key, lower(step, level, features), guide_of(compiled.at(level, features)))
    assert before == after
    assert links["key"] == before[0] and len(links["kernels"]) == len(before[1].kernels)
    assert build().at(level, features).key == before[0]
