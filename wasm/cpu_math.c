/* CPU path, elementary functions. The module has no libm, so they are written here.
 *
 * Every function works in double precision on float32 arguments and is accurate to a few double
 * ulps, so the float32 result (one rounding of the double) is within one float32 ulp, and almost
 * always the correctly rounded value. Methods: exp and log reduce by ln 2 and sum a Taylor /
 * atanh series; expm1 sums its Taylor series below |x| = 0.5, where exp(x) - 1 would cancel; sin and
 * cos reduce by pi/2 with a four-part pi/2 (Cody-Waite; exact quotients up to |x| < 2**20 * pi/2,
 * beyond that the reduction, and so the result, loses accuracy); erf sums its Taylor series below 2
 * and takes erfc's continued fraction above. sqrt, floor, rint and fabs are wasm instructions. */
#include "cpu_kernels.h"

#define LN2_HI 6.93147180369123816490e-01 /* ln 2 with its low bits zero, so k * LN2_HI is exact */
#define LN2_LO 1.90821492927058770002e-10
#define LOG2E 1.44269504088896338700e+00
#define PIO2_1 1.57079632673412561417e+00 /* pi/2 in four parts of 33 bits (the last is the rest) */
#define PIO2_2 6.07710050630396597660e-11
#define PIO2_3 2.02226624871116645580e-21
#define PIO2_4 8.47842766036889956997e-32
#define INV_PIO2 6.36619772367581382433e-01
#define TWO_OVER_SQRT_PI 1.12837916709551257390e+00

static double from_bits(u64 bits) {
  union {
    u64 u;
    double d;
  } v = {bits};
  return v.d;
}

static u64 to_bits(double d) {
  union {
    double d;
    u64 u;
  } v = {d};
  return v.u;
}

/* Outside [-110, 100] the result is 0 or inf: so it is after rounding to float32 either way, and
 * inside, 2**k stays a normal double. */
double sc_exp(double x) {
  if (x != x) return x;
  if (x < -110.0) return 0.0;
  if (x > 100.0) return __builtin_inf();
  double k = __builtin_rint(x * LOG2E);
  double r = (x - k * LN2_HI) - k * LN2_LO; /* |r| <= ln2 / 2 */
  double p = 1.0 / 6227020800.0;            /* 1/13!, Horner down to 1 */
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  return p * from_bits((u64)((long long)k + 1023) << 52);
}

/* e^x - 1. Below |x| = 0.5 its Taylor series, summed until a term no longer counts (each term is at
 * most a quarter of the one before, so negative x cancels little); above, exp(x) - 1, which loses at most
 * 1.4 bits there. Zero keeps its sign. */
double sc_expm1(double x) {
  if (!(__builtin_fabs(x) < 0.5)) return sc_exp(x) - 1.0; /* NaN too */
  double term = x, sum = x;
  for (u32 n = 2; n < 30u && __builtin_fabs(term) > 1e-17 * __builtin_fabs(sum); n++) {
    term *= x / n;
    sum += term;
  }
  return sum;
}

double sc_log(double x) {
  if (x != x || x < 0.0) return __builtin_nan("");
  if (x == 0.0) return -__builtin_inf();
  if (x == __builtin_inf()) return x;
  int e = 0;
  if (x < 0x1p-1000) { /* subnormal: scale into the normal range first */
    x *= 0x1p54;
    e = -54;
  }
  u64 bits = to_bits(x);
  e += (int)(bits >> 52) - 1023;
  double m = from_bits((bits & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull); /* [1, 2) */
  if (m > 1.41421356237309504880) {
    m *= 0.5;
    e += 1;
  }
  double s = (m - 1.0) / (m + 1.0); /* log m = 2 atanh s, |s| < 0.172 */
  double z = s * s;
  double p = 1.0 / 21.0;
  p = p * z + 1.0 / 19.0;
  p = p * z + 1.0 / 17.0;
  p = p * z + 1.0 / 15.0;
  p = p * z + 1.0 / 13.0;
  p = p * z + 1.0 / 11.0;
  p = p * z + 1.0 / 9.0;
  p = p * z + 1.0 / 7.0;
  p = p * z + 1.0 / 5.0;
  p = p * z + 1.0 / 3.0;
  p = p * z + 1.0;
  return e * LN2_HI + (e * LN2_LO + 2.0 * s * p);
}

static double sin_poly(double r) { /* |r| <= pi/4 */
  double z = r * r;
  double p = -1.0 / 355687428096000.0; /* -1/17! */
  p = p * z + 1.0 / 1307674368000.0;
  p = p * z - 1.0 / 6227020800.0;
  p = p * z + 1.0 / 39916800.0;
  p = p * z - 1.0 / 362880.0;
  p = p * z + 1.0 / 5040.0;
  p = p * z - 1.0 / 120.0;
  p = p * z + 1.0 / 6.0;
  return r - r * z * p;
}

static double cos_poly(double r) {
  double z = r * r;
  double p = 1.0 / 6402373705728000.0; /* 1/18! */
  p = p * z - 1.0 / 20922789888000.0;
  p = p * z + 1.0 / 87178291200.0;
  p = p * z - 1.0 / 479001600.0;
  p = p * z + 1.0 / 3628800.0;
  p = p * z - 1.0 / 40320.0;
  p = p * z + 1.0 / 720.0;
  p = p * z - 1.0 / 24.0;
  p = p * z + 0.5;
  return 1.0 - z * p;
}

/* x = q * pi/2 + r with |r| <= pi/4; returns r, q mod 4 in *quadrant. */
static double reduce_pio2(double x, u32 *quadrant) {
  double k = __builtin_rint(x * INV_PIO2);
  double r = x - k * PIO2_1;
  r -= k * PIO2_2;
  r -= k * PIO2_3;
  r -= k * PIO2_4;
  *quadrant = (u32)(long long)k & 3u;
  return r;
}

double sc_sin(double x) {
  if (x != x || __builtin_fabs(x) == __builtin_inf()) return __builtin_nan("");
  u32 q;
  double r = reduce_pio2(x, &q);
  double v = (q & 1u) ? cos_poly(r) : sin_poly(r);
  return (q & 2u) ? -v : v;
}

double sc_cos(double x) {
  if (x != x || __builtin_fabs(x) == __builtin_inf()) return __builtin_nan("");
  u32 q;
  double r = reduce_pio2(x, &q);
  double v = (q & 1u) ? sin_poly(r) : cos_poly(r);
  return (q == 1u || q == 2u) ? -v : v;
}

double sc_tanh(double x) {
  double a = __builtin_fabs(x);
  if (x != x) return x;
  if (a > 20.0) return x > 0 ? 1.0 : -1.0;
  if (a < 1e-3) { /* the series avoids 1 - 2/(e+1)'s cancellation */
    double z = x * x;
    return x * (1.0 - z * (1.0 / 3.0 - z * (2.0 / 15.0)));
  }
  double t = 1.0 - 2.0 / (sc_exp(2.0 * a) + 1.0);
  return x > 0 ? t : -t;
}

/* erf x = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1)), for |x| < 2 (at most ~35 terms). */
static double erf_series(double x) {
  double z = -x * x, term = x, sum = x;
  for (u32 n = 1; n < 60u; n++) {
    term *= z / n;
    double add = term / (2.0 * n + 1.0);
    sum += add;
    if (__builtin_fabs(add) < 1e-17 * __builtin_fabs(sum)) break;
  }
  return TWO_OVER_SQRT_PI * sum;
}

/* erfc x for x >= 2: exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + (2/2)/(x + (3/2)/(x + ...)))), 50 levels
 * (relative error below 1e-15 there). */
static double erfc_fraction(double x) {
  double k = x;
  for (u32 i = 50; i > 0; i--) k = x + (0.5 * i) / k;
  return sc_exp(-x * x) * (0.5 * TWO_OVER_SQRT_PI) / k;
}

double sc_erf(double x) {
  if (x != x) return x;
  if (__builtin_fabs(x) < 2.0) return erf_series(x);
  double tail = erfc_fraction(__builtin_fabs(x));
  return x > 0 ? 1.0 - tail : tail - 1.0;
}

/* 1 - erf x, with relative accuracy where it is tiny (x large). */
double sc_erfc(double x) {
  if (x != x) return x;
  return x >= 2.0 ? erfc_fraction(x) : 1.0 - sc_erf(x);
}

static int is_odd_integer(double y) { return __builtin_fabs(y) < 0x1p53 && __builtin_floor(y * 0.5) != y * 0.5; }

/* C99 pow's special cases; otherwise exp(y log |x|), negated for a negative x and odd integer y. */
double sc_pow(double x, double y) {
  if (y == 0.0 || x == 1.0) return 1.0;
  if (x != x || y != y) return x + y;
  double ax = __builtin_fabs(x), r;
  if (ax == 1.0 && __builtin_fabs(y) == __builtin_inf()) return 1.0;
  int negative = (to_bits(x) >> 63) && is_odd_integer(y);
  if (ax == 0.0) r = y > 0 ? 0.0 : __builtin_inf();
  else if (ax == __builtin_inf()) r = y > 0 ? __builtin_inf() : 0.0;
  else if (x < 0.0 && __builtin_floor(y) != y) return __builtin_nan("");
  else r = sc_exp(y * sc_log(ax));
  return negative ? -r : r;
}
