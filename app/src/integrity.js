// The build's integrity: every file of the app is the one dist/build.json lists (same SHA-256), the engine
// wheel the worker installs is checked byte for byte before Pyodide sees it, and the engine it installs is
// the one build.json names. A mixed copy (files of two builds: a half-finished upload, a stale cache) is
// refused before anything runs, naming each file that differs, with a repair that drops this site's saved
// copy of the app and loads it again (runs and checkpoints are kept: they live in IndexedDB).
// Nothing here touches the page on import; the worker imports `verifiedWheel` and `verifiedSnapshot`.

import { isLazy } from "./lazy.js";

const CACHE_PREFIX = "scellis-build-"; // the service worker's caches (sw.js)
const HEX64 = /^[0-9a-f]{64}$/;

// A build whose files are not the ones its build.json lists: `files` names each, `reasons` says why.
export class BuildMismatch extends Error {
  constructor(mismatched) {
    const names = mismatched.map((m) => m.name);
    super(
      `this copy of the app mixes files of different builds: ${mismatched.map((m) => `${m.name} (${m.why})`).join("; ")}. ` +
        "Nothing runs until it is repaired.",
    );
    this.name = "BuildMismatch";
    this.files = names;
  }
}

function refuse(why) {
  return new BuildMismatch([{ name: "build.json", why }]);
}

// build.json's text read and checked: a `files` table of {sha256, bytes}, the wheel among them, and the
// engine version it names. Anything else is a BuildMismatch naming build.json.
export function readBuild(text) {
  let build;
  try {
    build = JSON.parse(text);
  } catch (error) {
    throw refuse(`it is not JSON: ${error.message}`);
  }
  if (build === null || typeof build !== "object" || build.files === null || typeof build.files !== "object") {
    throw refuse("it lists no files");
  }
  for (const [name, entry] of Object.entries(build.files)) {
    if (!HEX64.test(entry?.sha256 ?? "") || !Number.isSafeInteger(entry?.bytes) || entry.bytes < 0) {
      throw refuse(`its entry for ${name} is not a SHA-256 and a size`);
    }
  }
  if (typeof build.wheel !== "string" || !(build.wheel in build.files))
    throw refuse("it names no engine wheel among its files");
  if (typeof build.engine_version !== "string") throw refuse("it names no engine version");
  if (typeof build.tools?.pyodide !== "string") throw refuse("it names no Pyodide version");
  const snapshot = build.snapshot;
  if (snapshot !== undefined && (!(snapshot?.file in build.files) || !HEX64.test(snapshot?.wheel_sha256 ?? ""))) {
    throw refuse("its Python snapshot is not one of its files with the SHA-256 of the wheel it holds");
  }
  return build;
}

export async function sha256Hex(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

// Why `bytes` are not the file build.json lists as `name`, or null when they are.
async function differs(build, name, bytes) {
  const entry = build.files[name];
  if (bytes.byteLength !== entry.bytes) return `${bytes.byteLength} bytes, build.json says ${entry.bytes}`;
  if ((await sha256Hex(bytes)) !== entry.sha256) return "its SHA-256 is not the one build.json lists";
  return null;
}

// The file `name` of the build at `base`, fetched as the app itself would fetch it (the same HTTP cache
// and service worker), and checked: its bytes, or a {name, why} saying how it differs.
async function fetchChecked(base, build, name) {
  let response;
  try {
    response = await fetch(new URL(name, base));
  } catch (error) {
    return { name, why: `it could not be fetched (${error.message})` };
  }
  if (!response.ok)
    return { name, why: `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""}` };
  const bytes = new Uint8Array(await response.arrayBuffer());
  const why = await differs(build, name, bytes);
  return why === null ? bytes : { name, why };
}

// Every file build.json lists but the lazy ones (lazy.js), checked; resolves when all match, else
// rejects with a BuildMismatch.
export async function checkFiles(base, build) {
  const names = Object.keys(build.files).filter((name) => !isLazy(name));
  const results = await Promise.all(names.map((name) => fetchChecked(base, build, name)));
  const mismatched = results.filter((r) => !(r instanceof Uint8Array));
  if (mismatched.length) throw new BuildMismatch(mismatched);
}

// The file `name` of the build (the engine wheel, a lazy file) fetched, its bytes checked against
// build.json before anything reads them: a BuildMismatch otherwise.
export async function verifiedFile(base, build, name) {
  if (!(name in build.files)) throw new BuildMismatch([{ name, why: "build.json does not list it" }]);
  const checked = await fetchChecked(base, build, name);
  if (!(checked instanceof Uint8Array)) throw new BuildMismatch([checked]);
  return checked;
}

export function verifiedWheel(base, build) {
  return verifiedFile(base, build, build.wheel);
}

// The build's Python snapshot (build.json's "snapshot", made by scripts/python-snapshot.mjs) checked and
// unzipped: the memory of Pyodide's interpreter with the engine imported, for loadPyodide. A snapshot
// that holds another wheel than the build's, or whose bytes differ, is a BuildMismatch.
export async function verifiedSnapshot(base, build) {
  const { file, wheel_sha256: holds } = build.snapshot;
  if (holds !== build.files[build.wheel].sha256) {
    throw new BuildMismatch([{ name: file, why: `it holds another engine wheel than ${build.wheel}` }]);
  }
  const zipped = await verifiedFile(base, build, file);
  const stream = new Blob([zipped]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

// The engine the worker installed (its report) against the one build.json names.
export function checkEngine(build, report) {
  if (report.engine_version === build.engine_version) return;
  const why = `it installs the engine ${report.engine_version}, build.json names ${build.engine_version}`;
  throw new BuildMismatch([{ name: build.wheel, why }]);
}

// Drops the service worker and its saved copies of the app, then loads the page again.
export async function repair() {
  const registrations = (await navigator.serviceWorker?.getRegistrations()) ?? [];
  await Promise.all(registrations.map((r) => r.unregister()));
  for (const name of await caches.keys()) {
    if (name.startsWith(CACHE_PREFIX)) await caches.delete(name);
  }
  location.reload();
}

// The page's notice of a mixed build: the files named, and the repair offered.
export function showMismatch(error) {
  const section = document.createElement("section");
  section.id = "repair";
  section.className = "banner error";
  section.setAttribute("role", "alert");
  section.dataset.files = error.files.join(" ");
  const intro = document.createElement("p");
  intro.textContent =
    "These files are not the ones this version of Scellis lists, so nothing runs or trains (a half-finished " +
    "update, or an old saved copy). Repair loads the app's files again; your runs and checkpoints are kept.";
  const list = document.createElement("ul");
  for (const name of error.files) list.append(Object.assign(document.createElement("li"), { textContent: name }));
  const button = Object.assign(document.createElement("button"), { id: "repair-button", type: "button" });
  button.textContent = "Repair: load the app's files again";
  button.addEventListener("click", () => {
    button.disabled = true;
    repair().catch((failed) => {
      intro.textContent = `Repair failed (${failed.message}): clear this site's cached files in the browser's settings.`;
    });
  });
  section.append(intro, list, button);
  document.querySelector("main").prepend(section);
  document.body.dataset.mismatch = error.files.join(" ");
}
