//! The bundled kernel sources embedded at build time (build.rs), for building the bundled
//! kernels on first use where no prebuilt binary was shipped (pygpu/_toolchain/bundled_sources.py).

use pyo3::prelude::*;

include!(concat!(env!("OUT_DIR"), "/bundled_sources.rs"));

/// (file name, contents) of every kernels/*.cu and kernels/*.h this module was built with.
#[pyfunction]
pub fn bundled_kernel_sources() -> Vec<(&'static str, &'static str)> {
    BUNDLED_SOURCES.to_vec()
}
