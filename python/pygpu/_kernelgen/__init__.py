"""Floor 4: kernels generated from C snippets at run time, on GPUArrays.

``arguments`` parses C argument declarations (``float *x, int n``); ``generated_kernel`` holds
what ElementwiseKernel, ReductionKernel and the scans share (type preludes, struct layout checks,
compiling, launching); ``linear_combination`` builds gpuarray's fused ``a*x + b*y``. Imports the
floors below (``pygpu.gpuarray`` included), never the public modules above: docs/architecture.md.
"""

__all__: list[str] = []
