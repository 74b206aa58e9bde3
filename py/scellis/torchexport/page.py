"""Stage: export. The page's side of the PyTorch hand-off: a run's state as the export's ZIP, and a checkpoint
an exported train.py wrote, taken into the page's store to resume.

Expects a started session (its data, the pretrained weights of a program that starts from them, the page's
store), or a train.py checkpoint's bytes. Guarantees: `export_zip` saves the session's state as a checkpoint
first (the export's manifest names it, and the page keeps it) and returns a ZIP of
scellis.torchexport.bundle's files under one folder.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

from scellis.datasets import Split
from scellis.manifest.pins import Engine
from scellis.session import Session
from scellis.store.checkpoint import save
from scellis.store.objects import Store
from scellis.torchexport.bundle import export_files, pretrained_tensors, start_of


async def export_zip(
    session: Session,
    program: dict[str, Any],
    data: tuple[Split, Split],
    *,
    engine: Engine,
    store: Store,
    weights: bytes | None,
) -> bytes:
    checkpoint = await session.checkpoint()
    key = await save(store, checkpoint)
    words = [s.name for s in session.compiled.forward.params if s.init.nf4]
    packed = await session.tensors(words) if words else {}
    tensors = {**pretrained_tensors(session.compiled, weights, packed), **checkpoint.tensors}
    files = export_files(
        program, session.compiled, level=session.level, tensors=tensors, start=start_of(checkpoint, key),
        train=data[0], test=data[1], engine=engine,
    )  # fmt: skip
    folder = f"{session.compiled.program.name}-torch"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(f"{folder}/{name}", content)
    return out.getvalue()
