"""The build's integrity checks under Node (app/src/integrity.js): build.json read and checked (anything
malformed is a BuildMismatch naming build.json, never a raw exception), every file compared by size and
SHA-256 with the one it lists (each differing file named, with why), the engine installed compared with
the one it names. The page's and the service worker's use of them runs in e2e/test_build_integrity.py."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from nodejs import run_node
from test_app_js import SRC

PRELUDE = f"""
import assert from "node:assert/strict";
import * as integrity from "{SRC}/integrity.js";
import {{ readFileSync }} from "node:fs";
const inputs = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = {{}};
// The kind of failure an input met: "ok", "mismatch" (the named refusal) or the raw exception's name.
const outcome = (f) => {{
  try {{
    f();
    return "ok";
  }} catch (e) {{
    return e instanceof integrity.BuildMismatch ? "mismatch" : `${{e.name}}: ${{e.message}}`;
  }}
}};
"""
FUZZ = 1000


def build_of(files: dict[str, bytes]) -> dict:
    return {
        "format": "scellis.build/1",
        "engine_version": "0.1.0+abcdefabcdef",
        "package_version": "0.1.0",
        "tools": {"pyodide": "314.0.7"},
        "wheel": "scellis-0.1.0-py3-none-any.whl",
        "files": {n: {"sha256": hashlib.sha256(d).hexdigest(), "bytes": len(d)} for n, d in files.items()},
    }


FILES = {"main.js": b"console.log(1)", "scellis-0.1.0-py3-none-any.whl": b"PK wheel", "data/x.f32": bytes(16)}


def test_sha256_is_the_known_answer() -> None:
    out = run_node(PRELUDE, 'out.hex = await integrity.sha256Hex(new TextEncoder().encode("abc"));')
    assert out["hex"] == hashlib.sha256(b"abc").hexdigest()


def test_each_differing_file_is_named_with_why(tmp_path: Path) -> None:
    """A stand-in fetch serves the files as a mixed copy would: one with other bytes of the same size, one
    of another size, one missing (HTTP 404); the refusal names those three and no other."""
    served = {**FILES, "main.js": b"console.log(2)", "data/x.f32": bytes(8)}
    del served["scellis-0.1.0-py3-none-any.whl"]
    body = """
    const build = integrity.readBuild(JSON.stringify(inputs.build));
    const serve = (files) => async (url) => {
      const name = new URL(url).pathname.slice(1);
      if (!(name in files)) return new Response("", { status: 404, statusText: "Not Found" });
      return new Response(new Uint8Array(files[name]));
    };
    globalThis.fetch = serve(inputs.whole);
    await integrity.checkFiles(new URL("http://app/"), build);
    out.wheel = Array.from(await integrity.verifiedWheel(new URL("http://app/"), build));
    globalThis.fetch = serve(inputs.mixed);
    try {
      await integrity.checkFiles(new URL("http://app/"), build);
    } catch (e) {
      out.files = e.files; out.message = e.message; out.name = e.name;
    }
    try {
      await integrity.verifiedWheel(new URL("http://app/"), build);
    } catch (e) {
      out.wheelRefused = e.files;
    }
    """
    as_lists = {n: list(d) for n, d in FILES.items()}
    out = run_node(
        PRELUDE,
        body,
        {"build": build_of(FILES), "whole": as_lists, "mixed": {n: list(d) for n, d in served.items()}},
    )
    assert out["wheel"] == list(FILES["scellis-0.1.0-py3-none-any.whl"])
    assert out["name"] == "BuildMismatch"
    assert sorted(out["files"]) == ["data/x.f32", "main.js", "scellis-0.1.0-py3-none-any.whl"]
    assert "main.js (its SHA-256 is not the one build.json lists)" in out["message"]
    assert "data/x.f32 (8 bytes, build.json says 16)" in out["message"]
    assert "scellis-0.1.0-py3-none-any.whl (HTTP 404 Not Found)" in out["message"]
    assert out["wheelRefused"] == ["scellis-0.1.0-py3-none-any.whl"]


def test_the_engine_installed_must_be_the_one_build_json_names() -> None:
    body = """
    const build = integrity.readBuild(JSON.stringify(inputs.build));
    out.same = outcome(() => integrity.checkEngine(build, { engine_version: build.engine_version }));
    try {
      integrity.checkEngine(build, { engine_version: "0.1.0+000000000000" });
    } catch (e) {
      out.files = e.files; out.message = e.message;
    }
    """
    out = run_node(PRELUDE, body, {"build": build_of(FILES)})
    assert out["same"] == "ok" and out["files"] == ["scellis-0.1.0-py3-none-any.whl"]
    assert "installs the engine 0.1.0+000000000000, build.json names 0.1.0+abcdefabcdef" in out["message"]


def mutations(build: dict) -> list[Callable[[dict], None]]:
    """Edits of one field each, as a doctored or damaged build.json might carry."""
    name = next(iter(build["files"]))
    return [
        lambda b: b.pop("files"),
        lambda b: b.update(files=[]),
        lambda b: b.update(files=None),
        lambda b: b["files"].update({name: None}),
        lambda b: b["files"].update({name: {"sha256": "xyz", "bytes": 1}}),
        lambda b: b["files"].update({name: {"sha256": "0" * 64, "bytes": -1}}),
        lambda b: b["files"].update({name: {"sha256": "0" * 64, "bytes": 1.5}}),
        lambda b: b["files"].update({name: {"sha256": "0" * 64}}),
        lambda b: b.update(wheel="other.whl"),
        lambda b: b.update(wheel=7),
        lambda b: b.pop("engine_version"),
        lambda b: b.update(tools=None),
        lambda b: b.update(tools={"pyodide": 1}),
    ]


def test_a_malformed_build_json_is_refused_by_name(fault_log) -> None:
    """Each field broken in turn, then FUZZ random edits of the text (bytes changed, cut, nested deep):
    every input is read as a valid build or refused as a BuildMismatch naming build.json; nothing else."""
    build = build_of(FILES)
    texts = []
    for mutate in mutations(build):
        doctored = {**build, "files": dict(build["files"]), "tools": dict(build["tools"])}
        mutate(doctored)
        texts.append(doctored)
    body = """
    let seed = 19;
    const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
    const whole = JSON.stringify(inputs.build);
    const POOL = '{["0":,]}';
    const cases = inputs.doctored.map((b) => JSON.stringify(b));
    const deep = "[".repeat(100000) + "]".repeat(100000);
    cases.push("", "null", "[]", "1", '"build"', deep, '{"files":' + "[".repeat(200000));
    for (let i = 0; i < inputs.fuzz; i += 1) {
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
    out.doctored = inputs.doctored.length;
    out.results = { ok: 0, mismatch: 0, crashes: [], wrong: 0 };
    for (const text of cases) {
      let build = null;
      const result = outcome(() => { build = integrity.readBuild(text); });
      if (result === "ok") {
        out.results.ok += 1;
        const listed = (f) => /^[0-9a-f]{64}$/.test(f.sha256) && Number.isSafeInteger(f.bytes);
        const sane = Object.values(build.files).every(listed) && build.wheel in build.files
          && typeof build.engine_version === "string";
        if (!sane) out.results.wrong += 1;
      } else if (result === "mismatch") {
        out.results.mismatch += 1;
        try { integrity.readBuild(text); } catch (e) { if (e.files.join() !== "build.json") out.results.wrong += 1; }
      } else {
        out.results.crashes.push(result);
      }
    }
    out.total = cases.length;
    """
    out = run_node(PRELUDE, body, {"build": build, "doctored": texts, "fuzz": FUZZ})
    results = out["results"]
    fault_log(
        "build-json-reading",
        inputs=out["total"],
        refused=results["mismatch"],
        accepted=results["ok"],
        crashes=len(results["crashes"]),
        hangs=0,
        silent_wrong=results["wrong"],
    )
    assert results["crashes"] == [] and results["wrong"] == 0
    assert results["mismatch"] >= out["doctored"] + 7  # every broken field and every non-build text is refused
    assert results["ok"] + results["mismatch"] == out["total"] >= FUZZ
