"""Stage: export. A program as the source text of a PyTorch module (model.py of an export).

Expects a ValidProgram (its nodes in topological order, built at its batch size, so every node's rank and
dtype are known). Guarantees: `model_source` returns readable Python: the layer classes it needs (from
torch_layers.py), then `class Model(torch.nn.Module)` with one attribute per node that has parameters or
running statistics, registered under the node's id, so `state_dict()` names are the program's parameter and
state names (`conv1.weight`, `norm1.running_mean`, `spins.value`) with the program's shapes; `forward` takes
the program's input nodes (features, then labels) as arguments and computes the nodes the loss, the metrics
and the state updates reach, in program order, one line each (a chain PyTorch has one call for, attention
or an affine layer norm, is that call: scellis.torchexport.fusion), returning {"loss": ..., "<metric id>":
...}; in training it then sets each state's next value. Integer inputs are expected as int64 (torch's index
type); floats in torch's default dtype. Random nodes, bootstraps and augmentations draw Scellis's Philox
numbers (torch_layers.Philox: Model takes the run's seed, forward each substream's position); dropout uses
torch's generator, not Scellis's substream: masks differ by design, in distribution they are the same. A
node whose op has no torch lowering here raises Unsupported naming the node and the op: nothing is
approximated.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from importlib import resources

from scellis.graph import ValidProgram
from scellis.graph.validate import ValidNode
from scellis.ops import DType, Node, nf4
from scellis.torchexport.emit import Emitter, Lowering, Value, as_tensor, axis_of, literal, pair, rank_of
from scellis.torchexport.fusion import AffineNorm, Fusion, find_fusions
from scellis.torchexport.stochastic import STOCHASTIC

LAYERS_FILE = "torch_layers.py"


class Unsupported(ValueError):
    """A node whose op has no torch lowering (`node`, `op`): the export is refused."""

    def __init__(self, node: str, op: str, why: str = "") -> None:
        super().__init__(f"node {node!r}: op {op!r} has no PyTorch lowering{': ' + why if why else ''}")
        self.node, self.op = node, op


# -- lowerings: each returns the forward expression of the node (or a Value for scalars) ------------------


def _input(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    raise AssertionError("inputs are forward's arguments")  # handled by model_source


def _constant(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    p = node.params
    if not p["shape"] and not p["batched"]:
        return Value(literal(p["value"]), scalar=True)
    dims = ", ".join([*(["batch"] if p["batched"] else []), *map(str, p["shape"])])
    return f"torch.full(({dims},), {literal(p['value'])}, dtype=dtype, device=device)"


def _parameter(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    p = node.params
    e.layers.add("Tensor")
    shape = ", ".join(map(str, p["shape"]))
    trainable = "" if p["trainable"] else ", trainable=False"
    return f"{e.module(node.id, f'Tensor({shape}{trainable})')}()"


def _linear(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    p = node.params
    fan_in = e.shapes[node.inputs["x"][0]][-1]
    e.layers.add("Dense")
    extra = ("" if p["bias"] else ", bias=False") + ("" if p["trainable"] else ", trainable=False")
    ref = e.module(node.id, f"Dense({fan_in}, {p['features']}{extra})")
    return f"{ref}({x['x'][0].expr})"


def _pretrained_linear(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    p = node.params
    fan_in = e.shapes[node.inputs["x"][0]][-1]
    if p["storage"] == "nf4":
        e.layers.add("Nf4Linear")
        ref = e.module(node.id, f"Nf4Linear({fan_in}, {p['features']})")
        return f"{ref}({x['x'][0].expr})"
    ref = e.module(node.id, f"nn.Linear({fan_in}, {p['features']}, bias=False)")
    if not p["trainable"]:
        e.modules.append(f"{ref}.weight.requires_grad_(False)")
    return f"{ref}({x['x'][0].expr})"


def _matmul(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    a, b = x["a"][0].expr, x["b"][0].expr
    if node.params["transpose_a"]:
        a = f"{a}.transpose(-1, -2)"
    if node.params["transpose_b"]:
        b = f"{b}.transpose(-1, -2)"
    return f"torch.matmul({a}, {b})"


def _conv2d(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    p = node.params
    channels = e.shapes[node.inputs["x"][0]][1]
    args = [str(channels), str(p["out_channels"]), f"kernel_size={pair(p['kernel'])}"]
    for name, default in (("stride", 1), ("padding", 0), ("dilation", 1)):
        if pair(p[name]) != (default, default):
            args.append(f"{name}={pair(p[name])}")
    if p["groups"] != 1:
        args.append(f"groups={p['groups']}")
    if not p["bias"]:
        args.append("bias=False")
    ref = e.module(node.id, f"nn.Conv2d({', '.join(args)})")
    if not p["trainable"]:
        e.modules.append(f"{ref}.requires_grad_(False)")
    return f"{ref}({x['x'][0].expr})"


def _pool(name: str) -> Lowering:
    def lower(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
        p = node.params
        kernel = pair(p["kernel"])
        stride = kernel if p["stride"] is None else pair(p["stride"])
        padding = pair(p["padding"])
        more = "" if padding == (0, 0) else f", padding={padding}"
        return f"F.{name}({x['x'][0].expr}, {kernel}, stride={stride}{more})"

    return lower


BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "less": "<", "equal": "=="}


def _binary(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    a, b = x["a"][0], x["b"][0]
    if a.scalar and b.scalar:
        return Value(f"({a.expr} {BINARY[node.op]} {b.expr})", scalar=True)
    return f"{a.expr} {BINARY[node.op]} {b.expr}"


def _extreme(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    a, b = x["a"][0], x["b"][0]
    name = node.op  # maximum or minimum
    bound = "min" if name == "maximum" else "max"
    if a.scalar and b.scalar:
        return Value(f"{'max' if name == 'maximum' else 'min'}({a.expr}, {b.expr})", scalar=True)
    if b.scalar:
        return f"torch.clamp({a.expr}, {bound}={b.expr})"
    if a.scalar:
        return f"torch.clamp({b.expr}, {bound}={a.expr})"
    return f"torch.{name}({a.expr}, {b.expr})"


def _where(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    cond, a, b = x["cond"][0], x["a"][0], x["b"][0]
    return f"torch.where({cond.expr}, {as_tensor(a) if a.scalar and b.scalar else a.expr}, {b.expr})"


UNARY = {
    "neg": "-{}",
    "exp": "torch.exp({})",
    "log": "torch.log({})",
    "sqrt": "torch.sqrt({})",
    "rsqrt": "torch.rsqrt({})",
    "abs": "torch.abs({})",
    "relu": "torch.relu({})",
    "tanh": "torch.tanh({})",
    "sigmoid": "torch.sigmoid({})",
}


def _unary(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    v = x["x"][0]
    return UNARY[node.op].format(as_tensor(v))


def _leaky_relu(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    return f"F.leaky_relu({x['x'][0].expr}, {literal(node.params['alpha'])})"


def _gelu(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    return f"F.gelu({x['x'][0].expr}, approximate={node.params['approximate']!r})"


def _softmax(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    axis = axis_of(node.params["axis"], rank_of(e, node))
    return f"torch.{node.op}({x['x'][0].expr}, dim={axis})"


def _layer_norm(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    p = node.params
    shape = e.shapes[node.inputs["x"][0]][-p["normalized_dims"] :]
    eps = literal(p["eps"])
    if not p["affine"]:
        return f"F.layer_norm({x['x'][0].expr}, {tuple(shape)}, eps={eps})"
    ref = e.module(node.id, f"nn.LayerNorm({tuple(shape)}, eps={eps})")
    if not p["trainable"]:
        e.modules.append(f"{ref}.requires_grad_(False)")
    return f"{ref}({x['x'][0].expr})"


def _batch_norm(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    p = node.params
    channels = e.shapes[node.inputs["x"][0]][1]
    e.layers.add("BatchNorm")
    extra = ("" if p["affine"] else ", affine=False") + ("" if p["trainable"] else ", trainable=False")
    ref = e.module(node.id, f"BatchNorm({channels}, momentum={literal(p['momentum'])}, eps={literal(p['eps'])}{extra})")
    return f"{ref}({x['x'][0].expr})"


def _dropout(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    if node.params["p"] == 0:
        return x["x"][0]
    return f"F.dropout({x['x'][0].expr}, {literal(node.params['p'])}, self.training)"


def _gather(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    return f"F.embedding({x['indices'][0].expr}, {x['table'][0].expr}[0])"


def _embedding(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    p = node.params
    ref = e.module(node.id, f"nn.Embedding({p['num_embeddings']}, {p['dim']})")
    if not p["trainable"]:
        e.modules.append(f"{ref}.requires_grad_(False)")
    return f"{ref}({x['indices'][0].expr})"


def _reshape(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    dims = ", ".join(map(str, e.shapes[node.id][1:]))
    v = x["x"][0].expr
    return f"{v}.reshape({v}.shape[0]{', ' + dims if dims else ''})"


def _flatten(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    return f"{x['x'][0].expr}.flatten(1)"


def _permute(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    perm = ", ".join(str(a + 1) for a in node.params["perm"])
    return f"{x['x'][0].expr}.permute(0, {perm})"


def _concat(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    axis = axis_of(node.params["axis"], len(e.shapes[node.id]))
    parts = ", ".join(as_tensor(v) for v in x["xs"])
    return f"torch.cat([{parts}], dim={axis})"


def _index(parts: list[str]) -> str:
    while parts and parts[-1] == ":":
        parts.pop()
    return ", ".join(parts) if parts else ":"


def _slice(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    p = node.params
    shape = e.shapes[node.inputs["x"][0]][1:]
    steps = p["steps"] if p["steps"] is not None else (1,) * len(shape)
    parts = [":"]
    for start, stop, step, size in zip(p["starts"], p["stops"], steps, shape, strict=True):
        text = f"{start or ''}:{'' if stop >= size else stop}{'' if step == 1 else f':{step}'}"
        parts.append(":" if text == ":" else text)
    return f"{x['x'][0].expr}[{_index(parts)}]"


def _reduction(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    p, v, rank = node.params, x["x"][0].expr, rank_of(e, node)
    name = {"sum": "sum", "mean": "mean", "max": "amax", "var": "var"}[node.op]
    axes = _reduce_axes(e, node)
    args = []
    if axes != tuple(range(rank)) or p["keepdims"]:
        args.append(f"dim={axes if len(axes) != 1 else axes[0]}")
    if node.op == "var":
        args.append(f"correction={p['correction']}")
    if p["keepdims"]:
        args.append("keepdim=True")
    return f"{v}.{name}({', '.join(args)})"


def _cross_entropy(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    logits, labels = x["logits"][0].expr, x["labels"][0].expr
    reduction = node.params["reduction"]
    if len(e.shapes[node.inputs["logits"][0]]) > 2:
        logits, labels = f"{logits}.flatten(0, -2)", f"{labels}.flatten()"
    more = "" if reduction == "mean" else f", reduction={reduction!r}"
    return f"F.cross_entropy({logits}, {labels}{more})"


def _mse(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    reduction = node.params["reduction"]
    more = "" if reduction == "mean" else f", reduction={reduction!r}"
    return f"F.mse_loss({x['pred'][0].expr}, {x['target'][0].expr}{more})"


def _accuracy(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    return f"({x['logits'][0].expr}.argmax(-1) == {x['labels'][0].expr}).to(dtype).mean()"


def _to_float(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    v = x["x"][0]
    if v.scalar or e.dtypes[node.inputs["x"][0]] is DType.F32:
        return v if v.scalar else v.expr
    return f"{v.expr}.to(dtype)"


def _element(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    shape = e.shapes[node.inputs["x"][0]]
    index = ", ".join(str(i % size) for i, size in zip(node.params["index"], shape, strict=True))
    return f"{x['x'][0].expr}[{index}]"


def _roll(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    axis = axis_of(node.params["axis"], rank_of(e, node))
    return f"torch.roll({x['x'][0].expr}, {node.params['shift']}, dims={axis})"


def _reduce_axes(e: Emitter, node: ValidNode) -> tuple[int, ...]:
    rank = rank_of(e, node)
    return (
        tuple(range(rank))
        if node.params["axes"] is None
        else tuple(sorted(axis_of(a, rank) for a in node.params["axes"]))
    )


def _std_error(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    axes = _reduce_axes(e, node)
    count = math.prod(e.shapes[node.inputs["x"][0]][a] for a in axes)
    keep = ", keepdim=True" if node.params["keepdims"] else ""
    return f"torch.sqrt({x['x'][0].expr}.var(dim={axes}, correction=1{keep}) * {literal(1 / count)})"


def _sort(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    return f"torch.sort({x['x'][0].expr}, dim={axis_of(node.params['axis'], rank_of(e, node))}).values"


def _quantile(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    axis = axis_of(node.params["axis"], rank_of(e, node))
    return f"torch.quantile({x['x'][0].expr}, {literal(node.params['q'])}, dim={axis})"


def _linalg(name: str) -> Lowering:
    def lower(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
        args = ", ".join(x[port][0].expr for port in ("a", "b", "x") if port in x)
        return f"torch.{name}({args})"

    return lower


def _checkerboard(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    height, width = pair(node.params["shape"])
    rows, cols = f"torch.arange({height}, device=device)[:, None]", f"torch.arange({width}, device=device)"
    return f"(({rows} + {cols}) % 2 == {node.params['parity']}).to(dtype)[None]"


LOWERINGS: dict[str, Lowering] = {
    "constant": _constant,
    "parameter": _parameter,
    "linear": _linear,
    "pretrained_linear": _pretrained_linear,
    "matmul": _matmul,
    "conv2d": _conv2d,
    "max_pool2d": _pool("max_pool2d"),
    "avg_pool2d": _pool("avg_pool2d"),
    **dict.fromkeys(BINARY, _binary),
    "maximum": _extreme,
    "minimum": _extreme,
    "where": _where,
    **dict.fromkeys(UNARY, _unary),
    "leaky_relu": _leaky_relu,
    "gelu": _gelu,
    "softmax": _softmax,
    "log_softmax": _softmax,
    "layer_norm": _layer_norm,
    "batch_norm": _batch_norm,
    "dropout": _dropout,
    "gather": _gather,
    "embedding": _embedding,
    "reshape": _reshape,
    "flatten": _flatten,
    "permute": _permute,
    "concat": _concat,
    "slice": _slice,
    "sum": _reduction,
    "mean": _reduction,
    "max": _reduction,
    "var": _reduction,
    "cross_entropy": _cross_entropy,
    "mse": _mse,
    "accuracy": _accuracy,
    "float": _to_float,
    "element": _element,
    "roll": _roll,
    "std_error": _std_error,
    "sort": _sort,
    "quantile": _quantile,
    "solve": _linalg("linalg.solve"),
    "inverse": _linalg("linalg.inv"),
    "diagonal": lambda e, node, x: f"torch.diagonal({x['x'][0].expr}, dim1=-2, dim2=-1)",
    "checkerboard": _checkerboard,
    **STOCHASTIC,
}


def _fused(fusion: Fusion, out: dict[str, Value]) -> str:
    """The one call that computes a chain of nodes (scellis.torchexport.fusion)."""
    if isinstance(fusion, AffineNorm):
        x, w, b = out[fusion.x].expr, out[fusion.weight].expr, out[fusion.bias].expr
        return f"F.layer_norm({x}, {fusion.shape}, {w}, {b}, eps={literal(fusion.eps)})"
    k = out[fusion.k].expr + (".transpose(-1, -2)" if fusion.k_transposed else "")
    args = [out[fusion.q].expr, k, out[fusion.v].expr]
    if fusion.mask is not None:
        args.append(f"attn_mask={as_tensor(out[fusion.mask])}")
    if fusion.dropout:
        args.append(f"dropout_p={literal(fusion.dropout)} if self.training else 0.0")
    args.append(f"scale={literal(fusion.scale)}")
    return f"F.scaled_dot_product_attention({', '.join(args)})"


def unsupported(program: ValidProgram) -> list[tuple[str, str]]:
    """(node id, op) of every node whose op has no torch lowering, in program order."""
    return [(n.id, n.op) for n in program.nodes if n.op != "input" and n.op not in LOWERINGS]


def _reached(program: ValidProgram) -> set[str]:
    """The nodes the loss, the metrics and the state updates reach, through their inputs."""
    by_id = {n.id: n for n in program.nodes}
    todo = [
        *([program.loss] if program.loss else []),
        *program.metrics,
        *(n.id for n in program.nodes if n.op == "update"),
    ]
    seen: set[str] = set()
    while todo:
        nid = todo.pop()
        if nid not in seen:
            seen.add(nid)
            todo += [s for group in by_id[nid].inputs.values() for s in group]
    return seen


def layer_classes(names: set[str]) -> str:
    """The source of the named classes of torch_layers.py, in the file's order."""
    text = resources.files("scellis.torchexport").joinpath(LAYERS_FILE).read_text(encoding="utf-8")
    chunks = text.split("\n\n\nclass ")
    return "\n\n".join(f"class {c.rstrip()}\n" for c in chunks[1:] if re.split(r"\W", c, maxsplit=1)[0] in names)


def _forward_lines(e: Emitter, program: ValidProgram, inputs: list[ValidNode]) -> dict[str, Value]:
    """Each reached node's line in forward (e.lines), in program order; every node's value."""
    reached = _reached(program)
    out = {n.id: Value(e.local(n.id)) for n in inputs}
    fused = find_fusions(program, reached)
    absorbed = {nid for f in fused.values() for nid in f.absorbed}
    for node in program.nodes:
        if node.op == "input" or node.id not in reached:
            continue
        if node.id in absorbed:
            if node.op == "parameter":  # read by a fused call as its value: registered all the same
                out[node.id] = Value(f"{str(_parameter(e, node, {})).removesuffix('()')}.value")
            continue
        if node.id in fused:
            got: Value | str = _fused(fused[node.id], out)
        else:
            args = {port: [out[s] for s in sources] for port, sources in node.inputs.items()}
            got = LOWERINGS[node.op](e, node, args)
        if isinstance(got, Value) and (got.scalar or got.expr in e.locals):
            out[node.id] = got
            continue
        name = e.local(node.id)
        e.lines.append(f"{name} = {got.expr if isinstance(got, Value) else got}")
        out[node.id] = Value(name)
    return out


@dataclass(frozen=True)
class ModelSource:
    """model.py's text, and whether its Model draws (then Model takes the run's seed, and forward each
    substream's position and the first row of the batch it computes)."""

    text: str
    draws: bool


def model_source(program: ValidProgram, header: str) -> str:
    """model.py for `program` (module docstring above); `header`: the docstring's lines about the source."""
    return generate(program, header).text


def generate(program: ValidProgram, header: str) -> ModelSource:
    """model.py for `program` and what its Model takes."""
    missing = unsupported(program)
    if missing:
        nid, op = missing[0]
        raise Unsupported(nid, op)
    if program.built is None:
        raise ValueError(f"{program.name} was not built: validate it first")
    values: dict[str, Node] = program.built.values
    e = Emitter(program, {k: v.shape for k, v in values.items()}, {k: v.dtype for k, v in values.items()})
    inputs = sorted((n for n in program.nodes if n.op == "input"), key=lambda n: n.params["role"] == "labels")
    out = _forward_lines(e, program, inputs)
    results = [("loss", out[program.loss].expr)] if program.loss else []
    results += [(m, out[m].expr) for m in program.metrics]
    arguments = [out[n.id].expr for n in inputs]
    if "Philox" in e.layers:
        arguments += ["positions: dict[str, int] | None = None", "first_row: int = 0"]
    forward = [
        f"def forward(self, {', '.join(arguments)}) -> dict[str, torch.Tensor]:",
        "    dtype = torch.get_default_dtype()",
    ]
    if inputs:
        anchor = out[inputs[0].id].expr
        forward.append(f"    batch, device = {anchor}.shape[0], {anchor}.device")
    else:
        forward.append(f"    batch, device = {program.loop.batch_size}, self.device_anchor.device")
    if e.substreams:
        forward.append(f"    positions = positions or dict.fromkeys({sorted(e.substreams)!r}, 0)")
    forward += [f"    {line}" for line in e.lines]
    if e.updates:
        forward.append("    if self.training:  # the states' next values (evaluation changes nothing)")
        forward += [f"        {ref}.value = {value}.detach()" for ref, value in e.updates]
    forward.append("    return {" + ", ".join(f"{k!r}: {v}" for k, v in results) + "}")
    init = [
        f"def __init__(self{', seed: int = 0' if 'Philox' in e.layers else ''}) -> None:",
        "    super().__init__()",
        *(f"    {m}" for m in e.modules),
    ]
    if not inputs:
        init.append('    self.register_buffer("device_anchor", torch.empty(0), persistent=False)  # forward\'s device')
    if "Philox" in e.layers:
        init.append("    self.philox = Philox(seed)  # the run's substreams, as Scellis draws them")
    names = ", ".join(repr(n.id) for n in inputs)
    parts = [
        f'"""{header}\n\n{_DOC}"""',
        "from __future__ import annotations",
        ("import hashlib\n\n" if "Philox" in e.layers else "")
        + "import torch\nimport torch.nn.functional as F  # noqa: N812\nfrom torch import nn"
        + ("\nimport torch.distributed as dist" if "BatchNorm" in e.layers else ""),
    ]
    if "Nf4Linear" in e.layers:
        parts.append(f"NF4_LEVELS = {nf4.LEVELS32!r}  # scellis.ops.nf4's levels, float32 values")
    if e.layers:
        parts.append(layer_classes(e.layers).rstrip())
    body = [
        "class Model(nn.Module):",
        f"    inputs = ({names}{',' if len(inputs) == 1 else ''})  # forward's arguments: features, then labels",
        f"    outputs = ({', '.join(repr(k) for k, _ in results)}{',' if len(results) == 1 else ''})",
        "",
        *(f"    {line}" for line in init),
        "",
        *(f"    {line}" if line else "" for line in forward),
    ]
    parts.append("\n".join(body))
    text = "\n\n\n".join(p.replace("\n\n\n", "\n\n") if p.startswith('"""') else p for p in parts) + "\n"
    return ModelSource(text, "Philox" in e.layers)


_DOC = """\
One attribute per node with parameters, registered under the node's id: state_dict() names are the
program's (`<node id>.<name>`) with the program's shapes. forward computes the nodes in program order
and returns the loss and the metrics; in training it then sets each state's next value. Integer inputs
are int64; floats are torch's default dtype. Random draws, bootstraps and augmentations are Scellis's
(Philox, from the run's seed, at each substream's position): the same numbers. Dropout draws its masks
from torch's generator (Scellis draws them from its Philox substream): the same distribution, other masks.
"""
