// Per-example flip (data augmentation): out[n, ..., j] = x[n, ..., W - 1 - j] where flip[n], else
// x[n, ..., j].
//
// TOTAL: the output's element count; DECODE: the flat index i split into the output coordinates
// c0, c1, ...; EPILOGUE: the fused expression of acc there, stored through the output's view.
const TOTAL: u32 = 1u;
fn DECODE() {}
fn EPILOGUE() {}
// COL: the output's last coordinate; LAST: W - 1; FLIP: flip[c0] (u32 0 or 1); X_AT: x[c0, ..., j].
const COL: u32 = 0u;
const LAST: u32 = 0u;
const FLIP: u32 = 0u;
const X_AT: f32 = 0.0;
// ---- template ----
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 256u;
  if (i >= TOTAL) { return; }
  DECODE();
  let j = select(COL, LAST - COL, FLIP != 0u);
  let acc = X_AT;
  EPILOGUE();
}
