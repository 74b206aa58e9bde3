"""Pinned runs: what a run relied on besides its program. Each data split's version (content hash, size,
shape), the engine's (package version, WGSL and WASM hashes, Pyodide version), and the settings that
reproduce the run (level, seed, device kind, epochs, steps, data, final checkpoint), as JSON and back.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scellis import __version__
from scellis.assets import WASM_NAME
from scellis.datasets import Split
from scellis.engine import engine_files, engine_version
from scellis.jsontext import JsonTextError, parse
from scellis.levels import Level
from scellis.manifest.fields import Reader, join
from scellis.store.objects import PREFIX

SPLITS = ("train", "test")
DEVICE_KINDS = ("webgpu", "cpu")  # WebGPU (the page's, or wgpu-py's adapter) or the CPU path (WebAssembly)
MAX_RANK, MAX_DIM = 8, 2**31 - 1
MAX_EXAMPLES, MAX_STEPS, MAX_EPOCHS = 2**40, 2**53, 10**9


@dataclass(frozen=True)
class DataVersion:
    """One split as a run read it. `sha256` is the key of the split's feature bytes followed by its label
    bytes: exactly the bytes of the app's two data files of that split, in that order (the train split's
    is `cat digits-train-x.f32 digits-train-y.i32 | sha256sum`). `shape`: one example's features."""

    split: str
    sha256: str
    examples: int
    shape: tuple[int, ...]

    def __str__(self) -> str:
        return f"{self.split} {self.sha256} ({self.examples:,} examples of shape {list(self.shape)})"


def data_version(name: str, split: Split) -> DataVersion:
    digest = hashlib.sha256(split.features)
    digest.update(split.labels)
    return DataVersion(name, PREFIX + digest.hexdigest(), split.n, (split.width,))


def data_versions(train: Split, test: Split) -> tuple[DataVersion, ...]:
    return data_version("train", train), data_version("test", test)


def check_data(pinned: tuple[DataVersion, ...], train: Split, test: Split) -> list[str]:
    """One line for each pinned split that these splits do not match (none: the data is the pinned data)."""
    here = {v.split: v for v in data_versions(train, test)}
    out = []
    for want in pinned:
        got = here[want.split]
        if got.sha256 != want.sha256:
            sizes = "" if (got.examples, got.shape) == (want.examples, want.shape) else f"; here: {got}, pinned: {want}"
            out.append(
                f"the {want.split} split does not match the pinned data: its content hash is {got.sha256}, "
                f"the run pins {want.sha256}{sizes}"
            )
    return out


def data_json(version: DataVersion) -> dict[str, Any]:
    return {
        "split": version.split,
        "sha256": version.sha256,
        "examples": version.examples,
        "shape": list(version.shape),
    }


def read_data(value: Any, path: str, r: Reader, required: tuple[str, ...]) -> tuple[DataVersion, ...] | None:
    """A list of split versions, each split at most once and every `required` split present."""
    entries = r.array(value, path, len(SPLITS))
    if entries is None:
        return None
    out: list[DataVersion] = []
    for i, entry in enumerate(entries):
        where = join(path, i)
        raw = r.record(entry, where, ("split", "sha256", "examples", "shape"))
        if raw is None:
            continue
        split = r.choice(raw["split"], join(where, "split"), SPLITS)
        key = r.key(raw["sha256"], join(where, "sha256"))
        examples = r.integer(raw["examples"], join(where, "examples"), 1, MAX_EXAMPLES)
        shape = _read_shape(raw["shape"], join(where, "shape"), r)
        if split is not None and any(v.split == split for v in out):
            r.fail(join(where, "split"), f"the {split} split is pinned twice")
        elif None not in (split, key, examples, shape):
            out.append(DataVersion(split, key, examples, shape))  # type: ignore[arg-type]
    for split in required:
        if len(out) == len(entries) and not any(v.split == split for v in out):
            r.fail(path, f"must pin the {split} split")
    return tuple(out)


def _read_shape(value: Any, path: str, r: Reader) -> tuple[int, ...] | None:
    dims = r.array(value, path, MAX_RANK)
    if dims is None:
        return None
    checked = [r.integer(d, join(path, i), 1, MAX_DIM) for i, d in enumerate(dims)]
    return None if None in checked else tuple(checked)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Engine:
    """The engine a run was computed with. `wgsl` hashes what makes the WGSL, the templates (`wgsl/*.wgsl`)
    and the renderers that fill them in (`scellis/codegen/wgsl*.py`), as `engine_version` hashes every
    engine file (SHA-256 over the sorted lines 'name<TAB>sha256-hex'); `wasm` is the CPU path module's key;
    `pyodide` is the Pyodide the app ships, when a build says (dist/build.json)."""

    package_version: str
    engine_version: str
    wgsl: str
    wasm: str
    pyodide: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "package_version": self.package_version,
            "engine_version": self.engine_version,
            "wgsl": self.wgsl,
            "wasm": self.wasm,
            "pyodide": self.pyodide,
        }


ENGINE_FIELDS = ("package_version", "engine_version", "wgsl", "wasm", "pyodide")
WGSL_MAKERS = ("wgsl/", "scellis/codegen/wgsl")  # the engine files the `wgsl` pin hashes: what makes the WGSL


def engine_of(package_version: str, files: dict[str, str], pyodide: str | None) -> Engine:
    """The engine whose files have these SHA-256 hex digests (the form `scellis.engine.engine_files` and
    dist/build.json's `engine_files` give)."""
    wgsl = hashlib.sha256()
    for name in sorted(n for n in files if n.startswith(WGSL_MAKERS)):
        wgsl.update(f"{name}\t{files[name]}\n".encode())
    wasm = files.get(WASM_NAME)
    if wasm is None:
        raise ValueError(f"the engine's files do not include the CPU path module {WASM_NAME}")
    version = engine_version(package_version, files)
    return Engine(package_version, version, PREFIX + wgsl.hexdigest(), PREFIX + wasm, pyodide)


def engine_from_build(build: dict[str, Any]) -> Engine:
    """The engine a build describes (the JSON of its dist/build.json: the page has it from the start)."""
    try:
        return engine_of(build["package_version"], dict(build["engine_files"]), build["tools"]["pyodide"])
    except (KeyError, TypeError) as error:
        raise ValueError(f"build.json lacks the engine's description ({error})") from None


def installed_engine(build_json: Path | None = None) -> Engine:
    """The engine this interpreter runs: as `build_json` describes it when that build is of this very
    engine (then the Pyodide version is known too), else computed from the installed package's files."""
    files = engine_files()
    if build_json is not None and build_json.is_file():
        try:
            build = parse(build_json.read_bytes(), what=str(build_json))
        except JsonTextError:  # not a build's description: the engine is known from its files all the same
            build = None
        if isinstance(build, dict) and build.get("engine_version") == engine_version(__version__, files):
            return engine_from_build(build)
    return engine_of(__version__, files, None)


def read_engine(value: Any, path: str, r: Reader) -> Engine | None:
    raw = r.record(value, path, ENGINE_FIELDS)
    if raw is None:
        return None
    checked = (
        r.text(raw["package_version"], join(path, "package_version"), 100),
        r.text(raw["engine_version"], join(path, "engine_version"), 200),
        r.key(raw["wgsl"], join(path, "wgsl")),
        r.key(raw["wasm"], join(path, "wasm")),
    )
    pyodide = r.maybe_text(raw["pyodide"], join(path, "pyodide"))
    if None in checked or (raw["pyodide"] is not None and pyodide is None):
        return None
    return Engine(*checked, pyodide)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Settings:
    """What reproduces a run besides its program: the level, seed and device kind it ran at, its epochs
    (the loop's, or as given), the steps it took, the data it read and its final checkpoint's key. A link
    shared before any run has no steps and no final key (None), and may pin no data."""

    level: Level
    seed: int
    device: str
    epochs: int
    steps: int | None
    data: tuple[DataVersion, ...]
    final: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "level": self.level.value,
            "seed": self.seed,
            "device": self.device,
            "epochs": self.epochs,
            "steps": self.steps,
            "data": [data_json(v) for v in self.data],
            "final": self.final,
        }


SETTINGS_FIELDS = ("level", "seed", "device", "epochs", "steps", "data", "final")


def read_settings(raw: dict[str, Any], r: Reader, *, ran: bool, reads_data: bool = True) -> Settings | None:
    """The settings among `raw`'s fields (its other fields are the caller's). `ran`: a finished run's, so
    steps, the final key and (for a program that `reads_data`) both splits' versions are required."""
    if any(name not in raw for name in SETTINGS_FIELDS):
        return None  # r.record named what is missing
    before = len(r.issues)
    level = r.choice(raw["level"], "level", [level.value for level in Level])
    seed = r.integer(raw["seed"], "seed", 0, 2**64 - 1)
    device = r.choice(raw["device"], "device", DEVICE_KINDS)
    epochs = r.integer(raw["epochs"], "epochs", 1, MAX_EPOCHS)
    steps = None if raw["steps"] is None and not ran else r.integer(raw["steps"], "steps", 0, MAX_STEPS)
    final = None if raw["final"] is None and not ran else r.key(raw["final"], "final")
    data = read_data(raw["data"], "data", r, SPLITS if ran and reads_data else ())
    if len(r.issues) > before:
        return None
    return Settings(Level(level), seed, device, epochs, steps, data, final)  # type: ignore[arg-type]
