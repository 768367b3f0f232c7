use super::*;
use crate::runtime;

/// HIP's names are used in messages only while HIP is the active backend (see
/// `runtime::backend_error_name`), so the tests make it the active one.
fn activate_hip() {
    runtime::set_backend("hip").expect("set_backend(\"hip\")");
    let active = runtime::backend().expect("the HIP backend starts without a GPU");
    assert_eq!(active.kind(), BackendKind::Hip);
}

#[test]
fn device_count_is_a_clean_hip_error_without_a_gpu() {
    activate_hip();
    let hip = HipBackend::new().expect("HipBackend::new() succeeds when libamdhip64 loads");
    assert!(hip.runtime_version() > 0);
    match hip.device_count() {
        Ok(n) => assert!(n > 0, "device_count returned Ok({n})"),
        Err(e @ Error::Api { code: 100, backend: BackendKind::Hip, .. }) => {
            let text = e.to_string();
            println!("device_count() error: {text}");
            assert!(text.contains("hipErrorNoDevice"), "{text}");
            assert_eq!(text, "hipErrorNoDevice (100): no ROCm-capable device is detected");
            assert_eq!(e.code(), 100);
        }
        Err(other) => panic!("unexpected error from device_count: {other:?} ({other})"),
    }
}

#[test]
fn error_names_come_from_hip() {
    let hip = HipBackend::new().expect("HipBackend::new()");
    assert_eq!(hip.error_name(100).as_deref(), Some("hipErrorNoDevice"));
    assert_eq!(hip.error_string(100).as_deref(), Some("no ROCm-capable device is detected"));
    assert_eq!(hip.error_name(600).as_deref(), Some("hipErrorNotReady"));
    assert_eq!(hip.error_name(999).as_deref(), Some("hipErrorUnknown"));
    // A code the runtime does not know keeps its number visible.
    assert_eq!(hip.error_name(123456).as_deref(), Some("hipErrorUnrecognized123456"));
    assert_eq!(hip.error_string(123456).as_deref(), Some("unrecognized error code 123456"));
}

#[test]
fn device_calls_without_a_gpu_fail_with_hip_codes() {
    activate_hip();
    let hip = HipBackend::new().expect("HipBackend::new()");
    if hip.device_count().is_ok() {
        return; // covered by round_trip_on_a_gpu
    }
    assert_eq!(hip.malloc(0), Ok(0));
    assert!(matches!(hip.memset(0, 0, 3, 1, None), Err(Error::InvalidArgument(_))));
    assert!(matches!(hip.memset(0, 0, 3, 0, None), Err(Error::InvalidArgument(_))));
    for (what, result) in [
        ("set_device", hip.set_device(0).map(|_| ())),
        ("get_device", hip.get_device().map(|_| ())),
        ("malloc", hip.malloc(1024).map(|_| ())),
        ("mem_get_info", hip.mem_get_info().map(|_| ())),
        ("device_properties", hip.device_properties(0).map(|_| ())),
        ("stream_create", hip.stream_create(0).map(|_| ())),
        ("event_create", hip.event_create(0).map(|_| ())),
    ] {
        match result {
            Err(e @ Error::Api { backend: BackendKind::Hip, code, .. }) => {
                assert_ne!(code, 0);
                println!("{what}: {e}");
                assert!(e.to_string().starts_with("hipError"), "{what}: {e}");
            }
            other => panic!("{what}: expected a HIP error without a GPU, got {other:?}"),
        }
    }
}

/// Runs only where an AMD GPU is present.
#[test]
fn round_trip_on_a_gpu() {
    let hip = HipBackend::new().expect("HipBackend::new()");
    let Ok(n) = hip.device_count() else { return };
    assert!(n > 0);
    hip.set_device(0).expect("set_device");
    assert_eq!(hip.get_device(), Ok(0));
    let props = hip.device_properties(0).expect("device_properties");
    assert!(!props.name.is_empty() && props.total_global_mem > 0 && props.multi_processor_count > 0);
    let src: Vec<u32> = (0..1024).collect();
    let bytes = src.len() * 4;
    let d = hip.malloc(bytes).expect("malloc");
    let s = hip.stream_create(runtime::STREAM_NON_BLOCKING).expect("stream_create");
    let (e0, e1) = (hip.event_create(0).expect("event"), hip.event_create(0).expect("event"));
    hip.event_record(e0, s).expect("record");
    // SAFETY: src lives until the stream is synchronized below.
    unsafe { hip.memcpy_htod(d, src.as_ptr() as *const u8, bytes, Some(s)) }.expect("htod");
    hip.event_record(e1, s).expect("record");
    hip.stream_synchronize(s).expect("sync");
    assert_eq!(hip.stream_query(s), Ok(true));
    assert!(hip.event_elapsed_ms(e0, e1).expect("elapsed") >= 0.0);
    let mut back = vec![0u32; src.len()];
    // SAFETY: back is valid for bytes; the copy is synchronous.
    unsafe { hip.memcpy_dtoh(back.as_mut_ptr() as *mut u8, d, bytes, None) }.expect("dtoh");
    assert_eq!(back, src);
    hip.memset(d, 0xABCD_1234, 4, 16, None).expect("memset32");
    hip.memset(d, 0x7F, 1, 4, None).expect("memset8");
    // SAFETY: as above.
    unsafe { hip.memcpy_dtoh(back.as_mut_ptr() as *mut u8, d, bytes, None) }.expect("dtoh");
    assert_eq!(back[0], 0x7F7F_7F7F);
    assert_eq!(back[1..16], [0xABCD_1234; 15]);
    assert_eq!(back[16], 16);
    // SAFETY: handles and allocation are ours and unused afterwards.
    unsafe {
        hip.event_destroy(e0).expect("event_destroy");
        hip.event_destroy(e1).expect("event_destroy");
        hip.stream_destroy(s).expect("stream_destroy");
        hip.free(d).expect("free");
    }
}
