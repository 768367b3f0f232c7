//! The Python bindings of the runtime layer. Errors become Python in `errors` only.

pub mod buffer;
pub mod device;
pub mod errors;
pub mod event;
pub mod interop;
pub mod memory;
pub mod module;
pub mod releasable;
pub mod stream;
