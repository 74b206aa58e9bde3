"""Device naming and the one selection rule: a hardware GPU when there is one, else the CPU path,
announced with why (a software adapter is slower than the CPU path); a software adapter only alone."""

from __future__ import annotations

import pytest

from scellis.runtime.device import DeviceInfo
from scellis.runtime.devices import CPU_BANNER, WASM32_MEMORY, cpu_device, select


def gpu(name: str, software: bool = False) -> DeviceInfo:
    return DeviceInfo(
        kind="webgpu",
        name=name,
        host="test",
        vendor="v",
        architecture="a",
        software=software,
        max_buffer_size=2**31,
        max_storage_binding=2**27,
    )


def test_hardware_adapter_is_chosen_before_software_and_cpu() -> None:
    chosen = select([gpu("soft", software=True), gpu("real"), cpu_device("wasmtime")])
    assert chosen.device.name == "real" and not chosen.cpu_fallback
    assert chosen.reason == "the first hardware WebGPU adapter found"


def test_a_software_adapter_gives_way_to_the_cpu_path_saying_why() -> None:
    chosen = select([gpu("swiftshader", software=True), cpu_device("wasmtime")])
    assert chosen.device.kind == "cpu" and chosen.cpu_fallback
    assert chosen.reason == (
        "swiftshader is a software adapter (a CPU rasteriser), slower here than the CPU path: choose it to use it "
        "anyway"
    )


def test_a_software_adapter_alone_is_chosen_and_named_as_such() -> None:
    chosen = select([gpu("swiftshader", software=True)])
    assert chosen.device.name == "swiftshader" and not chosen.cpu_fallback
    assert chosen.reason == "a software adapter, the only device found"


def test_no_adapter_selects_the_cpu_path_with_the_banner() -> None:
    chosen = select([cpu_device("browser WebAssembly")])
    assert chosen.cpu_fallback and f"CPU path (WebAssembly) — {chosen.reason}" == CPU_BANNER
    assert chosen.device.max_buffer_size == WASM32_MEMORY


def test_nothing_reachable_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="no device reachable"):
        select([])


def test_descriptions_name_limits_in_binary_units() -> None:
    assert gpu("x").describe() == ("WebGPU: x [v / a] via test; max buffer 2 GiB, max storage binding 128 MiB")
    assert gpu("y", software=True).describe().startswith("WebGPU: y [v / a, software adapter]")
    assert cpu_device("wasmtime 50.0.1").describe() == (
        "CPU path (WebAssembly) via wasmtime 50.0.1; memory ceiling 4 GiB"
    )


def test_json_round_trips() -> None:
    data = select([gpu("x")]).to_json()
    assert data["device"]["name"] == "x" and data["device"]["features"] == []
    assert DeviceInfo(**{**data["device"], "features": tuple(data["device"]["features"])}) == gpu("x")
