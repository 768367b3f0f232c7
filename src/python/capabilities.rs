//! `pygpu.capabilities()`: the active backend's row of `runtime::capabilities`, for Python.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyTuple;

use crate::runtime::backend as active;
use crate::runtime::capabilities::Capabilities as Table;

/// What the active backend can do, and how (one frozen object per backend).
#[pyclass(name = "Capabilities", module = "pygpu", frozen)]
pub struct Capabilities(&'static Table);

#[pymethods]
impl Capabilities {
    /// The backend's name: 'cuda', 'hip' or 'host'.
    #[getter]
    fn backend(&self) -> &'static str {
        self.0.backend.name()
    }

    /// The run-time compiler of SourceModule: 'nvrtc', 'hiprtc' or 'c++' (the system C++
    /// compiler, which builds a kernels library for the host backend).
    #[getter]
    fn compiler(&self) -> &'static str {
        self.0.compiler.name()
    }

    /// What DynamicModule links with: 'cuda' (the driver's JIT linker), 'c++' (the system
    /// linker, host objects and archives), or None where modules are not linked from parts.
    #[getter]
    fn linker(&self) -> Option<&'static str> {
        self.0.linker.map(|l| l.name())
    }

    /// Whether kernels can launch kernels (dynamic parallelism, with CUDA's device runtime).
    #[getter]
    fn device_launch(&self) -> bool {
        self.0.device_launch
    }

    /// Whether device memory is ordinary host memory (numpy and MPI use it directly).
    #[getter]
    fn host_memory(&self) -> bool {
        self.0.host_memory
    }

    /// Whether kernels run on the CPU's cores, a block's threads one after another.
    #[getter]
    fn kernels_on_cpu(&self) -> bool {
        self.0.kernels_on_cpu
    }

    /// Threads per warp (64 on the hip backend's GPUs).
    #[getter]
    fn warp_size(&self) -> u32 {
        self.0.warp_size
    }

    /// What carries pygpu.nccl's collectives: 'nccl', 'mpi', or None where they do not run.
    #[getter]
    fn collectives(&self) -> Option<&'static str> {
        self.0.collectives.map(|c| c.name())
    }

    /// The DLPack device type of device memory (2: kDLCUDA, 10: kDLROCM, 1: kDLCPU).
    #[getter]
    fn dlpack_device_type(&self) -> i32 {
        self.0.dlpack_device_type
    }

    /// The DLPack device types of host memory the backend uses without a copy.
    #[getter]
    fn dlpack_host_types<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.0.dlpack_host_types)
    }

    /// The consumer stream a DLPack ``stream=None`` means (the default stream's handle).
    #[getter]
    fn dlpack_default_stream(&self) -> i64 {
        self.0.dlpack_default_stream
    }

    /// The CUDA Array Interface's number for the default stream, or None where the interface
    /// cannot name it (HIP's null stream is 0, which it forbids).
    #[getter]
    fn cai_default_stream(&self) -> Option<i64> {
        self.0.cai_default_stream
    }

    /// Whether arrays offer ``__cuda_array_interface__`` (not where device memory is host memory).
    #[getter]
    fn cuda_array_interface(&self) -> bool {
        self.0.cuda_array_interface
    }

    /// Whether ``pygpu.profile()`` records this backend's launches, copies, fills,
    /// allocations and synchronisations (the host backend's; CUDA's through CUPTI are to come).
    #[getter]
    fn activity_records(&self) -> bool {
        self.0.activity_records
    }

    fn __repr__(&self) -> String {
        let t = self.0;
        let text = |s: Option<&str>| s.map_or("None".to_string(), |s| format!("'{s}'"));
        let flag = |b: bool| if b { "True" } else { "False" };
        let types: Vec<String> = t.dlpack_host_types.iter().map(i32::to_string).collect();
        format!(
            "Capabilities(backend='{}', compiler='{}', linker={}, device_launch={}, host_memory={}, \
             kernels_on_cpu={}, warp_size={}, collectives={}, dlpack_device_type={}, dlpack_host_types=({}{}), \
             dlpack_default_stream={}, cai_default_stream={}, cuda_array_interface={}, activity_records={})",
            t.backend.name(),
            t.compiler.name(),
            text(t.linker.map(|l| l.name())),
            flag(t.device_launch),
            flag(t.host_memory),
            flag(t.kernels_on_cpu),
            t.warp_size,
            text(t.collectives.map(|c| c.name())),
            t.dlpack_device_type,
            types.join(", "),
            if types.len() == 1 { "," } else { "" },
            t.dlpack_default_stream,
            t.cai_default_stream.map_or("None".to_string(), |s| s.to_string()),
            flag(t.cuda_array_interface),
            flag(t.activity_records)
        )
    }
}

/// What the active backend can do, and how; starts the backend if needed. With `backend`
/// ("cuda", "hip" or "host"), that backend's answers, without starting anything. The same
/// object on every call for a backend.
#[pyfunction]
#[pyo3(signature = (backend = None))]
pub fn capabilities(py: Python<'_>, backend: Option<&str>) -> PyResult<Py<Capabilities>> {
    let kind = match backend {
        Some(name) => Table::of(name)?.backend,
        None => active()?.kind(),
    };
    let made = MADE[kind as usize].get_or_try_init(py, || Py::new(py, Capabilities(kind.capabilities())))?;
    Ok(made.clone_ref(py))
}

/// One object per backend kind, made on first use: callers on hot paths ask every time.
static MADE: [PyOnceLock<Py<Capabilities>>; 3] = [const { PyOnceLock::new() }; 3];
