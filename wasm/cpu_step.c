/* CPU path, a whole step in one call: the host encodes the step's export calls once as entries of
 * five words (export number, then its four arguments) and runs them with one call per step, so the
 * cost of crossing from the host into the module (wasmtime's Python binding, Pyodide's FFI) is paid
 * once, not per kernel. The numbers are the engine's (RUN_ORDER in scellis.runtime), which build.py
 * writes as enum sc_run: the switch has no default, so every export has its case (-Wswitch). */
#include "cpu_kernels.h"
#include "cpu_run_order.h"

SC_EXPORT("sc_cpu_run")
void sc_cpu_run(const u32 *entries, u32 count) {
  for (u32 i = 0; i < count; i++, entries += 5) {
    const void *a = (const void *)entries[1];
    void *b = (void *)entries[2];
    u32 start = entries[3], end = entries[4];
    switch ((enum sc_run)entries[0]) {
      case SC_RUN_sc_cpu_tape: sc_cpu_tape(a, b, start, end); break;
      case SC_RUN_sc_cpu_matmul: sc_cpu_matmul(a, b, start, end); break;
      case SC_RUN_sc_cpu_reduce: sc_cpu_reduce(a, start, end); break;
      case SC_RUN_sc_cpu_rows: sc_cpu_rows(a, start, end); break;
      case SC_RUN_sc_cpu_conv2d: sc_cpu_conv2d(a, b, start, end); break;
      case SC_RUN_sc_cpu_conv2d_grad_input: sc_cpu_conv2d_grad_input(a, b, start, end); break;
      case SC_RUN_sc_cpu_conv2d_grad_weight: sc_cpu_conv2d_grad_weight(a, b, start, end); break;
      case SC_RUN_sc_cpu_pool2d: sc_cpu_pool2d(a, start, end); break;
      case SC_RUN_sc_cpu_pool2d_grad: sc_cpu_pool2d_grad(a, start, end); break;
      case SC_RUN_sc_cpu_gather: sc_cpu_gather(a, start, end); break;
      case SC_RUN_sc_cpu_scatter_add: sc_cpu_scatter_add(a, start, end); break;
      case SC_RUN_sc_cpu_copy: sc_cpu_copy(b, a, start, end); break;
      case SC_RUN_sc_cpu_shift2d: sc_cpu_shift2d(a, start, end); break;
      case SC_RUN_sc_cpu_flip_last: sc_cpu_flip_last(a, start, end); break;
      case SC_RUN_sc_cpu_solve: sc_cpu_solve(a, start, end); break;
      case SC_RUN_sc_cpu_sort: sc_cpu_sort(a, b, start, end); break;
      case SC_RUN_sc_cpu_sort_grad: sc_cpu_sort_grad(a, b, start, end); break;
      case SC_RUN_sc_cpu_check_index: sc_cpu_check_index(a, start, end); break;
      case SC_RUN_sc_cpu_nf4_pack: sc_cpu_nf4_pack(a, start, end); break;
      case SC_RUN_sc_cpu_nf4_unpack: sc_cpu_nf4_unpack(a, start, end); break;
      case SC_RUN_sc_cpu_nf4_matmul: sc_cpu_nf4_matmul(a, start, end); break;
    }
  }
}
