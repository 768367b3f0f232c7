//! What the host backend answers for each `CUdevice_attribute`: a GPU's documented limits
//! where kernels and launch code depend on them (block and grid sizes, warp size, pitch
//! alignment), the machine's own numbers where it has them (processors, memory, caches),
//! and 0 for what it does not have (textures, surfaces, clusters, peer and GPU-only features).

use crate::runtime::DeviceProperties;

/// The value of attribute `attribute`, or None for a number CUDA 12.8 does not define.
pub(super) fn device_attribute(attribute: i32, props: &DeviceProperties) -> Option<i32> {
    Some(match attribute {
        1 => 1024,                          // MAX_THREADS_PER_BLOCK
        2 | 3 => 1024,                      // MAX_BLOCK_DIM_X, _Y
        4 => 64,                            // MAX_BLOCK_DIM_Z
        5 => i32::MAX,                      // MAX_GRID_DIM_X
        6 | 7 => 65535,                     // MAX_GRID_DIM_Y, _Z
        8 | 97 => 48 * 1024,                // MAX_SHARED_MEMORY_PER_BLOCK(_OPTIN)
        9 => 64 * 1024,                     // TOTAL_CONSTANT_MEMORY
        10 => 32,                           // WARP_SIZE
        11 => i32::MAX,                     // MAX_PITCH
        12 | 82 => 64 * 1024,               // MAX_REGISTERS_PER_BLOCK / _PER_MULTIPROCESSOR
        13 => 1_000_000,                    // CLOCK_RATE (kHz, nominal)
        14 | 30 => 512,                     // TEXTURE_ALIGNMENT, SURFACE_ALIGNMENT
        16 => props.multi_processor_count,  // MULTIPROCESSOR_COUNT: the CPU's threads
        18 | 19 | 41 => 1,                  // INTEGRATED, CAN_MAP_HOST_MEMORY, UNIFIED_ADDRESSING
        33 => props.pci_bus_id,             // PCI_BUS_ID
        34 => props.pci_device_id,          // PCI_DEVICE_ID
        37 => 64,                           // GLOBAL_MEMORY_BUS_WIDTH (a DDR channel)
        38 => l2_cache_bytes(),             // L2_CACHE_SIZE
        39 => 2048,                         // MAX_THREADS_PER_MULTIPROCESSOR
        50 => props.pci_domain_id,          // PCI_DOMAIN_ID
        51 => 32,                           // TEXTURE_PITCH_ALIGNMENT
        75 => props.major,                  // COMPUTE_CAPABILITY_MAJOR
        76 => props.minor,                  // COMPUTE_CAPABILITY_MINOR
        79 | 80 => 1,                       // GLOBAL_L1_CACHE_SUPPORTED, LOCAL_L1_CACHE_SUPPORTED
        81 => 64 * 1024,                    // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
        86 | 88 | 91 | 99 | 100 | 113 => 1, // host atomics, pageable access, (read-only) registration
        87 => 2,                            // SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO (SIMD lanes)
        106 => 32,                          // MAX_BLOCKS_PER_MULTIPROCESSOR
        131 | 134 => -1,                    // NUMA_ID, HOST_NUMA_ID: not a NUMA device
        15
        | 17
        | 20..=29
        | 31
        | 32
        | 35
        | 36
        | 40
        | 42..=49
        | 52..=74
        | 77
        | 78
        | 83..=85
        | 89
        | 90
        | 92..=96
        | 98
        | 101..=105
        | 107..=112
        | 114..=130
        | 132
        | 133
        | 135..=137
        | 139
        | 140
        | 143 => 0,
        _ => return None,
    })
}

#[cfg(target_os = "linux")]
fn l2_cache_bytes() -> i32 {
    // SAFETY: sysconf only reads a configuration value.
    let bytes = unsafe { libc::sysconf(libc::_SC_LEVEL2_CACHE_SIZE) };
    i32::try_from(bytes.max(0)).unwrap_or(i32::MAX)
}

#[cfg(not(target_os = "linux"))]
fn l2_cache_bytes() -> i32 {
    0
}
