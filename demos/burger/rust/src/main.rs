//! burger-demo: the Burgers in-situ demo as a compiled program, as the seeds' C++ main did it.
//! The solver loop runs on pygpu's Rust runtime (module_load of the bundled kernels, one
//! launch_kernel per step, memcpy_dtod of each snapshot into a device-resident matrix); Python is
//! embedded (PyO3) for the analysis: demos/burger/analysis.py receives the snapshot matrix as a
//! zero-copy device array (CuPy through __cuda_array_interface__ on CUDA, numpy on the host
//! backend). Same options and results as demos/burger/burger.py.

mod analysis;
mod options;
mod plan;
mod solver;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use pygpu::runtime::{self, Context, Module};
use pyo3::prelude::*;

use analysis::{dict, py_error, Analysis};
use options::{err, format_bytes, g6, parse_args, Options, USAGE};
use plan::{graph_layout, Plan};
use solver::{Solver, BLOCK};

type Result<T> = std::result::Result<T, String>;

/// Starts the backend: the one asked for, or cuda (then hip) if one starts, else host (with
/// a notice saying why).
fn start_backend(requested: &str) -> Result<(Arc<Context>, Option<String>)> {
    let current = || Context::current().map_err(err("starting the backend"));
    if requested != "auto" {
        runtime::set_backend(requested).map_err(err("--backend"))?;
        return Ok((current()?, None));
    }
    if std::env::var("PYGPU_BACKEND").is_ok_and(|v| !v.trim().is_empty()) {
        return Ok((current()?, None));
    }
    let why = match runtime::backend() {
        Ok(b) => match b.device_count() {
            Ok(n) if n > 0 => return Ok((current()?, None)),
            Ok(_) => format!("{} reports no device", b.kind().name()),
            Err(e) => e.to_string(),
        },
        Err(e) => e.to_string(),
    };
    let why = why.split(". To run on the CPU").next().unwrap_or("").to_string();
    runtime::set_backend("host").map_err(err("falling back to the host backend"))?;
    let notice = format!("No GPU could be started ({why}): running on the host backend (the same kernels on the CPU).");
    Ok((Context::current().map_err(err("starting the host backend"))?, Some(notice)))
}

/// The first of `files` that loads (e.g. a CUDA 12 driver cannot read the fatbin's PTX 9.0:
/// the PTX is next).
fn load_module(ctx: &Arc<Context>, files: &[PathBuf]) -> Result<Arc<Module>> {
    let mut failures = Vec::new();
    for f in files {
        let image = std::fs::read(f).map_err(err(&format!("reading {}", f.display())))?;
        match Module::load(ctx, &image) {
            Ok(m) => return Ok(m),
            Err(e) => failures.push(format!("{}: {e}", f.display())),
        }
    }
    Err(format!("loading the kernels failed: {}", failures.join("; ")))
}

/// The device's name, or the backend's where it has none to give.
fn device_name(ctx: &Context) -> String {
    ctx.name().unwrap_or_else(|_| ctx.kind().name().to_string())
}

fn run(o: Options) -> Result<()> {
    let plan = Plan::new(&o)?;
    if plan.c1 > 0.5 {
        let h = 2.0 * std::f64::consts::PI / o.nx as f64;
        eprintln!(
            "warning: nu dt / h^2 = {} > 1/2: this explicit scheme will blow up; use --dt {} or less at NX = {}",
            g6(plan.c1),
            g6(0.5 * h * h / o.nu),
            o.nx
        );
    }
    // The device first, and the sizes checked against it before anything is allocated: a run
    // too large is refused in milliseconds, not after building its initial condition.
    let (ctx, notice) = start_backend(&o.backend)?;
    let (free, total) = ctx.mem_get_info().map_err(err("querying device memory"))?;
    plan.check_fits(free, total)?;

    Python::initialize();
    println!("Initialization of Python: Done");
    let analysis_dir = analysis::find_analysis_dir(&o)?;
    Python::attach(|py| {
        let analysis = analysis::import_analysis(py, &analysis_dir)?;
        if let Some(n) = notice {
            println!("{n}");
        }
        std::fs::create_dir_all(&o.out).map_err(err(&format!("creating {}", o.out.display())))?;
        let files = analysis::kernel_files(py, &o, ctx.kind())?;
        let function = load_module(&ctx, &files)?.get_function(plan.kernel).map_err(err(plan.kernel))?;
        let (x, u0) = plan.initial_condition();
        let mut solver = Solver::new(&ctx, function, &plan, &o, &u0)?;
        print_header(&o, &plan, &ctx, &solver, &files[0]);
        solve_and_analyse(py, &o, &plan, &ctx, &analysis, &mut solver, x)
    })
}

fn print_header(o: &Options, plan: &Plan, ctx: &Context, solver: &Solver, kernels: &std::path::Path) {
    let mode = if o.graph {
        format!("graph (batches of {} steps)", graph_layout(o.snapshot_every, o.graph_batch).1)
    } else {
        "plain".into()
    };
    println!(
        "Burgers: NX = {} ({} values), nu = {}, dt = {}, t < {}: {} steps, kernel {}",
        o.nx,
        plan.n_total,
        g6(o.nu),
        g6(o.dt),
        g6(o.t_final),
        plan.steps,
        plan.kernel
    );
    println!(
        "Backend: {} ({}), {mode} loop, {} x {BLOCK} threads, kernels from {}",
        ctx.kind().name(),
        device_name(ctx),
        solver.grid(),
        kernels.display()
    );
    if plan.rows > 0 {
        println!(
            "Snapshots: {} x {} doubles on the device ({}), every {} step(s)",
            plan.rows,
            plan.n_total,
            format_bytes(plan.rows * plan.row_bytes),
            o.snapshot_every
        );
    }
}

/// The solver loop with the analysis collecting after each snapshot, then the analyses.
fn solve_and_analyse<'py>(
    py: Python<'py>,
    o: &Options,
    plan: &Plan,
    ctx: &Context,
    analysis: &Analysis<'py>,
    solver: &mut Solver,
    x: Vec<f64>,
) -> Result<()> {
    let meta = dict(py, "building the run's parameters", |m| {
        m.set_item("driver", "rust")?;
        m.set_item("backend", ctx.kind().name())?;
        m.set_item("device", device_name(ctx))?;
        m.set_item("nx", o.nx)?;
        m.set_item("nu", o.nu)?;
        m.set_item("dt", o.dt)?;
        m.set_item("t_final", o.t_final)?;
        m.set_item("t_end", plan.t_end)?;
        m.set_item("steps", plan.steps)?;
        m.set_item("scheme", o.scheme.clone())?;
        m.set_item("kernel", plan.kernel)?;
        m.set_item("snapshot_every", o.snapshot_every)?;
        m.set_item("graph", o.graph)?;
        m.set_item("grid", solver.grid())?;
        m.set_item("block", BLOCK)
    })?;
    // The snapshot matrix, seen from Python in place: no copy, now or later.
    let collector = match solver.snapshots() {
        Some(ptr) => {
            let view = analysis
                .device_matrix
                .call1((ptr, plan.rows, plan.n_total, ctx.kind().name()))
                .map_err(py_error(py, "wrapping the snapshot matrix"))?;
            Some(analysis.collector_class.call1((view, x, &meta)).map_err(py_error(py, "analysis.Collector"))?)
        }
        None => None,
    };
    let mut collections = 0usize;
    let mut collect = |rows_now: usize| -> Result<()> {
        if let Some(c) = collector.as_ref() {
            c.call_method1("collect", (rows_now,)).map_err(py_error(py, "analysis.Collector.collect"))?;
            collections += 1;
            if !o.quiet {
                println!("Called python data collection function successfully");
            }
        }
        Ok(())
    };
    let finished = solver.run(plan, o, &mut collect)?;
    if o.quiet && collections > 0 {
        println!("Called python data collection function successfully ({collections} times)");
    }
    println!("time = {}", g6(plan.t_end));
    let mean = finished.seconds / plan.steps.max(1) as f64;
    println!("Mean Wall-Time: {} ms per step ({} s for {} steps)", g6(mean * 1e3), g6(finished.seconds), plan.steps);
    let mut final_u = vec![0.0f64; plan.n_total];
    solver.read(finished.state, &mut final_u)?;
    // The seeds print u[10]; a grid that small (--nx below 9) has no u[10]: its last value.
    let sample = final_u.get(10).or(final_u.last()).copied().unwrap_or(f64::NAN);
    println!("u[10] = {}", g6(sample));
    let timing = dict(py, "timing", |t| {
        t.set_item("mean_step_seconds", mean)?;
        t.set_item("loop_seconds", finished.seconds)?;
        t.set_item("setup_seconds", finished.setup_seconds)
    })?;
    analysis::finish(py, o, analysis, collector, final_u, timing, &meta)
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
            ExitCode::from(if e.starts_with(plan::DOES_NOT_FIT) { 2 } else { 1 })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::options::count_steps;
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
}
