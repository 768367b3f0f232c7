use super::*;

fn code<T: std::fmt::Debug>(r: Result<T>) -> i32 {
    r.expect_err("expected an error").code()
}

#[test]
fn copies_are_confined_to_live_allocations() {
    let b = HostBackend::new();
    let p = b.malloc(64).expect("malloc");
    let data = [7u8; 64];
    // SAFETY: data is valid for 64 bytes.
    unsafe { b.memcpy_htod(p, data.as_ptr(), 64, None) }.expect("in bounds");
    // SAFETY: as above; the backend must refuse before touching memory.
    assert_eq!(code(unsafe { b.memcpy_htod(p + 1, data.as_ptr(), 64, None) }), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(code(b.memcpy_dtod(p, 12345, 8, None)), CUDA_ERROR_INVALID_VALUE);
    let mut out = [0u8; 64];
    // SAFETY: out is valid for 64 bytes.
    unsafe { b.memcpy_dtoh(out.as_mut_ptr(), p, 64, None) }.expect("in bounds");
    assert_eq!(out, data);
    // SAFETY: p is ours and freed once; the second free must be refused.
    unsafe { b.free(p) }.expect("free");
    // SAFETY: a double free is refused by the registry, which is what this checks.
    assert_eq!(code(unsafe { b.free(p) }), CUDA_ERROR_INVALID_VALUE);
    // SAFETY: out is valid; p is no longer an allocation.
    assert_eq!(code(unsafe { b.memcpy_dtoh(out.as_mut_ptr(), p, 1, None) }), CUDA_ERROR_INVALID_VALUE);
}

#[test]
fn memory_accounting_and_out_of_memory() {
    let b = HostBackend::new();
    let (free0, total) = b.mem_get_info().expect("info");
    let p = b.malloc(1 << 20).expect("malloc");
    assert_eq!(b.mem_get_info().expect("info").0, free0 - (1 << 20));
    assert_eq!(code(b.malloc(total)), CUDA_ERROR_MEMORY_ALLOCATION);
    // SAFETY: ours, freed once.
    unsafe { b.free(p) }.expect("free");
    assert_eq!(b.mem_get_info().expect("info").0, free0);
}

#[test]
fn memset_checks_alignment_and_width() {
    let b = HostBackend::new();
    let p = b.malloc(16).expect("malloc");
    b.memset(p, 0xABCD, 2, 8, None).expect("d16");
    let mut out = [0u16; 8];
    // SAFETY: out holds 16 bytes.
    unsafe { b.memcpy_dtoh(out.as_mut_ptr() as *mut u8, p, 16, None) }.expect("copy");
    assert_eq!(out, [0xABCD; 8]);
    assert_eq!(code(b.memset(p + 1, 0, 4, 2, None)), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(code(b.memset(p, 0, 3, 2, None)), CUDA_ERROR_INVALID_VALUE);
    // The width is checked before anything else, as on every backend: even for no elements.
    assert_eq!(code(b.memset(p, 0, 3, 0, None)), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(code(b.memset(0, 0, 8, 0, None)), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(code(b.memset(p, 0, 4, usize::MAX, None)), CUDA_ERROR_INVALID_VALUE);
}

#[test]
fn events_time_in_order_and_handles_die() {
    let b = HostBackend::new();
    let s = b.stream_create(0).expect("stream");
    let (e0, e1) = (b.event_create(0).expect("event"), b.event_create(0).expect("event"));
    assert_eq!(code(b.event_elapsed_ms(e0, e1)), CUDA_ERROR_INVALID_RESOURCE_HANDLE);
    b.event_record(e0, s).expect("record");
    std::thread::sleep(std::time::Duration::from_millis(2));
    b.event_record(e1, s).expect("record");
    assert!(b.event_elapsed_ms(e0, e1).expect("elapsed") >= 1.0);
    // SAFETY: live handles, destroyed once; reuse must be refused.
    unsafe { b.stream_destroy(s) }.expect("destroy");
    assert_eq!(code(b.event_record(e0, s)), CUDA_ERROR_INVALID_RESOURCE_HANDLE);
    // SAFETY: destroying a dead stream is refused by the registry, which is what this checks.
    assert_eq!(code(unsafe { b.stream_destroy(s) }), CUDA_ERROR_INVALID_RESOURCE_HANDLE);
}

#[test]
fn empty_operations_accept_null_pointers() {
    let b = HostBackend::new();
    b.memset(0, 0, 2, 0, None).expect("empty memset");
    b.memcpy_dtod(0, 0, 0, None).expect("empty copy");
    // SAFETY: zero bytes: nothing is read or written.
    unsafe { b.memcpy_htod(0, std::ptr::null(), 0, None) }.expect("empty upload");
}

#[test]
fn device_ordinals_are_checked() {
    let b = HostBackend::new();
    assert_eq!(code(b.set_device(b.device_count().expect("count"))), CUDA_ERROR_INVALID_DEVICE);
    assert_eq!(code(b.set_device(-1)), CUDA_ERROR_INVALID_DEVICE);
    assert_eq!(b.get_device().expect("device"), 0);
}
