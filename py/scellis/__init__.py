"""Scellis: train neural networks in the browser, on WebGPU or the named WebAssembly CPU path.

The package is laid out as the pipeline (see README): graph -> ir -> autodiff -> optim -> loop
-> lower -> plan -> codegen -> runtime. Only `scellis.runtime` touches a device or the browser.
"""

__version__ = "0.1.0"
