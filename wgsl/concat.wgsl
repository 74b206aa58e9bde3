// Concatenation: out = the inputs one after another along an axis, each element read from the one
// input that holds it (a branch, so no input is read outside its own view).
//
// TOTAL: the output's element count; DECODE: the flat index i split into the output coordinates
// c0, c1, ...; EPILOGUE: the fused expression of acc there, stored through the output's view.
const TOTAL: u32 = 1u;
fn DECODE() {}
fn EPILOGUE() {}
// PICK: the branches, one an input: "if (c < end) { acc = input[..., c - start, ...];", the last one
// "} else { ...; }".
fn PICK() {}
// ---- template ----
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 256u;
  if (i >= TOTAL) { return; }
  DECODE();
  var acc = 0.0;
  PICK();
  EPILOGUE();
}
