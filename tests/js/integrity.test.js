// The build's integrity checks under Node (app/src/integrity.js): build.json read and checked (anything
// malformed is a BuildMismatch naming build.json, never a raw exception), every file compared by size and
// SHA-256 with the one it lists (each differing file named, with why), the engine installed compared with
// the one it names. The page's and the service worker's use of them runs in e2e/test_build_integrity.py.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { gzipSync } from "node:zlib";
import * as integrity from "../../app/src/integrity.js";
import { faultLog } from "./lib.js";

const FUZZ = 1000;
const WHEEL = "scellis-0.1.0-py3-none-any.whl";
const text = (s) => new TextEncoder().encode(s);
const SNAPSHOT = "python-snapshot.gz";
const MEMORY = text("\0snp the interpreter's memory");
const FILES = {
  "main.js": text("console.log(1)"),
  [WHEEL]: text("PK wheel"),
  "data/x.f32": new Uint8Array(16),
  [SNAPSHOT]: new Uint8Array(gzipSync(MEMORY)),
};
const hex = (bytes) => createHash("sha256").update(bytes).digest("hex");

const buildOf = (files) => ({
  format: "scellis.build/1",
  engine_version: "0.1.0+abcdefabcdef",
  package_version: "0.1.0",
  tools: { pyodide: "314.0.7" },
  wheel: WHEEL,
  snapshot: { file: SNAPSHOT, wheel: WHEEL, wheel_sha256: hex(FILES[WHEEL]) },
  files: Object.fromEntries(Object.entries(files).map(([n, d]) => [n, { sha256: hex(d), bytes: d.length }])),
});

// The kind of failure an input met: "ok", "mismatch" (the named refusal) or the raw exception's name.
const outcome = (f) => {
  try {
    f();
    return "ok";
  } catch (e) {
    return e instanceof integrity.BuildMismatch ? "mismatch" : `${e.name}: ${e.message}`;
  }
};

test("sha256 is the known answer", async () => {
  assert.equal(await integrity.sha256Hex(text("abc")), hex(text("abc")));
});

test("each differing file is named with why", async () => {
  // A stand-in fetch serves the files as a mixed copy would: one with other bytes of the same size, one
  // of another size, one missing (HTTP 404); the refusal names those three and no other.
  const served = { ...FILES, "main.js": text("console.log(2)"), "data/x.f32": new Uint8Array(8) };
  delete served[WHEEL];
  const build = integrity.readBuild(JSON.stringify(buildOf(FILES)));
  const serve = (files) => async (url) => {
    const name = new URL(url).pathname.slice(1);
    if (!(name in files)) return new Response("", { status: 404, statusText: "Not Found" });
    return new Response(new Uint8Array(files[name]));
  };
  const app = new URL("http://app/");
  const realFetch = globalThis.fetch;
  try {
    globalThis.fetch = serve(FILES);
    await integrity.checkFiles(app, build);
    assert.deepEqual(Array.from(await integrity.verifiedWheel(app, build)), Array.from(FILES[WHEEL]));
    globalThis.fetch = serve(served);
    await assert.rejects(integrity.checkFiles(app, build), (e) => {
      assert.equal(e.name, "BuildMismatch");
      assert.deepEqual([...e.files].sort(), ["data/x.f32", "main.js", WHEEL]);
      assert.ok(e.message.includes("main.js (its SHA-256 is not the one build.json lists)"), e.message);
      assert.ok(e.message.includes("data/x.f32 (8 bytes, build.json says 16)"), e.message);
      assert.ok(e.message.includes(`${WHEEL} (HTTP 404 Not Found)`), e.message);
      return true;
    });
    await assert.rejects(integrity.verifiedWheel(app, build), (e) => {
      assert.deepEqual(e.files, [WHEEL]);
      return true;
    });
  } finally {
    globalThis.fetch = realFetch;
  }
});

test("the Python snapshot is the build's, unzipped, or a mismatch naming it", async () => {
  // Served as built: the interpreter's memory comes back unzipped. Bytes of another build, or a snapshot
  // build.json says holds another wheel than the one it ships: refused, naming the snapshot.
  const app = new URL("http://app/");
  const realFetch = globalThis.fetch;
  const serve = (files) => async (url) => new Response(new Uint8Array(files[new URL(url).pathname.slice(1)]));
  try {
    globalThis.fetch = serve(FILES);
    const build = integrity.readBuild(JSON.stringify(buildOf(FILES)));
    assert.deepEqual(Array.from(await integrity.verifiedSnapshot(app, build)), Array.from(MEMORY));
    globalThis.fetch = serve({ ...FILES, [SNAPSHOT]: new Uint8Array(gzipSync(text("another"))) });
    await assert.rejects(integrity.verifiedSnapshot(app, build), (e) => {
      assert.deepEqual(e.files, [SNAPSHOT]);
      return true;
    });
    globalThis.fetch = serve(FILES);
    const other = structuredClone(build);
    other.snapshot.wheel_sha256 = "0".repeat(64);
    await assert.rejects(integrity.verifiedSnapshot(app, other), (e) => {
      assert.deepEqual(e.files, [SNAPSHOT]);
      assert.ok(e.message.includes(`it holds another engine wheel than ${WHEEL}`), e.message);
      return true;
    });
  } finally {
    globalThis.fetch = realFetch;
  }
});

test("the engine installed must be the one build.json names", () => {
  const build = integrity.readBuild(JSON.stringify(buildOf(FILES)));
  assert.equal(
    outcome(() => integrity.checkEngine(build, { engine_version: build.engine_version })),
    "ok",
  );
  assert.throws(
    () => integrity.checkEngine(build, { engine_version: "0.1.0+000000000000" }),
    (e) => {
      assert.deepEqual(e.files, [WHEEL]);
      const said = "installs the engine 0.1.0+000000000000, build.json names 0.1.0+abcdefabcdef";
      assert.ok(e.message.includes(said), e.message);
      return true;
    },
  );
});

// Edits of one field each, as a doctored or damaged build.json might carry.
const mutations = (build) => {
  const name = Object.keys(build.files)[0];
  return [
    (b) => delete b.files,
    (b) => (b.files = []),
    (b) => (b.files = null),
    (b) => (b.files[name] = null),
    (b) => (b.files[name] = { sha256: "xyz", bytes: 1 }),
    (b) => (b.files[name] = { sha256: "0".repeat(64), bytes: -1 }),
    (b) => (b.files[name] = { sha256: "0".repeat(64), bytes: 1.5 }),
    (b) => (b.files[name] = { sha256: "0".repeat(64) }),
    (b) => (b.wheel = "other.whl"),
    (b) => (b.wheel = 7),
    (b) => delete b.engine_version,
    (b) => (b.tools = null),
    (b) => (b.tools = { pyodide: 1 }),
    (b) => (b.snapshot = null),
    (b) => (b.snapshot.file = "other.gz"),
    (b) => (b.snapshot.wheel_sha256 = "xyz"),
  ];
};

test("a malformed build.json is refused by name", () => {
  // Each field broken in turn, then FUZZ random edits of the text (bytes changed, cut, nested deep):
  // every input is read as a valid build or refused as a BuildMismatch naming build.json; nothing else.
  const build = buildOf(FILES);
  const doctored = mutations(build).map((mutate) => {
    const b = structuredClone(build);
    mutate(b);
    return b;
  });
  let seed = 19;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const whole = JSON.stringify(build);
  const POOL = '{["0":,]}';
  const cases = doctored.map((b) => JSON.stringify(b));
  const deep = "[".repeat(100000) + "]".repeat(100000);
  cases.push("", "null", "[]", "1", '"build"', deep, `{"files":${"[".repeat(200000)}`);
  for (let i = 0; i < FUZZ; i += 1) {
    const chars = whole.split("");
    const edits = 1 + Math.floor(random() * 4);
    for (let e = 0; e < edits; e += 1) {
      const at = Math.floor(random() * chars.length);
      const kind = random();
      if (kind < 0.4) chars[at] = String.fromCharCode(32 + Math.floor(random() * 95));
      else if (kind < 0.7) chars.splice(at, 1 + Math.floor(random() * 20));
      else if (kind < 0.9) chars.splice(at, 0, POOL[Math.floor(random() * POOL.length)]);
      else chars.length = at;
    }
    cases.push(chars.join(""));
  }
  const results = { ok: 0, mismatch: 0, crashes: [], wrong: 0 };
  for (const text of cases) {
    let read = null;
    const result = outcome(() => {
      read = integrity.readBuild(text);
    });
    if (result === "ok") {
      results.ok += 1;
      const listed = (f) => /^[0-9a-f]{64}$/.test(f.sha256) && Number.isSafeInteger(f.bytes);
      const sane =
        Object.values(read.files).every(listed) && read.wheel in read.files && typeof read.engine_version === "string";
      if (!sane) results.wrong += 1;
    } else if (result === "mismatch") {
      results.mismatch += 1;
      try {
        integrity.readBuild(text);
      } catch (e) {
        if (e.files.join() !== "build.json") results.wrong += 1;
      }
    } else {
      results.crashes.push(result);
    }
  }
  faultLog("build-json-reading", {
    inputs: cases.length,
    refused: results.mismatch,
    accepted: results.ok,
    crashes: results.crashes.length,
    hangs: 0,
    silent_wrong: results.wrong,
  });
  assert.deepEqual(results.crashes, []);
  assert.equal(results.wrong, 0);
  assert.ok(results.mismatch >= doctored.length + 7); // every broken field and every non-build text is refused
  assert.equal(results.ok + results.mismatch, cases.length);
  assert.ok(cases.length >= FUZZ);
});
