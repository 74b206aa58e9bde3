// The node palette, read from the engine's catalog JSON (scellis.graph.palette()): ops grouped by
// category, each with its ports, their kinds and its parameters; a new node's parameters from the
// defaults. The engine is the one source of truth: nothing about an op is written down here. No DOM.

// An op by name: the editor's edits and checks look ops up in this.
export function opIndex(catalog) {
  return new Map(catalog.ops.map((op) => [op.name, op]));
}

// The palette's groups, in the catalog's category order, each op in catalog order. A parameter without
// a default is required: the node is not valid until it is set.
export function paletteGroups(catalog) {
  return catalog.categories.map((category) => ({
    category,
    ops: catalog.ops.filter((op) => op.category === category).map(paletteEntry),
  }));
}

function paletteEntry(op) {
  return {
    name: op.name,
    doc: op.doc,
    inputs: op.inputs.map((port) => ({ ...port })),
    output: { ...op.outputs[0] },
    params: op.params.map((param) => ({ ...param, required: !("default" in param) })),
  };
}

// A new node's parameters: every default (a copy: lists are not shared between nodes), and the names of
// the required parameters, which have no default and are left unset for the user to fill in.
export function initialParams(op) {
  const params = {};
  const required = [];
  for (const param of op.params) {
    if ("default" in param) params[param.name] = structuredClone(param.default);
    else required.push(param.name);
  }
  return { params, required };
}

// The required parameters a node's params leave unset (the validator reports them too; the editor
// can mark them while the user types).
export function missingParams(op, params) {
  return op.params.filter((param) => !("default" in param) && !Object.hasOwn(params, param.name)).map((p) => p.name);
}

// The kind of a node's output: the catalog's, or, for an op whose output follows a parameter (an input's
// dtype), the kind that parameter's value gives. A value the catalog does not know gives "any": the
// connection is allowed and the validator names the bad value.
export function outputKind(op, params) {
  const out = op.outputs[0];
  if (!out.kind_param) return out.kind;
  const declared = op.params.find((param) => param.name === out.kind_param);
  const value = Object.hasOwn(params, out.kind_param) ? params[out.kind_param] : declared?.default;
  return Object.hasOwn(out.kinds, value) ? out.kinds[value] : "any";
}

// Whether a value of kind `given` may feed a port of kind `wanted`.
export function kindsFit(given, wanted) {
  return given === "any" || wanted === "any" || given === wanted;
}
