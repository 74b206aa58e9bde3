/* CPU path, GATHER and SCATTER_ADD over rows of `row` contiguous elements, and CHECK_INDEX.
 *
 * gather: out[i] = table[indices[i]] for each index position i (work items); an index outside
 * [0, rows) gives a row of zeros (a device never reads outside the table; the step's CHECK_INDEX
 * reports the index). scatter_add: out = zeros, then out[indices[i]] += g[i] for i in increasing order
 * (indices outside [0, rows) are skipped, and reported the same way); work items are the row's
 * columns, so any split across workers keeps every column's order, and the bytes.
 * check_index: one work item; unless the record already holds a count, it records how many indices lie
 * outside [0, bound), the position of the first and its value (scellis.lower.kernels.Kind.CHECK_INDEX). */
#include "cpu_kernels.h"

typedef struct {
  const sc_u32 *indices;
  const float *values; /* gather: the table; scatter_add: g */
  float *out;
  u32 count, row, rows; /* index positions, elements per row, rows of the table / output */
} index_desc;

SC_EXPORT("sc_cpu_gather")
void sc_cpu_gather(const void *args, u32 start, u32 end) {
  const index_desc *d = args;
  for (u32 i = start; i < end; i++) {
    u32 r = d->indices[i]; /* as unsigned, a negative index is out of range too */
    float *out = d->out + i * d->row;
    for (u32 t = 0; t < d->row; t++) out[t] = r < d->rows ? d->values[r * d->row + t] : 0.0f;
  }
}

SC_EXPORT("sc_cpu_scatter_add")
void sc_cpu_scatter_add(const void *args, u32 start, u32 end) {
  const index_desc *d = args;
  for (u32 r = 0; r < d->rows; r++)
    for (u32 t = start; t < end; t++) d->out[r * d->row + t] = 0.0f;
  for (u32 i = 0; i < d->count; i++) {
    u32 r = d->indices[i];
    if (r >= d->rows) continue;
    for (u32 t = start; t < end; t++) d->out[r * d->row + t] += d->values[i * d->row + t];
  }
}

typedef struct {
  const sc_u32 *indices;
  u32 count, bound; /* index positions; valid indices are [0, bound) */
  sc_u32 *record;   /* three words: count outside, first position, its value */
} check_desc;

SC_EXPORT("sc_cpu_check_index")
void sc_cpu_check_index(const void *args, u32 start, u32 end) {
  const check_desc *d = args;
  (void)start, (void)end;
  if (d->record[0]) return; /* the first bad step's record stays until the host reads it */
  u32 bad = 0, first = 0;
  for (u32 i = 0; i < d->count; i++) {
    if (d->indices[i] < d->bound) continue; /* as unsigned, a negative index is out of range too */
    if (!bad) first = i;
    bad++;
  }
  if (bad) {
    d->record[0] = bad;
    d->record[1] = first;
    d->record[2] = d->indices[first];
  }
}
