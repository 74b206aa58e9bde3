// Direct convolution of x [N, C, H, W] by w [O, C / groups, KH, KW], one output element (c0, c1, c2,
// c3) = (n, o, oh, ow) per invocation, summing in a fixed order: taps kh, kw, then the group's input
// channels. A tap in the padding is skipped.
// Fragment: elementwise.wgsl's BODY, at the output coordinates c0, c1, ...; it leaves the value in acc.
//
// OUT_PER_GROUP, IN_PER_GROUP: channels a group (O / groups, C / groups). KH, KW: the kernel's size;
// STRIDE_*, DILATION_*, PAD_*: the convolution's; IN_H, IN_W: x's. X_AT: x[c0, base + cc, ih, iw],
// W_AT: w[c1, cc, kh, kw].
const c0: u32 = 0u;
const c1: u32 = 0u;
const c2: u32 = 0u;
const c3: u32 = 0u;
const OUT_PER_GROUP: u32 = 1u;
const IN_PER_GROUP: u32 = 1u;
const KH: u32 = 1u;
const KW: u32 = 1u;
const STRIDE_H: u32 = 1u;
const STRIDE_W: u32 = 1u;
const DILATION_H: u32 = 1u;
const DILATION_W: u32 = 1u;
const PAD_H: i32 = 0;
const PAD_W: i32 = 0;
const IN_H: i32 = 1;
const IN_W: i32 = 1;
const X_AT: f32 = 0.0;
const W_AT: f32 = 0.0;
fn body(i: u32) {
// ---- template ----
  let base = c1 / OUT_PER_GROUP * IN_PER_GROUP;
  var acc = 0.0;
  for (var kh = 0u; kh < KH; kh = kh + 1u) {
    let ih = i32(c2 * STRIDE_H + kh * DILATION_H) - PAD_H; if (ih < 0 || ih >= IN_H) { continue; }
    for (var kw = 0u; kw < KW; kw = kw + 1u) {
      let iw = i32(c3 * STRIDE_W + kw * DILATION_W) - PAD_W; if (iw < 0 || iw >= IN_W) { continue; }
      for (var cc = 0u; cc < IN_PER_GROUP; cc = cc + 1u) {
        acc = acc + X_AT * W_AT;
      }
    }
  }
// ---- end ----
}
