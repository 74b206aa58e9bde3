// The Guide of the page's program: every stage's artifact in order, and each stage linked to the next.
// Choosing a program node marks its IR ops in the typed, backward and optimizer IR and lists the kernels
// computing them; choosing a kernel shows its WGSL (its lines of the WGSL stage), dispatch and what the
// CPU path calls, and marks its ops in the training step. The memory stage draws each buffer's lifetime
// over the kernels.

import { byId, element } from "./dom.js";
import { parsed } from "./engine.js";
import { errorText, formatBytes } from "./format.js";
import { kernelCode, kernelLines, kernelSummary, kernelsOf, nodeLines, timelineBars } from "./guidemodel.js";

const SVG = "http://www.w3.org/2000/svg";
const MEMORY_STAGE = "memory plan (buffer lifetimes, training step)";

function svg(tag, attributes) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}

// A stage's text as one span per line, so lines can be marked; drawn when the stage is first opened (the
// WGSL alone is thousands of lines, too many to draw on every change of the program).
function stageBlock(title, text, index) {
  const details = element("details");
  details.dataset.stage = title;
  details.dataset.index = String(index);
  const pre = element("pre");
  details.drawLines = () => {
    if (pre.childElementCount || !text) return;
    for (const line of text.split("\n")) pre.append(element("span", `${line}\n`, { class: "guide-line" }));
  };
  details.addEventListener("toggle", () => details.open && details.drawLines());
  details.append(element("summary", title), pre);
  return details;
}

// The training step's buffers over its kernels: a row per allocation, a bar per buffer.
function memoryBlock(timeline) {
  const details = element("details");
  details.dataset.stage = MEMORY_STAGE;
  const bars = timelineBars(timeline);
  const rows = Math.max(timeline.slots.length, 1);
  const width = Math.max(timeline.kernels, 1);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${rows}`, preserveAspectRatio: "none", class: "guide-memory" });
  chart.setAttribute("role", "img");
  const label = `${timeline.buffers.length} buffers in ${timeline.slots.length} allocations over ${timeline.kernels} kernels`;
  chart.setAttribute("aria-label", label);
  for (const bar of bars) {
    const rect = svg("rect", { x: bar.x, y: bar.row + 0.1, width: bar.width, height: 0.8, class: "guide-bar" });
    rect.dataset.category = bar.category;
    const span = bar.whole ? "the whole step" : `kernels ${bar.first}–${bar.last}`;
    const title = svg("title", {});
    title.textContent = `${bar.name ?? `buffer ${bar.id}`}: ${formatBytes(bar.bytes)}, ${bar.category}, ${span}`;
    rect.append(title);
    chart.append(rect);
  }
  const peak = `At most ${formatBytes(timeline.peak_live)} live at once (from kernel ${timeline.peak_kernel}); allocated ${formatBytes(timeline.slots.reduce((a, b) => a + b, 0))}.`;
  details.append(element("summary", MEMORY_STAGE), element("p", `${label}. ${peak}`), chart);
  return details;
}

export class Guide {
  constructor(engine, features) {
    Object.assign(this, { engine, features, latest: 0, data: null });
  }

  // The Guide of `program` (JSON text) at `level` (prod when none is chosen yet).
  async show(program, level) {
    this.latest += 1;
    const ticket = this.latest;
    byId("guide").setAttribute("aria-busy", "true");
    try {
      const data = await parsed(
        this.engine.call("guide", { program, level: level || "prod", features: this.features }),
      );
      if (ticket === this.latest) this.render(data, !level);
    } catch (error) {
      if (ticket !== this.latest) return;
      console.error(error);
      byId("guide-summary").textContent = `The Guide could not compile this program: ${errorText(error)}`;
    } finally {
      if (ticket === this.latest) byId("guide").setAttribute("aria-busy", "false");
    }
  }

  render(data, defaulted) {
    this.data = data;
    byId("guide-name").textContent = data.name;
    const level = defaulted ? `${data.level} (choose a level to see its own)` : data.level;
    // what the device lowers with (its lowering features: runtime/device.py's lowering_features)
    const features = [...(this.features ?? [])];
    const device = features.length ? ` for a device with ${features.join(", ")}` : "";
    const summary = byId("guide-summary");
    summary.dataset.features = features.join(",");
    summary.textContent = `Compiled in the engine in ${data.compile_ms.toFixed(0)} ms${device}; kernels shown for level ${level}. Training-step key ${data.key}.`;
    const blocks = data.stages.map(([title, text], index) => stageBlock(title, text, index));
    const schedule = data.links.kernel_stages[0];
    blocks.splice(schedule + 1, 0, memoryBlock(data.timeline));
    blocks[1].open = true; // the typed IR
    blocks[1].drawLines();
    byId("guide-stages").replaceChildren(...blocks);
    const nodes = data.links.nodes.map((node) => {
      const button = element("button", `${node.id} (${node.op})`, { type: "button" });
      button.dataset.node = node.id;
      button.onclick = () => this.selectNode(node.id);
      return element("li", undefined).appendChild(button).parentNode;
    });
    byId("guide-nodes").replaceChildren(...nodes);
    byId("guide-detail").replaceChildren(element("p", "Choose a node to follow it to its IR ops, kernels and code."));
    const section = byId("guide");
    section.hidden = false;
    section.dataset.ready = "yes";
  }

  // Marks `lines` ({stage index: line numbers}) in the stage texts and opens the stages they are in.
  mark(lines) {
    for (const block of byId("guide-stages").querySelectorAll("details[data-index]")) {
      const marked = new Set(lines[block.dataset.index] ?? []);
      if (marked.size) block.drawLines();
      block.querySelectorAll(".guide-line").forEach((span, i) => span.classList.toggle("marked", marked.has(i)));
      if (marked.size) block.open = true;
    }
    byId("guide-stages").querySelector(".guide-line.marked")?.scrollIntoView({ block: "nearest" });
  }

  selectNode(id) {
    for (const button of byId("guide-nodes").querySelectorAll("button")) {
      button.setAttribute("aria-pressed", String(button.dataset.node === id));
    }
    this.mark(nodeLines(this.data.links, id));
    const kernels = kernelsOf(this.data.links, id).map(({ index, label, others }) => {
      const fused = others.length ? ` (fused with ${others.join(", ")})` : "";
      const button = element("button", `k${index}: ${label}${fused}`, { type: "button" });
      button.dataset.kernel = String(index);
      button.onclick = () => this.selectKernel(index);
      return element("li", undefined).appendChild(button).parentNode;
    });
    const title = element("h3", `${id}: its ops are marked in the IR below; computed by ${kernels.length} kernel(s)`);
    byId("guide-detail").replaceChildren(title, element("ul", undefined, { class: "guide-kernels" }));
    byId("guide-detail")
      .querySelector("ul")
      .append(...kernels);
    byId("guide").dataset.node = id;
  }

  selectKernel(index) {
    const kernel = this.data.links.kernels[index];
    this.mark(kernelLines(this.data.links, index));
    const old = byId("guide-detail").querySelector(".guide-kernel");
    old?.remove();
    const box = element("div", undefined, { class: "guide-kernel" });
    box.dataset.kernel = String(index);
    const nodes = `Computes ops of: ${kernel.nodes.join(", ")}; step IR ops ${kernel.ops.map((n) => `%${n}`).join(", ")}`;
    box.append(
      element("p", kernelSummary(kernel)),
      element("p", nodes),
      element("pre", kernelCode(this.data.links, this.data.stages, index), { class: "guide-code" }),
    );
    byId("guide-detail").append(box);
    byId("guide").dataset.kernel = String(index);
  }
}
