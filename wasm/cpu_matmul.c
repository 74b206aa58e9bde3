/* CPU path, MATMUL: a blocked float32 matrix multiply over strided operands.
 *
 * Goto/BLIS blocking: for each NC-column block of B and KC-deep slice of K, B is packed into panels of
 * NR columns (in the scratch, L2-sized); for each MC-row block of A, A is packed into panels of MR rows;
 * a 4x8 register tile (eight f32x4 accumulators) runs over a pair of panels, the B panel staying in L1. Packing reads
 * any strides; row-major and transposed (column-major) operands have vector fast paths. Every output element sums its
 * products in k order, one multiply and one add each (no FMA: simd128 has none that is deterministic), starting from 0
 * (or from C when accumulating), so the bytes do not depend on the blocking, the operands' layout, or how rows are
 * split between workers. */
#include "cpu_kernels.h"

#define MR 4u
#define NR 8u
#define KC 256u
#define MC 64u
#define NC 512u

u32 sc_gemm_scratch_bytes(void) { return (MC * KC + KC * NC) * 4u; }

static void transpose4(v128_t *r0, v128_t *r1, v128_t *r2, v128_t *r3) {
  v128_t t0 = wasm_i32x4_shuffle(*r0, *r1, 0, 4, 1, 5), t1 = wasm_i32x4_shuffle(*r2, *r3, 0, 4, 1, 5);
  v128_t t2 = wasm_i32x4_shuffle(*r0, *r1, 2, 6, 3, 7), t3 = wasm_i32x4_shuffle(*r2, *r3, 2, 6, 3, 7);
  *r0 = wasm_i32x4_shuffle(t0, t1, 0, 1, 4, 5);
  *r1 = wasm_i32x4_shuffle(t0, t1, 2, 3, 6, 7);
  *r2 = wasm_i32x4_shuffle(t2, t3, 0, 1, 4, 5);
  *r3 = wasm_i32x4_shuffle(t2, t3, 2, 3, 6, 7);
}

/* Four rows (row stride rs, unit column stride) of kc values, written k-major: dst[k * 4 + i]. With
 * interleave = 8 the four go to every 8th group (half of a B panel). */
static void pack_rows4(float *dst, const float *src, u32 rs, u32 kc, u32 interleave) {
  u32 k = 0;
  for (; k + 4 <= kc; k += 4) {
    v128_t r0 = wasm_v128_load(src + k), r1 = wasm_v128_load(src + rs + k);
    v128_t r2 = wasm_v128_load(src + 2 * rs + k), r3 = wasm_v128_load(src + 3 * rs + k);
    transpose4(&r0, &r1, &r2, &r3);
    wasm_v128_store(dst + k * interleave, r0);
    wasm_v128_store(dst + (k + 1) * interleave, r1);
    wasm_v128_store(dst + (k + 2) * interleave, r2);
    wasm_v128_store(dst + (k + 3) * interleave, r3);
  }
  for (; k < kc; k++)
    for (u32 i = 0; i < 4; i++) dst[k * interleave + i] = src[i * rs + k];
}

/* A's rows [i0, i0 + mc) x k [p0, p0 + kc) as MR-row panels, k-major; rows past mc are zeros. */
static void pack_a(const sc_gemm_args *g, u32 i0, u32 mc, u32 p0, u32 kc, float *pa) {
  for (u32 ir = 0; ir < mc; ir += MR) {
    u32 rows = sc_min(MR, mc - ir);
    float *dst = pa + ir * kc;
    const float *src = g->a + (i0 + ir) * g->rs_a + p0 * g->cs_a;
    if (rows == MR && g->cs_a == 1) {
      pack_rows4(dst, src, g->rs_a, kc, MR);
    } else if (rows == MR && g->rs_a == 1) {
      for (u32 k = 0; k < kc; k++) wasm_v128_store(dst + k * MR, wasm_v128_load(src + k * g->cs_a));
    } else {
      for (u32 k = 0; k < kc; k++)
        for (u32 i = 0; i < MR; i++) dst[k * MR + i] = i < rows ? src[i * g->rs_a + k * g->cs_a] : 0.0f;
    }
  }
}

/* B's k [p0, p0 + kc) x columns [j0, j0 + nc) as NR-column panels, k-major; columns past nc are zeros. */
static void pack_b(const sc_gemm_args *g, u32 j0, u32 nc, u32 p0, u32 kc, float *pb) {
  for (u32 jr = 0; jr < nc; jr += NR) {
    u32 cols = sc_min(NR, nc - jr);
    float *dst = pb + jr * kc;
    const float *src = g->b + p0 * g->rs_b + (j0 + jr) * g->cs_b;
    if (cols == NR && g->cs_b == 1) {
      for (u32 k = 0; k < kc; k++) {
        wasm_v128_store(dst + k * NR, wasm_v128_load(src + k * g->rs_b));
        wasm_v128_store(dst + k * NR + 4, wasm_v128_load(src + k * g->rs_b + 4));
      }
    } else if (cols == NR && g->rs_b == 1) { /* columns are contiguous: transpose them in fours */
      pack_rows4(dst, src, g->cs_b, kc, NR);
      pack_rows4(dst + 4, src + 4 * g->cs_b, g->cs_b, kc, NR);
    } else {
      for (u32 k = 0; k < kc; k++)
        for (u32 j = 0; j < NR; j++) dst[k * NR + j] = j < cols ? src[k * g->rs_b + j * g->cs_b] : 0.0f;
    }
  }
}

#define MUL_ADD_ROW(ci0, ci1, ai)                      \
  {                                                    \
    v128_t av = wasm_v128_load32_splat(a + ai);        \
    ci0 = wasm_f32x4_add(ci0, wasm_f32x4_mul(av, b0)); \
    ci1 = wasm_f32x4_add(ci1, wasm_f32x4_mul(av, b1)); \
  }

/* The 4x8 tile at c (row stride ldc, unit column stride) plus the panels' product over kc. */
static void micro(u32 kc, const float *a, const float *b, float *c, u32 ldc, int first) {
  v128_t c00, c01, c10, c11, c20, c21, c30, c31;
  if (first) {
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = wasm_f32x4_splat(0.0f);
  } else {
    c00 = wasm_v128_load(c), c01 = wasm_v128_load(c + 4);
    c10 = wasm_v128_load(c + ldc), c11 = wasm_v128_load(c + ldc + 4);
    c20 = wasm_v128_load(c + 2 * ldc), c21 = wasm_v128_load(c + 2 * ldc + 4);
    c30 = wasm_v128_load(c + 3 * ldc), c31 = wasm_v128_load(c + 3 * ldc + 4);
  }
  for (u32 k = 0; k < kc; k++, a += MR, b += NR) {
    v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 4);
    MUL_ADD_ROW(c00, c01, 0);
    MUL_ADD_ROW(c10, c11, 1);
    MUL_ADD_ROW(c20, c21, 2);
    MUL_ADD_ROW(c30, c31, 3);
  }
  wasm_v128_store(c, c00);
  wasm_v128_store(c + 4, c01);
  wasm_v128_store(c + ldc, c10);
  wasm_v128_store(c + ldc + 4, c11);
  wasm_v128_store(c + 2 * ldc, c20);
  wasm_v128_store(c + 2 * ldc + 4, c21);
  wasm_v128_store(c + 3 * ldc, c30);
  wasm_v128_store(c + 3 * ldc + 4, c31);
}

/* One tile of C at (i, j) with `rows` x `cols` valid; partial or strided tiles go through a local copy. */
static void tile(const sc_gemm_args *g, const float *pa, const float *pb, u32 kc, u32 i, u32 rows, u32 j, u32 cols,
                 int first) {
  float *c = g->c + i * g->rs_c + j * g->cs_c;
  if (rows == MR && cols == NR && g->cs_c == 1) {
    micro(kc, pa, pb, c, g->rs_c, first);
    return;
  }
  float local[MR * NR];
  for (u32 r = 0; r < MR; r++)
    for (u32 q = 0; q < NR; q++)
      local[r * NR + q] = (!first && r < rows && q < cols) ? c[r * g->rs_c + q * g->cs_c] : 0.0f;
  micro(kc, pa, pb, local, NR, first);
  for (u32 r = 0; r < rows; r++)
    for (u32 q = 0; q < cols; q++) c[r * g->rs_c + q * g->cs_c] = local[r * NR + q];
}

void sc_gemm_rows(const sc_gemm_args *g, u32 m0, u32 m1, float *scratch) {
  float *pa = scratch, *pb = scratch + MC * KC;
  for (u32 jc = 0; jc < g->n; jc += NC) {
    u32 nc = sc_min(NC, g->n - jc);
    for (u32 pc = 0; pc < g->k; pc += KC) {
      u32 kc = sc_min(KC, g->k - pc);
      int first = pc == 0 && !g->accumulate;
      pack_b(g, jc, nc, pc, kc, pb);
      for (u32 ic = m0; ic < m1; ic += MC) {
        u32 mc = sc_min(MC, m1 - ic);
        pack_a(g, ic, mc, pc, kc, pa);
        for (u32 jr = 0; jr < nc; jr += NR)
          for (u32 ir = 0; ir < mc; ir += MR)
            tile(g, pa + ir * kc, pb + jr * kc, kc, ic + ir, sc_min(MR, mc - ir), jc + jr, sc_min(NR, nc - jr), first);
      }
    }
  }
}

/* A MATMUL kernel: the 2-d product per batch index; batch axes (at least one, size 1 when none) have
 * their own strides for a, b and c, so broadcast batches (stride 0) need no copies. */
typedef struct {
  sc_gemm_args g;
  u32 batch_ndim;
  u32 batch_shape[SC_MAXD];
  u32 batch_strides[3][SC_MAXD]; /* a, b, c */
} matmul_desc;

/* The packed panels of this product: B's take at most the columns there are. */
SC_EXPORT("sc_cpu_matmul_scratch_bytes")
u32 sc_cpu_matmul_scratch_bytes(const matmul_desc *d) {
  return (MC * KC + KC * sc_min(NC, (d->g.n + NR - 1) / NR * NR)) * 4u;
}

/* Work items are MC-row blocks of every batch, batch-major: [start, end) of them. */
SC_EXPORT("sc_cpu_matmul_items")
u32 sc_cpu_matmul_items(const matmul_desc *d) {
  u32 batches = 1;
  for (u32 i = 0; i < d->batch_ndim; i++) batches *= d->batch_shape[i];
  return batches * ((d->g.m + MC - 1) / MC);
}

SC_EXPORT("sc_cpu_matmul")
void sc_cpu_matmul(const void *args, void *scratch, u32 start, u32 end) {
  const matmul_desc *d = args;
  u32 blocks = (d->g.m + MC - 1) / MC;
  for (u32 item = start; item < end;) {
    u32 batch = item / blocks, first = item % blocks, last = sc_min(blocks, first + (end - item));
    u32 off[3];
    for (u32 t = 0; t < 3; t++) {
      sc_walk w;
      sc_walk_start(&w, d->batch_ndim, d->batch_shape, d->batch_strides[t], batch);
      off[t] = w.off;
    }
    sc_gemm_args g = d->g;
    g.a += off[0], g.b += off[1], g.c += off[2];
    sc_gemm_rows(&g, first * MC, sc_min(g.m, last * MC), scratch);
    item += last - first;
  }
}
