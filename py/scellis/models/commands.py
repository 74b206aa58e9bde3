"""The command line's fine-tuning: `scellis finetune` (the program that fine-tunes a BERT model folder on
labelled texts, one of three ways), and what `run` and `verify` read for such programs: the --model
folder's files and --data texts:FILE tokenized by its tokenizer. Each function reports what is wrong on
standard error and answers None (or exit status 2) instead of raising."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scellis.datasets import Split

MODEL_HELP = (
    "a Hugging Face BERT model folder (config.json, model.safetensors, tokenizer.json): the weights a program of "
    "pretrained parameters pins, and the tokenizer of --data texts:FILE"
)


def model_files(args: argparse.Namespace, program: dict[str, Any], command: str) -> dict[str, bytes] | None:
    """The --model folder's files (read once), or {} when neither the program nor the data needs them; None
    after saying what is wrong."""
    from scellis.models.finetune import read_model_folder

    kept: dict[str, bytes] | None = getattr(args, "model_files", None)
    if kept is not None:
        return kept
    needed = "weights" in program or str(args.data or "").startswith("texts:")
    if args.model is None:
        if needed:
            why = "starts from pretrained weights" if "weights" in program else "reads texts"
            print(f"scellis {command}: {program.get('name', 'the program')} {why}: give --model DIR", file=sys.stderr)
            return None
        return {}
    try:
        kept = args.model_files = read_model_folder(Path(args.model))
    except (OSError, ValueError) as err:
        print(f"scellis {command}: --model {args.model}: {err}", file=sys.stderr)
        return None
    return kept


def texts(path: str, program: dict[str, Any], args: argparse.Namespace, command: str) -> tuple[Split, Split] | None:
    """(train, test) of --data texts:FILE, tokenized by --model's tokenizer for `program`'s window."""
    from scellis.models.finetune import settings_for, text_data

    model = model_files(args, program, command)
    if model is None:
        return None
    try:
        settings = settings_for(program, Path(path).name, args.text_column, args.label_column)
        files = {**model, "texts.csv": Path(path).read_bytes(), "text.json": settings.to_bytes()}
        train, test, _ = text_data(files)
    except (OSError, ValueError) as err:
        print(f"scellis {command}: --data texts:{path}: {err}", file=sys.stderr)
        return None
    return train, test


def finetune_cmd(args: argparse.Namespace) -> int:
    """Write the program that fine-tunes a model folder's BERT encoder on labelled texts, one of three ways
    (as the app's Fine-tune card offers them); say what was read."""
    from scellis.models.finetune import TextSettings, finetune_json, read_model_folder

    try:
        settings = TextSettings(
            Path(args.texts).name, args.text_column, args.label_column, args.length, args.batch, args.epochs
        )
        settings.check()
        files = {**read_model_folder(Path(args.model)), "texts.csv": Path(args.texts).read_bytes()}
        described = json.loads(finetune_json("text", {**files, "text.json": settings.to_bytes()}))
    except (OSError, ValueError) as err:
        print(f"scellis finetune: {err}", file=sys.stderr)
        return 2
    model, texts = described["model"], described["texts"]
    chosen = next(p for p in described["programs"] if p["choice"] == args.way)
    print(
        f"model {args.model}: {model['layers']} layers, hidden {model['hidden']}, {model['parameters']:,} parameters "
        f"(weights {model['weights']['sha256']})\ntexts {args.texts}: classes {', '.join(texts['classes'])}; "
        f"{texts['train']:,} to train on, {texts['held_out']:,} held out (split seed {texts['split_seed']})\n"
        f"program: {chosen['label']}",
        file=sys.stderr,
    )
    text = json.dumps(json.loads(chosen["program"]), indent=1) + "\n"
    if args.out is None:
        sys.stdout.write(text)
    else:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


def text_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=None, help=MODEL_HELP)
    parser.add_argument("--text-column", default="text", help="--data texts:FILE's column of texts (default text)")
    parser.add_argument("--label-column", default="label", help="--data texts:FILE's column of labels (default label)")


def finetune_parser(sub: Any) -> None:
    p_ft = sub.add_parser(
        "finetune",
        help="write the program that fine-tunes a BERT model folder on labelled texts (full, LoRA or QLoRA)",
        description="Then train it: scellis run PROGRAM --model MODEL --data texts:TEXTS --device ... ",
    )
    p_ft.add_argument("model", help=MODEL_HELP)
    p_ft.add_argument("texts", help="a CSV of labelled texts: a header row naming its text and label columns")
    p_ft.add_argument("--way", required=True, choices=["full", "lora", "qlora"], help="every weight, LoRA, or QLoRA")
    for name, default, what in (("length", 128, "tokens per text"), ("batch", 32, "batch"), ("epochs", 3, "epochs")):
        p_ft.add_argument(f"--{name}", type=int, default=default, help=f"{what} (default {default})")
    p_ft.add_argument("--text-column", default="text", help="the column of texts (default text)")
    p_ft.add_argument("--label-column", default="label", help="the column of labels (default label)")
    p_ft.add_argument("--out", default=None, help="where to write the program JSON (default: standard output)")
    p_ft.set_defaults(func=finetune_cmd)
