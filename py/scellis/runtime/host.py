"""Stage: execution. What hosts the engine: the running Pyodide's version, asked of Pyodide itself."""

from __future__ import annotations

from scellis.runtime import IN_BROWSER


def pyodide_version() -> str | None:
    """The version of the Pyodide this interpreter runs in; None under CPython."""
    if not IN_BROWSER:
        return None
    import pyodide

    return str(pyodide.__version__)
