// Entry module of limits.html: this browser's own figures beside the measured ones, read without the
// engine (nothing here starts Pyodide): its WebGPU adapter's limits and this site's storage quota.

import { byId, element } from "./src/dom.js";
import { adapterFacts, storageFacts } from "./src/limits.js";

function fill(list, rows) {
  list.replaceChildren();
  for (const [label, text, bytes] of rows) {
    const value = element("dd");
    value.append(bytes === null ? text : element("data", text, { value: String(bytes) }));
    list.append(element("dt", label), value);
  }
}

async function showAdapter() {
  const box = byId("gpu-live");
  const adapter = await navigator.gpu?.requestAdapter();
  if (!adapter) {
    box.dataset.state = "none";
    byId("gpu-live-note").textContent = "This browser offers no WebGPU adapter: Scellis runs on its CPU path here.";
    return;
  }
  fill(box, adapterFacts(adapter));
  box.dataset.state = "ready";
  byId("gpu-live-note").textContent = "Your browser's adapter, as it reports itself:";
}

async function showStorage() {
  const box = byId("storage-live");
  if (!navigator.storage?.estimate) {
    box.dataset.state = "none";
    byId("storage-live-note").textContent = "This browser does not report its storage quota.";
    return;
  }
  const [estimate, persisted] = await Promise.all([navigator.storage.estimate(), navigator.storage.persisted?.()]);
  fill(box, storageFacts(estimate, persisted));
  box.dataset.state = "ready";
  byId("storage-live-note").textContent = "This site's storage in your browser, as it reports it now:";
}

for (const [show, note] of [
  [showAdapter, "gpu-live-note"],
  [showStorage, "storage-live-note"],
]) {
  show().catch((error) => {
    byId(note).textContent = `Could not read it: ${error.message}`;
  });
}
