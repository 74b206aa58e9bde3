/* Shared declarations for the CPU path's kernels (wasm32 + simd128, freestanding). */
#ifndef SCELLIS_H
#define SCELLIS_H

#include <wasm_simd128.h>

typedef unsigned int u32;

/* Each kernel is exported under a stable name; the host finds kernels by name. */
#define SC_EXPORT(name) __attribute__((export_name(name), visibility("default")))

#endif
