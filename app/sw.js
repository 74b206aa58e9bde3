// Service worker: after one online visit the app starts offline, and it is cross-origin isolated
// (needed to share WebAssembly memory between workers) even where a static host sends no COOP/COEP.
//
// Online, every request goes to the network first, so a rebuilt site is never mixed with old
// files. Once started, the page sends its build.json; every file it lists is cached under a name
// made from build.json's hash (unless done already), and a cache counts only once build.json
// itself is in it (it is put last). Offline, files come from the newest complete cache: always
// one build's files together.

const PREFIX = "scellis-build-";

self.addEventListener("install", (event) => event.waitUntil(self.skipWaiting()));
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));
self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== "GET" || url.origin !== self.location.origin) return;
  event.respondWith(serve(event.request, url));
});
self.addEventListener("message", (event) => {
  if (event.data?.type !== "remember") return;
  const reply = event.ports[0];
  event.waitUntil(
    remember(event.data.build).then(
      (name) => reply.postMessage({ ok: true, cache: name }),
      (error) => reply.postMessage({ ok: false, error: String(error) }),
    ),
  );
});

async function serve(request, url) {
  try {
    return isolated(await fetch(request));
  } catch (offline) {
    const cached = await fromNewestBuild(url);
    if (cached) return isolated(cached);
    throw offline;
  }
}

async function digest(text) {
  const bytes = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  return Array.from(bytes.slice(0, 8), (b) => b.toString(16).padStart(2, "0")).join("");
}

// Caches every file of this build (unless done already), then drops older builds' caches.
async function remember(buildText) {
  const name = PREFIX + (await digest(buildText));
  const cache = await caches.open(name);
  if (!(await cache.match("build.json"))) {
    const files = Object.keys(JSON.parse(buildText).files);
    await cache.addAll(["./", ...files]);
    await cache.put("build.json", new Response(buildText, { headers: { "Content-Type": "application/json" } }));
  }
  for (const other of await caches.keys()) {
    if (other.startsWith(PREFIX) && other !== name) await caches.delete(other);
  }
  return name;
}

async function fromNewestBuild(url) {
  const names = (await caches.keys()).filter((n) => n.startsWith(PREFIX)).reverse();
  for (const name of names) {
    const cache = await caches.open(name);
    if (await cache.match("build.json")) return cache.match(url.href, { ignoreSearch: true });
  }
  return undefined;
}

function isolated(response) {
  if (response.headers.has("Cross-Origin-Embedder-Policy") || response.type === "opaque") return response;
  const headers = new Headers(response.headers);
  headers.set("Cross-Origin-Embedder-Policy", "require-corp");
  headers.set("Cross-Origin-Opener-Policy", "same-origin");
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}
