// SOLVE, variant solve-invocation (small n): out[m] = [a | b] of matrix m reduced until its last k
// columns hold x, by invocation m alone, in the loops of the CPU path's kernel (wasm/cpu_solve.c):
// Gaussian elimination with partial pivoting (the first row of largest |value|), then back
// substitution. No barriers, many matrices a workgroup; the working copy is the output buffer.
//
// COUNT: the matrices; OFFSET: where the output view starts; CELLS: N * WIDTH, a matrix's; N: n,
// LAST: n - 1, WIDTH: n + k (the augmented matrix [a | b] is N x WIDTH, row-major). A_AT: a[m, r, c],
// B_AT: b[m, r, c - n]. The pivot key function is pivot_key.wgsl, which codegen puts before the kernel.
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
const COUNT: u32 = 1u;
const OFFSET: u32 = 0u;
const CELLS: u32 = 1u;
const N: u32 = 1u;
const LAST: u32 = 0u;
const WIDTH: u32 = 1u;
const A_AT: f32 = 0.0;
const B_AT: f32 = 0.0;
fn sc_pivot_key(v: f32) -> i32 { return 0; }
// ---- template ----
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let m = gid.x + gid.y * groups.x * 64u;
  if (m >= COUNT) { return; }
  let base = OFFSET + m * CELLS;
  for (var e = 0u; e < CELLS; e = e + 1u) {
    let r = e / WIDTH;
    let c = e % WIDTH;
    if (c < N) { out[base + e] = A_AT; } else { out[base + e] = B_AT; }
  }
  for (var j = 0u; j < N; j = j + 1u) {
    var key = -1;
    var p = j;
    for (var r = j; r < N; r = r + 1u) {
      let candidate = sc_pivot_key(out[base + r * WIDTH + j]);
      if (candidate > key) { key = candidate; p = r; }
    }
    if (p != j) {
      for (var c = j; c < WIDTH; c = c + 1u) {
        let s = out[base + j * WIDTH + c];
        out[base + j * WIDTH + c] = out[base + p * WIDTH + c];
        out[base + p * WIDTH + c] = s;
      }
    }
    for (var r = j + 1u; r < N; r = r + 1u) {
      let f = out[base + r * WIDTH + j] / out[base + j * WIDTH + j];
      for (var c = j + 1u; c < WIDTH; c = c + 1u) {
        out[base + r * WIDTH + c] = out[base + r * WIDTH + c] - f * out[base + j * WIDTH + c];
      }
    }
  }
  for (var s = 0u; s < N; s = s + 1u) {
    let i = LAST - s;
    for (var c = N; c < WIDTH; c = c + 1u) {
      out[base + i * WIDTH + c] = out[base + i * WIDTH + c] / out[base + i * WIDTH + i];
    }
    for (var r = 0u; r < i; r = r + 1u) {
      for (var c = N; c < WIDTH; c = c + 1u) {
        out[base + r * WIDTH + c] = out[base + r * WIDTH + c] - out[base + r * WIDTH + i] * out[base + i * WIDTH + c];
      }
    }
  }
}
