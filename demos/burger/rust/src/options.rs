//! The command line: options as demos/burger/burger.py's, and the seeds' printing.

use std::path::PathBuf;

use crate::Result;

pub const DEFAULT_GRAPH_BATCH: usize = 200;

pub const USAGE: &str = "\
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
pub struct Options {
    pub nx: usize,
    pub t_final: f64,
    pub nu: f64,
    pub dt: f64,
    pub snapshot_every: usize,
    pub backend: String,
    pub graph: bool,
    pub graph_batch: usize,
    pub scheme: String,
    pub hdf5: Option<PathBuf>,
    pub out: PathBuf,
    pub quiet: bool,
    pub analysis_dir: Option<PathBuf>,
    pub kernels: Option<PathBuf>,
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

pub fn parse_args(args: &[String]) -> Result<Option<Options>> {
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

pub fn kernel_name(scheme: &str) -> Result<&'static str> {
    match scheme {
        "seed" => Ok("burgers_step_lagged"),
        "periodic" => Ok("burgers_step_periodic"),
        other => Err(format!("--scheme must be seed or periodic, not {other:?}")),
    }
}

/// The seeds' loop count: while t < t_final { t += dt }, t accumulated in floating point; beyond
/// 10^7 steps t_final / dt rounded up (as burger.py).
pub fn count_steps(dt: f64, t_final: f64) -> (usize, f64) {
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
pub fn g6(x: f64) -> String {
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

pub fn format_bytes(n: usize) -> String {
    let mut v = n as f64;
    for unit in ["B", "KiB", "MiB", "GiB"] {
        if v < 1024.0 {
            return if unit == "B" { format!("{n} B") } else { format!("{v:.1} {unit}") };
        }
        v /= 1024.0;
    }
    format!("{v:.1} TiB")
}

pub fn err<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> String + '_ {
    move |e| format!("{what}: {e}")
}
