//! The compiled half of `pygpu.profile()` and `pygpu.nvtx`: starts and stops the runtime's
//! activity recorder and hands its records to `pygpu.profiler`, which builds the table, the
//! trace file and the plot from them.

use std::path::PathBuf;

use pyo3::prelude::*;

use crate::runtime::activity::{self, Activity, ActivityKind};
use crate::runtime::backend;

/// One record as Python receives it: (kind, name, start_ns, end_ns, stream, bytes, grid, block).
type Record = (&'static str, String, u64, u64, u64, u64, (u32, u32, u32), (u32, u32, u32));

/// Starts recording the active backend's launches, copies, fills, allocations and
/// synchronisations, and returns the recording's number (for ``activity_stop``); raises where
/// the backend does not record (see ``capabilities().activity_records``), where ``library``
/// (CUPTI, on the cuda backend) cannot be used, or where a recording already runs.
#[pyfunction]
#[pyo3(signature = (library = None))]
pub fn activity_start(py: Python<'_>, library: Option<PathBuf>) -> PyResult<u64> {
    let b = backend()?;
    let token = activity::start(b.kind())?;
    if let Err(e) = py.detach(|| b.start_device_records(library.as_deref())) {
        let _ = activity::stop(token);
        return Err(e.into());
    }
    Ok(token)
}

/// Ends recording number ``token`` (after waiting for the current device, whose records of
/// work still running would be missing): its records in the order they ended, and how many
/// were dropped past the recorder's bound (1,048,576 records) or by the device's recorder;
/// raises where that recording is not the one running.
#[pyfunction]
pub fn activity_stop(py: Python<'_>, token: u64) -> PyResult<(Vec<Record>, u64)> {
    if activity::is_running(token) {
        let b = backend()?;
        py.detach(|| b.stop_device_records());
    }
    let recording = activity::stop(token)?;
    let records = recording
        .activities
        .into_iter()
        .map(|a| {
            let [gx, gy, gz] = a.grid;
            let [bx, by, bz] = a.block;
            (a.kind.name(), a.name, a.start_ns, a.end_ns, a.stream, a.bytes, (gx, gy, gz), (bx, by, bz))
        })
        .collect();
    Ok((records, recording.dropped))
}

/// Nanoseconds on the recorder's clock (monotonic, shared by every thread of the process).
#[pyfunction]
pub fn activity_clock_ns() -> u64 {
    activity::clock_ns()
}

/// Notes a named range (``pygpu.nvtx.range``) from ``start_ns`` to ``end_ns`` on the
/// recorder's clock, on row ``thread``; nothing when no recording runs.
#[pyfunction]
pub fn activity_record_range(name: String, start_ns: u64, end_ns: u64, thread: u64) {
    if activity::recording() {
        activity::record(Activity {
            kind: ActivityKind::Range,
            name,
            start_ns,
            end_ns,
            stream: thread,
            bytes: 0,
            grid: [0; 3],
            block: [0; 3],
        });
    }
}
