/* CPU path, GATHER and SCATTER_ADD over rows of `row` contiguous elements.
 *
 * gather: out[i] = table[indices[i]] for each index position i (work items); an index outside
 * [0, rows) gives a row of zeros (the reference rejects such inputs; a device must not read outside
 * the table). scatter_add: out = zeros, then out[indices[i]] += g[i] for i in increasing order (indices
 * outside [0, rows) are skipped); work items are the row's columns, so any split across workers keeps
 * every column's order, and the bytes. */
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
