/* CPU path, SOLVE: a @ x = b for each matrix of a batch (the work items), by Gaussian elimination with
 * partial pivoting and back substitution, done in the kernel's output: the augmented [n, n + k] matrix of
 * each batch entry, into which [a | b] is copied and then reduced in place; its last k columns end as x.
 *
 * The order is fixed, and the WGSL kernel's is the same. For each column j: the pivot is the first row
 * r >= j of largest |t[r][j]|, compared as the bits of |value| (a NaN never wins; if every candidate is
 * NaN, row j stays); rows j and the pivot swap columns j and after; each row r > j then takes
 * t[r][c] - (t[r][j] / t[j][j]) * t[j][c] for c > j (a multiply and a subtract, no FMA). Back substitution,
 * i = n - 1 down to 0: x[i] = t[i][n..] / t[i][i], then every row r < i takes t[r][n..] - t[r][i] * x[i].
 * A zero pivot divides by zero: inf or NaN values, never a trap. */
#include "cpu_kernels.h"

typedef struct {
  const float *a; /* contiguous [batch, n, n] */
  const float *b; /* contiguous [batch, n, k] */
  float *out;     /* contiguous [batch, n, n + k] */
  u32 n, k;
} solve_desc;

/* |v| as an integer of the same order, -1 for NaN. */
static int pivot_key(const float *v) {
  u32 bits = *(const sc_u32 *)v & 0x7fffffffu;
  return bits > 0x7f800000u ? -1 : (int)bits;
}

static void eliminate(float *t, u32 n, u32 w) {
  for (u32 j = 0; j < n; j++) {
    u32 p = j;
    int best = -1;
    for (u32 r = j; r < n; r++) {
      int key = pivot_key(t + r * w + j);
      if (key > best) best = key, p = r;
    }
    if (p != j) {
      for (u32 c = j; c < w; c++) {
        float s = t[j * w + c];
        t[j * w + c] = t[p * w + c];
        t[p * w + c] = s;
      }
    }
    for (u32 r = j + 1; r < n; r++) {
      float f = t[r * w + j] / t[j * w + j];
      for (u32 c = j + 1; c < w; c++) t[r * w + c] = t[r * w + c] - f * t[j * w + c];
    }
  }
}

static void substitute(float *t, u32 n, u32 w) {
  for (u32 i = n; i-- > 0;) {
    for (u32 c = n; c < w; c++) t[i * w + c] = t[i * w + c] / t[i * w + i];
    for (u32 r = 0; r < i; r++)
      for (u32 c = n; c < w; c++) t[r * w + c] = t[r * w + c] - t[r * w + i] * t[i * w + c];
  }
}

SC_EXPORT("sc_cpu_solve")
void sc_cpu_solve(const void *args, u32 start, u32 end) {
  const solve_desc *d = args;
  u32 n = d->n, k = d->k, w = n + k;
  for (u32 m = start; m < end; m++) {
    const float *a = d->a + m * n * n, *b = d->b + m * n * k;
    float *t = d->out + m * n * w;
    for (u32 r = 0; r < n; r++) {
      for (u32 c = 0; c < n; c++) t[r * w + c] = a[r * n + c];
      for (u32 c = 0; c < k; c++) t[r * w + n + c] = b[r * k + c];
    }
    eliminate(t, n, w);
    substitute(t, n, w);
  }
}
