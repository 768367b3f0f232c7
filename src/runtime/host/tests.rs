use super::*;
use crate::runtime::{PooledMemory, MEM_ATTACH_GLOBAL, MEM_ATTACH_HOST, MEM_ATTACH_SINGLE};

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

#[test]
fn every_cuda12_device_attribute_has_a_value() {
    let b = HostBackend::new();
    let defined: Vec<i32> = (1..=143).filter(|a| ![138, 141, 142].contains(a)).collect();
    for a in &defined {
        assert!(b.device_attribute(0, *a).is_ok(), "attribute {a}");
    }
    for a in [0, 138, 144, -1] {
        assert_eq!(code(b.device_attribute(0, a)), CUDA_ERROR_INVALID_VALUE);
    }
    assert_eq!(b.device_attribute(0, 10).ok(), Some(32));
    assert_eq!(code(b.device_attribute(5, 10)), CUDA_ERROR_INVALID_DEVICE);
    assert_eq!(b.driver_version().ok(), Some(12080));
}

#[test]
fn registered_and_pinned_memory_is_device_addressable() {
    let b = HostBackend::new();
    let mut data = vec![3u8; 256];
    let ptr = data.as_mut_ptr();
    let mut out = [0u8; 16];
    // SAFETY: out is valid for 16 bytes; ptr is not yet registered, so the copy is refused.
    assert_eq!(code(unsafe { b.memcpy_dtoh(out.as_mut_ptr(), ptr as u64, 16, None) }), CUDA_ERROR_INVALID_VALUE);
    // SAFETY: data outlives the registration (unregistered below).
    unsafe { b.host_register(ptr, 256, HOST_ALLOC_DEVICEMAP) }.expect("register");
    // SAFETY: a registration overlapping the first is refused before anything changes.
    assert_eq!(code(unsafe { b.host_register(ptr.wrapping_add(8), 8, 0) }), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    assert_eq!(b.host_get_device_pointer(ptr.wrapping_add(4)).ok(), Some(ptr as u64 + 4));
    // SAFETY: out is valid for 16 bytes, and the source now lies in registered memory.
    unsafe { b.memcpy_dtoh(out.as_mut_ptr(), ptr as u64 + 240, 16, None) }.expect("registered source");
    assert_eq!(out, [3u8; 16]);
    // SAFETY: one byte past the registration is outside it.
    assert_eq!(code(unsafe { b.memcpy_dtoh(out.as_mut_ptr(), ptr as u64 + 241, 16, None) }), CUDA_ERROR_INVALID_VALUE);
    // SAFETY: registered above, unregistered once.
    unsafe { b.host_unregister(ptr) }.expect("unregister");
    // SAFETY: the second time is refused without touching memory.
    assert_eq!(code(unsafe { b.host_unregister(ptr) }), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    assert_eq!(code(b.host_get_device_pointer(ptr)), CUDA_ERROR_INVALID_VALUE);
    let pinned = b.host_alloc_flags(64, HOST_ALLOC_DEVICEMAP | HOST_ALLOC_WRITECOMBINED).expect("pinned");
    assert_eq!(b.host_get_device_pointer(pinned).ok(), Some(pinned as u64));
    assert_eq!(code(b.host_alloc_flags(64, 0x10)), CUDA_ERROR_INVALID_VALUE);
    // SAFETY: pinned came from host_alloc_flags and is freed once.
    unsafe { b.host_free(pinned) }.expect("free");
    assert_eq!(code(b.host_get_device_pointer(pinned)), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(code(b.ipc_get_mem_handle(0)), CUDA_ERROR_INVALID_VALUE, "not device memory");
}

#[test]
fn pitched_copies_move_rows_and_check_layouts() {
    use crate::runtime::pitched::{Memory, PitchedCopy, PitchedSide};
    let b = HostBackend::new();
    let src: Vec<u8> = (0..48).collect(); // 4 rows of 12 bytes
    let dev = b.malloc(4 * 16).expect("malloc");
    let side = |memory, pitch| PitchedSide { memory, x_in_bytes: 0, y: 0, z: 0, pitch, height: 4 };
    let mut copy = PitchedCopy {
        src: side(Memory::Host(src.as_ptr() as usize), 12),
        dst: side(Memory::Device(dev), 16),
        width_in_bytes: 12,
        height: 4,
        depth: 1,
    };
    // SAFETY: src holds the 48 bytes the copy reads.
    unsafe { b.memcpy_pitched(&copy, None) }.expect("host to device");
    let mut out = [0u8; 64];
    // SAFETY: out is valid for 64 bytes.
    unsafe { b.memcpy_dtoh(out.as_mut_ptr(), dev, 64, None) }.expect("read back");
    for row in 0..4 {
        assert_eq!(&out[row * 16..row * 16 + 12], &src[row * 12..row * 12 + 12]);
        assert_eq!(&out[row * 16 + 12..row * 16 + 16], &[0; 4]);
    }
    copy.dst.pitch = 8;
    // SAFETY: refused before any byte moves.
    assert!(matches!(unsafe { b.memcpy_pitched(&copy, None) }, Err(Error::InvalidArgument(_))));
    copy.dst.pitch = 16;
    copy.dst.y = 1;
    // SAFETY: the last row would end past the allocation: the registry refuses it.
    assert_eq!(code(unsafe { b.memcpy_pitched(&copy, None) }), CUDA_ERROR_INVALID_VALUE);
    let mut after = [0u8; 64];
    // SAFETY: after is valid for 64 bytes.
    unsafe { b.memcpy_dtoh(after.as_mut_ptr(), dev, 64, None) }.expect("read back");
    assert_eq!(after, out, "a refused copy writes nothing");
    copy.depth = 2;
    copy.dst.height = 2;
    assert!(matches!(copy.validate(), Err(Error::InvalidArgument(_))));
    copy.dst.y = usize::MAX;
    copy.dst.height = 4;
    assert!(copy.validate().is_err() && copy.end(&copy.dst).is_none());
    // SAFETY: dev is ours, freed once.
    unsafe { b.free(dev) }.expect("free");
}

#[test]
fn managed_memory_is_a_registered_allocation() {
    let b = HostBackend::new();
    let (free0, _) = b.mem_get_info().expect("info");
    assert_eq!(code(b.malloc_managed(64, 0)), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(code(b.malloc_managed(64, MEM_ATTACH_SINGLE)), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(code(b.malloc_managed(0, MEM_ATTACH_GLOBAL)), CUDA_ERROR_INVALID_VALUE);
    let p = b.malloc_managed(64, MEM_ATTACH_HOST).expect("managed");
    assert_eq!(b.mem_get_info().expect("info").0, free0 - 64);
    let data = [3u8; 64];
    // SAFETY: data is valid for 64 bytes; copies accept managed memory like any allocation.
    unsafe { b.memcpy_htod(p, data.as_ptr(), 64, None) }.expect("in bounds");
    let s = StreamHandle::DEFAULT;
    for flags in [MEM_ATTACH_GLOBAL, MEM_ATTACH_HOST, MEM_ATTACH_SINGLE] {
        b.stream_attach_mem(s, p, 0, flags).expect("attach");
    }
    b.stream_attach_mem(s, p, 64, MEM_ATTACH_GLOBAL).expect("the whole allocation");
    assert_eq!(code(b.stream_attach_mem(s, p, 32, MEM_ATTACH_GLOBAL)), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(code(b.stream_attach_mem(s, p + 8, 0, MEM_ATTACH_GLOBAL)), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(code(b.stream_attach_mem(s, p, 0, 3)), CUDA_ERROR_INVALID_VALUE);
    // SAFETY: ours, freed once.
    unsafe { b.free(p) }.expect("free");
    assert_eq!(b.mem_get_info().expect("info").0, free0);
    assert_eq!(code(b.stream_attach_mem(s, p, 0, MEM_ATTACH_GLOBAL)), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(b.context_api_version().expect("version"), 3020);
}

#[test]
fn allocation_identity_tells_a_later_hand_out_of_a_pooled_block() {
    let b = HostBackend::new();
    let plain = b.malloc(4096).expect("malloc");
    assert_eq!(b.allocation_identity(plain + 100), Some((plain, 4096)));
    assert_eq!(b.allocation_identity(plain + 4096), None);
    let (block, _) = b.pool_malloc(1000, StreamHandle::DEFAULT).expect("pool");
    let first = b.allocation_identity(block + 8).expect("live block");
    // SAFETY: block came from pool_malloc and nothing uses it.
    unsafe { b.pool_free(block, 1000, 0, 0, StreamHandle::DEFAULT) }.expect("pool free");
    assert_eq!(b.allocation_identity(block), None, "an idle block is freed memory");
    let (again, _) = b.pool_malloc(1000, StreamHandle::DEFAULT).expect("pool");
    assert_eq!(again, block, "the cache hands the same block back");
    let second = b.allocation_identity(again).expect("live again");
    assert_eq!(first.0, second.0);
    assert_ne!(first, second, "another hand-out is another allocation");
    // SAFETY: both are ours and freed once.
    unsafe { b.pool_free(again, 1000, 0, 0, StreamHandle::DEFAULT) }.expect("pool free");
    // SAFETY: as above.
    unsafe { b.free(plain) }.expect("free");
    b.pool_trim(0).expect("trim");
    assert_eq!(b.allocation_identity(block), None);
}
