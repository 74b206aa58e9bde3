// Gather: out[j..., r...] = table[indices[j...], r...], one output element per invocation. An index
// outside the table reads its last row and gives 0 (never memory past the table); the step's
// CHECK_INDEX kernel reports it.
//
// TOTAL: the output's element count; DECODE: the flat index i split into the output coordinates
// c0, c1, ...; EPILOGUE: the fused expression of acc there, stored through the output's view.
const TOTAL: u32 = 1u;
fn DECODE() {}
fn EPILOGUE() {}
// INDEX: indices[j...] (an i32); ROWS: the table's row count; ROW_AT: table[min(r, ROWS - 1), r...];
// T: the table's type.
alias T = f32;
const INDEX: i32 = 0;
const ROWS: u32 = 1u;
const ROW_AT: T = T();
// ---- template ----
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 256u;
  if (i >= TOTAL) { return; }
  DECODE();
  let r = bitcast<u32>(INDEX);
  let acc = select(T(), ROW_AT, r < ROWS);
  EPILOGUE();
}
