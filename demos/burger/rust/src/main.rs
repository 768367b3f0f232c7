//! burger-demo: the Burgers in-situ demo as a compiled program, as the seeds' C++ main did it.
//! The solver loop runs on pygpu's Rust runtime (module_load of the bundled kernels, one
//! launch_kernel per step, memcpy_dtod of each snapshot into a device-resident matrix); Python is
//! embedded (PyO3) for the analysis: demos/burger/analysis.py receives the snapshot matrix as a
//! zero-copy device array (CuPy through __cuda_array_interface__ on CUDA, numpy on the host
//! backend). Same options and results as demos/burger/burger.py.

use std::f64::consts::PI;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use pygpu::runtime::memory::DeviceBuffer;
use pygpu::runtime::{
    self, Backend, BackendKind, DevicePtr, FunctionHandle, KernelArgs, LaunchConfig, StreamHandle, STREAM_NON_BLOCKING,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

const BLOCK: u32 = 256;
const DEFAULT_GRAPH_BATCH: usize = 200;
/// Device memory kept for the analysis when checking that the snapshots fit (as burger.py).
const ANALYSIS_HEADROOM: f64 = 0.10;

type Result<T> = std::result::Result<T, String>;

const USAGE: &str = "\
usage: burger-demo [options]

The Burgers in-situ demo: the solver on pygpu's Rust runtime, the analysis in embedded Python.

options (as demos/burger/burger.py):
  --nx N                interior grid points (default 256; the arrays hold NX + 2)
  --t-final T           run while t < T, t accumulated in floating point (default 2.0)
  --nu NU               viscosity (default 0.01)
  --dt DT               time step (default 0.001)
  --snapshot-every N    snapshot every N steps; 0: none, no analysis (default 1)
  --backend NAME        auto, cuda, hip or host (default: $PYGPU_BACKEND, else cuda if a GPU
                        starts, else host)
  --graph               record batches of steps as a CUDA graph and replay them
  --graph-batch STEPS   steps per graph batch (default 200)
  --scheme NAME         seed (default: the seeds' lagged ghosts, u[10] = 0.0733873) or periodic
  --hdf5 FILE           also write snapshots, singular values and modes to FILE (h5py)
  --out DIR             folder for the plots, summary.json and final.npy (default .)
  --quiet               one line for all the data collection calls instead of one each
  --analysis-dir DIR    folder holding analysis.py (default: found next to this package)
  --kernels DIR         folder holding the bundled kernels (default: the installed pygpu's)
";

#[derive(Debug, Clone)]
struct Options {
    nx: usize,
    t_final: f64,
    nu: f64,
    dt: f64,
    snapshot_every: usize,
    backend: String,
    graph: bool,
    graph_batch: usize,
    scheme: String,
    hdf5: Option<PathBuf>,
    out: PathBuf,
    quiet: bool,
    analysis_dir: Option<PathBuf>,
    kernels: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            nx: 256,
            t_final: 2.0,
            nu: 0.01,
            dt: 0.001,
            snapshot_every: 1,
            backend: "auto".into(),
            graph: false,
            graph_batch: DEFAULT_GRAPH_BATCH,
            scheme: "seed".into(),
            hdf5: None,
            out: PathBuf::from("."),
            quiet: false,
            analysis_dir: None,
            kernels: None,
        }
    }
}

fn parse_args(args: &[String]) -> Result<Option<Options>> {
    let mut o = Options::default();
    let mut it = args.iter();
    fn value<'a>(it: &mut std::slice::Iter<'a, String>, flag: &str) -> Result<&'a String> {
        it.next().ok_or_else(|| format!("{flag} needs a value"))
    }
    fn number<T: std::str::FromStr>(s: &str, flag: &str) -> Result<T> {
        s.parse().map_err(|_| format!("{flag}: not a valid number: {s:?}"))
    }
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let take = |it: &mut std::slice::Iter<'_, String>| -> Result<String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => value(it, flag).cloned(),
            }
        };
        match flag {
            "-h" | "--help" => return Ok(None),
            "--nx" => o.nx = number(&take(&mut it)?, flag)?,
            "--t-final" => o.t_final = number(&take(&mut it)?, flag)?,
            "--nu" => o.nu = number(&take(&mut it)?, flag)?,
            "--dt" => o.dt = number(&take(&mut it)?, flag)?,
            "--snapshot-every" => o.snapshot_every = number(&take(&mut it)?, flag)?,
            "--backend" => o.backend = take(&mut it)?,
            "--graph" => o.graph = true,
            "--graph-batch" => o.graph_batch = number(&take(&mut it)?, flag)?,
            "--scheme" => o.scheme = take(&mut it)?,
            "--hdf5" => o.hdf5 = Some(PathBuf::from(take(&mut it)?)),
            "--out" => o.out = PathBuf::from(take(&mut it)?),
            "--quiet" => o.quiet = true,
            "--no-progress" => {} // burger.py's option; this driver prints no progress bar
            "--analysis-dir" => o.analysis_dir = Some(PathBuf::from(take(&mut it)?)),
            "--kernels" => o.kernels = Some(PathBuf::from(take(&mut it)?)),
            other => return Err(format!("unknown option {other:?} (see --help)")),
        }
    }
    if o.nx < 2 || o.nx + 2 > i32::MAX as usize {
        return Err("--nx must be at least 2 and fit the kernel's int argument".into());
    }
    if !(o.dt > 0.0 && o.dt.is_finite() && o.t_final.is_finite()) {
        return Err("--dt must be positive and --t-final finite".into());
    }
    if o.graph_batch < 1 {
        return Err("--graph-batch must be at least 1".into());
    }
    if !["auto", "cuda", "hip", "host"].contains(&o.backend.as_str()) {
        return Err(format!("--backend must be auto, cuda, hip or host, not {:?}", o.backend));
    }
    Ok(Some(o))
}

fn kernel_name(scheme: &str) -> Result<&'static str> {
    match scheme {
        "seed" => Ok("burgers_step_lagged"),
        "periodic" => Ok("burgers_step_periodic"),
        other => Err(format!("--scheme must be seed or periodic, not {other:?}")),
    }
}

/// The seeds' loop count: while t < t_final { t += dt }, t accumulated in floating point; beyond
/// 10^7 steps t_final / dt rounded up (as burger.py).
fn count_steps(dt: f64, t_final: f64) -> (usize, f64) {
    if t_final / dt > 1e7 {
        let n = (t_final / dt).ceil();
        return (n as usize, n * dt);
    }
    let (mut t, mut n) = (0.0f64, 0usize);
    while t < t_final {
        t += dt;
        n += 1;
    }
    (n, t)
}

/// printf's %g: six significant digits, trailing zeros dropped (what the seeds' C++ printed).
fn g6(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let exp = x.abs().log10().floor() as i32;
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if !(-4..6).contains(&exp) {
        let s = format!("{x:.5e}");
        let (mantissa, e) = s.split_once('e').unwrap_or((&s, "0"));
        let e: i32 = e.parse().unwrap_or(0);
        return format!("{}e{}{:02}", trim(mantissa.to_string()), if e < 0 { '-' } else { '+' }, e.abs());
    }
    trim(format!("{:.*}", (5 - exp).max(0) as usize, x))
}

fn format_bytes(n: usize) -> String {
    let mut v = n as f64;
    for unit in ["B", "KiB", "MiB", "GiB"] {
        if v < 1024.0 {
            return if unit == "B" { format!("{n} B") } else { format!("{v:.1} {unit}") };
        }
        v /= 1024.0;
    }
    format!("{v:.1} TiB")
}

/// (snapshot rows per graph batch, steps per batch), as burger.py's graph_layout.
fn graph_layout(every: usize, batch: usize) -> (usize, usize) {
    if every == 0 {
        return (0, (batch + (batch & 1)).max(2));
    }
    let rows = (batch / every).max(2);
    (rows, rows * every)
}

fn err<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// Starts the backend: the one asked for, or cuda (then hip) if one starts, else host.
fn start_backend(requested: &str) -> Result<(&'static dyn Backend, Option<String>)> {
    if requested != "auto" {
        runtime::set_backend(requested).map_err(err("--backend"))?;
        return Ok((runtime::backend().map_err(err("starting the backend"))?, None));
    }
    if std::env::var("PYGPU_BACKEND").is_ok_and(|v| !v.trim().is_empty()) {
        return Ok((runtime::backend().map_err(err("starting the backend"))?, None));
    }
    let why = match runtime::backend() {
        Ok(b) => match b.device_count() {
            Ok(n) if n > 0 => return Ok((b, None)),
            Ok(_) => format!("{} reports no device", b.kind().name()),
            Err(e) => e.to_string(),
        },
        Err(e) => e.to_string(),
    };
    let why = why.split(". To run on the CPU").next().unwrap_or("").to_string();
    runtime::set_backend("host").map_err(err("falling back to the host backend"))?;
    let b = runtime::backend().map_err(err("starting the host backend"))?;
    Ok((
        b,
        Some(format!("No GPU could be started ({why}): running on the host backend (the same kernels on the CPU).")),
    ))
}

/// The solver loop on pygpu's runtime: two ping-pong buffers, one launch per step on one stream,
/// each snapshot copied device-to-device into the snapshot matrix.
struct Solver {
    b: &'static dyn Backend,
    function: FunctionHandle,
    config: LaunchConfig,
    stream: StreamHandle,
    args: KernelArgs,
    n_total: i32,
    c1: f64,
    c2: f64,
    row_bytes: usize,
    every: usize,
    a: DeviceBuffer,
    b2: DeviceBuffer,
    snapshots: Option<DeviceBuffer>,
    stage: Option<DeviceBuffer>,
    rows_done: usize,
}

impl Solver {
    fn step(&mut self, src: DevicePtr, dst: DevicePtr) -> Result<()> {
        self.args.clear();
        let pushed = (|| {
            self.args.push(src)?;
            self.args.push(dst)?;
            self.args.push(self.n_total)?;
            self.args.push(self.c1)?;
            self.args.push(self.c2)
        })();
        pushed.map_err(err("packing kernel arguments"))?;
        // SAFETY: the arguments match burgers_step_*(const double*, double*, int, double, double);
        // src and dst are live allocations of n_total doubles (or rows of the stage block).
        unsafe { self.b.launch_kernel(self.function, &self.config, self.stream, &self.args) }
            .map_err(err("launching the step"))
    }

    fn snapshot_ptr(&self, row: usize) -> DevicePtr {
        self.snapshots.as_ref().map_or(0, |s| s.ptr() + (row * self.row_bytes) as u64)
    }

    /// Steps first .. first + count - 1 (numbered from 1) from `src`; `collected` is told the
    /// number of snapshot rows after each copy. Returns the buffer holding the result.
    fn plain(
        &mut self,
        mut src: DevicePtr,
        first: usize,
        count: usize,
        collected: &mut dyn FnMut(usize) -> Result<()>,
    ) -> Result<DevicePtr> {
        let (a, b) = (self.a.ptr(), self.b2.ptr());
        let pair = if src == a { [b, a] } else { [a, b] };
        for j in 0..count {
            let dst = pair[j & 1];
            self.step(src, dst)?;
            if self.every > 0 && (first + j).is_multiple_of(self.every) {
                let row = self.snapshot_ptr(self.rows_done);
                self.b.memcpy_dtod(row, dst, self.row_bytes, Some(self.stream)).map_err(err("copying a snapshot"))?;
                self.rows_done += 1;
                collected(self.rows_done)?;
            }
            src = dst;
        }
        Ok(src)
    }

    /// Records one batch of steps as a graph: (executable graph, its start buffer, snapshot rows
    /// per batch, steps per batch). Snapshot steps write straight into the stage block.
    fn capture(&mut self, batch: usize) -> Result<(runtime::GraphExecHandle, DevicePtr, usize, usize)> {
        let (stage_rows, per_batch) = graph_layout(self.every, batch);
        let (a, b) = (self.a.ptr(), self.b2.ptr());
        self.b.stream_begin_capture(self.stream).map_err(err("beginning the capture"))?;
        let recorded = (|| -> Result<()> {
            if stage_rows == 0 {
                let mut src = a;
                for j in 0..per_batch {
                    let dst = [b, a][j & 1];
                    self.step(src, dst)?;
                    src = dst;
                }
            } else {
                let stage = self.stage.as_ref().map_or(0, |s| s.ptr());
                let mut src = stage + ((stage_rows - 1) * self.row_bytes) as u64;
                for j in 0..per_batch {
                    let step = j + 1;
                    let dst = if step.is_multiple_of(self.every) {
                        stage + ((step / self.every - 1) * self.row_bytes) as u64
                    } else if src == a {
                        b
                    } else {
                        a
                    };
                    self.step(src, dst)?;
                    src = dst;
                }
            }
            Ok(())
        })();
        let graph = self.b.stream_end_capture(self.stream).map_err(err("ending the capture"))?;
        recorded?;
        let exec = self.b.graph_instantiate(graph);
        // SAFETY: the graph was just created and only its executable instance is used afterwards.
        unsafe { self.b.graph_destroy(graph) }.map_err(err("releasing the graph"))?;
        let exec = exec.map_err(err("instantiating the graph"))?;
        let start = match self.stage.as_ref() {
            Some(s) if stage_rows > 0 => s.ptr() + ((stage_rows - 1) * self.row_bytes) as u64,
            _ => a,
        };
        Ok((exec, start, stage_rows, per_batch))
    }
}

fn find_analysis_dir(o: &Options) -> Result<PathBuf> {
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
fn kernel_files(py: Python<'_>, o: &Options, kind: BackendKind) -> Result<Vec<PathBuf>> {
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

fn load_module(b: &'static dyn Backend, files: &[PathBuf]) -> Result<runtime::ModuleHandle> {
    let mut failures = Vec::new();
    for f in files {
        let image = std::fs::read(f).map_err(err(&format!("reading {}", f.display())))?;
        match b.module_load(&image) {
            Ok(m) => return Ok(m),
            // e.g. a CUDA 12 driver cannot read the fatbin's PTX 9.0: the PTX is next.
            Err(e) => failures.push(format!("{}: {e}", f.display())),
        }
    }
    Err(format!("loading the kernels failed: {}", failures.join("; ")))
}

fn py_error<'py>(py: Python<'py>, what: &str) -> impl FnOnce(PyErr) -> String + 'py {
    let what = what.to_string();
    move |e| {
        e.display(py);
        format!("{what}: {e}")
    }
}

fn run(o: Options) -> Result<()> {
    let kernel = kernel_name(&o.scheme)?;
    let (steps, t_end) = count_steps(o.dt, o.t_final);
    let n_total = o.nx + 2;
    let row_bytes = n_total * 8;
    let rows = steps.checked_div(o.snapshot_every).unwrap_or(0);
    let h = 2.0 * PI / o.nx as f64;
    let (c1, c2) = (o.nu * o.dt / (h * h), o.dt / (2.0 * h));
    if c1 > 0.5 {
        eprintln!(
            "warning: nu dt / h^2 = {} > 1/2: this explicit scheme will blow up; use --dt {} or less at NX = {}",
            g6(c1),
            g6(0.5 * h * h / o.nu),
            o.nx
        );
    }
    let x: Vec<f64> = (0..o.nx).map(|i| 2.0 * PI * i as f64 / o.nx as f64).collect();
    let mut u0 = vec![0.0f64; n_total];
    for i in 1..=o.nx {
        u0[i] = x[i - 1].sin();
    }
    u0[0] = u0[o.nx];
    u0[o.nx + 1] = u0[1];

    // -- Python ---------------------------------------------------------------------------------
    Python::initialize();
    println!("Initialization of Python: Done");
    let analysis_dir = find_analysis_dir(&o)?;
    Python::attach(|py| -> Result<()> {
        let sys = py.import("sys").map_err(py_error(py, "import sys"))?;
        (|| -> PyResult<()> {
            sys.setattr("argv", PyList::new(py, ["burger-demo"])?)?;
            // A virtual environment's packages, as its own python would see them.
            if let Ok(venv) = std::env::var("VIRTUAL_ENV") {
                let version = py.version_info();
                let site =
                    Path::new(&venv).join(format!("lib/python{}.{}/site-packages", version.major, version.minor));
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
        let device_matrix = analysis.getattr("device_matrix").map_err(py_error(py, "analysis.device_matrix"))?;
        let collector_class = analysis.getattr("Collector").map_err(py_error(py, "analysis.Collector"))?;
        let write_summary = analysis.getattr("write_summary").map_err(py_error(py, "analysis.write_summary"))?;
        println!("Loaded Functions: Done");

        // -- the device ---------------------------------------------------------------------------
        let (b, notice) = start_backend(&o.backend)?;
        if let Some(n) = notice {
            println!("{n}");
        }
        let kind = b.kind();
        let device = b
            .get_device()
            .and_then(|d| b.device_properties(d))
            .map(|p| p.name)
            .unwrap_or_else(|_| kind.name().to_string());
        let (free, total) = b.mem_get_info().map_err(err("querying device memory"))?;
        let stage_rows = if o.graph { graph_layout(o.snapshot_every, o.graph_batch).0 } else { 0 };
        let solver_bytes = (2 + stage_rows) * row_bytes;
        let budget = free as f64 - ANALYSIS_HEADROOM * total as f64 - solver_bytes as f64;
        if (rows * row_bytes) as f64 > budget {
            let fit = (budget / row_bytes as f64).floor().max(0.0) as usize;
            let hint = if fit > 0 {
                format!("--snapshot-every {} or more would fit", steps.div_ceil(fit))
            } else {
                "not even one snapshot fits: use a smaller --nx".to_string()
            };
            return Err(format!(
                "the snapshots do not fit in device memory: {rows} snapshots x {n_total} values x 8 bytes = {}, plus {} for \
                 the solver, but the device has {} free of {} (keeping {:.0}% for the analysis). Take fewer snapshots \
                 ({hint}), or use a smaller --nx or --t-final. Nothing was allocated.",
                format_bytes(rows * row_bytes),
                format_bytes(solver_bytes),
                format_bytes(free),
                format_bytes(total),
                ANALYSIS_HEADROOM * 100.0
            ));
        }
        std::fs::create_dir_all(&o.out).map_err(err(&format!("creating {}", o.out.display())))?;

        let files = kernel_files(py, &o, kind)?;
        let module = load_module(b, &files)?;
        let function = b.module_get_function(module, kernel).map_err(err(kernel))?;
        let stream = b.stream_create(STREAM_NON_BLOCKING).map_err(err("creating a stream"))?;
        let alloc = |bytes: usize, what: &str| DeviceBuffer::new(bytes).map_err(err(what));
        let a = alloc(row_bytes, "allocating the solution")?;
        let b2 = alloc(row_bytes, "allocating the solution")?;
        let snapshots = if rows > 0 { Some(alloc(rows * row_bytes, "allocating the snapshot matrix")?) } else { None };
        let stage = if stage_rows > 0 {
            Some(alloc(stage_rows * row_bytes, "allocating the graph's stage block")?)
        } else {
            None
        };
        // SAFETY: u0 holds n_total doubles = row_bytes bytes; the copy is synchronous.
        unsafe { b.memcpy_htod(a.ptr(), u0.as_ptr() as *const u8, row_bytes, None) }.map_err(err("copying u0"))?;
        // One thread per interior point, but no more blocks than the device runs at once (one
        // full wave, from the occupancy API): beyond that the grid-stride loop gives each thread
        // several points (as burger.py's launch_shape).
        let mut grid = (o.nx as u32).div_ceil(BLOCK).max(1);
        if let Ok((min_grid, block)) = b.max_potential_block_size(function, 0, BLOCK as i32) {
            let wave = (min_grid.max(1) as u32 * block.max(1) as u32 / BLOCK).max(1);
            grid = grid.min(wave);
        }
        let mut solver = Solver {
            b,
            function,
            config: LaunchConfig { grid: [grid, 1, 1], block: [BLOCK, 1, 1], shared_bytes: 0 },
            stream,
            args: KernelArgs::new(),
            n_total: n_total as i32,
            c1,
            c2,
            row_bytes,
            every: o.snapshot_every,
            a,
            b2,
            snapshots,
            stage,
            rows_done: 0,
        };

        let meta = PyDict::new(py);
        (|| -> PyResult<()> {
            meta.set_item("driver", "rust")?;
            meta.set_item("backend", kind.name())?;
            meta.set_item("device", device.clone())?;
            meta.set_item("nx", o.nx)?;
            meta.set_item("nu", o.nu)?;
            meta.set_item("dt", o.dt)?;
            meta.set_item("t_final", o.t_final)?;
            meta.set_item("t_end", t_end)?;
            meta.set_item("steps", steps)?;
            meta.set_item("scheme", o.scheme.clone())?;
            meta.set_item("kernel", kernel)?;
            meta.set_item("snapshot_every", o.snapshot_every)?;
            meta.set_item("graph", o.graph)?;
            meta.set_item("grid", grid)?;
            meta.set_item("block", BLOCK)?;
            Ok(())
        })()
        .map_err(py_error(py, "building the run's parameters"))?;

        // The snapshot matrix, seen from Python in place: no copy, now or later.
        let collector = match solver.snapshots.as_ref() {
            Some(s) => {
                let view = device_matrix
                    .call1((s.ptr(), rows, n_total, kind.name()))
                    .map_err(py_error(py, "wrapping the snapshot matrix"))?;
                Some(collector_class.call1((view, x.clone(), &meta)).map_err(py_error(py, "analysis.Collector"))?)
            }
            None => None,
        };
        let mode = if o.graph {
            format!("graph (batches of {} steps)", graph_layout(o.snapshot_every, o.graph_batch).1)
        } else {
            "plain".into()
        };
        println!(
            "Burgers: NX = {} ({n_total} values), nu = {}, dt = {}, t < {}: {steps} steps, kernel {kernel}",
            o.nx,
            g6(o.nu),
            g6(o.dt),
            g6(o.t_final)
        );
        println!(
            "Backend: {} ({device}), {mode} loop, {grid} x {BLOCK} threads, kernels from {}",
            kind.name(),
            files[0].display()
        );
        if rows > 0 {
            println!(
                "Snapshots: {rows} x {n_total} doubles on the device ({}), every {} step(s)",
                format_bytes(rows * row_bytes),
                o.snapshot_every
            );
        }

        // -- the solver loop ------------------------------------------------------------------------
        let quiet = o.quiet;
        let mut collections = 0usize;
        let mut collect = |rows_now: usize| -> Result<()> {
            if let Some(c) = collector.as_ref() {
                c.call_method1("collect", (rows_now,)).map_err(py_error(py, "analysis.Collector.collect"))?;
                collections += 1;
                if !quiet {
                    println!("Called python data collection function successfully");
                }
            }
            Ok(())
        };
        let (mut batches, mut exec, mut start, mut per_batch, mut stage_rows_used) = (0, None, 0, 0, 0);
        if o.graph {
            let (_, k) = graph_layout(o.snapshot_every, o.graph_batch);
            batches = steps / k;
            if batches > 0 {
                let (e, s, r, p) = solver.capture(o.graph_batch)?;
                (exec, start, stage_rows_used, per_batch) = (Some(e), s, r, p);
            }
        }
        let clock = Instant::now();
        let mut done = 0usize;
        let mut state = solver.a.ptr();
        if let Some(e) = exec {
            if start != state {
                b.memcpy_dtod(start, state, row_bytes, Some(stream)).map_err(err("staging the start"))?;
            }
            for _ in 0..batches {
                b.graph_launch(e, stream).map_err(err("launching the graph"))?;
                if stage_rows_used > 0 {
                    let dest = solver.snapshot_ptr(solver.rows_done);
                    let stage = solver.stage.as_ref().map_or(0, |s| s.ptr());
                    b.memcpy_dtod(dest, stage, stage_rows_used * row_bytes, Some(stream))
                        .map_err(err("copying snapshots"))?;
                    solver.rows_done += stage_rows_used;
                    collect(solver.rows_done)?;
                }
                if done == 0 {
                    println!("time = {}", g6(o.dt));
                }
                done += per_batch;
            }
            state = start;
        }
        if done < steps {
            if done == 0 {
                state = solver.plain(state, 1, 1, &mut collect)?;
                println!("time = {}", g6(o.dt));
                done = 1;
            }
            state = solver.plain(state, done + 1, steps - done, &mut collect)?;
        }
        b.stream_synchronize(stream).map_err(err("running the solver"))?;
        let seconds = clock.elapsed().as_secs_f64();
        if quiet && collections > 0 {
            println!("Called python data collection function successfully ({collections} times)");
        }
        println!("time = {}", g6(t_end));
        let mean = seconds / steps.max(1) as f64;
        println!("Mean Wall-Time: {} ms per step ({} s for {steps} steps)", g6(mean * 1e3), g6(seconds));
        let mut final_u = vec![0.0f64; n_total];
        // SAFETY: final_u holds row_bytes bytes; the copy is synchronous.
        unsafe { b.memcpy_dtoh(final_u.as_mut_ptr() as *mut u8, state, row_bytes, None) }
            .map_err(err("copying the solution"))?;
        println!("A random value in the solution array: {}", g6(final_u[10]));

        // -- the analysis, on the device-resident snapshots ------------------------------------------
        let timing = PyDict::new(py);
        (|| -> PyResult<()> {
            timing.set_item("mean_step_seconds", mean)?;
            timing.set_item("loop_seconds", seconds)?;
            Ok(())
        })()
        .map_err(py_error(py, "timing"))?;
        match collector {
            Some(c) => {
                c.call_method1("plot_field", (o.out.clone(),))
                    .map_err(py_error(py, "analysis.Collector.plot_field"))?;
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
                // The CuPy/numpy views die here, before the device memory they look at.
                drop(c);
            }
            None => {
                timing.update(meta.as_mapping()).map_err(py_error(py, "summary"))?;
                timing
                    .set_item("rows", 0)
                    .and_then(|_| timing.set_item("collections", 0))
                    .map_err(py_error(py, "summary"))?;
                write_summary
                    .call1((final_u, o.out.clone(), timing))
                    .map_err(py_error(py, "analysis.write_summary"))?;
                println!(
                    "No snapshots (--snapshot-every 0): no analysis. Wrote summary.json and final.npy in {}",
                    o.out.display()
                );
            }
        }
        py.run(c"import gc; gc.collect()", None, None).map_err(py_error(py, "gc"))?;
        if let Some(e) = exec {
            // SAFETY: the stream was synchronised; the graph is not launched again.
            unsafe { b.graph_exec_destroy(e) }.map_err(err("releasing the graph"))?;
        }
        drop(solver);
        // SAFETY: synchronised above; nothing uses the stream or the module afterwards.
        unsafe {
            b.stream_destroy(stream).map_err(err("releasing the stream"))?;
            b.module_unload(module).map_err(err("unloading the kernels"))?;
        }
        Ok(())
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse_args(&args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("burger-demo: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("burger-demo: {e}");
            ExitCode::from(if e.starts_with("the snapshots do not fit") { 2 } else { 1 })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_step_count_and_g_format() {
        assert_eq!(count_steps(0.001, 2.0).0, 2001);
        assert_eq!(g6(0.07338729559463218), "0.0733873");
        assert_eq!(g6(2.0009999999998906), "2.001");
        assert_eq!(g6(0.001), "0.001");
        assert_eq!(g6(1.5e-5), "1.5e-05");
        assert_eq!(g6(1234567.0), "1.23457e+06");
    }

    #[test]
    fn graph_layout_never_steps_in_place() {
        assert_eq!(graph_layout(1, 200), (200, 200));
        assert_eq!(graph_layout(3, 50), (16, 48));
        assert_eq!(graph_layout(0, 7), (0, 8));
        assert_eq!(graph_layout(500, 200), (2, 1000));
    }
}
