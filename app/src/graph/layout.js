// The automatic layout for nodes without a position: layers by topological depth, top to bottom (data
// flows down), each layer a centred row. Deterministic (file order breaks ties) and without overlaps for
// nodes no larger than NODE_SIZE: rows are a box height plus a gap apart, slots a box width plus a gap.
// No DOM.

export const NODE_SIZE = { width: 200, height: 80 };
export const GAP = { x: 40, y: 60 };

// The depth of each node: 0 for a node without inputs, else one below its deepest source (the longest
// path, so every edge points down). Nodes on or behind a cycle (a program being drawn may have one)
// share the row after the deepest. Iterative Kahn: no recursion on long chains.
export function depths(ids, edges) {
  const known = new Set(ids);
  const users = new Map(ids.map((id) => [id, []]));
  const waiting = new Map(ids.map((id) => [id, 0]));
  for (const { source, target } of edges) {
    if (!known.has(source) || !known.has(target)) continue;
    users.get(source).push(target);
    waiting.set(target, waiting.get(target) + 1);
  }
  const depth = new Map();
  const ready = ids.filter((id) => waiting.get(id) === 0);
  for (const id of ready) depth.set(id, 0);
  for (let i = 0; i < ready.length; i++) {
    for (const user of users.get(ready[i])) {
      depth.set(user, Math.max(depth.get(user) ?? 0, depth.get(ready[i]) + 1));
      waiting.set(user, waiting.get(user) - 1);
      if (waiting.get(user) === 0) ready.push(user);
    }
  }
  const below = ready.reduce((deepest, id) => Math.max(deepest, depth.get(id) + 1), 0);
  for (const id of ids) if (waiting.get(id) > 0) depth.set(id, below);
  return depth;
}

// Rows of node ids, top first. Within a row, nodes sit in the mean slot of their sources in the rows
// above (one sweep of the barycentre heuristic: fewer crossings), ties in file order.
function rows(ids, edges, depth) {
  const sources = new Map(ids.map((id) => [id, []]));
  for (const { source, target } of edges) {
    const above = sources.has(target) && depth.has(source) && depth.get(source) < depth.get(target);
    if (above) sources.get(target).push(source);
  }
  const layers = [];
  for (const id of ids) {
    const level = depth.get(id);
    layers[level] ??= [];
    layers[level].push(id);
  }
  const slot = new Map();
  for (const layer of layers.filter(Boolean)) {
    const key = (id) => {
      const above = sources.get(id).map((s) => slot.get(s));
      return above.length ? above.reduce((a, b) => a + b, 0) / above.length : -1;
    };
    const keys = new Map(layer.map((id) => [id, key(id)]));
    layer.sort((a, b) => keys.get(a) - keys.get(b)); // stable: equal keys keep file order
    layer.forEach((id, i) => slot.set(id, i - (layer.length - 1) / 2));
  }
  return { layers: layers.filter(Boolean), slot };
}

// Positions ({x, y}, the box's top-left corner) for every id not in `placed` (a Map id -> {x, y} of the
// nodes whose place is known). The laid-out nodes go right of the placed ones' box, so neither covers
// the other.
export function autoLayout(ids, edges, placed = new Map()) {
  const free = ids.filter((id) => !placed.has(id));
  const { layers, slot } = rows(free, edges, depths(free, edges));
  const pitch = { x: NODE_SIZE.width + GAP.x, y: NODE_SIZE.height + GAP.y };
  const laid = new Map();
  layers.forEach((layer, row) => {
    for (const id of layer) laid.set(id, { x: slot.get(id) * pitch.x, y: row * pitch.y });
  });
  if (placed.size && laid.size) {
    const fixed = [...placed.values()];
    const right = fixed.reduce((most, p) => Math.max(most, p.x), -Infinity) + pitch.x;
    const left = [...laid.values()].reduce((least, p) => Math.min(least, p.x), Infinity);
    const top = fixed.reduce((least, p) => Math.min(least, p.y), Infinity);
    for (const p of laid.values()) Object.assign(p, { x: p.x - left + right, y: p.y + top });
  }
  return laid;
}
