/* CPU path, the tape: fused elementwise expressions (ELEMENTWISE kernels, every kernel's epilogue and
 * RANDOM's draws), interpreted over blocks of SC_BLOCK elements so that dispatch costs little per
 * element.
 *
 * A tape is u32 words written by the host:
 *   header    ndim, shape[SC_MAXD], n_views, n_prologue, n_body, n_registers
 *   views     n_views x (byte address, strides[SC_MAXD]) over the header's iteration shape
 *   code      (n_prologue + n_body) x (op, dst, a, b, c, d), opcodes in cpu_kernels.h
 * Registers are SC_BLOCK-element arrays in the scratch the host passes. The prologue computes what
 * does not depend on the element (constants, scalars read from memory, expressions of them) once,
 * in lane 0, then fills every lane; the body runs once per block of [start, end): it loads views,
 * computes, and stores. Elements are independent, so any split of [start, end) gives the same bytes. */
#include "cpu_kernels.h"

#define HEADER_WORDS (5 + SC_MAXD)
#define VIEW_WORDS (1 + SC_MAXD)
#define INSTR_WORDS 6

typedef struct {
  u32 ndim;
  u32 shape[SC_MAXD];
  u32 n_views, n_prologue, n_body, n_registers;
} tape_header;

static const u32 PHILOX_M0 = 0xD2511F53u, PHILOX_M1 = 0xCD9E8D57u;
static const u32 PHILOX_W0 = 0x9E3779B9u, PHILOX_W1 = 0xBB67AE85u;

void sc_philox(const u32 counter[4], const u32 key[2], u32 out[4]) {
  u32 c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
  u32 k0 = key[0], k1 = key[1];
  for (u32 round = 0; round < 10u; round++) {
    if (round) {
      k0 += PHILOX_W0;
      k1 += PHILOX_W1;
    }
    u64 p0 = (u64)PHILOX_M0 * c0, p1 = (u64)PHILOX_M1 * c2;
    u32 n0 = (u32)(p1 >> 32) ^ c1 ^ k0, n2 = (u32)(p0 >> 32) ^ c3 ^ k1;
    c0 = n0;
    c1 = (u32)p1;
    c2 = n2;
    c3 = (u32)p0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* An integer in [0, n): the first of the four words at most 2**32 - 1 - (2**32 mod n), taken mod n; when
 * all four are rejected, the next counter (word 3 + 1) is tried (scellis.rng.integer). */
static u32 integer(const u32 counter[4], const u32 key[2], u32 n) {
  u32 last = 0xFFFFFFFFu - (0u - n) % n, c[4] = {counter[0], counter[1], counter[2], counter[3]}, w[4];
  for (;; c[3]++) {
    sc_philox(c, key, w);
    for (u32 k = 0; k < 4; k++)
      if (w[k] <= last) return w[k] % n;
  }
}

/* Element e's draw uses counter (e, site, position, 0) (scellis.rng.counter; e < 2**32 here). */
static void draws(u32 op, const u32 *ins, sc_u32 *dst, u32 i0, u32 n) {
  const sc_u32 *key_at = (const sc_u32 *)ins[2];
  u32 key[2] = {key_at[0], key_at[1]};
  u32 counter[4] = {0, ins[4], *(const sc_u32 *)ins[3], 0}, w[4];
  for (u32 j = 0; j < n; j++) {
    counter[0] = i0 + j;
    sc_philox(counter, key, w);
    if (op == SC_OP_UNIFORM) {
      ((sc_f32 *)dst)[j] = (float)(w[0] >> 8) * 0x1p-24f;
    } else if (op == SC_OP_BERNOULLI) {
      dst[j] = (w[0] >> 8) >= ins[5];
    } else if (op == SC_OP_INTEGER) {
      dst[j] = integer(counter, key, ins[5]);
    } else { /* Box-Muller, as the reference: sqrt(-2 log u1) cos(2 pi u2), u1 in (0, 1] */
      double u1 = ((double)(w[0] >> 8) + 1.0) * 0x1p-24, u2 = (double)(w[1] >> 8) * 0x1p-24;
      ((sc_f32 *)dst)[j] = (float)(__builtin_sqrt(-2.0 * sc_log(u1)) * sc_cos(2.0 * 3.14159265358979323846 * u2));
    }
  }
}

static void coords(sc_u32 *dst, const tape_header *t, const u32 *strides, u32 i0, u32 n) {
  sc_walk w;
  sc_walk_start(&w, t->ndim, t->shape, strides, i0);
  u32 s = strides[t->ndim - 1];
  for (u32 k = 0; k < n;) {
    u32 run = sc_min(sc_walk_run(&w), n - k);
    for (u32 j = 0; j < run; j++) dst[k + j] = w.off + j * s;
    k += run;
    sc_walk_advance(&w, run);
  }
}

static void fill(sc_u32 *dst, u32 word, u32 m) {
  v128_t v = wasm_i32x4_splat((int)word);
  for (u32 j = 0; j < m; j += 4) wasm_v128_store(dst + j, v);
}

static float sigmoid(double x) {
  if (x >= 0) return (float)(1.0 / (1.0 + sc_exp(-x)));
  double e = sc_exp(x);
  return (float)(e / (1.0 + e));
}

static float sign(float x) { return x > 0 ? 1.0f : x < 0 ? -1.0f : x; }

/* 1 + tanh u; for u < 0 as 2 e^2u / (1 + e^2u), which keeps its relative accuracy where it is tiny. */
static double one_plus_tanh(double u) {
  if (u >= 0) return 1.0 + sc_tanh(u);
  double e = sc_exp(2.0 * u);
  return 2.0 * e / (1.0 + e);
}

static float gelu_tanh(double x) {
  return (float)(0.5 * x * one_plus_tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}

static float gelu_erf(double x) { return (float)(0.5 * x * sc_erfc(-x * 0.70710678118654752440)); }

/* Ops of one float argument that go through double precision, one lane at a time. */
static int scalar_unary(u32 op, const sc_f32 *x, sc_f32 *y, u32 n) {
  switch (op) {
#define EACH(expr)                                  \
  for (u32 j = 0; j < n; j++) y[j] = (float)(expr); \
  return 1
    case SC_OP_EXP: EACH(sc_exp(x[j]));
    case SC_OP_EXPM1: EACH(sc_expm1(x[j]));
    case SC_OP_LOG: EACH(sc_log(x[j]));
    case SC_OP_RSQRT: EACH(1.0 / __builtin_sqrt((double)x[j]));
    case SC_OP_SIGN: EACH(sign(x[j]));
    case SC_OP_GELU_TANH: EACH(gelu_tanh(x[j]));
    case SC_OP_GELU_ERF: EACH(gelu_erf(x[j]));
    case SC_OP_TANH: EACH(sc_tanh(x[j]));
    case SC_OP_SIGMOID: EACH(sigmoid(x[j]));
    case SC_OP_ERF: EACH(sc_erf(x[j]));
    case SC_OP_COS: EACH(sc_cos(x[j]));
    case SC_OP_SIN: EACH(sc_sin(x[j]));
#undef EACH
  }
  return 0;
}

/* Ops of up to three registers that run four lanes at a time over m lanes (m a multiple of 4; lanes past
 * the block's elements hold leftovers and are never stored). One loop per op keeps dispatch out of it. */
static void vector_op(u32 op, sc_u32 *dst, const sc_u32 *a, const sc_u32 *b, const sc_u32 *c, u32 imm, u32 m) {
  const v128_t zero = wasm_i32x4_splat(0), one = wasm_i32x4_splat(1), alpha = wasm_i32x4_splat((int)imm);
  const v128_t exponent = wasm_i32x4_splat(0x7f800000);
#define EACH(expr)                                               \
  for (u32 j = 0; j < m; j += 4) {                               \
    v128_t x = wasm_v128_load(a + j), y = wasm_v128_load(b + j); \
    (void)y;                                                     \
    wasm_v128_store(dst + j, (expr));                            \
  }                                                              \
  return
  switch (op) {
    case SC_OP_MOV: EACH(x);
    case SC_OP_NEG: EACH(wasm_f32x4_neg(x));
    case SC_OP_SQRT: EACH(wasm_f32x4_sqrt(x));
    case SC_OP_ABS: EACH(wasm_f32x4_abs(x));
    case SC_OP_RELU: EACH(wasm_f32x4_max(x, zero));
    case SC_OP_LEAKY_RELU: EACH(wasm_v128_bitselect(x, wasm_f32x4_mul(alpha, x), wasm_f32x4_ge(x, zero)));
    case SC_OP_FLOOR: EACH(wasm_f32x4_floor(x));
    case SC_OP_ADD_F: EACH(wasm_f32x4_add(x, y));
    case SC_OP_SUB_F: EACH(wasm_f32x4_sub(x, y));
    case SC_OP_MUL_F: EACH(wasm_f32x4_mul(x, y));
    case SC_OP_DIV_F: EACH(wasm_f32x4_div(x, y));
    case SC_OP_MAX_F: EACH(wasm_f32x4_max(x, y));
    case SC_OP_MIN_F: EACH(wasm_f32x4_min(x, y));
    case SC_OP_LT_F: EACH(wasm_v128_and(wasm_f32x4_lt(x, y), one));
    case SC_OP_EQ_F: EACH(wasm_v128_and(wasm_f32x4_eq(x, y), one));
    case SC_OP_ADD_I: EACH(wasm_i32x4_add(x, y));
    case SC_OP_SUB_I: EACH(wasm_i32x4_sub(x, y));
    case SC_OP_MUL_I: EACH(wasm_i32x4_mul(x, y));
    case SC_OP_MAX_I: EACH(wasm_i32x4_max(x, y));
    case SC_OP_MIN_I: EACH(wasm_i32x4_min(x, y));
    case SC_OP_LT_I: EACH(wasm_v128_and(wasm_i32x4_lt(x, y), one));
    case SC_OP_EQ_I: EACH(wasm_v128_and(wasm_i32x4_eq(x, y), one));
    case SC_OP_MAX_U: EACH(wasm_u32x4_max(x, y));
    case SC_OP_MIN_U: EACH(wasm_u32x4_min(x, y));
    case SC_OP_LT_U: EACH(wasm_v128_and(wasm_u32x4_lt(x, y), one));
    case SC_OP_WHERE: EACH(wasm_v128_bitselect(y, wasm_v128_load(c + j), wasm_i32x4_ne(x, zero)));
    case SC_OP_F2I: EACH(wasm_i32x4_trunc_sat_f32x4(x));
    case SC_OP_I2F: EACH(wasm_f32x4_convert_i32x4(x));
    case SC_OP_U2F: EACH(wasm_f32x4_convert_u32x4(x));
    case SC_OP_F2B: EACH(wasm_v128_and(wasm_f32x4_ne(x, zero), one));
    case SC_OP_I2B: EACH(wasm_v128_and(wasm_i32x4_ne(x, zero), one));
    case SC_OP_IS_FINITE: EACH(wasm_v128_and(wasm_i32x4_ne(wasm_v128_and(x, exponent), exponent), one));
  }
#undef EACH
}

static sc_u32 *reg(sc_u32 *regs, u32 r) { return regs + r * SC_BLOCK; }

static void run(const tape_header *t, const u32 *views, const u32 *code, u32 count, sc_u32 *regs, u32 i0, u32 n) {
  u32 m = (n + 3u) & ~3u;
  for (u32 p = 0; p < count; p++, code += INSTR_WORDS) {
    u32 op = code[0];
    sc_u32 *dst = reg(regs, code[1]);
    const u32 *view = views + (op == SC_OP_LOAD || op == SC_OP_COORD || op == SC_OP_STORE ? code[2] : 0) * VIEW_WORDS;
    switch (op) {
      case SC_OP_LOAD: sc_gather(dst, (const sc_u32 *)view[0], t->ndim, t->shape, view + 1, i0, n); break;
      case SC_OP_SPLAT: fill(dst, *(const sc_u32 *)code[2], m); break;
      case SC_OP_CONST: fill(dst, code[2], m); break;
      case SC_OP_COORD: coords(dst, t, view + 1, i0, n); break;
      case SC_OP_STORE: sc_scatter(reg(regs, code[3]), (sc_u32 *)view[0], t->ndim, t->shape, view + 1, i0, n); break;
      case SC_OP_UNIFORM:
      case SC_OP_NORMAL:
      case SC_OP_BERNOULLI:
      case SC_OP_INTEGER: draws(op, code, dst, i0, n); break;
      case SC_OP_POW_F: {
        const sc_f32 *x = (const sc_f32 *)reg(regs, code[2]), *y = (const sc_f32 *)reg(regs, code[3]);
        for (u32 j = 0; j < n; j++) ((sc_f32 *)dst)[j] = (float)sc_pow(x[j], y[j]);
        break;
      }
      case SC_OP_F2U: {
        const sc_f32 *x = (const sc_f32 *)reg(regs, code[2]);
        for (u32 j = 0; j < n; j++) dst[j] = (u32)(long long)x[j];
        break;
      }
      default: {
        const sc_u32 *a = reg(regs, code[2]);
        if (!scalar_unary(op, (const sc_f32 *)a, (sc_f32 *)dst, n))
          vector_op(op, dst, a, reg(regs, code[3]), reg(regs, code[4]), code[4], m);
      }
    }
  }
}

SC_EXPORT("sc_cpu_tape_scratch_bytes")
u32 sc_cpu_tape_scratch_bytes(const tape_header *t) { return t->n_registers * SC_BLOCK * 4u; }

SC_EXPORT("sc_cpu_tape")
void sc_cpu_tape(const void *args, void *scratch, u32 start, u32 end) {
  const tape_header *t = args;
  const u32 *views = (const u32 *)args + HEADER_WORDS;
  const u32 *code = views + t->n_views * VIEW_WORDS;
  run(t, views, code, t->n_prologue, scratch, 0, 1);
  for (u32 p = 0; p < t->n_prologue; p++) { /* lane 0 holds each prologue value: give it to every lane */
    sc_u32 *r = reg(scratch, code[p * INSTR_WORDS + 1]);
    fill(r, r[0], SC_BLOCK);
  }
  code += t->n_prologue * INSTR_WORDS;
  for (u32 i0 = start; i0 < end; i0 += SC_BLOCK)
    run(t, views, code, t->n_body, scratch, i0, sc_min(SC_BLOCK, end - i0));
}
