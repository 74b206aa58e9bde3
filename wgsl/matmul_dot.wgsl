// Matmul, variant dot: one invocation per output (row, col) of batch entry bi, its K multiply-adds in
// K's order as fma, like matmul_tile64's accumulators (so the same bits), with no workgroup memory and
// no barriers.
// Fragment: elementwise.wgsl's BODY, whose own DECODE is empty: i is split here, into bi, row and col.
//
// CELLS: M * N, one batch entry's; N, K: the sizes. DECODE: bi split into the batch coordinates b0, b1,
// ...; A_BASE, B_BASE: where that entry's A and B start. A_AT, B_AT: the elements a[row, kk] and
// b[kk, col] (their strides baked in).
const CELLS: u32 = 1u;
const N: u32 = 1u;
const K: u32 = 1u;
const A_BASE: u32 = 0u;
const B_BASE: u32 = 0u;
const A_AT: f32 = 0.0;
const B_AT: f32 = 0.0;
fn DECODE() {}
fn body(i: u32) {
// ---- template ----
  let bi = i / CELLS;
  let row = (i % CELLS) / N;
  let col = i % N;
  DECODE();
  let a_base = A_BASE;
  let b_base = B_BASE;
  var acc = 0.0;
  for (var kk = 0u; kk < K; kk = kk + 1u) {
    acc = fma(A_AT, B_AT, acc);
  }
// ---- end ----
}
