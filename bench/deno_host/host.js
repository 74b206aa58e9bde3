// The page's engine, unchanged, in Deno's WebGPU (wgpu): serves a built site folder (dist-test/, or a copy
// holding what the engine fetches) on 127.0.0.1, starts its worker bundle (engine_worker.js) as a module
// Worker, and makes the page's calls to it through the page's own protocol (app/src/rpc.js): one JSON call
// a line on stdin, {"name", "args"}, answered by one JSON line on stdout, {"ok", "result"} or {"ok",
// "error"}, in order. The engine's start-up stages go to stderr; its probe answers are kept by the worker for
// this process only.
//
//   deno run -A --unstable-webgpu --no-config --no-lock --no-npm --reload --quiet bench/deno_host/host.js dist-test
//
// (--reload: Deno caches modules by URL, and the port is a new one each time but may repeat; bench/page_engine.py
// starts it so.)
//
// Shimmed, and why (worker_shims.js) — the least the engine needs that Deno's worker lacks or has extra:
// - the globals `Deno` and `process`, removed in the worker: with either, Pyodide takes itself for a
//   server runtime and reads its indexURL, an http URL as on the page, as a file path;
// - IndexedDB, kept in memory: the engine's object store (store.js) keeps a run's checkpoints there, and
//   Deno has none.
// The worker is started from an entry served at the site's root (ENTRY) that installs the shims, then
// imports engine_worker.js, so the engine's base URL (its worker's location) is the site's root.
// Not shimmed: navigator.gpu, fetch, crypto.subtle, location, structuredClone are Deno's own; the page's
// localStorage is replaced by the engine itself (rpc.js mirroredStorage) from what boot is given.

import { connect } from "../../app/src/rpc.js";
import { Driver } from "../../app/src/runmodel.js";

const ENTRY = "/deno-engine-entry.js";
const SHIM = "/deno-worker-shims.js";
const TYPES = {
  ".js": "text/javascript",
  ".mjs": "text/javascript",
  ".json": "application/json",
  ".wasm": "application/wasm",
  ".zip": "application/zip",
  ".whl": "application/zip",
};

function typeOf(path) {
  const dot = path.lastIndexOf(".");
  return TYPES[dot < 0 ? "" : path.slice(dot)] ?? "application/octet-stream";
}

// The site's files, and the two the host adds at its root (ENTRY, SHIM); nothing outside the folder.
function siteHandler(root) {
  const shim = new URL("worker_shims.js", import.meta.url);
  return async (request) => {
    const path = decodeURIComponent(new URL(request.url).pathname);
    if (path === ENTRY) {
      const text = `import ".${SHIM}";\nimport "./engine_worker.js";\n`;
      return new Response(text, { headers: { "content-type": typeOf(path) } });
    }
    if (path.split("/").includes("..")) return new Response("", { status: 403 });
    const file = path === SHIM ? shim : `${root}${path}`;
    try {
      return new Response(await Deno.readFile(file), { headers: { "content-type": typeOf(path) } });
    } catch {
      return new Response("", { status: 404 });
    }
  };
}

// A run opened as train.js opens it, driven to its end as the run panel drives it: {refused} when the memory
// plan is red, else its finished epochs' rows (the run panel's log), its last state and the seconds it ran.
async function train(engine, settings) {
  const browser = navigator.userAgent;
  const answer = await engine.call("openRun", { data: "site", ...settings, browser });
  if (answer.opened) return answer.opened;
  const rows = [];
  const run = { advance: (steps) => engine.call("advance", answer.id, steps) };
  const driver = new Driver(run, { onState: (state) => rows.push(...state.epochs_done) });
  rows.push(...answer.state.epochs_done);
  const began = performance.now();
  const state = await driver.go();
  const seconds = (performance.now() - began) / 1000;
  await engine.call("closeRun", answer.id);
  return { rows, state, seconds };
}

async function* lines(stream) {
  let rest = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    rest += chunk;
    let end = rest.indexOf("\n");
    while (end >= 0) {
      yield rest.slice(0, end);
      rest = rest.slice(end + 1);
      end = rest.indexOf("\n");
    }
  }
  if (rest.trim()) yield rest;
}

const out = Deno.stdout.writable.getWriter();

function answer(line) {
  return out.write(new TextEncoder().encode(`${JSON.stringify(line)}\n`));
}

async function main(root) {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, siteHandler(root));
  const base = `http://127.0.0.1:${server.addr.port}/`;
  const worker = new Worker(new URL(ENTRY, base), { type: "module" });
  const engine = connect(worker);
  worker.addEventListener("error", (event) => {
    event.preventDefault();
    engine.close(`the engine's worker failed: ${event.message}`); // the calls waiting fail with this
  });
  engine.on("stage", ([index, label]) => console.error(`stage ${index}: ${label}`));
  console.error(`serving ${root} at ${base}`);
  for await (const line of lines(Deno.stdin.readable)) {
    if (!line.trim()) continue;
    const { name, args = [] } = JSON.parse(line);
    try {
      const result = name === "train" ? await train(engine, ...args) : await engine.call(name, ...args);
      await answer({ ok: true, result });
    } catch (error) {
      await answer({ ok: false, error: { message: error.message, name: error.name, type: error.type } });
    }
  }
  worker.terminate();
  await server.shutdown();
}

await main(Deno.args[0] ?? "dist-test");
