/* CPU path, SORT and SORT_GRAD along the last axis of [rows, R] views (the sorted axis moved last; each
 * row a work item, its elements `stride` apart) into contiguous [rows, R] outputs.
 *
 * Keys are u32 of the same order as the values: NaN (any sign, any payload) after everything, +inf
 * included; -0.0 equal to 0.0. The row's order is a stable bottom-up merge sort of its positions by key
 * (on equal keys the left run goes first), so element i's place is the number of smaller keys plus the
 * number of equal keys before it: the only stable order, the one the WGSL kernels count in O(R^2).
 * sort: out[rank(i)] = x[i]; sort_grad: out[i] = g[rank(i)]. Values are moved as bits. */
#include "cpu_kernels.h"

typedef struct {
  const sc_u32 *x;
  const sc_u32 *g; /* sort_grad's gradient (sort: x again) */
  sc_u32 *out;
  u32 count, x_stride, g_stride; /* R, and the strides along it */
  u32 outer_ndim, outer_shape[SC_MAXD], x_strides[SC_MAXD], g_strides[SC_MAXD];
} sort_desc;

static u32 sort_key(u32 bits) {
  u32 magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return 0xffffffffu;
  if (magnitude == 0u) return 0x80000000u;
  return bits & 0x80000000u ? ~bits : bits | 0x80000000u;
}

static u32 offset_of(u32 row, u32 ndim, const u32 *shape, const u32 *strides) {
  u32 off = 0;
  for (u32 axis = ndim; axis-- > 0;) {
    off += row % shape[axis] * strides[axis];
    row /= shape[axis];
  }
  return off;
}

/* Keys, then positions, then the merge's second buffer: R words each. */
SC_EXPORT("sc_cpu_sort_scratch_bytes")
u32 sc_cpu_sort_scratch_bytes(const sort_desc *d) { return 12u * d->count; }

/* The positions of one row in sorted order. */
static const u32 *sorted(const sort_desc *d, const sc_u32 *x, u32 *scratch) {
  u32 n = d->count, *key = scratch, *from = scratch + n, *to = scratch + 2 * n;
  for (u32 i = 0; i < n; i++) key[i] = sort_key(x[i * d->x_stride]), from[i] = i;
  for (u32 width = 1; width < n; width *= 2) {
    for (u32 lo = 0; lo < n; lo += 2 * width) {
      u32 mid = sc_min(lo + width, n), hi = sc_min(lo + 2 * width, n), i = lo, j = mid, o = lo;
      while (i < mid && j < hi) to[o++] = key[from[j]] < key[from[i]] ? from[j++] : from[i++];
      while (i < mid) to[o++] = from[i++];
      while (j < hi) to[o++] = from[j++];
    }
    u32 *swap = from;
    from = to, to = swap;
  }
  return from;
}

SC_EXPORT("sc_cpu_sort")
void sc_cpu_sort(const void *args, void *scratch, u32 start, u32 end) {
  const sort_desc *d = args;
  for (u32 row = start; row < end; row++) {
    const sc_u32 *x = d->x + offset_of(row, d->outer_ndim, d->outer_shape, d->x_strides);
    const u32 *order = sorted(d, x, scratch);
    sc_u32 *out = d->out + row * d->count;
    for (u32 r = 0; r < d->count; r++) out[r] = x[order[r] * d->x_stride];
  }
}

SC_EXPORT("sc_cpu_sort_grad")
void sc_cpu_sort_grad(const void *args, void *scratch, u32 start, u32 end) {
  const sort_desc *d = args;
  for (u32 row = start; row < end; row++) {
    const sc_u32 *x = d->x + offset_of(row, d->outer_ndim, d->outer_shape, d->x_strides);
    const sc_u32 *g = d->g + offset_of(row, d->outer_ndim, d->outer_shape, d->g_strides);
    const u32 *order = sorted(d, x, scratch);
    sc_u32 *out = d->out + row * d->count;
    for (u32 r = 0; r < d->count; r++) out[order[r]] = g[r * d->g_stride];
  }
}
