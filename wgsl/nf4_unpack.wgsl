// NF4_UNPACK: the packed words -> w [rows, cols], one invocation per value: levels[code] * scale, one
// float32 product. Helpers: nf4.wgsl.
//
// COUNT: rows * cols; OUT_OFFSET: where the output view starts.
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
const COUNT: u32 = 1u;
const OUT_OFFSET: u32 = 0u;
fn sc_nf4_scale(block: u32) -> f32 { return 0.0; }
fn sc_nf4_value(i: u32, scale: f32) -> f32 { return 0.0; }
// ---- template ----
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= COUNT) { return; }
  out[OUT_OFFSET + i] = sc_nf4_value(i, sc_nf4_scale(i / 64u));
}
