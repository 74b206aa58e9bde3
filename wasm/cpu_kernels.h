/* CPU path, whole-schedule kernels: the shared declarations of the cpu_*.c files.
 *
 * The host (scellis.runtime.cpu.device) writes every kernel's arguments into linear memory once, as
 * arrays of u32 words; each kernel is an export called with the address of its words (a whole step's
 * calls run from one call of sc_cpu_run, cpu_step.c). All sizes and
 * strides count 4-byte elements; every address is a byte address that already includes the view's
 * offset. Values are float32, int32, uint32, or bools stored as u32 0/1. Every export takes a range
 * [start, end) of independent work items, so workers sharing the memory could split one call and get
 * the same bytes. */
#ifndef SCELLIS_CPU_KERNELS_H
#define SCELLIS_CPU_KERNELS_H

#include "scellis.h"

typedef unsigned long long u64;
/* Registers and buffers are read as floats and as integers: these types may alias each other. */
typedef float __attribute__((__may_alias__)) sc_f32;
typedef u32 __attribute__((__may_alias__)) sc_u32;

/* The most axes a view may keep after the host merges the ones it can. */
#define SC_MAXD 8
/* Elements a tape register holds; the tape runs over blocks of this many elements. */
#define SC_BLOCK 256u

static inline u32 sc_min(u32 a, u32 b) { return a < b ? a : b; }

/* -- strided views ------------------------------------------------------------------------------ */

/* A walk over elements [i0, i0 + n) (row-major) of an iteration space of `ndim` axes: `off` is the
 * element offset of the current element in a view with the given strides. */
typedef struct {
  u32 ndim;
  const u32 *shape;
  const u32 *strides;
  u32 coord[SC_MAXD];
  u32 off;
} sc_walk;

void sc_walk_start(sc_walk *w, u32 ndim, const u32 *shape, const u32 *strides, u32 i0);
/* Elements left along the innermost axis from the current one. */
static inline u32 sc_walk_run(const sc_walk *w) { return w->shape[w->ndim - 1] - w->coord[w->ndim - 1]; }
void sc_walk_advance(sc_walk *w, u32 steps);
/* Copy n elements of a view (base address, strides) starting at flat index i0 into dst. */
void sc_gather(sc_u32 *dst, const sc_u32 *base, u32 ndim, const u32 *shape, const u32 *strides, u32 i0, u32 n);
/* The inverse: n elements of src into the view. */
void sc_scatter(const sc_u32 *src, sc_u32 *base, u32 ndim, const u32 *shape, const u32 *strides, u32 i0, u32 n);

/* -- math (double precision inside, for float32 results within about one ulp) -------------------- */

double sc_exp(double x);
double sc_expm1(double x);
double sc_log(double x);
double sc_sin(double x);
double sc_cos(double x);
double sc_tanh(double x);
double sc_erf(double x);
double sc_erfc(double x);
double sc_pow(double x, double y);

/* -- matrix multiply (used by the convolutions too) ----------------------------------------------- */

/* C[m, n] (+)= sum_k A[m, k] B[k, n] for rows m0 <= m < m1, all n; strides in elements. The sum of
 * each element runs k = 0..K-1 in order, one float32 multiply then one add per product (no FMA), on
 * top of 0, or of C's current value when `accumulate`. */
typedef struct {
  const float *a;
  const float *b;
  float *c;
  u32 m, n, k;
  u32 rs_a, cs_a, rs_b, cs_b, rs_c, cs_c;
  u32 accumulate;
} sc_gemm_args;

/* Bytes of scratch sc_gemm_rows needs for its packed panels. */
u32 sc_gemm_scratch_bytes(void);
void sc_gemm_rows(const sc_gemm_args *g, u32 m0, u32 m1, float *scratch);

/* -- the tape: opcodes (scellis.runtime.cpu.tape.OPCODES mirrors this list) ----------------------- */

enum sc_op {
  SC_OP_LOAD = 1,      /* dst <- view a */
  SC_OP_SPLAT = 2,     /* dst <- the word at address a, in every lane */
  SC_OP_CONST = 3,     /* dst <- the bits a, in every lane */
  SC_OP_COORD = 4,     /* dst <- sum of coordinates times the strides of view a (an axis' coordinate) */
  SC_OP_STORE = 5,     /* view a <- register b */
  SC_OP_UNIFORM = 6,   /* dst <- Philox draws; a key address, b position address, c site */
  SC_OP_NORMAL = 7,    /* same operands */
  SC_OP_BERNOULLI = 8, /* same, d: the threshold t of (word0 >> 8) >= t */
  SC_OP_MOV = 9,
  SC_OP_NEG = 10,
  SC_OP_EXP = 11,
  SC_OP_LOG = 12,
  SC_OP_SQRT = 13,
  SC_OP_RSQRT = 14,
  SC_OP_ABS = 15,
  SC_OP_SIGN = 16,
  SC_OP_RELU = 17,
  SC_OP_LEAKY_RELU = 18, /* c: alpha's float32 bits */
  SC_OP_GELU_TANH = 19,
  SC_OP_GELU_ERF = 20,
  SC_OP_TANH = 21,
  SC_OP_SIGMOID = 22,
  SC_OP_ERF = 23,
  SC_OP_COS = 24,
  SC_OP_SIN = 25,
  SC_OP_FLOOR = 26,
  SC_OP_ADD_F = 27,
  SC_OP_SUB_F = 28,
  SC_OP_MUL_F = 29,
  SC_OP_DIV_F = 30,
  SC_OP_POW_F = 31,
  SC_OP_MAX_F = 32,
  SC_OP_MIN_F = 33,
  SC_OP_LT_F = 34,
  SC_OP_EQ_F = 35,
  SC_OP_ADD_I = 36, /* int32 and uint32 alike (wrapping) */
  SC_OP_SUB_I = 37,
  SC_OP_MUL_I = 38,
  SC_OP_MAX_I = 39,
  SC_OP_MIN_I = 40,
  SC_OP_LT_I = 41,
  SC_OP_EQ_I = 42,
  SC_OP_MAX_U = 43,
  SC_OP_MIN_U = 44,
  SC_OP_LT_U = 45,
  SC_OP_WHERE = 46, /* dst <- a != 0 ? b : c */
  SC_OP_F2I = 47,   /* float32 -> int32, toward zero, saturating */
  SC_OP_F2U = 48,   /* float32 -> uint32, toward zero, modulo 2**32 */
  SC_OP_I2F = 49,
  SC_OP_U2F = 50, /* also bool -> float32 */
  SC_OP_F2B = 51, /* x != 0 */
  SC_OP_I2B = 52,
  SC_OP_INTEGER = 53,   /* dst <- int32 draws in [0, d) (scellis.rng.integer); a, b, c as for UNIFORM */
  SC_OP_IS_FINITE = 54, /* dst <- 1 unless a's exponent bits are all ones (inf, NaN) */
  SC_OP_EXPM1 = 55,
};

/* -- the exports (the host passes descriptor words; see each file for their layout) ------------------ */

void sc_cpu_tape(const void *tape, void *scratch, u32 start, u32 end);
void sc_cpu_matmul(const void *desc, void *scratch, u32 start, u32 end);
void sc_cpu_reduce(const void *desc, u32 start, u32 end);
void sc_cpu_rows(const void *desc, u32 start, u32 end);
void sc_cpu_conv2d(const void *desc, void *scratch, u32 start, u32 end);
void sc_cpu_conv2d_grad_input(const void *desc, void *scratch, u32 start, u32 end);
void sc_cpu_conv2d_grad_weight(const void *desc, void *scratch, u32 start, u32 end);
void sc_cpu_pool2d(const void *desc, u32 start, u32 end);
void sc_cpu_pool2d_grad(const void *desc, u32 start, u32 end);
void sc_cpu_gather(const void *desc, u32 start, u32 end);
void sc_cpu_scatter_add(const void *desc, u32 start, u32 end);
void sc_cpu_check_index(const void *desc, u32 start, u32 end);
void sc_cpu_shift2d(const void *desc, u32 start, u32 end);
void sc_cpu_flip_last(const void *desc, u32 start, u32 end);
void sc_cpu_solve(const void *desc, u32 start, u32 end);
void sc_cpu_nf4_pack(const void *desc, u32 start, u32 end);
void sc_cpu_nf4_unpack(const void *desc, u32 start, u32 end);
void sc_cpu_nf4_matmul(const void *desc, u32 start, u32 end);
void sc_cpu_sort(const void *desc, void *scratch, u32 start, u32 end);
void sc_cpu_sort_grad(const void *desc, void *scratch, u32 start, u32 end);
void sc_cpu_copy(void *dst, const void *src, u32 start, u32 end);

/* Philox4x32-10 of one counter under a key (scellis.rng.philox4x32). */
void sc_philox(const u32 counter[4], const u32 key[2], u32 out[4]);

#endif
