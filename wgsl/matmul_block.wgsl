// Matmul, the blocks of a software adapter (variants block4x8, ...: lower/variants.py's BLOCKS): one
// invocation per ROWS x COLS block of outputs, reading A and B as vec4 straight from their buffers, with
// no workgroup memory and no barrier. An adapter that emulates a GPU on the CPU (SwiftShader, lavapipe)
// runs each invocation's loop much as a CPU thread would: the loads a workgroup tile saves cost less
// there than its barriers and its copies through workgroup memory (on SwiftShader a 256 x 784 by
// 784 x 512 product takes about 4 times as long in 64 x 64 tiles, and its pipeline seconds to make).
// Every output sums its products in K's order, one fma at a time from 0, as tile64 and dot do: the
// same bits as they, on one device.
//
// BLOCKS: the blocks of every batch entry; CELLS: one entry's; ACROSS: its blocks along N; ROWS, COLS:
// a block's size; K: the depth, a multiple of 4. DECODE: bi split into the batch coordinates b0, b1, ...;
// A_BASE, B_BASE: where that entry's A and B start. ACCUMULATORS: the vec4 sums ci_h (row i, columns
// 4 h to 4 h + 3 of the block). STEP: the loads of K's four steps from k0, then their multiply-adds in
// K's order (clamped to the last row or column where a block passes a ragged edge). STORES: for each
// output, the fused expression of its sum stored at (row, col) when inside.
const BLOCKS: u32 = 1u;
const CELLS: u32 = 1u;
const ACROSS: u32 = 1u;
const ROWS: u32 = 4u;
const COLS: u32 = 8u;
const K: u32 = 4u;
const A_BASE: u32 = 0u;
const B_BASE: u32 = 0u;
fn DECODE() {}
fn ACCUMULATORS() {}
fn STEP() {}
fn STORES() {}
// ---- template ----
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= BLOCKS) { return; }
  let bi = i / CELLS;
  let row0 = (i % CELLS) / ACROSS * ROWS;
  let col0 = i % ACROSS * COLS;
  DECODE();
  let a_base = A_BASE;
  let b_base = B_BASE;
  ACCUMULATORS();
  for (var k0 = 0u; k0 < K; k0 = k0 + 4u) {
    STEP();
  }
  STORES();
}
