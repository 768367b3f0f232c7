//! The safe types on the host backend: ownership, release and the capture bookkeeping.

use std::path::Path;
use std::sync::Arc;

use super::error::last_error;
use super::*;

/// The host context, or None where another backend is already active in this test process
/// (`cargo test --features hip` makes HIP active for its own tests).
fn host() -> Option<Arc<Context>> {
    set_backend("host").ok()?;
    let ctx = Context::current().ok()?;
    (ctx.kind() == BackendKind::Host).then_some(ctx)
}

#[test]
fn streams_and_events_work_and_release_without_recording_errors() {
    let Some(ctx) = host() else { return };
    last_error(true);
    let stream = Stream::new(&ctx, STREAM_NON_BLOCKING).expect("stream");
    let (start, end) = (Event::new(&ctx, 0).expect("event"), Event::new(&ctx, 0).expect("event"));
    start.record(stream.handle()).expect("record");
    end.record(stream.handle()).expect("record");
    stream.wait_event(&end).expect("wait");
    stream.synchronize().expect("synchronize");
    assert!(stream.query().expect("query") && end.query().expect("query"));
    assert!(start.elapsed_ms(&end).expect("elapsed") >= 0.0);
    assert!(Arc::ptr_eq(stream.context(), &ctx) && ctx.device() == 0);
    assert_eq!(end.close(), Ok(()));
    drop((stream, start));
    assert_eq!(last_error(true), 0, "a clean release records nothing");
    assert!(matches!(Stream::new(&ctx, 7), Err(Error::InvalidArgument(_))));
    assert!(matches!(Event::new(&ctx, 4), Err(Error::InvalidArgument(_))));
}

#[test]
fn device_buffers_copy_plain_values_only_within_bounds() {
    let Some(ctx) = host() else { return };
    let mut buf = DeviceBuffer::alloc(&ctx, 32).expect("alloc");
    buf.copy_from_host(&[1.5f64, -2.0, 3.25, 4.0]).expect("in bounds");
    let mut back = [0.0f64; 2];
    buf.copy_to_host_at(16, &mut back).expect("in bounds");
    assert_eq!(back, [3.25, 4.0]);
    assert!(matches!(buf.copy_to_host_at(24, &mut back), Err(Error::InvalidArgument(_))));
    assert!(matches!(buf.copy_from_host(&[0u64; 5]), Err(Error::InvalidArgument(_))));
    assert!(matches!(buf.copy_to_host_at(usize::MAX, &mut back), Err(Error::InvalidArgument(_))));
}

#[test]
fn functions_and_captured_graphs_keep_their_module_loaded() {
    let Some(ctx) = host() else { return };
    let library = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/pygpu/kernels/libburgers.so");
    let Ok(image) = std::fs::read(&library) else {
        eprintln!("skipped: {} is not built (kernels/build.sh host)", library.display());
        return;
    };
    let module = Module::load(&ctx, &image).expect("load");
    let function = module.get_function("burgers_step_periodic").expect("kernel");
    assert!(matches!(module.get_function("no_such_kernel"), Err(Error::Api { .. })));
    assert_eq!(Arc::strong_count(&module), 2, "the function holds the module");

    let n = 8usize;
    let (mut u, v) =
        (DeviceBuffer::alloc(&ctx, n * 8).expect("alloc"), DeviceBuffer::alloc(&ctx, n * 8).expect("alloc"));
    u.copy_from_host(&[1.0f64; 8]).expect("copy");
    let mut args = KernelArgs::new();
    args.push(u.ptr()).and_then(|_| args.push(v.ptr())).expect("pointers");
    args.push(n as i32).and_then(|_| args.push(0.1f64)).and_then(|_| args.push(0.1f64)).expect("values");
    let config = LaunchConfig { grid: [1, 1, 1], block: [32, 1, 1], shared_bytes: 0 };

    let stream = Stream::new(&ctx, 0).expect("stream");
    stream.begin_capture().expect("begin");
    // SAFETY: burgers_step_periodic(const double*, double*, int, double, double) on two live
    // buffers of n doubles.
    unsafe { function.launch(&config, &stream, &args) }.expect("captured launch");
    let graph = stream.end_capture().expect("end");
    assert_eq!(graph.modules().len(), 1);
    let exec = graph.instantiate().expect("instantiate");
    drop((graph, function));
    // Only the executable graph keeps the code loaded now: closing the module's last other
    // owner must not unload it.
    let module = Arc::try_unwrap(module).err().expect("the graph still holds the module");
    drop(module);
    exec.launch(stream.handle()).expect("replay");
    stream.synchronize().expect("synchronize");
    let mut out = [0.0f64; 8];
    v.copy_to_host(&mut out).expect("copy");
    assert!(out[1..n - 1].iter().all(|&x| (x - 1.0).abs() < 1e-12), "{out:?}");
}
