"""Floor 2: compilers, caches and module loading.

``source_module`` (SourceModule, behind ``pygpu.compiler``) decides how a source is built:
NVRTC or hiprtc (``rtc``), the host C++ compiler (``host_compiler``), the CUDA toolkit's headers
(``toolkit_headers``), the disk cache (``compile_cache``); ``dynamic_module`` and ``cuda_linker``
link; ``compiled_module`` and ``kernel_hints`` serve what every compiled module shares, and
``kernel_declarations`` reads kernels' parameters from their source. The bundled kernels
(kernels/*.cu) load through ``bundled_kernels``, split by dtype as ``kernel_parts`` says, built
from their embedded source by ``bundled_sources`` where no binary was shipped. Imports only
``pygpu._pygpu`` and ``pygpu._driver``: docs/architecture.md has the floors.
"""

__all__: list[str] = []
