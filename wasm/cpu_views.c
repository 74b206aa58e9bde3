/* CPU path, strided views: walking a view's elements in row-major order of its iteration space, in
 * runs along the innermost axis, and the carry copies between whole buffers. */
#include "cpu_kernels.h"

void sc_walk_start(sc_walk *w, u32 ndim, const u32 *shape, const u32 *strides, u32 i0) {
  w->ndim = ndim;
  w->shape = shape;
  w->strides = strides;
  w->off = 0;
  for (u32 d = ndim; d-- > 0;) {
    w->coord[d] = i0 % shape[d];
    i0 /= shape[d];
    w->off += w->coord[d] * strides[d];
  }
}

/* `steps` at most sc_walk_run(w); carries into the outer axes (unsigned wrap-around cancels out). */
void sc_walk_advance(sc_walk *w, u32 steps) {
  u32 d = w->ndim - 1;
  w->coord[d] += steps;
  w->off += steps * w->strides[d];
  while (d > 0 && w->coord[d] == w->shape[d]) {
    w->off -= w->shape[d] * w->strides[d];
    w->coord[d] = 0;
    d--;
    w->coord[d]++;
    w->off += w->strides[d];
  }
}

void sc_gather(sc_u32 *dst, const sc_u32 *base, u32 ndim, const u32 *shape, const u32 *strides, u32 i0, u32 n) {
  sc_walk w;
  sc_walk_start(&w, ndim, shape, strides, i0);
  u32 s = strides[ndim - 1];
  for (u32 k = 0; k < n;) {
    u32 run = sc_min(sc_walk_run(&w), n - k);
    const sc_u32 *src = base + w.off;
    if (s == 1)
      for (u32 t = 0; t < run; t++) dst[k + t] = src[t];
    else if (s == 0)
      for (u32 t = 0; t < run; t++) dst[k + t] = src[0];
    else
      for (u32 t = 0; t < run; t++) dst[k + t] = src[t * s];
    k += run;
    sc_walk_advance(&w, run);
  }
}

void sc_scatter(const sc_u32 *src, sc_u32 *base, u32 ndim, const u32 *shape, const u32 *strides, u32 i0, u32 n) {
  sc_walk w;
  sc_walk_start(&w, ndim, shape, strides, i0);
  u32 s = strides[ndim - 1];
  for (u32 k = 0; k < n;) {
    u32 run = sc_min(sc_walk_run(&w), n - k);
    sc_u32 *out = base + w.off;
    if (s == 1)
      for (u32 t = 0; t < run; t++) out[t] = src[k + t];
    else
      for (u32 t = 0; t < run; t++) out[t * s] = src[k + t];
    k += run;
    sc_walk_advance(&w, run);
  }
}

/* Words [start, end) of src into dst: the schedule's carry copies (next step's inputs). */
SC_EXPORT("sc_cpu_copy")
void sc_cpu_copy(void *dst, const void *src, u32 start, u32 end) {
  for (u32 i = start; i < end; i++) ((sc_u32 *)dst)[i] = ((const sc_u32 *)src)[i];
}
