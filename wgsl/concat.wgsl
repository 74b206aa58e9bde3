// Concatenation: out = the inputs one after another along an axis, each element read from the one
// input that holds it (a branch, so no input is read outside its own view).
// Fragment: elementwise.wgsl's BODY, at the output coordinates c0, c1, ...; it leaves the value in acc.
//
// PICK: the branches, one an input: "if (c < end) { acc = input[..., c - start, ...];", the last one
// "} else { ...; }".
fn PICK() {}
fn body(i: u32) {
// ---- template ----
  var acc = 0.0;
  PICK();
// ---- end ----
}
