//! What each backend can do, and how, in one table: the Python layers read it (as
//! `pygpu.capabilities()`) instead of comparing backend names.

use super::{BackendKind, Result};

/// How source code becomes a module at run time (`pygpu.compiler.SourceModule`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeCompiler {
    /// NVRTC, loaded at run time: a cubin for the device, or PTX where NVRTC does not know it.
    Nvrtc,
    /// ROCm's hiprtc: a code object for the device.
    Hiprtc,
    /// The system C++ compiler (`$CXX`, g++, clang++): a kernels shared library.
    HostCxx,
}

impl RuntimeCompiler {
    pub fn name(self) -> &'static str {
        match self {
            RuntimeCompiler::Nvrtc => "nvrtc",
            RuntimeCompiler::Hiprtc => "hiprtc",
            RuntimeCompiler::HostCxx => "c++",
        }
    }
}

/// How several compiled parts become one module (`pygpu.compiler.DynamicModule`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Linker {
    /// The CUDA driver's JIT linker (cuLink*): cubins, PTX, fatbins, CUDA's static libraries.
    CudaJit,
    /// The system C++ compiler's linker: relocatable host objects and archives.
    HostCxx,
}

impl Linker {
    pub fn name(self) -> &'static str {
        match self {
            Linker::CudaJit => "cuda",
            Linker::HostCxx => "c++",
        }
    }
}

/// What carries `pygpu.nccl`'s collectives between processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collectives {
    /// NVIDIA's NCCL, loaded at run time.
    Nccl,
    /// MPI (mpi4py), on memory that is host memory.
    Mpi,
}

impl Collectives {
    pub fn name(self) -> &'static str {
        match self {
            Collectives::Nccl => "nccl",
            Collectives::Mpi => "mpi",
        }
    }
}

/// DLPack's device types (dlpack.h's DLDeviceType).
pub const KDL_CPU: i32 = 1;
pub const KDL_CUDA: i32 = 2;
pub const KDL_CUDA_HOST: i32 = 3;
pub const KDL_ROCM: i32 = 10;
pub const KDL_ROCM_HOST: i32 = 11;

/// One backend's answers. Fixed per backend: what depends on the device or the installed
/// libraries (NVRTC's version, a device attribute) is asked of those.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    pub backend: BackendKind,
    pub compiler: RuntimeCompiler,
    /// None: modules are not linked from parts on this backend.
    pub linker: Option<Linker>,
    /// Kernels can launch kernels (dynamic parallelism, with CUDA's device runtime).
    pub device_launch: bool,
    /// Device memory is ordinary host memory: numpy and MPI can use it directly.
    pub host_memory: bool,
    /// Kernels run on the CPU's cores, a block's threads one after another (launch shapes
    /// that fill a GPU only add scheduling there).
    pub kernels_on_cpu: bool,
    /// Threads per warp (the hip backend's GPUs run 64-wide wavefronts).
    pub warp_size: u32,
    /// None: `pygpu.nccl` does not run on this backend.
    pub collectives: Option<Collectives>,
    /// The DLPack device type of device memory.
    pub dlpack_device_type: i32,
    /// The DLPack device types of host memory the backend uses without a copy.
    pub dlpack_host_types: &'static [i32],
    /// The consumer stream a DLPack `stream=None` means (the default stream's handle).
    pub dlpack_default_stream: i64,
    /// The CUDA Array Interface's number for the default stream; None where it cannot name
    /// it (HIP's null stream is 0, which the interface forbids).
    pub cai_default_stream: Option<i64>,
    /// Whether arrays offer the CUDA Array Interface at all.
    pub cuda_array_interface: bool,
    /// Whether `pygpu.profile()` records this backend's launches, copies, fills, allocations
    /// and synchronisations (`runtime::activity`; CUDA's device work through CUPTI, which
    /// must be installed: `pygpu[cupti]`).
    pub activity_records: bool,
}

pub const CUDA: Capabilities = Capabilities {
    backend: BackendKind::Cuda,
    compiler: RuntimeCompiler::Nvrtc,
    linker: Some(Linker::CudaJit),
    device_launch: true,
    host_memory: false,
    kernels_on_cpu: false,
    warp_size: 32,
    collectives: Some(Collectives::Nccl),
    dlpack_device_type: KDL_CUDA,
    dlpack_host_types: &[],
    dlpack_default_stream: 1,
    cai_default_stream: Some(1),
    cuda_array_interface: true,
    activity_records: true,
};

pub const HIP: Capabilities = Capabilities {
    backend: BackendKind::Hip,
    compiler: RuntimeCompiler::Hiprtc,
    linker: None,
    device_launch: false,
    host_memory: false,
    kernels_on_cpu: false,
    warp_size: 64,
    collectives: None,
    dlpack_device_type: KDL_ROCM,
    dlpack_host_types: &[],
    dlpack_default_stream: 0,
    cai_default_stream: None,
    cuda_array_interface: true,
    activity_records: false,
};

pub const HOST: Capabilities = Capabilities {
    backend: BackendKind::Host,
    compiler: RuntimeCompiler::HostCxx,
    linker: Some(Linker::HostCxx),
    device_launch: false,
    host_memory: true,
    kernels_on_cpu: true,
    warp_size: 32,
    collectives: Some(Collectives::Mpi),
    dlpack_device_type: KDL_CPU,
    dlpack_host_types: &[KDL_CPU, KDL_CUDA_HOST, KDL_ROCM_HOST],
    dlpack_default_stream: 0,
    cai_default_stream: None,
    cuda_array_interface: false,
    activity_records: true,
};

impl BackendKind {
    pub fn capabilities(self) -> &'static Capabilities {
        match self {
            BackendKind::Cuda => &CUDA,
            BackendKind::Hip => &HIP,
            BackendKind::Host => &HOST,
        }
    }
}

impl Capabilities {
    /// The row of the backend named `name` ("cuda", "hip" or "host"), without starting it.
    pub fn of(name: &str) -> Result<&'static Capabilities> {
        Ok(BackendKind::parse(name)?.capabilities())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_backend_answers_for_itself() {
        for kind in [BackendKind::Cuda, BackendKind::Hip, BackendKind::Host] {
            assert_eq!(kind.capabilities().backend, kind);
        }
    }

    #[test]
    fn rows_are_found_by_name() {
        assert_eq!(Capabilities::of("cuda").map(|c| c.compiler), Ok(RuntimeCompiler::Nvrtc));
        assert_eq!(Capabilities::of(" Host ").map(|c| c.backend), Ok(BackendKind::Host));
        assert!(Capabilities::of("opencl").is_err());
    }

    #[test]
    fn dlpack_calls_host_memory_cpu_memory() {
        for caps in [&CUDA, &HIP, &HOST] {
            assert_eq!(caps.host_memory, caps.dlpack_device_type == KDL_CPU, "{:?}", caps.backend);
        }
    }
}
