// The Guide's links without the DOM: which lines of which stage's text a program node's IR ops are,
// which kernels compute them, each kernel's WGSL, and the memory timeline's bars. `links` is the engine's
// guide_links (scellis.provenance): IR op %n of a text is on line `first_op_line + n` of its stage, and a
// kernel's shader is lines `wgsl_lines` [first, end) of the WGSL stage (`kernel_stages[1]`).

// The stage texts a node's ops are shown in, with the ops each stage adds: forward (typed IR),
// backward (backward IR) and optimizer (optimizer IR, the whole training step).
const TEXTS = ["forward", "backward", "optimizer"];

export function nodeOf(links, id) {
  return links.nodes.find((node) => node.id === id) ?? null;
}

// {stage index: sorted line numbers (0-based)} of the node's ops in each text.
export function nodeLines(links, id) {
  const node = nodeOf(links, id);
  const out = {};
  if (!node) return out;
  for (const text of TEXTS) {
    const where = links.texts[text];
    const ops = node.ir[text] ?? [];
    if (!where || ops.length === 0) continue;
    const lines = ops.map((n) => where.first_op_line + n);
    out[where.stage] = [...new Set([...(out[where.stage] ?? []), ...lines])].sort((a, b) => a - b);
  }
  return out;
}

// The kernels computing a node's ops, each with the other nodes it fuses with.
export function kernelsOf(links, id) {
  const node = nodeOf(links, id);
  if (!node) return [];
  return node.kernels.map((index) => {
    const kernel = links.kernels[index];
    return { index, label: kernel.label, others: kernel.nodes.filter((other) => other !== id) };
  });
}

// The step's line numbers of a kernel's ops (in the optimizer IR stage, the whole training step).
export function kernelLines(links, index) {
  const where = links.texts.step;
  return { [where.stage]: links.kernels[index].ops.map((n) => where.first_op_line + n) };
}

// A kernel's WGSL, taken from the WGSL stage's text (`stages`, the Guide's [title, text] pairs): its
// `wgsl_lines` [first, end) are the 0-based lines of its shader there, so the links hold no copy.
export function kernelCode(links, stages, index) {
  const [first, end] = links.kernels[index].wgsl_lines;
  return stages[links.kernel_stages[1]][1].split("\n").slice(first, end).join("\n");
}

// One line about a kernel: its code, dispatch and what the CPU path calls for it.
export function kernelSummary(kernel) {
  const dispatch = `(${kernel.dispatch.join(", ")})`;
  const cpu = kernel.cpu.length ? kernel.cpu.join(", ") : "nothing (a copy on the host)";
  return `k${kernel.index}: ${kernel.label} (${kernel.kind}), workgroups ${dispatch}, bindings [${kernel.bindings.join(", ")}]; CPU path: ${cpu}`;
}

// The memory timeline's bars: one row per allocation (slot), each buffer a bar over the kernels it lives
// (a function input or output spans the whole step). x in kernel units, widths at least one kernel.
export function timelineBars(timeline) {
  const end = Math.max(timeline.kernels, 1);
  return timeline.buffers.map((buffer) => {
    const whole = buffer.first === null;
    const x = whole ? 0 : buffer.first;
    const width = whole ? end : buffer.last - buffer.first + 1;
    return { row: buffer.slot, x, width, whole, ...buffer };
  });
}
