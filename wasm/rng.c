/* Randomness: Philox4x32-10 of whole arrays of counters and keys, for the known-answer tests and the
 * throughput benchmark (kernels draw through the RANDOM tape instruction, which uses the same sc_philox). */
#include "cpu_kernels.h"

SC_EXPORT("sc_philox_batch")
void sc_philox_batch(const u32 *counters, const u32 *keys, u32 *out, u32 start, u32 end) {
  for (u32 i = start; i < end; i++) sc_philox(counters + 4 * i, keys + 2 * i, out + 4 * i);
}
