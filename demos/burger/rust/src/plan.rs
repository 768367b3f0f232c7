//! What a run needs, worked out from the options before anything is allocated: the step
//! count, the scheme's coefficients, the sizes of the device buffers, and the refusal of a
//! run whose snapshots do not fit (as burger.py's check_memory).

use std::f64::consts::PI;

use crate::options::{count_steps, format_bytes, kernel_name, Options};
use crate::Result;

/// Device memory kept for the analysis when checking that the snapshots fit (as burger.py).
pub const ANALYSIS_HEADROOM: f64 = 0.10;

#[derive(Debug, Clone)]
pub struct Plan {
    pub kernel: &'static str,
    pub steps: usize,
    /// t after the last step, accumulated as the seeds did.
    pub t_end: f64,
    /// Values per row: the NX interior points and two ghosts.
    pub n_total: usize,
    pub row_bytes: usize,
    /// Rows of the snapshot matrix.
    pub rows: usize,
    /// Rows of the graph's stage block (0 without --graph or snapshots).
    pub stage_rows: usize,
    pub c1: f64,
    pub c2: f64,
}

/// The refusal's first words; main() exits with status 2 on it, as burger.py does.
pub const DOES_NOT_FIT: &str = "the snapshots do not fit in device memory";

impl Plan {
    pub fn new(o: &Options) -> Result<Plan> {
        let kernel = kernel_name(&o.scheme)?;
        let (steps, t_end) = count_steps(o.dt, o.t_final);
        let n_total = o.nx + 2;
        let h = 2.0 * PI / o.nx as f64;
        Ok(Plan {
            kernel,
            steps,
            t_end,
            n_total,
            row_bytes: n_total * 8,
            rows: steps.checked_div(o.snapshot_every).unwrap_or(0),
            stage_rows: if o.graph { graph_layout(o.snapshot_every, o.graph_batch).0 } else { 0 },
            c1: o.nu * o.dt / (h * h),
            c2: o.dt / (2.0 * h),
        })
    }

    /// Bytes of the snapshot matrix, in f64: an absurd run's size would overflow usize.
    fn snapshot_bytes(&self) -> f64 {
        self.rows as f64 * self.row_bytes as f64
    }

    /// Bytes of the solver's own buffers: two solution rows and the stage block.
    fn solver_bytes(&self) -> f64 {
        (2 + self.stage_rows) as f64 * self.row_bytes as f64
    }

    /// Refuses, before anything is allocated (host arrays included), a run whose snapshots
    /// do not fit in the device's `free` bytes of `total`, keeping `ANALYSIS_HEADROOM`.
    pub fn check_fits(&self, free: usize, total: usize) -> Result<()> {
        let budget = free as f64 - ANALYSIS_HEADROOM * total as f64 - self.solver_bytes();
        if self.snapshot_bytes() <= budget {
            return Ok(());
        }
        let fit = (budget / self.row_bytes as f64).floor().max(0.0) as usize;
        let hint = if fit > 0 {
            format!("--snapshot-every {} or more would fit", self.steps.div_ceil(fit))
        } else {
            "not even one snapshot fits: use a smaller --nx".to_string()
        };
        Err(format!(
            "{DOES_NOT_FIT}: {} snapshots x {} values x 8 bytes = {}, plus {} for the solver, but the device has \
             {} free of {} (keeping {:.0}% for the analysis). Take fewer snapshots ({hint}), or use a smaller --nx \
             or --t-final. Nothing was allocated.",
            self.rows,
            self.n_total,
            format_bytes(self.snapshot_bytes() as usize),
            format_bytes(self.solver_bytes() as usize),
            format_bytes(free),
            format_bytes(total),
            ANALYSIS_HEADROOM * 100.0
        ))
    }

    /// The grid points x and the initial condition u0 = sin(x) with periodic ghosts.
    pub fn initial_condition(&self) -> (Vec<f64>, Vec<f64>) {
        let nx = self.n_total - 2;
        let x: Vec<f64> = (0..nx).map(|i| 2.0 * PI * i as f64 / nx as f64).collect();
        let mut u0 = vec![0.0f64; self.n_total];
        for (u, xi) in u0[1..=nx].iter_mut().zip(&x) {
            *u = xi.sin();
        }
        u0[0] = u0[nx];
        u0[nx + 1] = u0[1];
        (x, u0)
    }
}

/// (snapshot rows per graph batch, steps per batch), as burger.py's graph_layout.
pub fn graph_layout(every: usize, batch: usize) -> (usize, usize) {
    if every == 0 {
        return (0, (batch + (batch & 1)).max(2));
    }
    let rows = (batch / every).max(2);
    (rows, rows * every)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(args: &[&str]) -> Plan {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let o = crate::options::parse_args(&args).ok().flatten().unwrap_or_default();
        Plan::new(&o).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn graph_layout_never_steps_in_place() {
        assert_eq!(graph_layout(1, 200), (200, 200));
        assert_eq!(graph_layout(3, 50), (16, 48));
        assert_eq!(graph_layout(0, 7), (0, 8));
        assert_eq!(graph_layout(500, 200), (2, 1000));
    }

    #[test]
    fn a_run_too_large_is_refused_from_the_sizes_alone() {
        // The run: 2^28 points, 1000 snapshots of 2 GiB. Refused without allocating.
        let p = plan(&["--nx", "268435456", "--t-final", "1"]);
        assert_eq!((p.rows, p.n_total), (1000, 268_435_458));
        let gib = 1usize << 30;
        let refusal = p.check_fits(70 * gib, 80 * gib).err().unwrap_or_default();
        assert!(refusal.starts_with(DOES_NOT_FIT), "{refusal}");
        assert!(refusal.contains("--snapshot-every 36 or more would fit"), "{refusal}");
        assert!(refusal.contains("Nothing was allocated"), "{refusal}");
        // Not even the solver's two rows fit: say so.
        let none = p.check_fits(gib, 2 * gib).err().unwrap_or_default();
        assert!(none.contains("not even one snapshot fits"), "{none}");
        // The seeds' run fits in a small device; an absurd step count does not overflow.
        assert_eq!(plan(&[]).check_fits(200 << 20, 1 << 30), Ok(()));
        let absurd = plan(&["--t-final", "1e300", "--dt", "1e-300"]);
        assert!(absurd.check_fits(usize::MAX / 2, usize::MAX / 2).is_err());
    }

    #[test]
    fn the_initial_condition_is_sin_x_with_periodic_ghosts() {
        let (x, u0) = plan(&["--nx", "8"]).initial_condition();
        assert_eq!((x.len(), u0.len()), (8, 10));
        assert_eq!((u0[0], u0[9]), (u0[8], u0[1]));
        assert!((u0[3] - (2.0 * PI * 2.0 / 8.0).sin()).abs() < 1e-15);
    }
}
