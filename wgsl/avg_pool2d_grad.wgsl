// Average pooling's gradient dx[n, c, h, w] = (c0, c1, c2, c3), a gather: the sum of g over the windows
// (oh, ow) that hold (h, w), in row-major tap order, divided by the window size. No atomics.
//
// TOTAL: the output's element count; DECODE: the flat index i split into the output coordinates
// c0, c1, ...; EPILOGUE: the fused expression of acc there, stored through the output's view.
const TOTAL: u32 = 1u;
fn DECODE() {}
fn EPILOGUE() {}
// KH, KW: the window's size; STRIDE_*, PAD_*: the pool's; OUT_H, OUT_W: g's height and width.
const KH: u32 = 1u;
const KW: u32 = 1u;
const STRIDE_H: i32 = 1;
const STRIDE_W: i32 = 1;
const PAD_H: i32 = 0;
const PAD_W: i32 = 0;
const OUT_H: i32 = 1;
const OUT_W: i32 = 1;
// G_AT: g[c0, c1, oh, ow]; WINDOW: KH * KW, as a float.
const G_AT: f32 = 0.0;
const WINDOW: f32 = 1.0;
const c0: u32 = 0u;
const c1: u32 = 0u;
const c2: u32 = 0u;
const c3: u32 = 0u;
// ---- template ----
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 256u;
  if (i >= TOTAL) { return; }
  DECODE();
  var acc = 0.0;
  for (var kh = 0u; kh < KH; kh = kh + 1u) {
    let t_oh = i32(c2) + PAD_H - i32(kh * 1u); if (t_oh < 0 || t_oh % STRIDE_H != 0 || t_oh / STRIDE_H >= OUT_H) { continue; } let oh = u32(t_oh / STRIDE_H);
    for (var kw = 0u; kw < KW; kw = kw + 1u) {
      let t_ow = i32(c3) + PAD_W - i32(kw * 1u); if (t_ow < 0 || t_ow % STRIDE_W != 0 || t_ow / STRIDE_W >= OUT_W) { continue; } let ow = u32(t_ow / STRIDE_W);
      acc = acc + G_AT;
    }
  }
  acc = acc / WINDOW;
  EPILOGUE();
}
