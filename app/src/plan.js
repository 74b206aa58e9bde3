// The memory plan panel's content, computed from the engine's plan (scellis.app.plan_example): the
// stacked bar's parts and markers on one linear scale, and the words for verdicts, remedies and
// functions. No DOM.

import { formatBytes } from "./format.js";

// One colour per part of the bar, by position in the engine's category order (every part is named in
// the legend too: colour is never the only cue). Colour-blind-safe hues first.
const PALETTE = [
  "#0072b2",
  "#e69f00",
  "#56b4e9",
  "#cc79a7",
  "#009e73",
  "#d55e00",
  "#332288",
  "#88ccee",
  "#882255",
  "#44aa99",
  "#999933",
  "#aa4499",
  "#6f6f6f",
];
// A budget further than this many times the plan's bytes would flatten the bar to a sliver: the
// chart then ends a quarter past the plan, and the budget marker points beyond its edge.
const FAR = 4;

export const VERDICT_WORDS = {
  green: "fits with headroom",
  yellow: "fits, with warnings",
  red: "does not fit: training is refused before anything reaches the device",
};

export function exactBytes(n) {
  return `${n.toLocaleString("en-US")} bytes`;
}

export function percent(share) {
  return `${Number((share * 100).toPrecision(3))} %`;
}

// The bar's parts: the training step's categories at its peak (the engine's order), then every
// other function held while training (evaluation); each with its colour. Zero-byte parts included.
export function chartParts(plan) {
  const step = plan.breakdown.map((row) => ({ label: row.category, bytes: row.bytes, alongside: false }));
  const others = plan.functions
    .filter((f) => f.held && f.name !== "training step")
    .map((f) => ({ label: `${f.name} (compiled alongside)`, bytes: f.bytes, alongside: true }));
  return [...step, ...others].map((part, index) => ({ ...part, color: PALETTE[index % PALETTE.length] }));
}

// A marker's place; past the middle its label sits left of its line (`flip`), inside the chart.
function marker(bytes, scale, label) {
  const at = Math.min(bytes / scale, 1) * 100;
  return { at, beyond: bytes > scale, flip: at > 50, label, title: exactBytes(bytes) };
}

// Parts placed on the scale (percent of the chart's width) and the budget's markers on the same scale.
export function chartModel(plan) {
  const parts = chartParts(plan);
  const total = parts.reduce((sum, part) => sum + part.bytes, 0);
  const budget = plan.budget.bytes;
  const near = budget !== null && budget <= FAR * total;
  const scale = Math.max(near ? Math.max(total, budget) : total * 1.25, 1);
  let start = 0;
  const segments = parts
    .filter((part) => part.bytes > 0)
    .map((part) => {
      const segment = { ...part, start: (start / scale) * 100, width: (part.bytes / scale) * 100 };
      start += part.bytes;
      return segment;
    });
  const markers = [];
  if (budget !== null) {
    markers.push({ kind: "budget", ...marker(budget, scale, `budget ${formatBytes(budget)}`) });
    const green = Math.floor(plan.green_share * budget);
    markers.push({ kind: "green", ...marker(green, scale, `green up to ${percent(plan.green_share)}`) });
  }
  return { parts, segments, markers, total, scale };
}

// What the chart shows, in words (its accessible name).
export function chartSummary(plan) {
  const held = `${formatBytes(plan.total)} held while training`;
  if (plan.budget.bytes === null) return `${held}; the budget could not be measured`;
  return `${held}, ${percent(plan.total / Math.max(plan.budget.bytes, 1))} of a budget of ${formatBytes(plan.budget.bytes)}`;
}

export function remedyLabel(remedy) {
  return `Apply: ${remedy.name} — ${formatBytes(remedy.total)}, ${remedy.verdict.color}`;
}

export function functionLine(fn) {
  const note = fn.held ? "held while training" : "runs once before training; not in the total";
  return `${formatBytes(fn.bytes)} (${note})`;
}

// "digits-mlp, batch 64 (the example as shipped)" or "... (changed: batch 37)".
export function programLine(plan, applied) {
  const changes = applied.length ? `changed: ${applied.join(", ")}` : "the example as shipped";
  return `${plan.program}, batch ${plan.batch} (${changes})`;
}

// Megabytes typed by the user to a cap in bytes; "" is no cap; anything else not a positive number is
// an error the page states.
export function capFromText(text) {
  const trimmed = text.trim();
  if (trimmed === "") return { cap: null };
  const mib = Number(trimmed);
  if (!Number.isFinite(mib) || mib <= 0)
    return { error: `the memory limit must be a positive number of MiB, got "${trimmed}"` };
  return { cap: Math.max(1, Math.round(mib * 1024 * 1024)) };
}
