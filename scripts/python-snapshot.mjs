// The engine's Python, started and imported once at build time (build.py's snapshot step runs this under
// Node): Pyodide from node_modules, the scellis wheel installed, the modules that answer the engine's
// calls imported (scellis.calls.CALLS, but LATER), and the memory of that interpreter written gzipped to
// OUT. The worker starts Pyodide from it (app/src/enginehost.js) instead of starting Python and importing
// again.
//
//     node scripts/python-snapshot.mjs PYODIDE_DIR WHEEL OUT
//
// The interpreter is made to look as a page's would: the same sys.executable, environment and sys.path;
// and a fixed hash seed, clocks and entropy, so the same inputs make the same bytes. Python may hold no
// JavaScript object when the snapshot is taken (Pyodide refuses then): nothing imported here may import
// the worker's host module (scellis_host) as it loads.

import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";

// Modules left to their first use: fine-tuning's (the model and its tokenizer) would grow Python's memory
// past the size Pyodide starts with.
const LATER = ["scellis.models.finetune"];

const [pyodideDir, wheel, out] = process.argv.slice(2);
if (!out) {
  console.error("usage: node scripts/python-snapshot.mjs PYODIDE_DIR WHEEL OUT");
  process.exit(2);
}
// The same bytes from the same inputs: the clocks stopped (the wall clock at 0, the monotonic one ticking
// once a reading) and the entropy Python and its allocator seed themselves with a fixed stream. Every
// page starting from the snapshot starts from this state: the worker reseeds `random` from the browser's
// entropy once it has started.
Date.now = () => 0;
let ticks = 0;
performance.now = () => (ticks += 1);
let state = 0x9e3779b9;
const fixedFill = (view) => {
  const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  for (let i = 0; i < bytes.length; i += 1) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    bytes[i] = state >>> 24;
  }
  return view;
};
createRequire(import.meta.url)("node:crypto").randomFillSync = fixedFill;
globalThis.crypto.getRandomValues = fixedFill;
try {
  const { loadPyodide } = await import(pathToFileURL(join(pyodideDir, "pyodide.mjs")).href);
  const pyodide = await loadPyodide({
    indexURL: `${pyodideDir}/`,
    _makeSnapshot: true,
    _sysExecutable: "/home/pyodide/this.program", // a page's, not this script's path
    env: { LANG: "en_US.UTF-8", _: "./this.program", PYTHONHASHSEED: "0" },
    stdout: () => {},
  });
  const initial = pyodide._module.HEAP8.length;
  const purelib = pyodide.pyimport("sysconfig").get_path("purelib");
  pyodide.unpackArchive(new Uint8Array(readFileSync(wheel)), "wheel", { extractDir: purelib });
  pyodide.runPython(`
import importlib, sys
sys.path[:] = [p for p in sys.path if p]  # loadPyodide puts "" first again when it starts from the snapshot
importlib.invalidate_caches()  # the clock is stopped: a folder's time does not say the wheel was added
import scellis.calls  # what the worker imports before its first call (enginehost.js: boot)
for module in dict.fromkeys(t.split(":")[0] for t in scellis.calls.CALLS.values()):  # what answers a call,
    if module not in ${JSON.stringify(LATER)}:  # but what LATER names
        importlib.import_module(module)
`);
  const grown = pyodide._module.HEAP8.length;
  if (grown > initial) {
    throw new Error(
      `Python's memory grew to ${grown} bytes, past the ${initial} Pyodide starts with: it restores a ` +
        "snapshot only into those, so import less here (LATER)",
    );
  }
  writeFileSync(out, gzipSync(pyodide.makeMemorySnapshot(), { level: 6 }));
} catch (error) {
  // the message alone: Node would print the minified line of Pyodide it came from
  console.error(`python-snapshot: ${error.message}`);
  process.exit(1);
}
