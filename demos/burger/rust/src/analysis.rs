//! The embedded Python side: finding analysis.py and the bundled kernels, importing the
//! analysis, the run's parameters for it, and the analyses after the run.

use std::path::{Path, PathBuf};

use pygpu::runtime::BackendKind;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::options::Options;
use crate::Result;

pub fn find_analysis_dir(o: &Options) -> Result<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(d) = &o.analysis_dir {
        candidates.push(d.clone());
    }
    if let Ok(d) = std::env::var("BURGER_ANALYSIS_DIR") {
        candidates.push(PathBuf::from(d));
    }
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            candidates.push(dir.to_path_buf());
        }
    }
    candidates.push(PathBuf::from("demos/burger"));
    candidates.push(PathBuf::from("."));
    candidates
        .into_iter()
        .find(|d| d.join("analysis.py").is_file())
        .map(|d| d.canonicalize().unwrap_or(d))
        .ok_or_else(|| "cannot find analysis.py: pass --analysis-dir DIR or set BURGER_ANALYSIS_DIR".to_string())
}

/// The bundled kernel files for this backend, best first, from --kernels, $PYGPU_KERNELS_DIR, the
/// pygpu package Python would import (found without importing it), or this checkout.
pub fn kernel_files(py: Python<'_>, o: &Options, kind: BackendKind) -> Result<Vec<PathBuf>> {
    let mut dirs = Vec::new();
    if let Some(d) = &o.kernels {
        dirs.push(d.clone());
    }
    if let Ok(d) = std::env::var("PYGPU_KERNELS_DIR") {
        dirs.push(PathBuf::from(d));
    }
    let spec = (|| -> PyResult<Option<String>> {
        let spec = py.import("importlib.util")?.call_method1("find_spec", ("pygpu",))?;
        if spec.is_none() {
            return Ok(None);
        }
        let origin = spec.getattr("origin")?;
        Ok(if origin.is_none() { None } else { Some(origin.extract()?) })
    })();
    if let Ok(Some(init)) = spec {
        if let Some(pkg) = Path::new(&init).parent() {
            dirs.push(pkg.join("kernels"));
        }
    }
    dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../python/pygpu/kernels"));
    let names: &[&str] = match kind {
        BackendKind::Host => &["libburgers.so"],
        BackendKind::Hip => &["burgers.hsaco"],
        BackendKind::Cuda => &["burgers.fatbin", "burgers.ptx"],
    };
    for dir in &dirs {
        let found: Vec<PathBuf> = names.iter().map(|n| dir.join(n)).filter(|p| p.is_file()).collect();
        if !found.is_empty() {
            return Ok(found);
        }
    }
    Err(format!(
        "no bundled burgers kernels for the {} backend in {}: run kernels/build.sh, pass --kernels DIR, or install pygpu",
        kind.name(),
        dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
    ))
}

pub fn py_error<'py>(py: Python<'py>, what: &str) -> impl FnOnce(PyErr) -> String + 'py {
    let what = what.to_string();
    move |e| {
        e.display(py);
        format!("{what}: {e}")
    }
}

/// What the driver calls in analysis.py.
pub struct Analysis<'py> {
    pub device_matrix: Bound<'py, PyAny>,
    pub collector_class: Bound<'py, PyAny>,
    pub write_summary: Bound<'py, PyAny>,
}

/// Puts the virtual environment's packages and `analysis_dir` on sys.path and imports
/// analysis.py.
pub fn import_analysis<'py>(py: Python<'py>, analysis_dir: &Path) -> Result<Analysis<'py>> {
    let sys = py.import("sys").map_err(py_error(py, "import sys"))?;
    (|| -> PyResult<()> {
        sys.setattr("argv", PyList::new(py, ["burger-demo"])?)?;
        // A virtual environment's packages, as its own python would see them.
        if let Ok(venv) = std::env::var("VIRTUAL_ENV") {
            let version = py.version_info();
            let site = Path::new(&venv).join(format!("lib/python{}.{}/site-packages", version.major, version.minor));
            if site.is_dir() {
                py.import("site")?.call_method1("addsitedir", (site.to_string_lossy().into_owned(),))?;
            }
        }
        // sys.path entries must be str (a PathBuf would arrive as a pathlib.Path).
        sys.getattr("path")?.call_method1("insert", (0, analysis_dir.to_string_lossy().into_owned()))?;
        Ok(())
    })()
    .map_err(py_error(py, "setting up sys.path"))?;
    let analysis = py.import("analysis").map_err(py_error(py, "importing analysis.py"))?;
    println!("Loaded Python Module File: Done ({})", analysis_dir.join("analysis.py").display());
    let get = |name: &str| analysis.getattr(name).map_err(py_error(py, &format!("analysis.{name}")));
    let functions = Analysis {
        device_matrix: get("device_matrix")?,
        collector_class: get("Collector")?,
        write_summary: get("write_summary")?,
    };
    println!("Loaded Functions: Done");
    Ok(functions)
}

/// A dict of (key, value) pairs built in Python, or the error saying what it was for.
pub fn dict<'py>(
    py: Python<'py>,
    what: &str,
    fill: impl FnOnce(&Bound<'py, PyDict>) -> PyResult<()>,
) -> Result<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    fill(&d).map_err(py_error(py, what))?;
    Ok(d)
}

/// The analyses on the device-resident snapshots, or without snapshots only the summary.
/// `collector` is consumed: its CuPy/numpy views die here, before the device memory they
/// look at (the solver, which owns it, is dropped after this returns).
pub fn finish<'py>(
    py: Python<'py>,
    o: &Options,
    analysis: &Analysis<'py>,
    collector: Option<Bound<'py, PyAny>>,
    final_u: Vec<f64>,
    timing: Bound<'py, PyDict>,
    meta: &Bound<'py, PyDict>,
) -> Result<()> {
    match collector {
        Some(c) => {
            c.call_method1("plot_field", (o.out.clone(),)).map_err(py_error(py, "analysis.Collector.plot_field"))?;
            println!("Called python analyses function successfully");
            c.call_method1("svd", (o.out.clone(),)).map_err(py_error(py, "analysis.Collector.svd"))?;
            println!("Called python analyses function successfully");
            if let Some(path) = &o.hdf5 {
                let written = c
                    .call_method1("write_hdf5", (path.clone(),))
                    .map_err(py_error(py, "analysis.Collector.write_hdf5"))?;
                println!("Wrote {written}");
            }
            c.call_method1("finish", (final_u, o.out.clone(), timing))
                .map_err(py_error(py, "analysis.Collector.finish"))?;
            println!(
                "Wrote Field_evolution.png, SVD_Eigenvectors.png, summary.json and final.npy in {}",
                o.out.display()
            );
        }
        None => {
            timing.update(meta.as_mapping()).map_err(py_error(py, "summary"))?;
            timing
                .set_item("rows", 0)
                .and_then(|_| timing.set_item("collections", 0))
                .map_err(py_error(py, "summary"))?;
            analysis
                .write_summary
                .call1((final_u, o.out.clone(), timing))
                .map_err(py_error(py, "analysis.write_summary"))?;
            println!(
                "No snapshots (--snapshot-every 0): no analysis. Wrote summary.json and final.npy in {}",
                o.out.display()
            );
        }
    }
    py.run(c"import gc; gc.collect()", None, None).map_err(py_error(py, "gc"))
}
