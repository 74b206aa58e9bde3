// Gather: out[j..., r...] = table[indices[j...], r...], one output element per invocation. An index
// outside the table reads its last row and gives 0 (never memory past the table); the step's
// CHECK_INDEX kernel reports it.
// Fragment: elementwise.wgsl's BODY, at the output coordinates c0, c1, ...; it leaves the value in acc.
//
// INDEX: indices[j...] (an i32); ROWS: the table's row count; ROW_AT: table[min(r, ROWS - 1), r...];
// T: the table's type.
alias T = f32;
const INDEX: i32 = 0;
const ROWS: u32 = 1u;
const ROW_AT: T = T();
fn body(i: u32) {
// ---- template ----
  let r = bitcast<u32>(INDEX);
  let acc = select(T(), ROW_AT, r < ROWS);
// ---- end ----
}
