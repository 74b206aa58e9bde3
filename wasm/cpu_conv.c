/* CPU path, CONV2D and its two gradients (NCHW, weights OIHW, groups), as matrix multiplies.
 *
 * Per image and group, im2col lays the receptive fields out as cols[K, P] (K = Cg*KH*KW rows in (c, kh,
 * kw) order, P = OH*OW columns, padding as zeros) in the scratch after the gemm's panels; a 1x1 kernel
 * with stride 1 and no padding reads the image itself instead.
 *   conv2d        out[n, g] (Og x P)  = w[g] (Og x K) . cols
 *   grad input    cols = w[g]^T . grad[n, g], then col2im adds each column back, in (row, column) order
 *   grad weight   dw[g] (Og x K)      = sum over n in order of grad[n, g] . cols^T (accumulating gemm)
 * Work items: (image, group) pairs, image-major, for conv2d and grad input; groups for grad weight. */
#include "cpu_kernels.h"

typedef struct {
  const float *x; /* conv2d: x; grad input: the output's gradient; grad weight: x */
  const float *w; /* conv2d and grad input: w; grad weight: the output's gradient */
  float *out;     /* out, dx or dw (contiguous) */
  u32 n, c, h, wd, o, kh, kw, oh, ow;
  u32 stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups;
} conv_desc;

static u32 cg(const conv_desc *d) { return d->c / d->groups; }
static u32 og(const conv_desc *d) { return d->o / d->groups; }
static u32 kdim(const conv_desc *d) { return cg(d) * d->kh * d->kw; }
static u32 pdim(const conv_desc *d) { return d->oh * d->ow; }

static int direct(const conv_desc *d) {
  return d->kh == 1 && d->kw == 1 && d->stride_h == 1 && d->stride_w == 1 && d->pad_h == 0 && d->pad_w == 0;
}

/* Input row ih of kernel row kh at output row oy, or -1 when it falls in the padding. */
static int in_row(const conv_desc *d, u32 oy, u32 kh) {
  int ih = (int)(oy * d->stride_h + kh * d->dil_h) - (int)d->pad_h;
  return ih >= 0 && ih < (int)d->h ? ih : -1;
}

static int in_col(const conv_desc *d, u32 ox, u32 kw) {
  int iw = (int)(ox * d->stride_w + kw * d->dil_w) - (int)d->pad_w;
  return iw >= 0 && iw < (int)d->wd ? iw : -1;
}

/* cols[K, P] of the Cg channels starting at image (channel plane) x. */
static void im2col(const conv_desc *d, const float *x, float *cols) {
  for (u32 c = 0; c < cg(d); c++)
    for (u32 kh = 0; kh < d->kh; kh++)
      for (u32 kw = 0; kw < d->kw; kw++) {
        float *row = cols + ((c * d->kh + kh) * d->kw + kw) * pdim(d);
        const float *plane = x + c * d->h * d->wd;
        for (u32 oy = 0; oy < d->oh; oy++) {
          int ih = in_row(d, oy, kh);
          for (u32 ox = 0; ox < d->ow; ox++) {
            int iw = in_col(d, ox, kw);
            row[oy * d->ow + ox] = ih >= 0 && iw >= 0 ? plane[ih * (int)d->wd + iw] : 0.0f;
          }
        }
      }
}

/* The inverse scatter: dx planes (zeroed here) += cols, row by row. */
static void col2im(const conv_desc *d, const float *cols, float *dx) {
  for (u32 i = 0; i < cg(d) * d->h * d->wd; i++) dx[i] = 0.0f;
  for (u32 c = 0; c < cg(d); c++)
    for (u32 kh = 0; kh < d->kh; kh++)
      for (u32 kw = 0; kw < d->kw; kw++) {
        const float *row = cols + ((c * d->kh + kh) * d->kw + kw) * pdim(d);
        float *plane = dx + c * d->h * d->wd;
        for (u32 oy = 0; oy < d->oh; oy++) {
          int ih = in_row(d, oy, kh);
          for (u32 ox = 0; ox < d->ow; ox++) {
            int iw = in_col(d, ox, kw);
            if (ih >= 0 && iw >= 0) plane[ih * (int)d->wd + iw] += row[oy * d->ow + ox];
          }
        }
      }
}

/* Bytes of scratch a convolution needs: the gemm's panels, then cols. */
SC_EXPORT("sc_cpu_conv2d_scratch_bytes")
u32 sc_cpu_conv2d_scratch_bytes(const conv_desc *d) {
  return sc_gemm_scratch_bytes() + (direct(d) ? 0u : kdim(d) * pdim(d) * 4u);
}

static float *cols_of(void *scratch) { return (float *)scratch + sc_gemm_scratch_bytes() / 4u; }

SC_EXPORT("sc_cpu_conv2d")
void sc_cpu_conv2d(const void *args, void *scratch, u32 start, u32 end) {
  const conv_desc *d = args;
  u32 K = kdim(d), P = pdim(d);
  for (u32 item = start; item < end; item++) {
    u32 n = item / d->groups, g = item % d->groups;
    const float *x = d->x + (n * d->c + g * cg(d)) * d->h * d->wd;
    const float *cols = x;
    if (!direct(d)) {
      im2col(d, x, cols_of(scratch));
      cols = cols_of(scratch);
    }
    sc_gemm_args gemm = {
        d->w + g * og(d) * K, cols, d->out + (n * d->o + g * og(d)) * P, og(d), P, K, K, 1, P, 1, P, 1, 0};
    sc_gemm_rows(&gemm, 0, og(d), scratch);
  }
}

SC_EXPORT("sc_cpu_conv2d_grad_input")
void sc_cpu_conv2d_grad_input(const void *args, void *scratch, u32 start, u32 end) {
  const conv_desc *d = args;
  u32 K = kdim(d), P = pdim(d);
  for (u32 item = start; item < end; item++) {
    u32 n = item / d->groups, g = item % d->groups;
    float *dx = d->out + (n * d->c + g * cg(d)) * d->h * d->wd;
    float *cols = direct(d) ? dx : cols_of(scratch);
    sc_gemm_args gemm = {
        d->w + g * og(d) * K, d->x + (n * d->o + g * og(d)) * P, cols, K, P, og(d), 1, K, P, 1, P, 1, 0};
    sc_gemm_rows(&gemm, 0, K, scratch);
    if (!direct(d)) col2im(d, cols, dx);
  }
}

SC_EXPORT("sc_cpu_conv2d_grad_weight")
void sc_cpu_conv2d_grad_weight(const void *args, void *scratch, u32 start, u32 end) {
  const conv_desc *d = args;
  u32 K = kdim(d), P = pdim(d);
  for (u32 g = start; g < end; g++) {
    for (u32 n = 0; n < d->n; n++) {
      const float *x = d->x + (n * d->c + g * cg(d)) * d->h * d->wd;
      const float *cols = x;
      if (!direct(d)) {
        im2col(d, x, cols_of(scratch));
        cols = cols_of(scratch);
      }
      sc_gemm_args gemm = {
          d->w + (n * d->o + g * og(d)) * P, cols, d->out + g * og(d) * K, og(d), K, P, P, 1, 1, P, K, 1, n > 0};
      sc_gemm_rows(&gemm, 0, og(d), scratch);
    }
  }
}
