"""Stage: execution. The named CPU path: the WebAssembly kernel module and its host (module, wasm), the
device that compiles planned schedules onto it (device), and its fused elementwise tapes (tape)."""
