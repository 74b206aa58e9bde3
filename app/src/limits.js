// The Honest limits page's live figures (pure: no DOM): this browser's WebGPU adapter's limits that bound
// a run, and the storage this site may use, as [label, value, bytes] rows (bytes: null where none).

import { formatBytes } from "./format.js";

// What the memory planner checks against (plan/budget.py): an allocation larger than either of the first
// two is refused before anything runs; without shader-f16, fast runs prod's kernels and float16 storage
// is refused.
export function adapterFacts(adapter) {
  const info = adapter.info ?? {};
  const name = [info.vendor, info.architecture, info.description].filter(Boolean).join(" ") || "not reported";
  const limit = (key) => [formatBytes(adapter.limits[key]), adapter.limits[key]];
  return [
    ["Adapter", name, null],
    ["maxStorageBufferBindingSize", ...limit("maxStorageBufferBindingSize")],
    ["maxBufferSize", ...limit("maxBufferSize")],
    ["maxStorageBuffersPerShaderStage", String(adapter.limits.maxStorageBuffersPerShaderStage), null],
    ["shader-f16", adapter.features.has("shader-f16") ? "yes" : "no", null],
  ];
}

// `estimate`: navigator.storage.estimate()'s answer; `persisted`: navigator.storage.persisted()'s.
export function storageFacts(estimate, persisted) {
  const share = estimate.quota > 0 ? ` (${((100 * estimate.usage) / estimate.quota).toFixed(1)} %)` : "";
  return [
    ["Quota for this site", formatBytes(estimate.quota), estimate.quota],
    ["In use", `${formatBytes(estimate.usage)}${share}`, estimate.usage],
    ["Persistent", persisted ? "yes" : "no: the browser may clear it when the disk runs short", null],
  ];
}
