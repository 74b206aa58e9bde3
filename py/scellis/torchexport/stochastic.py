"""Stage: export. The lowerings of the nodes that draw or carry state: random, bootstrap, the augmentations
(random crop, flip, Gaussian noise) and state / update.

Expects an Emitter of a program built in training mode (its values hold the RANDOM draws with their sites).
Guarantees: each draw is model.py's Philox call for Scellis's own site, substream and position (a per-step
draw at the substream's position of the call, a per-run one at 0), a batched one for the rows of the
call (from `first_row`), so an exported model draws the numbers Scellis draws; an augmentation draws and
changes its input in training only; a state is a `State` module (`<id>.value`), and an update records
the state's next value, which forward sets after everything else in training.
"""

from __future__ import annotations

import math

from scellis.graph.validate import ValidNode
from scellis.ops.defs import Op, RandomArg
from scellis.torchexport.emit import Emitter, Lowering, Value, literal, pair, rank_of

# -- draws: Scellis's Philox substreams, reproduced by torch_layers.Philox -----------------------------------


def _draws_of(e: Emitter, node: ValidNode) -> list[RandomArg]:
    """The draws the node's own IR makes (not its inputs'), by site."""
    stop = {id(e.values[s]) for group in node.inputs.values() for s in group}
    found: list[RandomArg] = []
    todo, seen = [e.values[node.id]], set()
    while todo:
        n = todo.pop()
        if id(n) in seen or id(n) in stop:
            continue
        seen.add(id(n))
        if n.op is Op.RANDOM:
            assert isinstance(n.arg, RandomArg)
            found.append(n.arg)
        todo += n.src
    return sorted(found, key=lambda a: a.site)


def _draw(e: Emitter, arg: RandomArg, *, per_step: bool, batched: bool) -> str:
    """The Philox call giving a site's draws: a batched one the rows of this call (from `first_row` of the
    batch the program was built at), at the substream's position of this call or, drawn per run, 0."""
    e.layers.add("Philox")
    position = "0"
    if per_step:
        e.substreams.add(arg.substream)
        position = f"positions[{arg.substream!r}]"
    if batched:
        inner = math.prod(arg.shape[1:])
        shape = f"(batch, {', '.join(map(str, arg.shape[1:]))})" if arg.shape[1:] else "(batch,)"
        where = ", first=first_row" + (f" * {inner}" if inner != 1 else "")
    else:
        shape, where = str(tuple(arg.shape)), ""
    kind = arg.distribution.value
    extra = {"bernoulli": f", p={literal(arg.p)}", "integer": f", n={arg.n}"}.get(kind, "")
    return (
        f"self.philox.draw({kind!r}, {arg.substream!r}, {arg.site}, {position}, {shape}{where}{extra}, device=device)"
    )


def _random(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    (arg,) = _draws_of(e, node)
    return _draw(e, arg, per_step=node.params["per"] == "step", batched=node.params["batched"])


def _bootstrap(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    (arg,) = _draws_of(e, node)
    return f"{x['x'][0].expr}[{_draw(e, arg, per_step=node.params['per'] == 'step', batched=False)}]"


def _in_training(e: Emitter, node: ValidNode, x: Value, draws: dict[str, RandomArg], augmented: str) -> Value:
    """An augmentation: its draws and `augmented` (a template naming them and x) in training, x unchanged in
    evaluation (no draws then, as in Scellis)."""
    name = e.local(node.id)
    e.lines += [f"{name} = {x.expr}", f"if self.training:  # {node.op}: draws of the augment substream"]
    names = {}
    for what, arg in draws.items():
        names[what] = e.local(f"{node.id}_{what}")
        e.lines.append(f"    {names[what]} = {_draw(e, arg, per_step=True, batched=True)}")
    e.lines.append(f"    {name} = {augmented.format(x=x.expr, **names)}")
    return Value(name)


def _random_flip(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    if node.params["p"] == 0:
        return x["x"][0]
    (arg,) = _draws_of(e, node)
    ones = ", 1" * (rank_of(e, node) - 1)
    return _in_training(
        e, node, x["x"][0], {"flips": arg}, f"torch.where({{flips}}.view(-1{ones}), {{x}}.flip(-1), {{x}})"
    )


def _gaussian_noise(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    if node.params["std"] == 0:
        return x["x"][0]
    (arg,) = _draws_of(e, node)
    return _in_training(e, node, x["x"][0], {"normal": arg}, f"{{x}} + {literal(node.params['std'])} * {{normal}}")


def _random_crop(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    pads = pair(node.params["padding"])
    if pads == (0, 0):
        return x["x"][0]
    rows, cols = _draws_of(e, node)
    e.layers.add("Shift2d")
    shifted = f"Shift2d.apply({{x}}, {{rows}} - {pads[0]}, {{cols}} - {pads[1]}, {pads})"
    return _in_training(e, node, x["x"][0], {"rows": rows, "cols": cols}, shifted)


# -- states: carried from step to step, set by update nodes in training ------------------------------------


def _state(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    e.layers.add("State")
    shape = ", ".join(map(str, e.shapes[node.id]))
    return f"{e.module(node.id, f'State({shape})')}.value"


def _update(e: Emitter, node: ValidNode, x: dict[str, list[Value]]) -> Value | str:
    (state,) = node.inputs["state"]
    e.updates.append((e.refs[state], x["value"][0].expr))
    return x["value"][0]


STOCHASTIC: dict[str, Lowering] = {
    "random": _random,
    "bootstrap": _bootstrap,
    "random_flip": _random_flip,
    "gaussian_noise": _gaussian_noise,
    "random_crop": _random_crop,
    "state": _state,
    "update": _update,
}
