// A pivot candidate's key for SOLVE (solve_*.wgsl): its magnitude compared as bits, so the largest
// |value| wins and a NaN (key -1) never does.
fn sc_pivot_key(v: f32) -> i32 {
  let bits = bitcast<u32>(v) & 0x7fffffffu;
  return select(i32(bits), -1, bits > 0x7f800000u);
}
