// The convolution's input gradient dx[n, c, h, w] = (c0, c1, c2, c3), a gather: over taps kh, kw, the
// output position (oh, ow) whose window reads (h, w) there (none between strides or past an edge),
// then the group's output channels, in that fixed order. No atomics.
// Fragment: elementwise.wgsl's BODY, at the output coordinates c0, c1, ...; it leaves the value in acc.
//
// IN_PER_GROUP, OUT_PER_GROUP: channels a group (C / groups, O / groups). KH, KW: the kernel's size;
// STRIDE_*, DILATION_*, PAD_*: the convolution's; OUT_H, OUT_W: g's height and width. G_AT:
// g[c0, base + oo, oh, ow], W_AT: w[base + oo, cc, kh, kw].
const c0: u32 = 0u;
const c1: u32 = 0u;
const c2: u32 = 0u;
const c3: u32 = 0u;
const IN_PER_GROUP: u32 = 1u;
const OUT_PER_GROUP: u32 = 1u;
const KH: u32 = 1u;
const KW: u32 = 1u;
const STRIDE_H: i32 = 1;
const STRIDE_W: i32 = 1;
const DILATION_H: u32 = 1u;
const DILATION_W: u32 = 1u;
const PAD_H: i32 = 0;
const PAD_W: i32 = 0;
const OUT_H: i32 = 1;
const OUT_W: i32 = 1;
const G_AT: f32 = 0.0;
const W_AT: f32 = 0.0;
fn body(i: u32) {
// ---- template ----
  let base = c1 / IN_PER_GROUP * OUT_PER_GROUP;
  let cc = c1 % IN_PER_GROUP;
  var acc = 0.0;
  for (var kh = 0u; kh < KH; kh = kh + 1u) {
    let t_oh = i32(c2) + PAD_H - i32(kh * DILATION_H); if (t_oh < 0 || t_oh % STRIDE_H != 0 || t_oh / STRIDE_H >= OUT_H) { continue; } let oh = u32(t_oh / STRIDE_H);
    for (var kw = 0u; kw < KW; kw = kw + 1u) {
      let t_ow = i32(c3) + PAD_W - i32(kw * DILATION_W); if (t_ow < 0 || t_ow % STRIDE_W != 0 || t_ow / STRIDE_W >= OUT_W) { continue; } let ow = u32(t_ow / STRIDE_W);
      for (var oo = 0u; oo < OUT_PER_GROUP; oo = oo + 1u) {
        acc = acc + G_AT * W_AT;
      }
    }
  }
// ---- end ----
}
