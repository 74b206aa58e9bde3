/* CPU path, SHIFT2D and FLIP_LAST: the per-example movement of data augmentation, over contiguous
 * [N, ..., H, W] inputs (FLIP_LAST's are read as planes of one row, H = 1).
 *
 * Work items are planes (N times the axes between the batch and the last two); each reads its example's
 * control row: shift2d's (sy, sx) int32 pair, flip_last's bool. shift2d: out[i, j] = x[i + sy, j + sx],
 * 0 outside; in u32 arithmetic a position before the start wraps past the end, so one comparison per
 * axis tests both edges. flip_last: out[j] = x[w - 1 - j] where the flag is set, else x[j]. */
#include "cpu_kernels.h"

typedef struct {
  const float *x;
  const sc_u32 *control; /* shift2d: N x 2 int32; flip_last: N bools */
  float *out;
  u32 per_example, h, w; /* planes per example, plane height and width */
} augment_desc;

SC_EXPORT("sc_cpu_shift2d")
void sc_cpu_shift2d(const void *args, u32 start, u32 end) {
  const augment_desc *d = args;
  for (u32 p = start; p < end; p++) {
    const sc_u32 *shift = d->control + 2 * (p / d->per_example);
    const float *x = d->x + p * d->h * d->w;
    float *out = d->out + p * d->h * d->w;
    for (u32 i = 0; i < d->h; i++) {
      u32 si = i + shift[0];
      for (u32 j = 0; j < d->w; j++) {
        u32 sj = j + shift[1];
        out[i * d->w + j] = si < d->h && sj < d->w ? x[si * d->w + sj] : 0.0f;
      }
    }
  }
}

SC_EXPORT("sc_cpu_flip_last")
void sc_cpu_flip_last(const void *args, u32 start, u32 end) {
  const augment_desc *d = args;
  for (u32 p = start; p < end; p++) {
    u32 flip = d->control[p / d->per_example] != 0;
    const float *x = d->x + p * d->w;
    float *out = d->out + p * d->w;
    for (u32 j = 0; j < d->w; j++) out[j] = x[flip ? d->w - 1 - j : j];
  }
}
