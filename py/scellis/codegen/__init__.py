"""Stage: code. WGSL source for every kernel of a schedule (templates in `wgsl/` and generated
expressions), with the workgroup counts to dispatch. Renderers are pure: schedule in, text out."""

from scellis.codegen.wgsl import WgslKernel, render

__all__ = ["WgslKernel", "render"]
