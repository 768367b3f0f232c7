// pygpu: NVRTC and hiprtc have no C library headers. What CUDA device code uses of <stdlib.h>
// (printf, malloc/free, memcpy/memset, the math functions) is built into the runtime compilers,
// so a source written for nvcc that includes <stdlib.h> needs nothing from it. Searched after the
// user's folders.
#pragma once
