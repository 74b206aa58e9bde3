"""Stage: export. A program as the source text of a PyTorch module (model.py of an export).

Expects a ValidProgram (its nodes in topological order, built at its batch size, so every node's rank and
dtype are known). Guarantees: `model_source` returns readable Python: the layer classes it needs (from
torch_layers.py), then `class Model(torch.nn.Module)` with one attribute per node that has parameters or
running statistics, registered under the node's id, so `state_dict()` names are the program's parameter and
state names (`conv1.weight`, `norm1.running_mean`) with the program's shapes; `forward` takes the program's
input nodes (features, then labels) as keyword arguments and computes the nodes the loss, the metrics and
the state updates reach, in program order, one line each (a chain PyTorch has one call for, attention or
an affine layer norm, is that call: scellis.torchexport.fusion), returning {"loss": ..., "<metric id>": ...}.
Integer inputs are expected as int64 (torch's index type); floats in torch's default dtype. Dropout uses
torch's generator, not Scellis's Philox substream: masks differ by design, in distribution they are the
same. A node whose op has no torch lowering here raises Unsupported naming the node and the op: nothing is
approximated.
"""

from __future__ import annotations

import builtins
import keyword
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from scellis.graph import ValidProgram
from scellis.graph.validate import ValidNode
from scellis.ops import DType, Node, nf4
from scellis.torchexport.fusion import AffineNorm, Fusion, find_fusions

LAYERS_FILE = "torch_layers.py"
# names nn.Module already has: a node with one of these ids is registered by add_module and read by getattr
MODULE_NAMES = frozenset(
    (
        "T_destination",
        "add_module",
        "apply",
        "bfloat16",
        "buffers",
        "call_super_init",
        "children",
        "compile",
        "cpu",
        "cuda",
        "double",
        "dump_patches",
        "eval",
        "extra_repr",
        "float",
        "forward",
        "get_buffer",
        "get_extra_state",
        "get_parameter",
        "get_submodule",
        "half",
        "ipu",
        "load_state_dict",
        "modules",
        "mtia",
        "named_buffers",
        "named_children",
        "named_modules",
        "named_parameters",
        "parameters",
        "register_backward_hook",
        "register_buffer",
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "register_module",
        "register_parameter",
        "requires_grad_",
        "set_extra_state",
        "set_submodule",
        "share_memory",
        "state_dict",
        "to",
        "to_empty",
        "train",
        "training",
        "type",
        "xpu",
        "zero_grad",
        "inputs",
        "outputs",
    )
)
RESERVED = frozenset({"self", "torch", "nn", "F", "dist", "dtype", "device", "batch", *dir(builtins)})


class Unsupported(ValueError):
    """A node whose op has no torch lowering (`node`, `op`): the export is refused."""

    def __init__(self, node: str, op: str, why: str = "") -> None:
        super().__init__(f"node {node!r}: op {op!r} has no PyTorch lowering{': ' + why if why else ''}")
        self.node, self.op = node, op


@dataclass
class Value:
    """A node's value in forward: an expression (a local's name, or a literal for a scalar constant)."""

    expr: str
    scalar: bool = False  # a Python float literal, not a tensor


@dataclass
class Emitter:
    program: ValidProgram
    shapes: dict[str, tuple[int, ...]]
    dtypes: dict[str, DType]
    modules: list[str] = field(default_factory=list)  # __init__ lines
    lines: list[str] = field(default_factory=list)  # forward lines
    layers: set[str] = field(default_factory=set)  # torch_layers classes used
    locals: set[str] = field(default_factory=set)

    def local(self, node_id: str) -> str:
        name = re.sub(r"\W", "_", node_id)
        if keyword.iskeyword(name) or name in RESERVED or name[0].isdigit():
            name = f"{name}_"
        base, n = name, 2
        while name in self.locals:
            name, n = f"{base}_{n}", n + 1
        self.locals.add(name)
        return name

    def module(self, node_id: str, constructor: str) -> str:
        """Register a module under the node's id; the expression that reads it in forward."""
        if node_id.isidentifier() and not keyword.iskeyword(node_id) and node_id not in MODULE_NAMES:
            self.modules.append(f"self.{node_id} = {constructor}")
            return f"self.{node_id}"
        self.modules.append(f"self.add_module({node_id!r}, {constructor})")
        return f"getattr(self, {node_id!r})"


Lowering = Callable[[Emitter, ValidNode, dict[str, list[Value]]], Value | str]


def _rank(e: Emitter, node: ValidNode, port: str = "x") -> int:
    return len(e.shapes[node.inputs[port][0]])


def _axis(axis: int, rank: int) -> int:
    return axis % rank


def _float(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        return f"float({str(value)!r})"
    return repr(float(value))


def _tensor(v: Value) -> str:
    """`v` as a tensor expression (a scalar literal becomes a tensor of the forward's dtype and device)."""
    return f"torch.tensor({v.expr}, dtype=dtype, device=device)" if v.scalar else v.expr


def _pairs(value: Any) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else (int(value[0]), int(value[1]))


# -- lowerings: each returns the forward expression of the node (or a Value for scalars) ------------------


def _input(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    raise AssertionError("inputs are forward's arguments")  # handled by model_source


def _constant(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    p = node.params
    if not p["shape"] and not p["batched"]:
        return Value(_float(p["value"]), scalar=True)
    dims = ", ".join([*(["batch"] if p["batched"] else []), *map(str, p["shape"])])
    return f"torch.full(({dims},), {_float(p['value'])}, dtype=dtype, device=device)"


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
    args = [str(channels), str(p["out_channels"]), f"kernel_size={_pairs(p['kernel'])}"]
    for name, default in (("stride", 1), ("padding", 0), ("dilation", 1)):
        if _pairs(p[name]) != (default, default):
            args.append(f"{name}={_pairs(p[name])}")
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
        kernel = _pairs(p["kernel"])
        stride = kernel if p["stride"] is None else _pairs(p["stride"])
        padding = _pairs(p["padding"])
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
    return f"torch.where({cond.expr}, {_tensor(a) if a.scalar and b.scalar else a.expr}, {b.expr})"


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
    return UNARY[node.op].format(_tensor(v))


def _leaky_relu(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    return f"F.leaky_relu({x['x'][0].expr}, {_float(node.params['alpha'])})"


def _gelu(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    return f"F.gelu({x['x'][0].expr}, approximate={node.params['approximate']!r})"


def _softmax(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    axis = _axis(node.params["axis"], _rank(e, node))
    return f"torch.{node.op}({x['x'][0].expr}, dim={axis})"


def _layer_norm(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    p = node.params
    shape = e.shapes[node.inputs["x"][0]][-p["normalized_dims"] :]
    eps = _float(p["eps"])
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
    ref = e.module(node.id, f"BatchNorm({channels}, momentum={_float(p['momentum'])}, eps={_float(p['eps'])}{extra})")
    return f"{ref}({x['x'][0].expr})"


def _dropout(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    if node.params["p"] == 0:
        return x["x"][0]
    return f"F.dropout({x['x'][0].expr}, {_float(node.params['p'])}, self.training)"


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
    axis = _axis(node.params["axis"], len(e.shapes[node.id]))
    parts = ", ".join(_tensor(v) for v in x["xs"])
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
    p, v, rank = node.params, x["x"][0].expr, _rank(e, node)
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
    axis = _axis(node.params["axis"], _rank(e, node))
    return f"torch.roll({x['x'][0].expr}, {node.params['shift']}, dims={axis})"


def _reduce_axes(e: Emitter, node: ValidNode) -> tuple[int, ...]:
    rank = _rank(e, node)
    return (
        tuple(range(rank))
        if node.params["axes"] is None
        else tuple(sorted(_axis(a, rank) for a in node.params["axes"]))
    )


def _std_error(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    axes = _reduce_axes(e, node)
    count = math.prod(e.shapes[node.inputs["x"][0]][a] for a in axes)
    keep = ", keepdim=True" if node.params["keepdims"] else ""
    return f"torch.sqrt({x['x'][0].expr}.var(dim={axes}, correction=1{keep}) * {_float(1 / count)})"


def _sort(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    return f"torch.sort({x['x'][0].expr}, dim={_axis(node.params['axis'], _rank(e, node))}).values"


def _quantile(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    axis = _axis(node.params["axis"], _rank(e, node))
    return f"torch.quantile({x['x'][0].expr}, {_float(node.params['q'])}, dim={axis})"


def _linalg(name: str) -> Lowering:
    def lower(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
        args = ", ".join(x[port][0].expr for port in ("a", "b", "x") if port in x)
        return f"torch.{name}({args})"

    return lower


def _checkerboard(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    height, width = _pairs(node.params["shape"])
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
}


def _fused(fusion: Fusion, out: dict[str, Value]) -> str:
    """The one call that computes a chain of nodes (scellis.torchexport.fusion)."""
    if isinstance(fusion, AffineNorm):
        x, w, b = out[fusion.x].expr, out[fusion.weight].expr, out[fusion.bias].expr
        return f"F.layer_norm({x}, {fusion.shape}, {w}, {b}, eps={_float(fusion.eps)})"
    k = out[fusion.k].expr + (".transpose(-1, -2)" if fusion.k_transposed else "")
    args = [out[fusion.q].expr, k, out[fusion.v].expr]
    if fusion.mask is not None:
        args.append(f"attn_mask={_tensor(out[fusion.mask])}")
    if fusion.dropout:
        args.append(f"dropout_p={_float(fusion.dropout)} if self.training else 0.0")
    args.append(f"scale={_float(fusion.scale)}")
    return f"F.scaled_dot_product_attention({', '.join(args)})"


def unsupported(program: ValidProgram) -> list[tuple[str, str]]:
    """(node id, op) of every node whose op has no torch lowering, in program order."""
    return [(n.id, n.op) for n in program.nodes if n.op != "input" and n.op not in LOWERINGS]


def _reached(program: ValidProgram) -> set[str]:
    """The nodes the loss and the metrics reach, through their inputs."""
    by_id = {n.id: n for n in program.nodes}
    todo = [*([program.loss] if program.loss else []), *program.metrics]
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
    return "\n\n".join(f"class {c.rstrip()}\n" for c in chunks[1:] if c.split("(", 1)[0] in names)


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


def model_source(program: ValidProgram, header: str) -> str:
    """model.py for `program` (module docstring above); `header`: the docstring's lines about the source."""
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
    arguments = ", ".join(out[n.id].expr for n in inputs)
    forward = [f"def forward(self, {arguments}) -> dict[str, torch.Tensor]:", "    dtype = torch.get_default_dtype()"]
    if inputs:
        anchor = out[inputs[0].id].expr
        forward.append(f"    batch, device = {anchor}.shape[0], {anchor}.device")
    forward += [f"    {line}" for line in e.lines]
    forward.append("    return {" + ", ".join(f"{k!r}: {v}" for k, v in results) + "}")
    init = ["def __init__(self) -> None:", "    super().__init__()", *(f"    {m}" for m in e.modules)]
    names = ", ".join(repr(n.id) for n in inputs)
    parts = [
        f'"""{header}\n\n{_DOC}"""',
        "from __future__ import annotations",
        "import torch\nimport torch.nn.functional as F  # noqa: N812\nfrom torch import nn"
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
    return "\n\n\n".join(p.replace("\n\n\n", "\n\n") if p.startswith('"""') else p for p in parts) + "\n"


_DOC = """\
One attribute per node with parameters, registered under the node's id: state_dict() names are the
program's (`<node id>.<name>`) with the program's shapes. forward computes the nodes in program order
and returns the loss and the metrics. Integer inputs are int64; floats are torch's default dtype.
Dropout draws its masks from torch's generator (Scellis draws them from its Philox substream): the same
distribution, other masks.
"""
