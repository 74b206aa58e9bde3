/* CPU path, reduction family: sums over float32 in one fixed order.
 *
 * The order is part of the kernel's contract, so the result is the same bytes
 * on every machine and for any number of workers:
 *   - the input is cut into blocks of SC_SUM_BLOCK elements (the last may be short);
 *   - inside a block, element i goes to lane accumulator (i mod 8): two f32x4
 *     vectors; a scalar tail continues the same lane assignment;
 *   - a block's 8 lanes are combined pairwise: ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7));
 *   - block partials are added left to right in block order.
 * sc_sum_blocks_f32 writes the partials of blocks [first, last), so workers can
 * each take a range of blocks; sc_sum_partials_f32 folds partials in order. */
#include "scellis.h"

#define SC_SUM_BLOCK 4096u

SC_EXPORT("sc_sum_block_size")
u32 sc_sum_block_size(void) { return SC_SUM_BLOCK; }

static float sum_block(const float *x, u32 n) {
  v128_t acc0 = wasm_f32x4_splat(0.0f); /* lanes 0..3 */
  v128_t acc1 = wasm_f32x4_splat(0.0f); /* lanes 4..7 */
  u32 i = 0;
  for (; i + 8 <= n; i += 8) {
    acc0 = wasm_f32x4_add(acc0, wasm_v128_load(x + i));
    acc1 = wasm_f32x4_add(acc1, wasm_v128_load(x + i + 4));
  }
  float lane[8];
  wasm_v128_store(lane, acc0);
  wasm_v128_store(lane + 4, acc1);
  for (u32 k = 0; i < n; i++, k++) lane[k] += x[i];
  return ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
}

SC_EXPORT("sc_sum_blocks_f32")
void sc_sum_blocks_f32(const float *x, u32 n, float *partials, u32 first, u32 last) {
  for (u32 b = first; b < last; b++) {
    u32 start = b * SC_SUM_BLOCK;
    u32 len = n - start < SC_SUM_BLOCK ? n - start : SC_SUM_BLOCK;
    partials[b] = sum_block(x + start, len);
  }
}

SC_EXPORT("sc_sum_partials_f32")
void sc_sum_partials_f32(const float *partials, u32 count, float *out) {
  float total = 0.0f;
  for (u32 b = 0; b < count; b++) total += partials[b];
  *out = total;
}
