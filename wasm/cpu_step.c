/* CPU path, a whole step in one call: the host encodes the step's export calls once as entries of
 * five words (export number, then its four arguments) and runs them with one call per step, so the
 * cost of crossing from the host into the module (wasmtime's Python binding, Pyodide's FFI) is paid
 * once, not per kernel. Numbers: scellis.runtime.cpu_device.STEP_EXPORTS mirrors this switch. */
#include "cpu_kernels.h"

SC_EXPORT("sc_cpu_run")
void sc_cpu_run(const u32 *entries, u32 count) {
  for (u32 i = 0; i < count; i++, entries += 5) {
    const void *a = (const void *)entries[1];
    void *b = (void *)entries[2];
    u32 start = entries[3], end = entries[4];
    switch (entries[0]) {
      case 1: sc_cpu_tape(a, b, start, end); break;
      case 2: sc_cpu_matmul(a, b, start, end); break;
      case 3: sc_cpu_reduce(a, start, end); break;
      case 4: sc_cpu_rows(a, start, end); break;
      case 5: sc_cpu_conv2d(a, b, start, end); break;
      case 6: sc_cpu_conv2d_grad_input(a, b, start, end); break;
      case 7: sc_cpu_conv2d_grad_weight(a, b, start, end); break;
      case 8: sc_cpu_pool2d(a, start, end); break;
      case 9: sc_cpu_pool2d_grad(a, start, end); break;
      case 10: sc_cpu_gather(a, start, end); break;
      case 11: sc_cpu_scatter_add(a, start, end); break;
      case 12: sc_cpu_copy(b, a, start, end); break;
      case 13: sc_cpu_shift2d(a, start, end); break;
      case 14: sc_cpu_flip_last(a, start, end); break;
      case 15: sc_cpu_solve(a, start, end); break;
      case 16: sc_cpu_sort(a, b, start, end); break;
      case 17: sc_cpu_sort_grad(a, b, start, end); break;
      case 18: sc_cpu_check_index(a, start, end); break;
    }
  }
}
