"""Stage: export. Chains of a program's nodes that PyTorch computes as one call, found for model.py.

Expects a ValidProgram built at its batch size and the set of nodes its outputs reach. Guarantees:
`find_fusions` returns, by the id of each chain's last node, an Attention (q k^T, times a scalar
constant, plus an optional additive mask, softmax over the last axis, optional dropout, times v: PyTorch's
scaled_dot_product_attention, the same function) or an AffineNorm (layer norm without its own parameters,
times a `parameter` node, plus a `parameter` node, over the normalised axes: layer_norm with that weight
and bias). Every node a chain absorbs has one reader, inside the chain, and is not an output, so nothing
else needs it. Results are the same up to float rounding (the fused kernels add in another order); the
dropout inside attention is torch's, as everywhere in an export.
"""

from __future__ import annotations

from dataclasses import dataclass

from scellis.graph import ValidProgram
from scellis.graph.validate import ValidNode


@dataclass(frozen=True)
class Attention:
    q: str
    k: str  # the node holding k (not k^T), unless `k_transposed`
    k_transposed: bool  # `k` holds k^T: it is read transposed
    v: str
    scale: float
    mask: str | None
    dropout: float
    absorbed: frozenset[str]  # the chain's nodes but the last


@dataclass(frozen=True)
class AffineNorm:
    x: str
    weight: str  # `parameter` nodes, read as their value (no batch axis)
    bias: str
    shape: tuple[int, ...]
    eps: float
    absorbed: frozenset[str]


Fusion = Attention | AffineNorm


class _Graph:
    def __init__(self, program: ValidProgram, reached: set[str]) -> None:
        self.nodes = {n.id: n for n in program.nodes}
        self.readers: dict[str, int] = dict.fromkeys(self.nodes, 0)
        for node in program.nodes:
            if node.id in reached:
                for sources in node.inputs.values():
                    for source in sources:
                        self.readers[source] += 1
        for out in (*([program.loss] if program.loss else []), *program.metrics):
            self.readers[out] += 1
        assert program.built is not None
        self.shapes = {k: v.shape for k, v in program.built.values.items()}

    def only(self, node_id: str) -> ValidNode | None:
        """The node, when exactly one node reads it (so a chain may absorb it)."""
        return self.nodes[node_id] if self.readers[node_id] == 1 else None

    def source(self, node: ValidNode, port: str) -> str:
        return node.inputs[port][0]

    def scalar(self, node_id: str) -> float | None:
        node = self.nodes[node_id]
        if node.op == "constant" and not node.params["shape"] and not node.params["batched"]:
            return float(node.params["value"])
        return None


def _attention(g: _Graph, last: ValidNode) -> Attention | None:
    if last.op != "matmul" or last.params["transpose_a"] or last.params["transpose_b"]:
        return None
    absorbed: list[str] = []
    probs = g.only(g.source(last, "a"))
    if probs is None:
        return None
    dropout = 0.0
    if probs.op == "dropout":
        absorbed.append(probs.id)
        dropout = float(probs.params["p"])
        probs = g.only(g.source(probs, "x"))
    rank = len(g.shapes[last.id])
    if probs is None or probs.op != "softmax" or probs.params["axis"] % rank != rank - 1:
        return None
    absorbed.append(probs.id)
    found = _scores(g, g.only(g.source(probs, "x")), absorbed)
    if found is None:
        return None
    q, k, k_transposed, scale, mask = found
    return Attention(q, k, k_transposed, g.source(last, "b"), scale, mask, dropout, frozenset(absorbed))


def _scores(g: _Graph, node: ValidNode | None, absorbed: list[str]) -> tuple[str, str, bool, float, str | None] | None:
    """q, k (and whether it is held transposed), the scale and the mask of `node` = q k^T * scale (+ mask)."""
    mask = None
    if node is not None and node.op == "add":
        a, b = g.source(node, "a"), g.source(node, "b")
        for chain, other in ((a, b), (b, a)):
            inner = g.only(chain)
            if inner is not None and inner.op == "mul":
                absorbed.append(node.id)
                node, mask = inner, other
                break
        else:
            return None
    if node is None or node.op != "mul":
        return None
    a, b = g.source(node, "a"), g.source(node, "b")
    for product_id, constant in ((a, b), (b, a)):
        scale, product = g.scalar(constant), g.only(product_id)
        if scale is not None and product is not None and product.op == "matmul" and not product.params["transpose_a"]:
            absorbed += [node.id, product.id]
            q, k = g.source(product, "a"), g.source(product, "b")
            if product.params["transpose_b"]:
                return q, k, False, scale, mask
            swap = g.only(k)
            n = len(g.shapes[k]) - 1  # axes of one example
            if swap is not None and swap.op == "permute" and list(swap.params["perm"]) == [*range(n - 2), n - 1, n - 2]:
                absorbed.append(swap.id)
                return q, g.source(swap, "x"), False, scale, mask
            return q, k, True, scale, mask
    return None


def _norm(g: _Graph, last: ValidNode) -> AffineNorm | None:
    if last.op != "add":
        return None
    for scaled_id, bias in ((g.source(last, "a"), g.source(last, "b")), (g.source(last, "b"), g.source(last, "a"))):
        scaled = g.only(scaled_id)
        if scaled is None or scaled.op != "mul" or not _parameter(g, bias):
            continue
        for normed_id, weight in (
            (g.source(scaled, "a"), g.source(scaled, "b")),
            (g.source(scaled, "b"), g.source(scaled, "a")),
        ):
            normed = g.only(normed_id)
            if normed is None or normed.op != "layer_norm" or normed.params["affine"] or not _parameter(g, weight):
                continue
            shape = g.shapes[normed.id][-normed.params["normalized_dims"] :]
            if g.shapes[weight][1:] != shape or g.shapes[bias][1:] != shape:
                continue
            absorbed = frozenset({normed.id, scaled.id, weight, bias})
            return AffineNorm(g.source(normed, "x"), weight, bias, shape, float(normed.params["eps"]), absorbed)
    return None


def _parameter(g: _Graph, node_id: str) -> bool:
    return g.nodes[node_id].op == "parameter" and g.readers[node_id] == 1


def find_fusions(program: ValidProgram, reached: set[str]) -> dict[str, Fusion]:
    g = _Graph(program, reached)
    found: dict[str, Fusion] = {}
    taken: set[str] = set()
    for node in program.nodes:
        if node.id not in reached:
            continue
        fusion = _attention(g, node) or _norm(g, node)
        if fusion is not None and not fusion.absorbed & taken:
            found[node.id] = fusion
            taken |= fusion.absorbed
    return found
