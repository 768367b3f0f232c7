//! The runtime compilers (NVRTC, hiprtc) for `pygpu.compiler`: which library file to load
//! is decided in Python; compiling, and the GIL released meanwhile, here.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::runtime::rtc::{RtcKind, RtcOutput, RuntimeCompiler};

/// (major, minor) of the runtime compiler library at `library` ("nvrtc" or "hiprtc").
#[pyfunction]
pub fn rtc_version(kind: &str, library: PathBuf) -> PyResult<(i32, i32)> {
    Ok(RuntimeCompiler::load(RtcKind::parse(kind)?, &library)?.version()?)
}

/// The sm_XY numbers (as XY) that the NVRTC at `library` compiles cubins for.
#[pyfunction]
pub fn rtc_supported_archs(library: PathBuf) -> PyResult<Vec<i32>> {
    Ok(RuntimeCompiler::load(RtcKind::Nvrtc, &library)?.supported_archs()?)
}

/// Compiles `source` to `output` ("cubin", "ptx" or "code"); returns (binary or None
/// when the compiler rejected the source or an option, compiler log).
#[pyfunction]
#[pyo3(signature = (kind, library, source, name, options, output))]
pub fn rtc_compile<'py>(
    py: Python<'py>,
    kind: &str,
    library: PathBuf,
    source: &str,
    name: &str,
    options: Vec<String>,
    output: &str,
) -> PyResult<(Option<Bound<'py, PyBytes>>, String)> {
    let rtc = RuntimeCompiler::load(RtcKind::parse(kind)?, &library)?;
    let output = RtcOutput::parse(output)?;
    let compiled = py.detach(|| rtc.compile(source, name, &options, output))?;
    Ok((compiled.binary.map(|b| PyBytes::new(py, &b)), compiled.log))
}
