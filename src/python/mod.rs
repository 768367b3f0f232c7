//! The Python bindings: everything here is PyO3 over `crate::runtime`, which never imports
//! from this layer. Errors become Python in `errors` only.
//!
//! Inside, dependencies point one way, from the foundations up:
//! `errors`, `releasable`, `buffer`, `dtypes` (no binding classes) <- `stream` (streams and
//! the graphs they capture) <- `event`, `memory` with `array_storage` (GPUArray's compiled base:
//! its allocation and layout, which copies and launches read) <- `kernel_signature`, `kernel_args` <-
//! `module` <- `prepared_call`; `device`, `interop`, `compiler` and the typed classes `array`,
//! `ptr_wrapper` sit on top, and `status_api` (PyGPU's status-returning names) over the calls.

pub mod activity;
pub mod array;
pub mod array_storage;
pub mod buffer;
pub mod bundled_sources;
pub mod capabilities;
pub mod compiler;
pub mod device;
pub mod device_memory_pool;
pub mod dtypes;
pub mod errors;
pub mod event;
pub mod graph;
pub mod host_registration;
pub mod int_args;
pub mod interop;
pub mod ipc;
pub mod kernel_args;
pub mod kernel_declaration;
pub mod kernel_signature;
pub mod managed;
pub mod memory;
pub mod memory_pool;
pub mod module;
pub mod page_locked_pool;
pub mod peer;
pub mod pitched_copy;
pub mod prepared_call;
pub mod ptr_wrapper;
pub mod releasable;
pub mod status_api;
pub mod stream;
