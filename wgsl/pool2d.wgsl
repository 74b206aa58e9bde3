// Fragment: elementwise.wgsl's BODY for max and average pooling of x [N, C, H, W], at the output element
// (n, c, oh, ow) = (c0, c1, c2, c3): acc combines the window's taps that lie inside the input. Max
// pooling starts from the lowest finite float32 (the padding is -inf, so it never wins; Tint rejects an
// infinite constant, and every window holds a tap); average pooling sums from 0 (the padding counts as
// 0) and divides by the whole window.
//
// KH, KW: the window's size; STRIDE_*, PAD_*: the pool's; IN_H, IN_W: x's. START: acc's start, STEP:
// acc combined with x[c0, c1, ih, iw] (max(acc, x) or acc + x). SCALE: the average's division by
// KH * KW (no line for max).
const c0: u32 = 0u;
const c1: u32 = 0u;
const c2: u32 = 0u;
const c3: u32 = 0u;
const KH: u32 = 1u;
const KW: u32 = 1u;
const STRIDE_H: u32 = 1u;
const STRIDE_W: u32 = 1u;
const PAD_H: i32 = 0;
const PAD_W: i32 = 0;
const IN_H: i32 = 1;
const IN_W: i32 = 1;
const START: f32 = 0.0;
const STEP: f32 = 0.0;
fn SCALE() {}
fn body(i: u32) {
// ---- template ----
  var acc = START;
  for (var kh = 0u; kh < KH; kh = kh + 1u) {
    let ih = i32(c2 * STRIDE_H + kh * 1u) - PAD_H; if (ih < 0 || ih >= IN_H) { continue; }
    for (var kw = 0u; kw < KW; kw = kw + 1u) {
      let iw = i32(c3 * STRIDE_W + kw * 1u) - PAD_W; if (iw < 0 || iw >= IN_W) { continue; }
      acc = STEP;
    }
  }
  SCALE();
// ---- end ----
}
