// NF4_MATMUL: x [count, k] times the packed W, one invocation per output element [m, j]: the sum over t
// of x[m, t] * W's value at j * J_STRIDE + t * T_STRIDE (x W^T: J_STRIDE = cols, T_STRIDE = 1; x W:
// J_STRIDE = 1, T_STRIDE = cols), in increasing t, each value read back from its code and its block's
// scale. Helpers: nf4.wgsl.
//
// COUNT: count * n outputs; N: n; K: k; X_AT: x[m, t] (m, t in scope); OUT_OFFSET: where the output
// view starts.
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
const COUNT: u32 = 1u;
const N: u32 = 1u;
const K: u32 = 1u;
const J_STRIDE: u32 = 1u;
const T_STRIDE: u32 = 1u;
const X_AT: f32 = 0.0;
const OUT_OFFSET: u32 = 0u;
fn sc_nf4_scale(block: u32) -> f32 { return 0.0; }
fn sc_nf4_value(i: u32, scale: f32) -> f32 { return 0.0; }
// ---- template ----
fn sc_x(m: u32, t: u32) -> f32 {
  return X_AT;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let e = gid.x + gid.y * groups.x * 64u;
  if (e >= COUNT) { return; }
  let m = e / N;
  let j = e % N;
  var acc = 0.0;
  for (var t = 0u; t < K; t = t + 1u) {
    let i = j * J_STRIDE + t * T_STRIDE;
    acc = acc + sc_x(m, t) * sc_nf4_value(i, sc_nf4_scale(i / 64u));
  }
  out[OUT_OFFSET + e] = acc;
}
