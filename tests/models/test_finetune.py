"""Fine-tuning as the page runs it (scellis.models.finetune through scellis.app), on a small BERT model and a
small text table: the model and texts described, the three programs planned on the CPU path, a QLoRA run
trained, resumed exactly from a checkpoint that holds no frozen weight, and exported in PEFT's format;
bad settings and missing files refused by name."""

from __future__ import annotations

import asyncio
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from scellis import app
from scellis.models.bert import ModelError
from scellis.models.finetune import finetune_json, model_of, text_data
from scellis.models.safetensors import read_safetensors
from scellis.store.directory import DirectoryStore
from tests.fixtures.tiny_bert import tiny_bert_files, tiny_texts_csv

SETTINGS = {"name": "tiny mails", "length": 16, "batch": 4, "epochs": 2}


def files(**settings: Any) -> dict[str, bytes]:
    return {
        **tiny_bert_files(),
        "texts.csv": tiny_texts_csv(),
        "text.json": json.dumps({**SETTINGS, **settings}).encode(),
    }


@pytest.fixture(scope="module")
def given() -> dict[str, bytes]:
    return files()


@pytest.fixture(scope="module")
def described(given: dict[str, bytes]) -> dict[str, Any]:
    return json.loads(finetune_json("text", given))


def test_the_card_sees_the_model_the_texts_and_three_programs(described: dict[str, Any], given: dict) -> None:
    model, texts = described["model"], described["texts"]
    assert (model["layers"], model["hidden"], model["vocab"]) == (2, 64, 30522)
    assert model["weights"]["bytes"] == len(given["model.safetensors"])
    assert (texts["classes"], texts["train"], texts["held_out"]) == (["ham", "spam"], 32, 8)
    choices = [p["choice"] for p in described["programs"]]
    assert choices == ["full", "lora", "qlora"]
    for shown in described["programs"]:
        program = json.loads(shown["program"])
        assert program["weights"] == model["weights"]
        assert program["loop"]["batch_size"] == 4 and program["loop"]["epochs"] == 2
    ops = {p["choice"]: list(json.loads(p["program"])["nodes"]) for p in described["programs"]}
    storages = {
        c: {n["params"].get("storage") for n in nodes if n["op"] == "pretrained_linear"} for c, nodes in ops.items()
    }
    assert storages == {"full": {"float32"}, "lora": {"float32"}, "qlora": {"nf4"}}


def test_the_texts_are_tokenized_once_per_content(given: dict[str, bytes]) -> None:
    first, again = text_data(given), text_data(dict(given))
    assert first[0] is again[0] and first[1] is again[1]
    longer = text_data({**given, "text.json": json.dumps({**SETTINGS, "length": 24}).encode()})
    assert longer[0].width == 48 and first[0].width == 32


def plans(given: dict[str, bytes], described: dict[str, Any]) -> dict[str, dict]:
    async def each() -> dict[str, dict]:
        return {
            p["choice"]: json.loads(await app.plan_example("text", given, p["program"], "cpu", "debug", cap=None))
            for p in described["programs"]
        }

    return asyncio.run(each())


def test_the_three_plans_differ_where_the_methods_do(given: dict, described: dict) -> None:
    shown = plans(given, described)
    bytes_of = {c: {b["category"]: b["bytes"] for b in p["breakdown"]} for c, p in shown.items()}
    # full fine-tuning keeps AdamW's two moments of every weight; the adapters' are a sliver of that
    assert bytes_of["full"]["optimizer state"] > 100 * bytes_of["lora"]["optimizer state"]
    assert bytes_of["lora"]["optimizer state"] == bytes_of["qlora"]["optimizer state"]
    # the NF4 base: the encoder's linears at 4 bits and a scale per 64 values instead of 32 bits
    assert bytes_of["qlora"]["parameters"] < bytes_of["lora"]["parameters"]
    assert shown["full"]["total"] > shown["lora"]["total"] > shown["qlora"]["total"]
    assert all(p["verdict"]["color"] == "green" for p in shown.values())


def open_run(given: dict, program: str, store: Path, resume: str | None = None) -> Any:
    return app.open_run(
        "text",
        given,
        program,
        device_kind="cpu",
        level="debug",
        seed=11,
        epochs=2,
        build="{}",
        store=DirectoryStore(store),
        resume=resume,
    )


def test_a_qlora_run_trains_resumes_exactly_and_exports_peft_files(
    given: dict, described: dict, tmp_path: Path
) -> None:
    program = next(p["program"] for p in described["programs"] if p["choice"] == "qlora")

    async def whole() -> tuple[bytes, bytes, bytes]:
        run = await open_run(given, program, tmp_path / "a")
        await run.advance(100)
        return await run.weights(), await run.export("adapter"), await run.export("model")

    async def halves() -> bytes:
        first = await open_run(given, program, tmp_path / "b")
        await first.advance(5)
        key = await first.checkpoint()
        stored = DirectoryStore(tmp_path / "b")
        assert len(stored.get(key)) < 500_000  # not the 8 MB of frozen weights: the pinned file holds them
        second = await open_run(given, program, tmp_path / "b", resume=key)
        await second.advance(100)
        return await second.weights()

    weights, adapter, model = asyncio.run(whole())
    assert asyncio.run(halves()) == weights  # resumed at step 5 of 16: the same bits at the end
    with zipfile.ZipFile(io.BytesIO(adapter)) as archive:
        assert archive.namelist() == ["adapter_config.json", "adapter_model.safetensors", "head.safetensors"]
        config = json.loads(archive.read("adapter_config.json"))
        tensors = read_safetensors(archive.read("adapter_model.safetensors")).tensors
    assert (config["peft_type"], config["r"], config["lora_alpha"], config["target_modules"]) == (
        "LORA", 8, 16, ["attention.self.query", "attention.self.value"]
    )  # fmt: skip
    assert tensors["base_model.model.encoder.layer.1.attention.self.value.lora_B.weight"].shape == (64, 8)
    assert len(tensors) == 2 * 2 * 2  # two layers, query and value, A and B
    with zipfile.ZipFile(io.BytesIO(model)) as archive:
        assert archive.namelist() == ["config.json", "head.safetensors", "model.safetensors", "tokenizer.json"]
        merged = read_safetensors(archive.read("model.safetensors")).tensors
    base = read_safetensors(given["model.safetensors"]).tensors
    assert set(merged) == set(base)
    query = "encoder.layer.0.attention.self.query.weight"
    assert bytes(merged[query].data) != bytes(base[query].data)  # merged with its trained adapter
    key = "encoder.layer.0.attention.self.key.weight"
    assert bytes(merged[key].data) == bytes(base[key].data)  # not adapted: the base file's own


def test_full_fine_tuning_exports_the_trained_encoder_and_no_adapter(
    given: dict, described: dict, tmp_path: Path
) -> None:
    program = next(p["program"] for p in described["programs"] if p["choice"] == "full")

    async def go() -> bytes:
        run = await open_run(given, program, tmp_path)
        await run.advance(2)
        with pytest.raises(ValueError, match=r"has no LoRA adapters .* export the model"):
            await run.export("adapter")
        with pytest.raises(ValueError, match="unknown export 'weights'"):
            await run.export("weights")
        return await run.export("model")

    with zipfile.ZipFile(io.BytesIO(asyncio.run(go()))) as archive:
        merged = read_safetensors(archive.read("model.safetensors")).tensors
    base = read_safetensors(given["model.safetensors"]).tensors
    changed = {k for k in base if bytes(merged[k].data) != bytes(base[k].data)}
    assert "encoder.layer.1.output.dense.weight" in changed and len(changed) > 30


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"length": 1}, "length must be a whole number from 2 to 4096, got 1"),
        ({"batch": "32"}, "batch must be a whole number from 1 to 4096, got '32'"),
        ({"text_column": ""}, "text_column must be a non-empty text"),
        ({"lr": 0.1}, r"unknown settings \['lr'\]"),
        ({"text_column": "body"}, "tiny mails has no 'body' column; its columns are 'label', 'text'"),
    ],
)
def test_bad_settings_are_refused_by_name(settings: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        finetune_json("text", files(**settings))


def test_missing_files_are_named(given: dict) -> None:
    without = {k: v for k, v in given.items() if k != "tokenizer.json"}
    with pytest.raises(ValueError, match=r"the texts to fine-tune on lacks tokenizer\.json"):
        finetune_json("text", without)
    program = {"name": "x", "weights": {"file": "model.safetensors", "sha256": "0" * 64, "bytes": 1}}
    with pytest.raises(ModelError, match=r"x starts from pretrained weights \(model.safetensors\): choose its model"):
        model_of(program, {"texts.csv": b""})
    assert model_of({"name": "y"}, {}) is None
    with pytest.raises(ValueError, match="not 'site'"):
        finetune_json("site", given)
