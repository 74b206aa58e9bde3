/* CPU path, NF4 weights (scellis.ops.nf4, whose levels and midpoints build.py writes as cpu_nf4.h).
 *
 * pack: w f32 [rows, cols] -> u32 words: the codes, 8 a word, then the float16 block scales, 2 a word.
 * Work items are pairs of blocks, so each item writes whole words of both. A code counts the midpoints m
 * with w > m * absmax (a float32 product); the scale is absmax rounded to float16, to nearest even,
 * saturating at 65504, on the bits: every device packs the same words.
 * unpack: words -> f32 [rows, cols]: levels[code] * scale, one float32 product; work items are blocks.
 * matmul: x [count, k] times the packed W [rows, cols]: x W^T (k = cols, n = rows; work items are W's
 * rows, each read back once into a row of scratch on the stack) or x W (k = rows, n = cols; work items
 * are W's blocks of columns). Each output sums its k products in increasing k, one float32 multiply
 * then one add each (no FMA), from 0. */
#include "cpu_nf4.h"
#include "cpu_kernels.h"

typedef struct {
  const sc_u32 *in; /* pack: w (as bits); unpack: the words */
  sc_u32 *out;
  u32 rows, cols;
} nf4_desc;

typedef struct {
  const float *x;
  const sc_u32 *words;
  float *out;
  u32 count, rows, cols, transpose;
} nf4_matmul_desc;

/* A u32's bits as a float and back (the sc_ types may alias each other: cpu_kernels.h). */
static inline float bits_float(u32 b) {
  const sc_u32 v = b;
  return *(const sc_f32 *)&v;
}

static inline u32 float_bits(float f) {
  const sc_f32 v = f;
  return *(const sc_u32 *)&v;
}

/* Non-negative float32 bits as float16 bits: nearest, ties to even; beyond 65504, 65504. */
static u32 f16_bits(u32 bits) {
  bits &= 0x7FFFFFFFu;
  int exponent = (int)(bits >> 23) - 127 + 15;
  u32 mantissa = bits & 0x7FFFFFu;
  if (exponent >= 31) return 0x7BFFu;
  if (exponent <= 0) {
    if (exponent < -10) return 0;
    u32 full = mantissa | 0x800000u, shift = (u32)(14 - exponent);
    u32 half = full >> shift, rest = full & ((1u << shift) - 1u), middle = 1u << (shift - 1u);
    return half + (rest > middle || (rest == middle && (half & 1u)));
  }
  u32 half = ((u32)exponent << 10) | (mantissa >> 13), rest = mantissa & 0x1FFFu;
  u32 rounded = half + (rest > 0x1000u || (rest == 0x1000u && (half & 1u)));
  return rounded > 0x7BFFu ? 0x7BFFu : rounded;
}

/* float16 bits (finite) as a float32, exactly. */
static float f16_float(u32 h) {
  u32 exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
  if (exponent == 0) return (float)mantissa * bits_float(0x33800000u); /* 2^-24: exact */
  return bits_float(((exponent + 112u) << 23) | (mantissa << 13));
}

static inline u32 code_of(float w, float absmax) {
  u32 c = 0;
  for (u32 m = 0; m < 15; m++) c += w > bits_float(SC_NF4_MIDPOINT_BITS[m]) * absmax;
  return c;
}

static inline float scale_of(const sc_u32 *words, u32 n, u32 block) {
  return f16_float((words[n / 8 + block / 2] >> (16u * (block & 1u))) & 0xFFFFu);
}

static inline float value_at(const sc_u32 *words, u32 i, float scale) {
  u32 c = (words[i / 8] >> (4u * (i & 7u))) & 0xFu;
  return bits_float(SC_NF4_LEVEL_BITS[c]) * scale;
}

SC_EXPORT("sc_cpu_nf4_pack")
void sc_cpu_nf4_pack(const void *args, u32 start, u32 end) {
  const nf4_desc *d = args;
  u32 n = d->rows * d->cols, blocks = n / SC_NF4_BLOCK;
  for (u32 pair = start; pair < end; pair++) {
    u32 scales = 0;
    for (u32 b = 2 * pair; b < 2 * pair + 2 && b < blocks; b++) {
      const sc_u32 *w = d->in + b * SC_NF4_BLOCK;
      float absmax = 0.0f;
      for (u32 j = 0; j < SC_NF4_BLOCK; j++) {
        float a = bits_float(w[j] & 0x7FFFFFFFu);
        absmax = a > absmax ? a : absmax;
      }
      for (u32 word = 0; word < SC_NF4_BLOCK / 8; word++) {
        u32 packed = 0;
        for (u32 j = 0; j < 8; j++) packed |= code_of(bits_float(w[word * 8 + j]), absmax) << (4u * j);
        d->out[b * (SC_NF4_BLOCK / 8) + word] = packed;
      }
      scales |= f16_bits(float_bits(absmax)) << (16u * (b & 1u));
    }
    d->out[n / 8 + pair] = scales;
  }
}

SC_EXPORT("sc_cpu_nf4_unpack")
void sc_cpu_nf4_unpack(const void *args, u32 start, u32 end) {
  const nf4_desc *d = args;
  u32 n = d->rows * d->cols;
  float *out = (float *)d->out;
  for (u32 b = start; b < end; b++) {
    float scale = scale_of(d->in, n, b);
    for (u32 j = 0; j < SC_NF4_BLOCK; j++) out[b * SC_NF4_BLOCK + j] = value_at(d->in, b * SC_NF4_BLOCK + j, scale);
  }
}

/* x W^T for W's rows [r0, r1): out[m, r] = sum over c of x[m, c] W[r, c]. */
static void times_transposed(const nf4_matmul_desc *d, u32 r0, u32 r1) {
  u32 n = d->rows * d->cols;
  float row[2048];
  for (u32 r = r0; r < r1; r++) {
    for (u32 c0 = 0; c0 < d->cols; c0 += 2048) {
      u32 width = sc_min(2048u, d->cols - c0);
      for (u32 c = 0; c < width; c++) {
        u32 i = r * d->cols + c0 + c;
        row[c] = value_at(d->words, i, scale_of(d->words, n, i / SC_NF4_BLOCK));
      }
      for (u32 m = 0; m < d->count; m++) {
        const float *x = d->x + m * d->cols + c0;
        float acc = c0 ? d->out[m * d->rows + r] : 0.0f;
        for (u32 c = 0; c < width; c++) acc += x[c] * row[c];
        d->out[m * d->rows + r] = acc;
      }
    }
  }
}

/* x W for W's blocks of columns [b0, b1): out[m, c] = sum over r of x[m, r] W[r, c]. */
static void times(const nf4_matmul_desc *d, u32 b0, u32 b1) {
  u32 n = d->rows * d->cols, per_row = d->cols / SC_NF4_BLOCK;
  float part[SC_NF4_BLOCK];
  for (u32 b = b0; b < b1; b++) {
    u32 c0 = b * SC_NF4_BLOCK;
    for (u32 m = 0; m < d->count; m++)
      for (u32 j = 0; j < SC_NF4_BLOCK; j++) d->out[m * d->cols + c0 + j] = 0.0f;
    for (u32 r = 0; r < d->rows; r++) {
      u32 first = r * d->cols + c0;
      float scale = scale_of(d->words, n, r * per_row + b);
      for (u32 j = 0; j < SC_NF4_BLOCK; j++) part[j] = value_at(d->words, first + j, scale);
      for (u32 m = 0; m < d->count; m++) {
        float xv = d->x[m * d->rows + r];
        float *out = d->out + m * d->cols + c0;
        for (u32 j = 0; j < SC_NF4_BLOCK; j++) out[j] += xv * part[j];
      }
    }
  }
}

SC_EXPORT("sc_cpu_nf4_matmul")
void sc_cpu_nf4_matmul(const void *args, u32 start, u32 end) {
  const nf4_matmul_desc *d = args;
  if (d->transpose) times(d, start, end);
  else times_transposed(d, start, end);
}
