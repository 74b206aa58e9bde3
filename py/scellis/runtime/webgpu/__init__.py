"""Stage: execution. WebGPU: the page's device through Pyodide's JS FFI (browser), wgpu-py's under
CPython (native), each with its adapter list, and the step plan both replay (wire)."""
