"""Stage: execution. Devices and the thin bindings that reach them.

The only package that may import `js` or `pyodide`: the same engine code runs under CPython
(wgpu-py, wasmtime) and in the browser (Pyodide's JS FFI), and only this layer differs.
"""

import sys

IN_BROWSER = sys.platform == "emscripten"
