// Service worker: after one online visit the app starts offline, and it is cross-origin isolated
// (needed to share WebAssembly memory between workers) and held to the app's Content-Security-Policy
// even where a static host sends no such headers.
//
// Online, every request goes to the network first, so a rebuilt site is never mixed with old
// files (the page checks what it fetched against build.json itself: integrity.js). Once started, the page sends its build.json; every file it lists is fetched, checked against
// build.json's SHA-256 and size, and cached under a name made from build.json's hash (unless done
// already): a file that differs is named to the page and nothing of that build is kept. A cache counts
// only once build.json itself is in it (it is put last). Offline, files come from the newest complete
// cache, each checked again against that cache's build.json before it is served: always one build's
// files together, never a damaged one. The large files a user may never ask for (the pretrained model
// and the texts to fine-tune it on) are not fetched ahead: each is kept, checked the same way, in
// the newest complete cache the first time the page fetches it online (lazy.js names them).
//
// SCELLIS_PAGE_CSP, SCELLIS_WORKER_CSP, SCELLIS_TEST_WORKER_CSP and SCELLIS_TEST_HOOKS are set by build.py
// (the server's policies, scellis.serve; whether this is the test build).

import { isLazy } from "./src/lazy.js";

const PREFIX = "scellis-build-";
const WORKER_SCRIPT = "engine_worker.js";

// The build's name for the file at `url` (as build.json lists it).
function fileOf(url) {
  const scope = new URL(self.registration.scope);
  return url.pathname.slice(scope.pathname.length) || "index.html";
}

self.addEventListener("install", (event) => event.waitUntil(self.skipWaiting()));
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));
self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== "GET" || url.origin !== self.location.origin) return;
  event.respondWith(serve(event, url));
});
self.addEventListener("message", (event) => {
  if (event.data?.type !== "remember") return;
  const reply = event.ports[0];
  event.waitUntil(
    remember(event.data.build).then(
      (answer) => reply.postMessage(answer),
      (error) => reply.postMessage({ ok: false, error: String(error) }),
    ),
  );
});

async function serve(event, url) {
  try {
    const response = await fetch(event.request);
    if (response.ok && isLazy(fileOf(url))) event.waitUntil(keepLazy(url, response.clone()));
    return guarded(response, url);
  } catch (offline) {
    const cached = await fromNewestBuild(url);
    if (cached) return guarded(cached, url);
    throw offline;
  }
}

async function sha256Hex(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function digest(text) {
  return (await sha256Hex(new TextEncoder().encode(text))).slice(0, 16);
}

// Why `bytes` are not build.json's `entry` ({sha256, bytes}), or null when they are.
async function differs(entry, bytes) {
  if (!entry) return "build.json does not list it";
  if (bytes.byteLength !== entry.bytes) return `${bytes.byteLength} bytes, build.json says ${entry.bytes}`;
  if ((await sha256Hex(bytes)) !== entry.sha256) return "its SHA-256 is not the one build.json lists";
  return null;
}

// A file of the build fetched and checked: [name, response to cache] or {name, why}.
async function fetchChecked(files, name) {
  const response = await fetch(name, { cache: "no-cache" });
  if (!response.ok) return { name, why: `HTTP ${response.status}` };
  const bytes = await response.arrayBuffer();
  const why = await differs(files[name], bytes);
  if (why) return { name, why };
  return [name, new Response(bytes, { status: 200, headers: response.headers })];
}

// Caches every file of this build, each checked against build.json (unless done already), then drops
// older builds' caches. A file that differs: {ok: false, mismatched: [{name, why}]} and nothing kept.
async function remember(buildText) {
  const name = PREFIX + (await digest(buildText));
  const cache = await caches.open(name);
  if (!(await cache.match("build.json"))) {
    const files = JSON.parse(buildText).files;
    const names = Object.keys(files).filter((file) => !isLazy(file));
    const checked = await Promise.all(names.map((file) => fetchChecked(files, file)));
    const mismatched = checked.filter((c) => !Array.isArray(c));
    if (mismatched.length) {
      await caches.delete(name);
      return {
        ok: false,
        mismatched,
        error: `files differ from build.json: ${mismatched.map((m) => m.name).join(", ")}`,
      };
    }
    for (const [file, response] of checked) await cache.put(file, response);
    if (names.includes("index.html")) await cache.put("./", (await cache.match("index.html")).clone());
    await cache.put("build.json", new Response(buildText, { headers: { "Content-Type": "application/json" } }));
  }
  for (const other of await caches.keys()) {
    if (other.startsWith(PREFIX) && other !== name) await caches.delete(other);
  }
  return { ok: true, cache: name };
}

// A lazy file fetched online, kept in the newest complete cache when its build.json lists these bytes.
async function keepLazy(url, response) {
  const names = (await caches.keys()).filter((n) => n.startsWith(PREFIX)).reverse();
  for (const name of names) {
    const cache = await caches.open(name);
    const build = await cache.match("build.json");
    if (!build) continue;
    const bytes = await response.arrayBuffer();
    if (await differs((await build.json()).files[fileOf(url)], bytes)) return;
    const kept = new Response(bytes, { status: 200, headers: response.headers });
    await cache.put(new URL(url.pathname, url.origin).href, kept);
    return;
  }
}

// The file at `url` from the newest complete cache, checked again against that cache's build.json; a
// damaged copy is answered with an error naming it, never served.
async function fromNewestBuild(url) {
  const names = (await caches.keys()).filter((n) => n.startsWith(PREFIX)).reverse();
  for (const name of names) {
    const cache = await caches.open(name);
    const build = await cache.match("build.json");
    if (!build) continue;
    const cached = await cache.match(url.href, { ignoreSearch: true });
    if (!cached) return undefined;
    const file = fileOf(url);
    const bytes = await cached.clone().arrayBuffer();
    const files = (await build.json()).files;
    const why = file in files ? await differs(files[file], bytes) : null;
    if (!why) return cached;
    return new Response(`${file}: the saved copy is damaged (${why})`, {
      status: 500,
      statusText: "saved copy damaged",
    });
  }
  return undefined;
}

// The response with the cross-origin isolation headers and the app's Content-Security-Policy added
// where the host sent none (opaque responses cannot be changed).
function guarded(response, url) {
  if (response.type === "opaque") return response;
  const needs =
    !response.headers.has("Cross-Origin-Embedder-Policy") || !response.headers.has("Content-Security-Policy");
  if (!needs) return response;
  const headers = new Headers(response.headers);
  if (!headers.has("Cross-Origin-Embedder-Policy")) {
    headers.set("Cross-Origin-Embedder-Policy", "require-corp");
    headers.set("Cross-Origin-Opener-Policy", "same-origin");
  }
  if (!headers.has("Content-Security-Policy")) headers.set("Content-Security-Policy", policyFor(url));
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

function policyFor(url) {
  if (!url.pathname.endsWith(`/${WORKER_SCRIPT}`)) return `${SCELLIS_PAGE_CSP}; frame-ancestors 'none'`;
  return `${SCELLIS_TEST_HOOKS ? SCELLIS_TEST_WORKER_CSP : SCELLIS_WORKER_CSP}; frame-ancestors 'none'`;
}
