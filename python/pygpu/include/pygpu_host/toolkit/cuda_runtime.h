// cuda_runtime.h for the host backend: nvcc includes the runtime's header in every source,
// and some sources name it as well; on the host pygpu_kernel.h (always included first) already
// gives what device code uses of it (built-in variables, vector types, maths, atomics).
#pragma once
