"""PyCUDA's enumerations of driver constants, numbered as in CUDA 12's ``cuda.h``.

They are ``IntEnum``/``IntFlag`` classes, so a member is its CUDA number wherever an int is
expected, and PyCUDA's spellings (``device_attribute.MAX_THREADS_PER_BLOCK``) work unchanged.
Those that are Boost.Python enums in PyCUDA also print as PyCUDA's do: ``str()`` of a member is
its name (programs key dictionaries of device attributes by it), of a combination its number.
``host_alloc_flags`` and ``mem_host_register_flags`` are plain integers there, and print so here.
"""

from __future__ import annotations

import enum

__all__ = [
    "TRSA_OVERRIDE_FORMAT",
    "TRSF_NORMALIZED_COORDINATES",
    "TRSF_READ_AS_INTEGER",
    "TR_DEFAULT",
    "NamedEnum",
    "address_mode",
    "array3d_flags",
    "array_cubemap_face",
    "array_format",
    "compute_mode",
    "ctx_flags",
    "device_attribute",
    "filter_mode",
    "func_cache",
    "function_attribute",
    "graphics_register_flags",
    "host_alloc_flags",
    "ipc_mem_flags",
    "jit_fallback",
    "jit_input_type",
    "jit_option",
    "jit_target",
    "limit",
    "mem_attach_flags",
    "mem_host_register_flags",
    "memory_type",
    "pointer_attribute",
    "profiler_output_mode",
    "shared_config",
]


class NamedEnum:
    """Mixed into the enumerations that PyCUDA defines with Boost.Python, whose ``str()`` is
    the member's name rather than its number (``f"{member}"`` follows ``str``; ``%d`` and
    ``int()`` still give the number). A combination of flags has no single name: its number."""

    def __str__(self) -> str:
        name = getattr(self, "_name_", None)
        return name if name and "|" not in name else str(getattr(self, "_value_", ""))


class device_attribute(NamedEnum, enum.IntEnum):
    """Every ``CU_DEVICE_ATTRIBUTE_*`` of CUDA 12.8 (without the prefix), for
    ``Device.get_attribute``; aliases are PyCUDA's older names of the same numbers."""

    MAX_THREADS_PER_BLOCK = 1
    MAX_BLOCK_DIM_X = 2
    MAX_BLOCK_DIM_Y = 3
    MAX_BLOCK_DIM_Z = 4
    MAX_GRID_DIM_X = 5
    MAX_GRID_DIM_Y = 6
    MAX_GRID_DIM_Z = 7
    MAX_SHARED_MEMORY_PER_BLOCK = 8
    TOTAL_CONSTANT_MEMORY = 9
    WARP_SIZE = 10
    MAX_PITCH = 11
    MAX_REGISTERS_PER_BLOCK = 12
    CLOCK_RATE = 13
    TEXTURE_ALIGNMENT = 14
    GPU_OVERLAP = 15
    MULTIPROCESSOR_COUNT = 16
    KERNEL_EXEC_TIMEOUT = 17
    INTEGRATED = 18
    CAN_MAP_HOST_MEMORY = 19
    COMPUTE_MODE = 20
    MAXIMUM_TEXTURE1D_WIDTH = 21
    MAXIMUM_TEXTURE2D_WIDTH = 22
    MAXIMUM_TEXTURE2D_HEIGHT = 23
    MAXIMUM_TEXTURE3D_WIDTH = 24
    MAXIMUM_TEXTURE3D_HEIGHT = 25
    MAXIMUM_TEXTURE3D_DEPTH = 26
    MAXIMUM_TEXTURE2D_LAYERED_WIDTH = 27
    MAXIMUM_TEXTURE2D_LAYERED_HEIGHT = 28
    MAXIMUM_TEXTURE2D_LAYERED_LAYERS = 29
    SURFACE_ALIGNMENT = 30
    CONCURRENT_KERNELS = 31
    ECC_ENABLED = 32
    PCI_BUS_ID = 33
    PCI_DEVICE_ID = 34
    TCC_DRIVER = 35
    MEMORY_CLOCK_RATE = 36
    GLOBAL_MEMORY_BUS_WIDTH = 37
    L2_CACHE_SIZE = 38
    MAX_THREADS_PER_MULTIPROCESSOR = 39
    ASYNC_ENGINE_COUNT = 40
    UNIFIED_ADDRESSING = 41
    MAXIMUM_TEXTURE1D_LAYERED_WIDTH = 42
    MAXIMUM_TEXTURE1D_LAYERED_LAYERS = 43
    CAN_TEX2D_GATHER = 44
    MAXIMUM_TEXTURE2D_GATHER_WIDTH = 45
    MAXIMUM_TEXTURE2D_GATHER_HEIGHT = 46
    MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE = 47
    MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE = 48
    MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE = 49
    PCI_DOMAIN_ID = 50
    TEXTURE_PITCH_ALIGNMENT = 51
    MAXIMUM_TEXTURECUBEMAP_WIDTH = 52
    MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH = 53
    MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS = 54
    MAXIMUM_SURFACE1D_WIDTH = 55
    MAXIMUM_SURFACE2D_WIDTH = 56
    MAXIMUM_SURFACE2D_HEIGHT = 57
    MAXIMUM_SURFACE3D_WIDTH = 58
    MAXIMUM_SURFACE3D_HEIGHT = 59
    MAXIMUM_SURFACE3D_DEPTH = 60
    MAXIMUM_SURFACE1D_LAYERED_WIDTH = 61
    MAXIMUM_SURFACE1D_LAYERED_LAYERS = 62
    MAXIMUM_SURFACE2D_LAYERED_WIDTH = 63
    MAXIMUM_SURFACE2D_LAYERED_HEIGHT = 64
    MAXIMUM_SURFACE2D_LAYERED_LAYERS = 65
    MAXIMUM_SURFACECUBEMAP_WIDTH = 66
    MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH = 67
    MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS = 68
    MAXIMUM_TEXTURE1D_LINEAR_WIDTH = 69
    MAXIMUM_TEXTURE2D_LINEAR_WIDTH = 70
    MAXIMUM_TEXTURE2D_LINEAR_HEIGHT = 71
    MAXIMUM_TEXTURE2D_LINEAR_PITCH = 72
    MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH = 73
    MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT = 74
    COMPUTE_CAPABILITY_MAJOR = 75
    COMPUTE_CAPABILITY_MINOR = 76
    MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH = 77
    STREAM_PRIORITIES_SUPPORTED = 78
    GLOBAL_L1_CACHE_SUPPORTED = 79
    LOCAL_L1_CACHE_SUPPORTED = 80
    MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81
    MAX_REGISTERS_PER_MULTIPROCESSOR = 82
    MANAGED_MEMORY = 83
    MULTI_GPU_BOARD = 84
    MULTI_GPU_BOARD_GROUP_ID = 85
    HOST_NATIVE_ATOMIC_SUPPORTED = 86
    SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO = 87
    PAGEABLE_MEMORY_ACCESS = 88
    CONCURRENT_MANAGED_ACCESS = 89
    COMPUTE_PREEMPTION_SUPPORTED = 90
    CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM = 91
    CAN_USE_STREAM_MEM_OPS_V1 = 92
    CAN_USE_64_BIT_STREAM_MEM_OPS_V1 = 93
    CAN_USE_STREAM_WAIT_VALUE_NOR_V1 = 94
    COOPERATIVE_LAUNCH = 95
    COOPERATIVE_MULTI_DEVICE_LAUNCH = 96
    MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
    CAN_FLUSH_REMOTE_WRITES = 98
    HOST_REGISTER_SUPPORTED = 99
    PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES = 100
    DIRECT_MANAGED_MEM_ACCESS_FROM_HOST = 101
    VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED = 102
    HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103
    HANDLE_TYPE_WIN32_HANDLE_SUPPORTED = 104
    HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED = 105
    MAX_BLOCKS_PER_MULTIPROCESSOR = 106
    GENERIC_COMPRESSION_SUPPORTED = 107
    MAX_PERSISTING_L2_CACHE_SIZE = 108
    MAX_ACCESS_POLICY_WINDOW_SIZE = 109
    GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED = 110
    RESERVED_SHARED_MEMORY_PER_BLOCK = 111
    SPARSE_CUDA_ARRAY_SUPPORTED = 112
    READ_ONLY_HOST_REGISTER_SUPPORTED = 113
    TIMELINE_SEMAPHORE_INTEROP_SUPPORTED = 114
    MEMORY_POOLS_SUPPORTED = 115
    GPU_DIRECT_RDMA_SUPPORTED = 116
    GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS = 117
    GPU_DIRECT_RDMA_WRITES_ORDERING = 118
    MEMPOOL_SUPPORTED_HANDLE_TYPES = 119
    CLUSTER_LAUNCH = 120
    DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED = 121
    CAN_USE_64_BIT_STREAM_MEM_OPS = 122
    CAN_USE_STREAM_WAIT_VALUE_NOR = 123
    DMA_BUF_SUPPORTED = 124
    IPC_EVENT_SUPPORTED = 125
    MEM_SYNC_DOMAIN_COUNT = 126
    TENSOR_MAP_ACCESS_SUPPORTED = 127
    HANDLE_TYPE_FABRIC_SUPPORTED = 128
    UNIFIED_FUNCTION_POINTERS = 129
    NUMA_CONFIG = 130
    NUMA_ID = 131
    MULTICAST_SUPPORTED = 132
    MPS_ENABLED = 133
    HOST_NUMA_ID = 134
    D3D12_CIG_SUPPORTED = 135
    MEM_DECOMPRESS_ALGORITHM_MASK = 136
    MEM_DECOMPRESS_MAXIMUM_LENGTH = 137
    GPU_PCI_DEVICE_ID = 139
    GPU_PCI_SUBSYSTEM_ID = 140
    HOST_NUMA_MULTINODE_IPC_SUPPORTED = 143
    # PyCUDA's older names for the same attributes
    SHARED_MEMORY_PER_BLOCK = 8
    REGISTERS_PER_BLOCK = 12
    MAXIMUM_TEXTURE2D_ARRAY_WIDTH = 27
    MAXIMUM_TEXTURE2D_ARRAY_HEIGHT = 28
    MAXIMUM_TEXTURE2D_ARRAY_NUMSLICES = 29
    CAN_USE_STREAM_MEM_OPS = 92
    VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102


class function_attribute(NamedEnum, enum.IntEnum):
    """``CU_FUNC_ATTRIBUTE_*``, for ``Function.get_attribute``/``set_attribute``."""

    MAX_THREADS_PER_BLOCK = 0
    SHARED_SIZE_BYTES = 1
    CONST_SIZE_BYTES = 2
    LOCAL_SIZE_BYTES = 3
    NUM_REGS = 4
    PTX_VERSION = 5
    BINARY_VERSION = 6
    CACHE_MODE_CA = 7
    MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
    PREFERRED_SHARED_MEMORY_CARVEOUT = 9
    CLUSTER_SIZE_MUST_BE_SET = 10
    REQUIRED_CLUSTER_WIDTH = 11
    REQUIRED_CLUSTER_HEIGHT = 12
    REQUIRED_CLUSTER_DEPTH = 13
    NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14
    CLUSTER_SCHEDULING_POLICY_PREFERENCE = 15


class func_cache(NamedEnum, enum.IntEnum):
    """``CU_FUNC_CACHE_*``: the preferred split of on-chip memory between L1 and shared."""

    PREFER_NONE = 0
    PREFER_SHARED = 1
    PREFER_L1 = 2
    PREFER_EQUAL = 3


class shared_config(NamedEnum, enum.IntEnum):
    """``CU_SHARED_MEM_CONFIG_*`` (ignored by every GPU since Volta, as in CUDA)."""

    DEFAULT_BANK_SIZE = 0
    FOUR_BYTE_BANK_SIZE = 1
    EIGHT_BYTE_BANK_SIZE = 2


class limit(NamedEnum, enum.IntEnum):
    """``CU_LIMIT_*``, for ``Context.get_limit``/``set_limit``."""

    STACK_SIZE = 0
    PRINTF_FIFO_SIZE = 1
    MALLOC_HEAP_SIZE = 2
    DEV_RUNTIME_SYNC_DEPTH = 3
    DEV_RUNTIME_PENDING_LAUNCH_COUNT = 4
    MAX_L2_FETCH_GRANULARITY = 5
    PERSISTING_L2_CACHE_SIZE = 6


class ctx_flags(NamedEnum, enum.IntFlag):
    """``CU_CTX_*`` flags of ``Device.make_context``. pygpu uses each device's primary
    context, whose flags the CUDA runtime sets: only ``SCHED_AUTO`` (0) is accepted."""

    SCHED_AUTO = 0
    SCHED_SPIN = 1
    SCHED_YIELD = 2
    SCHED_BLOCKING_SYNC = 4
    BLOCKING_SYNC = 4
    SCHED_MASK = 7
    MAP_HOST = 8
    LMEM_RESIZE_TO_MAX = 16
    FLAGS_MASK = 31


class host_alloc_flags(enum.IntFlag):
    """``CU_MEMHOSTALLOC_*``, the ``mem_flags`` of ``pagelocked_*``."""

    PORTABLE = 1
    DEVICEMAP = 2
    WRITECOMBINED = 4


class mem_attach_flags(NamedEnum, enum.IntEnum):
    """``CU_MEM_ATTACH_*``, the ``mem_flags`` of ``managed_*`` and ``ManagedAllocation.attach``:
    which streams may access managed memory (one value, not a combination)."""

    GLOBAL = 1
    HOST = 2
    SINGLE = 4


class mem_host_register_flags(enum.IntFlag):
    """``CU_MEMHOSTREGISTER_*``, the flags of ``register_host_memory``."""

    PORTABLE = 1
    DEVICEMAP = 2
    IOMEMORY = 4
    READ_ONLY = 8


class ipc_mem_flags(NamedEnum, enum.IntFlag):
    """``CU_IPC_MEM_*``, the flags of ``IPCMemoryHandle``."""

    LAZY_ENABLE_PEER_ACCESS = 1


class jit_input_type(NamedEnum, enum.IntEnum):
    """``CU_JIT_INPUT_*``: what ``DynamicModule.add_data``/``add_file`` is given."""

    CUBIN = 0
    PTX = 1
    FATBINARY = 2
    OBJECT = 3
    LIBRARY = 4


class jit_option(NamedEnum, enum.IntEnum):
    """``CU_JIT_*`` options of ``module_from_buffer`` and ``DynamicModule``'s ``link_options``."""

    MAX_REGISTERS = 0
    THREADS_PER_BLOCK = 1
    WALL_TIME = 2
    INFO_LOG_BUFFER = 3
    INFO_LOG_BUFFER_SIZE_BYTES = 4
    ERROR_LOG_BUFFER = 5
    ERROR_LOG_BUFFER_SIZE_BYTES = 6
    OPTIMIZATION_LEVEL = 7
    TARGET_FROM_CUCONTEXT = 8
    TARGET = 9
    FALLBACK_STRATEGY = 10
    GENERATE_DEBUG_INFO = 11
    LOG_VERBOSE = 12
    GENERATE_LINE_INFO = 13
    CACHE_MODE = 14


class jit_target(NamedEnum, enum.IntEnum):
    """``CU_TARGET_COMPUTE_*``, the ``TARGET`` value among ``jit_option``s."""

    COMPUTE_50 = 50
    COMPUTE_52 = 52
    COMPUTE_53 = 53
    COMPUTE_60 = 60
    COMPUTE_61 = 61
    COMPUTE_62 = 62
    COMPUTE_70 = 70
    COMPUTE_72 = 72
    COMPUTE_75 = 75
    COMPUTE_80 = 80
    COMPUTE_86 = 86
    COMPUTE_90 = 90
    COMPUTE_90A = 0x10000 + 90


class jit_fallback(NamedEnum, enum.IntEnum):
    """``CU_PREFER_*``, the ``FALLBACK_STRATEGY`` value among ``jit_option``s."""

    PREFER_PTX = 0
    PREFER_BINARY = 1


class memory_type(NamedEnum, enum.IntEnum):
    """``CU_MEMORYTYPE_*``: where a pointer's memory lives."""

    HOST = 1
    DEVICE = 2
    ARRAY = 3
    UNIFIED = 4


class compute_mode(NamedEnum, enum.IntEnum):
    """``CU_COMPUTEMODE_*``, the value of ``device_attribute.COMPUTE_MODE``."""

    DEFAULT = 0
    PROHIBITED = 2
    EXCLUSIVE_PROCESS = 3


class pointer_attribute(NamedEnum, enum.IntEnum):
    """``CU_POINTER_ATTRIBUTE_*`` (the first four, as PyCUDA lists them)."""

    CONTEXT = 1
    MEMORY_TYPE = 2
    DEVICE_POINTER = 3
    HOST_POINTER = 4


class profiler_output_mode(NamedEnum, enum.IntEnum):
    """``CU_OUT_*``, the output format of CUDA's legacy command-line profiler."""

    KEY_VALUE_PAIR = 0
    CSV = 1


class array_format(NamedEnum, enum.IntEnum):
    """``CU_AD_FORMAT_*``: the element type of a CUDA array."""

    UNSIGNED_INT8 = 0x01
    UNSIGNED_INT16 = 0x02
    UNSIGNED_INT32 = 0x03
    SIGNED_INT8 = 0x08
    SIGNED_INT16 = 0x09
    SIGNED_INT32 = 0x0A
    HALF = 0x10
    FLOAT = 0x20


class array3d_flags:
    """``CUDA_ARRAY3D_*`` flags of a 3-D CUDA array (plain integers, as in PyCUDA; its
    ``2DARRAY`` spelling, not a Python name, is ``getattr(array3d_flags, "2DARRAY")``)."""

    ARRAY3D_2DARRAY = 0x01
    ARRAY3D_LAYERED = 0x01
    SURFACE_LDST = 0x02
    CUBEMAP = 0x04
    TEXTURE_GATHER = 0x08


setattr(array3d_flags, "2DARRAY", array3d_flags.ARRAY3D_2DARRAY)


class array_cubemap_face(NamedEnum, enum.IntEnum):
    """``CU_CUBEMAP_FACE_*``: a face of a cubemap array."""

    POSITIVE_X = 0
    NEGATIVE_X = 1
    POSITIVE_Y = 2
    NEGATIVE_Y = 3
    POSITIVE_Z = 4
    NEGATIVE_Z = 5


class address_mode(NamedEnum, enum.IntEnum):
    """``CU_TR_ADDRESS_MODE_*``: how a texture read outside the array is answered."""

    WRAP = 0
    CLAMP = 1
    MIRROR = 2
    BORDER = 3


class filter_mode(NamedEnum, enum.IntEnum):
    """``CU_TR_FILTER_MODE_*``: nearest-point or linear texture filtering."""

    POINT = 0
    LINEAR = 1


class graphics_register_flags(NamedEnum, enum.IntFlag):
    """``CU_GRAPHICS_REGISTER_FLAGS_*`` of OpenGL interoperability (which pygpu does not have)."""

    NONE = 0
    READ_ONLY = 1
    WRITE_DISCARD = 2
    SURFACE_LDST = 4
    TEXTURE_GATHER = 8


# CU_TRSA_* / CU_TRSF_* / CU_PARAM_TR_DEFAULT: flags of the texture references CUDA 12 removed,
# kept as numbers so that programs which only name them still import.
TRSA_OVERRIDE_FORMAT = 0x01
TRSF_READ_AS_INTEGER = 0x01
TRSF_NORMALIZED_COORDINATES = 0x02
TR_DEFAULT = -1
