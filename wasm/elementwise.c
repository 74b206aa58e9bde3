/* CPU path, elementwise family: out[i] = a[i] op b[i] over float32.
 *
 * Every kernel takes an index range [start, end) so a caller can split one
 * call across workers sharing the same memory; each element is independent,
 * so any split gives the same bytes. */
#include "scellis.h"

SC_EXPORT("sc_add_f32")
void sc_add_f32(const float *a, const float *b, float *out, u32 start, u32 end) {
  u32 i = start;
  for (; i + 4 <= end; i += 4) {
    v128_t va = wasm_v128_load(a + i);
    v128_t vb = wasm_v128_load(b + i);
    wasm_v128_store(out + i, wasm_f32x4_add(va, vb));
  }
  for (; i < end; i++) out[i] = a[i] + b[i];
}
