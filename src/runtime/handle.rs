//! The backends' handles: opaque values that only a backend creates (the field is private
//! to `crate::runtime`), so a safe method taking one can rely on it having come from the
//! backend. Whoever destroys a handle (an `unsafe fn`) vouches that it is not used again.
//!
//! A stream that another library created (CuPy, PyTorch, ...) enters through one door:
//! `ForeignStream::new`, an `unsafe fn` whose caller vouches for the raw value.

/// A backend's stream; `StreamHandle::DEFAULT` is the legacy default stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamHandle(pub(in crate::runtime) usize);

impl StreamHandle {
    pub const DEFAULT: StreamHandle = StreamHandle(0);

    /// The raw value (a `CUstream`/`hipStream_t` address on a GPU), for display and for
    /// handing to other libraries.
    pub fn as_raw(self) -> usize {
        self.0
    }
}

/// A stream created outside pygpu, named by its raw handle. It does not own the stream:
/// the other library keeps it alive and destroys it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ForeignStream(usize);

/// CUDA's special stream values: the legacy and the per-thread default stream.
pub const CUDA_STREAM_LEGACY: usize = 1;
pub const CUDA_STREAM_PER_THREAD: usize = 2;

impl ForeignStream {
    /// # Safety
    /// `raw` is 0, one of CUDA's special values (`CUDA_STREAM_LEGACY`,
    /// `CUDA_STREAM_PER_THREAD`) on the CUDA backend, or a stream of the active backend's
    /// current context that stays alive while this value and the handles made from it are
    /// used. The driver does not check stream handles: a wrong one is undefined behaviour.
    pub unsafe fn new(raw: usize) -> Self {
        ForeignStream(raw)
    }

    /// The stream, for the backend's safe stream methods.
    pub fn handle(self) -> StreamHandle {
        StreamHandle(self.0)
    }

    /// True unless `raw` certainly is not a stream handle: not one of the special values and
    /// either inside the first 64 KiB (never mapped on Linux: `vm.mmap_min_addr`) or not
    /// aligned as a driver's stream object is. It catches made-up small numbers and typos,
    /// not a stale or foreign pointer.
    pub fn plausible(raw: usize) -> bool {
        matches!(raw, 0 | CUDA_STREAM_LEGACY | CUDA_STREAM_PER_THREAD) || (raw >= 1 << 16 && raw.is_multiple_of(8))
    }
}

/// A backend's event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EventHandle(pub(in crate::runtime) usize);

impl EventHandle {
    /// The raw value (a `CUevent`/`hipEvent_t` address on a GPU), for display.
    pub fn as_raw(self) -> usize {
        self.0
    }
}

/// A loaded code object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ModuleHandle(pub(in crate::runtime) usize);

/// A kernel of a loaded module; valid while its module is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FunctionHandle(pub(in crate::runtime) usize);

/// A captured graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GraphHandle(pub(in crate::runtime) usize);

/// A node of a graph (of the graph it was added to; `runtime::graph` checks which).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GraphNodeHandle(pub(in crate::runtime) usize);

/// An instantiated graph, ready to launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GraphExecHandle(pub(in crate::runtime) usize);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_special_values_and_aligned_addresses_are_plausible_streams() {
        for raw in [0, CUDA_STREAM_LEGACY, CUDA_STREAM_PER_THREAD, 0x5555_0000_1000, 1 << 16] {
            assert!(ForeignStream::plausible(raw), "{raw:#x}");
        }
        for raw in [3, 42, 12345, 0xffff, 0x10001, 0x5555_0000_1004] {
            assert!(!ForeignStream::plausible(raw), "{raw:#x}");
        }
    }
}
