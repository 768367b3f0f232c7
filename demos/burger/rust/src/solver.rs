//! The solver loop on pygpu's safe runtime types: two ping-pong buffers, one launch per step
//! on one stream, each snapshot copied device-to-device into the snapshot matrix; with
//! --graph, batches of steps recorded once as a graph and replayed. Everything it allocates
//! is owned here and released when the solver is dropped, on every path.

use std::sync::Arc;
use std::time::Instant;

use pygpu::runtime::{
    Context, DeviceBuffer, DevicePtr, Function, GraphExec, KernelArgs, LaunchConfig, Stream, STREAM_NON_BLOCKING,
};

use crate::options::{err, g6, Options};
use crate::plan::{graph_layout, Plan};
use crate::Result;

pub const BLOCK: u32 = 256;

pub struct Solver {
    function: Function,
    stream: Stream,
    config: LaunchConfig,
    args: KernelArgs,
    n_total: i32,
    c1: f64,
    c2: f64,
    row_bytes: usize,
    every: usize,
    a: DeviceBuffer,
    b: DeviceBuffer,
    snapshots: Option<DeviceBuffer>,
    stage: Option<DeviceBuffer>,
    rows_done: usize,
}

/// A batch of steps recorded as a graph.
struct Captured {
    exec: GraphExec,
    /// The buffer each batch starts from (and ends in).
    start: DevicePtr,
    /// Snapshot rows each batch leaves in the stage block.
    stage_rows: usize,
    steps: usize,
}

/// The end of a run: where the solution is, and the loop's wall time.
pub struct Finished {
    pub state: DevicePtr,
    /// The loop, from the first launch to the end of the last step.
    pub seconds: f64,
    /// Before the loop: the graph capture (0 without --graph), as burger.py's setup_seconds.
    pub setup_seconds: f64,
}

impl Solver {
    /// Allocates the buffers (after `Plan::check_fits` has said they fit) and copies `u0`.
    pub fn new(ctx: &Arc<Context>, function: Function, plan: &Plan, o: &Options, u0: &[f64]) -> Result<Solver> {
        let alloc = |bytes: usize, what: &str| DeviceBuffer::alloc(ctx, bytes).map_err(err(what));
        let mut a = alloc(plan.row_bytes, "allocating the solution")?;
        let b = alloc(plan.row_bytes, "allocating the solution")?;
        let snapshots =
            (plan.rows > 0).then(|| alloc(plan.rows * plan.row_bytes, "allocating the snapshot matrix")).transpose()?;
        let stage = (plan.stage_rows > 0)
            .then(|| alloc(plan.stage_rows * plan.row_bytes, "allocating the graph's stage block"))
            .transpose()?;
        a.copy_from_host(u0).map_err(err("copying u0"))?;
        // One thread per interior point, but no more blocks than the device runs at once (one
        // full wave, from the occupancy API): beyond that the grid-stride loop gives each thread
        // several points (as burger.py's launch_shape).
        let mut grid = (o.nx as u32).div_ceil(BLOCK).max(1);
        if let Ok((min_grid, block)) = function.max_potential_block_size(0, BLOCK as i32) {
            let wave = (min_grid.max(1) as u32 * block.max(1) as u32 / BLOCK).max(1);
            grid = grid.min(wave);
        }
        Ok(Solver {
            function,
            stream: Stream::new(ctx, STREAM_NON_BLOCKING).map_err(err("creating a stream"))?,
            config: LaunchConfig { grid: [grid, 1, 1], block: [BLOCK, 1, 1], shared_bytes: 0 },
            args: KernelArgs::new(),
            n_total: plan.n_total as i32,
            c1: plan.c1,
            c2: plan.c2,
            row_bytes: plan.row_bytes,
            every: o.snapshot_every,
            a,
            b,
            snapshots,
            stage,
            rows_done: 0,
        })
    }

    pub fn grid(&self) -> u32 {
        self.config.grid[0]
    }

    /// The snapshot matrix's address, for the zero-copy view the analysis gets.
    pub fn snapshots(&self) -> Option<DevicePtr> {
        self.snapshots.as_ref().map(DeviceBuffer::ptr)
    }

    /// `src` and `dst` are rows of this solver's buffers: `a`, `b` or the stage block.
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
        // src and dst are rows of n_total doubles in buffers this solver owns (see the callers).
        unsafe { self.function.launch(&self.config, &self.stream, &self.args) }.map_err(err("launching the step"))
    }

    fn snapshot_row(&self, row: usize) -> DevicePtr {
        self.snapshots.as_ref().map_or(0, |s| s.ptr() + (row * self.row_bytes) as u64)
    }

    fn stage_row(&self, row: usize) -> DevicePtr {
        self.stage.as_ref().map_or(0, |s| s.ptr() + (row * self.row_bytes) as u64)
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
        let (a, b) = (self.a.ptr(), self.b.ptr());
        let pair = if src == a { [b, a] } else { [a, b] };
        for j in 0..count {
            let dst = pair[j & 1];
            self.step(src, dst)?;
            if self.every > 0 && (first + j).is_multiple_of(self.every) {
                let row = self.snapshot_row(self.rows_done);
                self.stream.memcpy_dtod(row, dst, self.row_bytes).map_err(err("copying a snapshot"))?;
                self.rows_done += 1;
                collected(self.rows_done)?;
            }
            src = dst;
        }
        Ok(src)
    }

    /// Records one batch of steps as a graph. Snapshot steps write straight into the stage block.
    fn capture(&mut self, batch: usize) -> Result<Captured> {
        let (stage_rows, steps) = graph_layout(self.every, batch);
        let (a, b) = (self.a.ptr(), self.b.ptr());
        let start = if stage_rows > 0 { self.stage_row(stage_rows - 1) } else { a };
        self.stream.begin_capture().map_err(err("beginning the capture"))?;
        let recorded = (|| -> Result<()> {
            let mut src = start;
            for j in 0..steps {
                let step = j + 1;
                let dst = if stage_rows > 0 && step.is_multiple_of(self.every) {
                    self.stage_row(step / self.every - 1)
                } else if src == a {
                    b
                } else {
                    a
                };
                self.step(src, dst)?;
                src = dst;
            }
            Ok(())
        })();
        // The capture ends on every path; the graph is released when it goes out of scope.
        let graph = self.stream.end_capture().map_err(err("ending the capture"))?;
        recorded?;
        let exec = graph.instantiate().map_err(err("instantiating the graph"))?;
        Ok(Captured { exec, start, stage_rows, steps })
    }

    /// Runs all the steps (graph batches first with --graph, then plain steps), printing the
    /// seeds' "time =" line after the first; `collect` is called after each snapshot copy.
    pub fn run(&mut self, plan: &Plan, o: &Options, collect: &mut dyn FnMut(usize) -> Result<()>) -> Result<Finished> {
        let setup = Instant::now();
        let captured = match graph_layout(o.snapshot_every, o.graph_batch).1 {
            per_batch if o.graph && plan.steps / per_batch > 0 => Some(self.capture(o.graph_batch)?),
            _ => None,
        };
        let setup_seconds = setup.elapsed().as_secs_f64();
        let clock = Instant::now();
        let mut done = 0usize;
        let mut state = self.a.ptr();
        if let Some(c) = &captured {
            if c.start != state {
                self.stream.memcpy_dtod(c.start, state, self.row_bytes).map_err(err("staging the start"))?;
            }
            for _ in 0..plan.steps / c.steps {
                c.exec.launch(self.stream.handle()).map_err(err("launching the graph"))?;
                if c.stage_rows > 0 {
                    let (dest, stage) = (self.snapshot_row(self.rows_done), self.stage_row(0));
                    let bytes = c.stage_rows * self.row_bytes;
                    self.stream.memcpy_dtod(dest, stage, bytes).map_err(err("copying snapshots"))?;
                    self.rows_done += c.stage_rows;
                    collect(self.rows_done)?;
                }
                if done == 0 {
                    println!("time = {}", g6(o.dt));
                }
                done += c.steps;
            }
            state = c.start;
        }
        if done < plan.steps {
            if done == 0 {
                state = self.plain(state, 1, 1, collect)?;
                println!("time = {}", g6(o.dt));
                done = 1;
            }
            state = self.plain(state, done + 1, plan.steps - done, collect)?;
        }
        self.stream.synchronize().map_err(err("running the solver"))?;
        Ok(Finished { state, seconds: clock.elapsed().as_secs_f64(), setup_seconds })
    }

    /// Copies the row at `state` (in `a`, `b` or the stage block) to `dst`.
    pub fn read(&self, state: DevicePtr, dst: &mut [f64]) -> Result<()> {
        let owner = [Some(&self.a), Some(&self.b), self.stage.as_ref()]
            .into_iter()
            .flatten()
            .find(|buf| (buf.ptr()..buf.ptr() + buf.bytes() as u64).contains(&state))
            .ok_or("the solution is not in the solver's buffers")?;
        owner.copy_to_host_at((state - owner.ptr()) as usize, dst).map_err(err("copying the solution"))
    }
}
