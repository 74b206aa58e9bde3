// Reduction (sum, mean, max, variance) of few elements, variant "serial": one invocation per output
// element, 64 outputs a workgroup, each summing its elements one after another in index order (no
// workgroup memory, no barrier), so the result repeats bit for bit on one device. The input's view is
// [*out, *reduced]; placeholders as reduce.wgsl's, except FINISH: the mean's division, or the
// variance's second pass in the same order (reduce_var_serial.wgsl).
const OUTS: u32 = 1u;
const COUNT: u32 = 1u;
const START: f32 = 0.0;
const STEP: f32 = 0.0;
fn DECODE() {}
fn DECODE_REDUCED() {}
fn LOAD_X() {}
fn STORE_X() {}
fn FINISH() {}
fn EPILOGUE() {}
// ---- template ----
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let o = (wid.x + wid.y * groups.x) * 64u + lid.x;
  if (o >= OUTS) { return; }
  DECODE();
  var acc = START;
  for (var r = 0u; r < COUNT; r = r + 1u) {
    DECODE_REDUCED();
    LOAD_X();
    STORE_X();
    acc = STEP;
  }
  var total = acc;
  FINISH();
  EPILOGUE();
}
