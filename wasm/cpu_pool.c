/* CPU path, MAX_POOL2D / AVG_POOL2D and their gradients (NCHW), one channel plane per work item.
 *
 * Max pooling pads with -inf and propagates NaN; its gradient goes to the first maximum of each window
 * in row-major (kh, kw) order (to nothing when that is padding or the maximum is NaN). Average pooling
 * counts padding as zeros and divides by KH*KW; its window sums run in float64. Gradients are added
 * into the zeroed plane window by window in row-major (oh, ow) order. */
#include "cpu_kernels.h"

typedef struct {
  const float *x; /* forward and max's gradient: the pooled input */
  const float *g; /* gradients: the output's gradient */
  float *out;     /* pooled output, or the input's gradient */
  u32 max;        /* 1 for max pooling, 0 for average */
  u32 n, c, h, w, kh, kw, oh, ow, stride_h, stride_w, pad_h, pad_w;
} pool_desc;

/* The window's input offset for kernel position (i, j) of output (oy, ox), or -1 in the padding. */
static int at(const pool_desc *d, u32 oy, u32 ox, u32 i, u32 j) {
  int ih = (int)(oy * d->stride_h + i) - (int)d->pad_h, iw = (int)(ox * d->stride_w + j) - (int)d->pad_w;
  return ih >= 0 && ih < (int)d->h && iw >= 0 && iw < (int)d->w ? ih * (int)d->w + iw : -1;
}

static float window_max(const pool_desc *d, const float *x, u32 oy, u32 ox) {
  float best = -__builtin_inff();
  for (u32 i = 0; i < d->kh; i++)
    for (u32 j = 0; j < d->kw; j++) {
      int p = at(d, oy, ox, i, j);
      float v = p >= 0 ? x[p] : -__builtin_inff();
      best = (v > best || v != v) && best == best ? v : best;
    }
  return best;
}

static float window_mean(const pool_desc *d, const float *x, u32 oy, u32 ox) {
  double sum = 0.0;
  for (u32 i = 0; i < d->kh; i++)
    for (u32 j = 0; j < d->kw; j++) {
      int p = at(d, oy, ox, i, j);
      sum += p >= 0 ? x[p] : 0.0;
    }
  return (float)(sum / (d->kh * d->kw));
}

/* The first window position holding the maximum, or -1 (padding, or a NaN maximum). */
static int first_max(const pool_desc *d, const float *x, u32 oy, u32 ox) {
  float best = window_max(d, x, oy, ox);
  for (u32 i = 0; i < d->kh; i++)
    for (u32 j = 0; j < d->kw; j++) {
      int p = at(d, oy, ox, i, j);
      if ((p >= 0 ? x[p] : -__builtin_inff()) == best) return p;
    }
  return -1;
}

SC_EXPORT("sc_cpu_pool2d")
void sc_cpu_pool2d(const void *args, u32 start, u32 end) {
  const pool_desc *d = args;
  for (u32 plane = start; plane < end; plane++) {
    const float *x = d->x + plane * d->h * d->w;
    float *out = d->out + plane * d->oh * d->ow;
    for (u32 oy = 0; oy < d->oh; oy++)
      for (u32 ox = 0; ox < d->ow; ox++)
        out[oy * d->ow + ox] = d->max ? window_max(d, x, oy, ox) : window_mean(d, x, oy, ox);
  }
}

SC_EXPORT("sc_cpu_pool2d_grad")
void sc_cpu_pool2d_grad(const void *args, u32 start, u32 end) {
  const pool_desc *d = args;
  float count = (float)(d->kh * d->kw);
  for (u32 plane = start; plane < end; plane++) {
    const float *g = d->g + plane * d->oh * d->ow;
    float *dx = d->out + plane * d->h * d->w;
    for (u32 i = 0; i < d->h * d->w; i++) dx[i] = 0.0f;
    for (u32 oy = 0; oy < d->oh; oy++)
      for (u32 ox = 0; ox < d->ow; ox++) {
        float gv = g[oy * d->ow + ox];
        if (d->max) {
          int p = first_max(d, d->x + plane * d->h * d->w, oy, ox);
          if (p >= 0) dx[p] += gv;
        } else {
          for (u32 i = 0; i < d->kh; i++)
            for (u32 j = 0; j < d->kw; j++) {
              int p = at(d, oy, ox, i, j);
              if (p >= 0) dx[p] += gv / count;
            }
        }
      }
  }
}
