// Matmul, the pipelined tiles (variants tile128-pipe, ...: codegen/wgsl_matmul.py's BLOCKINGS). 256 threads
// each own a register block of ROWS x COLS outputs (rows 4 ty + i + 64 g, columns 4 tx + c + 64 h, as
// vec4 sums ci_h), so a workgroup computes a 16 ROWS x 16 COLS output tile over slices of K of DEPTH.
// Each slice sits in workgroup memory K-major as rows of vec4 (A transposed on the way in when A is
// contiguous along K, B likewise when B is), so a step of K reads ROWS / 4 + COLS / 4 vec4 for
// ROWS x COLS multiply-adds. The slices are pipelined: while the threads multiply one slice, the loads
// of a later one are in flight into registers, which are staged into the other of two tiles (one
// barrier a slice) or, with one tile, into it after a second barrier. K is known, so the schedule of
// slices is written out (codegen/wgsl_matmul.py's _slices): the loop takes STAGES steps at a time, each
// with its tiles named by constants (an index naga need not clamp, an address the driver folds), and
// neither it nor the steps after it test for a next slice. Every output sums its products in K's
// order, one fma at a time from 0, as tile64 and dot do: the same bits as they, on one device.
//
// DECODE: wid.z split into the batch coordinates b0, b1, ... (one line); A_BASE, B_BASE: where that
// entry's A and B start. ORIGIN: row0 and col0, where the workgroup's tile starts (wid.x and wid.y in
// order, or in bands of tile rows, so that the workgroups running at once share more of A and B in the
// L2 cache). TX, TY: the thread's column and row in the 16 x 16 grid (how a warp's 32 lanes lie in it).
// ACCUMULATORS, REGISTERS: the sums and the registers a slice is fetched into (from k1, bounds-checked
// only where the shape has ragged edges). FIRST: the first slices fetched and staged; LOOP_END,
// LOOP_STEP: the loop's bounds; STEPS: its steps; AFTER: the steps after it. STORES: for each output,
// the fused expression of its sum stored at (row, col) when inside.
const A_QUADS: u32 = 32u;
const B_QUADS: u32 = 32u;
const DEPTH: u32 = 8u;
const STAGES: u32 = 2u;
const LOOP_END: u32 = 0u;
const LOOP_STEP: u32 = 8u;
const A_BASE: u32 = 0u;
const B_BASE: u32 = 0u;
const TX: u32 = 0u;
const TY: u32 = 0u;
fn DECODE() {}
fn ORIGIN() {}
fn ACCUMULATORS() {}
fn REGISTERS() {}
fn FIRST() {}
fn STEPS() {}
fn AFTER() {}
fn STORES() {}
// ---- template ----
var<workgroup> tile_a: array<array<array<vec4<f32>, A_QUADS>, DEPTH>, STAGES>;
var<workgroup> tile_b: array<array<array<vec4<f32>, B_QUADS>, DEPTH>, STAGES>;
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  DECODE();
  let a_base = A_BASE;
  let b_base = B_BASE;
  ORIGIN();
  let tx = TX;
  let ty = TY;
  ACCUMULATORS();
  REGISTERS();
  var k1 = 0u;
  FIRST();
  for (var k0 = 0u; k0 < LOOP_END; k0 = k0 + LOOP_STEP) {
    STEPS();
  }
  AFTER();
  STORES();
}
