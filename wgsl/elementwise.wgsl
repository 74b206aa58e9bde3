// One invocation per output element: a fused chain of elementwise ops, and the frame of every kernel of
// that shape. The grid is 1-D, laid out over x and y (a dimension holds 65,535 workgroups at most), so
// the flat index is i.
//
// TOTAL: the output's element count. DECODE: the flat index i split into the coordinates c0, c1, ...
// BODY: the kind's statements, a fragment that leaves the element's value in acc (conv2d.wgsl,
// pool2d.wgsl, gather.wgsl, ...; no lines for an elementwise chain, whose expression is all epilogue).
// EPILOGUE: the fused expression at those coordinates, stored through the output's view.
const TOTAL: u32 = 1u;
fn DECODE() {}
fn BODY() {}
fn EPILOGUE() {}
// ---- template ----
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 256u;
  if (i >= TOTAL) { return; }
  DECODE();
  BODY();
  EPILOGUE();
}
