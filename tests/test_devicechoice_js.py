"""The device the page trains on (app/src/devicechoice.js) under Node: a hardware adapter is chosen, a
software one only when the user chose it (else the CPU path, saying why), a kept choice of a device that
is gone is ignored, and without an adapter the CPU path is named as the only choice."""

from __future__ import annotations

from pathlib import Path

from nodejs import run_node

SRC = (Path(__file__).resolve().parents[1] / "app" / "src").as_uri()

PRELUDE = f"""
import {{ chooseDevice, deviceLine }} from "{SRC}/devicechoice.js";
const cpu = {{ kind: "cpu", name: "CPU path (WebAssembly)", features: [] }};
const gpu = (software) => ({{ kind: "webgpu", name: software ? "google swiftshader" : "acme x1", software,
  features: ["shader-f16"] }});
const report = (selected) => ({{ selected: {{ device: selected }}, devices: [...(selected.kind === "webgpu" ?
  [selected] : []), cpu] }});
const pick = (r, stored) => {{ const c = chooseDevice(r, stored);
  return {{ kind: c.kind, why: c.why, line: deviceLine(c), options: c.options.map((o) => o.label) }}; }};
const out = {{}};
"""


def test_the_device_chosen_and_why() -> None:
    out = run_node(
        PRELUDE,
        """
        out.hardware = pick(report(gpu(false)), null);
        out.hardware_cpu = pick(report(gpu(false)), "cpu");
        out.software = pick(report(gpu(true)), null);
        out.software_chosen = pick(report(gpu(true)), "webgpu");
        out.none = pick(report(cpu), null);
        out.gone = pick(report(cpu), "webgpu");
        out.junk = pick(report(gpu(false)), "tpu");
        """,
    )
    assert out["hardware"] == {
        "kind": "webgpu",
        "why": "the WebGPU adapter this browser offers",
        "line": "Runs on: WebGPU — acme x1",
        "options": ["WebGPU — acme x1", "CPU path (WebAssembly)"],
    }
    assert out["hardware_cpu"]["kind"] == "cpu" and out["hardware_cpu"]["why"].startswith("your choice")
    assert out["software"]["kind"] == "cpu"
    assert out["software"]["why"].startswith("google swiftshader is a software adapter (a CPU rasteriser)")
    assert out["software"]["options"] == ["WebGPU — google swiftshader (software adapter)", "CPU path (WebAssembly)"]
    assert out["software_chosen"]["line"] == "Runs on: WebGPU — google swiftshader (software adapter)"
    assert out["none"] == out["gone"]
    assert out["none"]["options"] == ["CPU path (WebAssembly)"] and out["none"]["why"].startswith("no usable GPU")
    assert out["junk"]["kind"] == "webgpu"
