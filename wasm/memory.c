/* CPU path, memory: the host owns all buffer placement (the memory plan assigns
 * offsets); the module only says where free memory starts. */
#include "scellis.h"

extern unsigned char __heap_base;

SC_EXPORT("sc_heap_base")
u32 sc_heap_base(void) { return (u32)(unsigned long)&__heap_base; }
