// Elementwise add over float32: out[i] = a[i] + b[i], one invocation per element.
// Workgroups may be laid out in 2-D (x * y) when one dimension's limit of 65,535 is too small.

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

const WORKGROUP: u32 = 256u;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * WORKGROUP;
  if (i < arrayLength(&out)) {
    out[i] = a[i] + b[i];
  }
}
