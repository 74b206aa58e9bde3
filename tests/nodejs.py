"""Running the app's pure ES modules under Node for the tests: a module made of a prelude (imports and
helpers) and a test's body, which fills an `out` object that comes back as JSON. `inputs` reach the
module as a JSON file named by process.argv[2]."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any


def run_node(
    prelude: str, body: str, inputs: dict[str, Any] | None = None, *, flags: tuple[str, ...] = (), timeout: int = 60
) -> Any:
    node = shutil.which("node")
    assert node, "node is required (the build needs it too): run scripts/setup"
    with tempfile.TemporaryDirectory() as tmp:
        script, data = Path(tmp, "test.mjs"), Path(tmp, "input.json")
        data.write_text(json.dumps(inputs or {}))
        script.write_text(prelude + body + "\nconsole.log(JSON.stringify(out));\n")
        done = subprocess.run(
            [node, "--no-warnings", *flags, str(script), str(data)],
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
