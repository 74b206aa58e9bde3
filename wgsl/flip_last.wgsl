// Per-example flip (data augmentation): out[n, ..., j] = x[n, ..., W - 1 - j] where flip[n], else
// x[n, ..., j].
// Fragment: elementwise.wgsl's BODY, at the output coordinates c0, c1, ...; it leaves the value in acc.
//
// COL: the output's last coordinate; LAST: W - 1; FLIP: flip[c0] (u32 0 or 1); X_AT: x[c0, ..., j].
const COL: u32 = 0u;
const LAST: u32 = 0u;
const FLIP: u32 = 0u;
const X_AT: f32 = 0.0;
fn body(i: u32) {
// ---- template ----
  let j = select(COL, LAST - COL, FLIP != 0u);
  let acc = X_AT;
// ---- end ----
}
