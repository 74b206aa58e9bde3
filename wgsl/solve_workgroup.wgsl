// SOLVE, variant solve-workgroup (larger n): out[m] = [a | b] of matrix m reduced until its last k
// columns hold x, by workgroup m, step for step in the order of the CPU path's kernel
// (wasm/cpu_solve.c). Its lanes split each step's rows and columns, find the pivot by a fixed tree
// (the first row of largest |value|) and meet at storage barriers between steps. No atomics: results
// repeat bit for bit on one device. The working copy is the output buffer, so no n or k meets a
// workgroup-memory limit.
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
// K: k, the right-hand sides; WIDTH_LAST: WIDTH - 1. PIVOT_TREE: solve_pivot_tree.wgsl, the lanes'
// candidates combined.
const K: u32 = 1u;
const WIDTH_LAST: u32 = 0u;
fn PIVOT_TREE() {}
// ---- template ----
var<workgroup> best_key: array<i32, 64>;
var<workgroup> best_row: array<u32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let m = wid.x + wid.y * groups.x;
  if (m >= COUNT) { return; }
  let base = OFFSET + m * CELLS;
  for (var e = lid.x; e < CELLS; e = e + 64u) {
    let r = e / WIDTH;
    let c = e % WIDTH;
    if (c < N) { out[base + e] = A_AT; } else { out[base + e] = B_AT; }
  }
  storageBarrier();
  for (var j = 0u; j < N; j = j + 1u) {
    var key = -1;
    var row = j;
    for (var r = j + lid.x; r < N; r = r + 64u) {
      let candidate = sc_pivot_key(out[base + r * WIDTH + j]);
      if (candidate > key) { key = candidate; row = r; }
    }
    best_key[lid.x] = key;
    best_row[lid.x] = row;
    workgroupBarrier();
    PIVOT_TREE();
    let p = best_row[0];
    workgroupBarrier();
    if (p != j) {
      for (var c = j + lid.x; c < WIDTH; c = c + 64u) {
        let s = out[base + j * WIDTH + c];
        out[base + j * WIDTH + c] = out[base + p * WIDTH + c];
        out[base + p * WIDTH + c] = s;
      }
    }
    storageBarrier();
    let cols = WIDTH_LAST - j;
    for (var e = lid.x; e < (LAST - j) * cols; e = e + 64u) {
      let r = j + 1u + e / cols;
      let c = j + 1u + e % cols;
      let f = out[base + r * WIDTH + j] / out[base + j * WIDTH + j];
      out[base + r * WIDTH + c] = out[base + r * WIDTH + c] - f * out[base + j * WIDTH + c];
    }
    storageBarrier();
  }
  for (var s = 0u; s < N; s = s + 1u) {
    let i = LAST - s;
    for (var c = N + lid.x; c < WIDTH; c = c + 64u) {
      out[base + i * WIDTH + c] = out[base + i * WIDTH + c] / out[base + i * WIDTH + i];
    }
    storageBarrier();
    for (var e = lid.x; e < i * K; e = e + 64u) {
      let r = e / K;
      let c = N + e % K;
      out[base + r * WIDTH + c] = out[base + r * WIDTH + c] - out[base + r * WIDTH + i] * out[base + i * WIDTH + c];
    }
    storageBarrier();
  }
}
