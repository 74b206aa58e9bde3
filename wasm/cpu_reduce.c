/* CPU path, REDUCE and the row kernels (SOFTMAX, LOG_SOFTMAX, ARGMAX).
 *
 * An input view is split into outer axes (one result, or one row, each) and inner axes (the R elements
 * reduced, row-major). The order of a sum is fixed and documented, so the bytes do not depend on the
 * view's layout or on how outputs are split between workers: element j of the R goes to lane j mod 4,
 * lanes accumulate in float64 in increasing j, and the sum is (lane0 + lane1) + (lane2 + lane3). mean
 * divides that sum by R in float64; var is the same sum over (x - mean)^2, divided by R - correction;
 * max propagates NaN. Softmax sums exp(x - max) in float64 the same way and divides, log-softmax
 * subtracts the log of that sum; argmax takes the first maximum (or the first NaN, as numpy). Each
 * result is rounded to float32 once. */
#include "cpu_kernels.h"

enum { SUM, MEAN, MAX, VAR, SOFTMAX, LOG_SOFTMAX, ARGMAX };

typedef struct {
  const sc_f32 *x;
  sc_u32 *out;
  u32 op, correction;
  u32 outer_ndim, outer_shape[SC_MAXD], outer_strides[SC_MAXD];
  u32 inner_ndim, inner_shape[SC_MAXD], inner_strides[SC_MAXD];
  u32 count; /* R */
} reduce_desc;

/* Elements [j0, j0 + n) of one row as contiguous floats: in place, or gathered into buf. */
static const sc_f32 *chunk(const reduce_desc *d, const sc_f32 *row, u32 j0, u32 n, sc_f32 *buf) {
  if (d->inner_ndim == 1 && d->inner_strides[0] == 1) return row + j0;
  sc_gather((sc_u32 *)buf, (const sc_u32 *)row, d->inner_ndim, d->inner_shape, d->inner_strides, j0, n);
  return buf;
}

typedef struct {
  v128_t lo, hi; /* float64 lanes 0, 1 and 2, 3 */
} lanes;

/* n values starting at an index that is a multiple of 4; with `square`, (x - shift)^2 instead of x. A
 * short last group adds 0.0 in its missing lanes. */
static void accumulate(lanes *acc, const sc_f32 *x, u32 n, double shift, int square) {
  v128_t s = wasm_f64x2_splat(shift);
  u32 t = 0;
  for (; t + 4 <= n; t += 4) {
    v128_t v = wasm_v128_load(x + t);
    v128_t lo = wasm_f64x2_promote_low_f32x4(v),
           hi = wasm_f64x2_promote_low_f32x4(wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
    if (square) {
      lo = wasm_f64x2_sub(lo, s), hi = wasm_f64x2_sub(hi, s);
      lo = wasm_f64x2_mul(lo, lo), hi = wasm_f64x2_mul(hi, hi);
    }
    acc->lo = wasm_f64x2_add(acc->lo, lo);
    acc->hi = wasm_f64x2_add(acc->hi, hi);
  }
  if (t < n) {
    double last[4] = {0.0, 0.0, 0.0, 0.0};
    for (u32 q = 0; t + q < n; q++) last[q] = square ? (x[t + q] - shift) * (x[t + q] - shift) : x[t + q];
    acc->lo = wasm_f64x2_add(acc->lo, wasm_v128_load(last));
    acc->hi = wasm_f64x2_add(acc->hi, wasm_v128_load(last + 2));
  }
}

static double row_sum(const reduce_desc *d, const sc_f32 *row, double shift, int square) {
  sc_f32 buf[SC_BLOCK];
  lanes acc = {wasm_f64x2_splat(0.0), wasm_f64x2_splat(0.0)};
  for (u32 j0 = 0; j0 < d->count; j0 += SC_BLOCK) {
    u32 n = sc_min(SC_BLOCK, d->count - j0);
    accumulate(&acc, chunk(d, row, j0, n, buf), n, shift, square);
  }
  return (wasm_f64x2_extract_lane(acc.lo, 0) + wasm_f64x2_extract_lane(acc.lo, 1)) +
         (wasm_f64x2_extract_lane(acc.hi, 0) + wasm_f64x2_extract_lane(acc.hi, 1));
}

static float row_max(const reduce_desc *d, const sc_f32 *row) {
  sc_f32 buf[SC_BLOCK];
  float best = -__builtin_inff();
  for (u32 j0 = 0; j0 < d->count; j0 += SC_BLOCK) {
    u32 n = sc_min(SC_BLOCK, d->count - j0);
    const sc_f32 *x = chunk(d, row, j0, n, buf);
    for (u32 t = 0; t < n; t++) best = (x[t] > best || x[t] != x[t]) && best == best ? x[t] : best;
  }
  return best;
}

/* exp(x - max) summed as row_sum sums, then each element divided (softmax) or shifted (log-softmax). */
static void softmax_row(const reduce_desc *d, const sc_f32 *row, sc_f32 *out) {
  sc_f32 buf[SC_BLOCK];
  double max = row_max(d, row);
  lanes acc = {wasm_f64x2_splat(0.0), wasm_f64x2_splat(0.0)};
  for (u32 j0 = 0; j0 < d->count; j0 += SC_BLOCK) {
    u32 n = sc_min(SC_BLOCK, d->count - j0);
    const sc_f32 *x = chunk(d, row, j0, n, buf);
    for (u32 t = 0; t < n; t += 4) {
      double e[4] = {0.0, 0.0, 0.0, 0.0};
      for (u32 q = 0; q < 4 && t + q < n; q++) e[q] = sc_exp(x[t + q] - max);
      acc.lo = wasm_f64x2_add(acc.lo, wasm_v128_load(e));
      acc.hi = wasm_f64x2_add(acc.hi, wasm_v128_load(e + 2));
    }
  }
  double sum = (wasm_f64x2_extract_lane(acc.lo, 0) + wasm_f64x2_extract_lane(acc.lo, 1)) +
               (wasm_f64x2_extract_lane(acc.hi, 0) + wasm_f64x2_extract_lane(acc.hi, 1));
  double log_sum = sc_log(sum);
  for (u32 j0 = 0; j0 < d->count; j0 += SC_BLOCK) {
    u32 n = sc_min(SC_BLOCK, d->count - j0);
    const sc_f32 *x = chunk(d, row, j0, n, buf);
    for (u32 t = 0; t < n; t++)
      out[j0 + t] = d->op == SOFTMAX ? (float)(sc_exp(x[t] - max) / sum) : (float)((x[t] - max) - log_sum);
  }
}

static u32 row_argmax(const reduce_desc *d, const sc_f32 *row) {
  sc_f32 buf[SC_BLOCK];
  float best = 0.0f;
  u32 at = 0;
  for (u32 j0 = 0; j0 < d->count; j0 += SC_BLOCK) {
    u32 n = sc_min(SC_BLOCK, d->count - j0);
    const sc_f32 *x = chunk(d, row, j0, n, buf);
    for (u32 t = 0; t < n; t++) {
      int better = j0 + t == 0 || x[t] > best || (x[t] != x[t] && best == best);
      if (better) best = x[t], at = j0 + t;
    }
  }
  return at;
}

static float reduce_one(const reduce_desc *d, const sc_f32 *row) {
  if (d->op == MAX) return row_max(d, row);
  double sum = row_sum(d, row, 0.0, 0);
  if (d->op == SUM) return (float)sum;
  double mean = sum / d->count;
  if (d->op == MEAN) return (float)mean;
  return (float)(row_sum(d, row, mean, 1) / (d->count - d->correction));
}

/* Neighbouring results (outer stride 1) over strided reduced elements, e.g. a bias gradient's sum over
 * the batch: one walk over the reduced elements serves a tile of results, reading rows of memory instead
 * of columns. Each result still adds element j into its lane j mod 4 in increasing j, as row_sum does,
 * so the bytes are the same. */
#define TILE 64u

static void sum_tile(const reduce_desc *d, const sc_f32 *x, u32 n, const double *shift, double *sums) {
  double lane[4][TILE];
  for (u32 l = 0; l < 4; l++)
    for (u32 o = 0; o < n; o++) lane[l][o] = 0.0;
  sc_walk w;
  sc_walk_start(&w, d->inner_ndim, d->inner_shape, d->inner_strides, 0);
  for (u32 j = 0; j < d->count; j++, sc_walk_advance(&w, 1)) {
    const sc_f32 *row = x + w.off;
    double *acc = lane[j & 3u];
    if (shift)
      for (u32 o = 0; o < n; o++) acc[o] += (row[o] - shift[o]) * (row[o] - shift[o]);
    else
      for (u32 o = 0; o < n; o++) acc[o] += row[o];
  }
  for (u32 o = 0; o < n; o++) sums[o] = (lane[0][o] + lane[1][o]) + (lane[2][o] + lane[3][o]);
}

static void max_tile(const reduce_desc *d, const sc_f32 *x, u32 n, sc_f32 *out) {
  for (u32 o = 0; o < n; o++) out[o] = -__builtin_inff();
  sc_walk w;
  sc_walk_start(&w, d->inner_ndim, d->inner_shape, d->inner_strides, 0);
  for (u32 j = 0; j < d->count; j++, sc_walk_advance(&w, 1)) {
    const sc_f32 *row = x + w.off;
    for (u32 o = 0; o < n; o++) out[o] = (row[o] > out[o] || row[o] != row[o]) && out[o] == out[o] ? row[o] : out[o];
  }
}

static void reduce_tile(const reduce_desc *d, u32 o0, u32 n) {
  const sc_f32 *x = d->x + o0;
  sc_f32 *out = (sc_f32 *)d->out + o0;
  if (d->op == MAX) {
    max_tile(d, x, n, out);
    return;
  }
  double sums[TILE], means[TILE];
  sum_tile(d, x, n, 0, sums);
  for (u32 o = 0; o < n; o++) means[o] = sums[o] / d->count;
  if (d->op == VAR) sum_tile(d, x, n, means, sums);
  for (u32 o = 0; o < n; o++)
    out[o] = d->op == SUM    ? (float)sums[o]
             : d->op == MEAN ? (float)means[o]
                             : (float)(sums[o] / (d->count - d->correction));
}

/* Results [start, end): sum, mean, max or var of each outer index's R elements, contiguous in out. */
SC_EXPORT("sc_cpu_reduce")
void sc_cpu_reduce(const void *args, u32 start, u32 end) {
  const reduce_desc *d = args;
  int strided = !(d->inner_ndim == 1 && d->inner_strides[0] == 1);
  if (strided && d->outer_ndim == 1 && d->outer_strides[0] == 1) {
    for (u32 o = start; o < end; o += TILE) reduce_tile(d, o, sc_min(TILE, end - o));
    return;
  }
  sc_walk w;
  sc_walk_start(&w, d->outer_ndim, d->outer_shape, d->outer_strides, start);
  for (u32 o = start; o < end; o++, sc_walk_advance(&w, 1)) ((sc_f32 *)d->out)[o] = reduce_one(d, d->x + w.off);
}

/* Rows [start, end): softmax or log-softmax into out[row * R ...], or argmax (int32) into out[row]. */
SC_EXPORT("sc_cpu_rows")
void sc_cpu_rows(const void *args, u32 start, u32 end) {
  const reduce_desc *d = args;
  sc_walk w;
  sc_walk_start(&w, d->outer_ndim, d->outer_shape, d->outer_strides, start);
  for (u32 o = start; o < end; o++, sc_walk_advance(&w, 1)) {
    if (d->op == ARGMAX) d->out[o] = row_argmax(d, d->x + w.off);
    else softmax_row(d, d->x + w.off, (sc_f32 *)d->out + o * d->count);
  }
}
