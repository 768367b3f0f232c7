//! Linear copies and memsets, synchronous or ordered on a stream.
//!
//! Large copies between pageable host memory and the device go through a ring of page-locked
//! staging buffers: the host-side memcpy of one chunk (split over a few threads) overlaps the
//! DMA of the chunks queued before it. The driver's own pageable path stages a piece at a time
//! and reaches a fraction of the link's speed. Small copies, copies from page-locked memory
//! and copies into a capturing stream stay one driver call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::*;

impl CudaBackend {
    pub(super) unsafe fn cuda_memcpy_htod(
        &self,
        dst: DevicePtr,
        src: *const u8,
        bytes: usize,
        s: Option<StreamHandle>,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.ensure_context()?;
        if let Some(ring) = self.staging_ring(src as usize, bytes, s)? {
            // SAFETY: forwarded from the caller.
            return unsafe { self.staged_htod(&mut lock_ring(&ring), dst, src, bytes, s) };
        }
        // SAFETY: the caller vouches for src; the driver validates dst.
        check(unsafe {
            match s {
                None => (self.api.cuMemcpyHtoD_v2)(dst, src as *const c_void, bytes),
                Some(_) => (self.api.cuMemcpyHtoDAsync_v2)(dst, src as *const c_void, bytes, stream(s)),
            }
        })
    }

    pub(super) unsafe fn cuda_memcpy_dtoh(
        &self,
        dst: *mut u8,
        src: DevicePtr,
        bytes: usize,
        s: Option<StreamHandle>,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.ensure_context()?;
        if let Some(ring) = self.staging_ring(dst as usize, bytes, s)? {
            // SAFETY: forwarded from the caller.
            return unsafe { self.staged_dtoh(&mut lock_ring(&ring), dst, src, bytes, s) };
        }
        // SAFETY: the caller vouches for dst; the driver validates src.
        check(unsafe {
            match s {
                None => (self.api.cuMemcpyDtoH_v2)(dst as *mut c_void, src, bytes),
                Some(_) => (self.api.cuMemcpyDtoHAsync_v2)(dst as *mut c_void, src, bytes, stream(s)),
            }
        })
    }

    pub(super) fn cuda_memcpy_dtod(
        &self,
        dst: DevicePtr,
        src: DevicePtr,
        bytes: usize,
        s: Option<StreamHandle>,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.ensure_context()?;
        // SAFETY: only device addresses, which the driver validates.
        check(unsafe {
            match s {
                None => (self.api.cuMemcpyDtoD_v2)(dst, src, bytes),
                Some(_) => (self.api.cuMemcpyDtoDAsync_v2)(dst, src, bytes, stream(s)),
            }
        })
    }

    pub(super) fn cuda_memset_value(
        &self,
        dst: DevicePtr,
        value: MemsetValue,
        count: usize,
        s: Option<StreamHandle>,
    ) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        self.ensure_context()?;
        // SAFETY: only device addresses, which the driver validates.
        check(unsafe {
            match value {
                MemsetValue::U8(v) => (self.api.cuMemsetD8Async)(dst, v, count, stream(s)),
                MemsetValue::U16(v) => (self.api.cuMemsetD16Async)(dst, v, count, stream(s)),
                MemsetValue::U32(v) => (self.api.cuMemsetD32Async)(dst, v, count, stream(s)),
            }
        })?;
        if s.is_none() {
            // Synchronous semantics, as cudaMemset on the default stream is to the host.
            // SAFETY: a context is current.
            check(unsafe { (self.api.cuStreamSynchronize)(null_mut()) })?;
        }
        Ok(())
    }
}

/// Defaults of the staged path (bench/copies.py on the GPU machine measures the choice; the
/// `PYGPU_STAGED_COPY_*` variables override them without a rebuild).
/// Pageable copies at least this large are staged.
pub(crate) const STAGED_COPY_MIN_BYTES: usize = 4 << 20;
/// Bytes per staging buffer (one chunk of a copy).
pub(crate) const STAGING_CHUNK_BYTES: usize = 2 << 20;
/// Staging buffers per context: chunks in flight at once.
pub(crate) const STAGING_BUFFERS: usize = 4;
/// Host threads sharing one chunk's memcpy.
pub(crate) const STAGING_THREADS: usize = 4;
/// A chunk's memcpy is split only into parts at least this large.
const PARALLEL_PART_MIN_BYTES: usize = 256 << 10;

/// The staged path's settings, read once from the environment: `PYGPU_STAGED_COPY=0` turns
/// it off; `PYGPU_STAGED_COPY_MIN_BYTES`, `_CHUNK_BYTES`, `_BUFFERS`, `_THREADS` set the above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StagingConfig {
    pub enabled: bool,
    pub min_bytes: usize,
    pub chunk_bytes: usize,
    pub buffers: usize,
    pub threads: usize,
}

impl StagingConfig {
    fn from_env(get: impl Fn(&str) -> Option<String>) -> Self {
        let number = |name: &str, default: usize, low: usize, high: usize| {
            get(name).and_then(|v| v.trim().parse::<usize>().ok()).map_or(default, |v| v.clamp(low, high))
        };
        let off = get("PYGPU_STAGED_COPY").map(|v| v.trim().to_ascii_lowercase());
        StagingConfig {
            enabled: !matches!(off.as_deref(), Some("0" | "off" | "false" | "no")),
            min_bytes: number("PYGPU_STAGED_COPY_MIN_BYTES", STAGED_COPY_MIN_BYTES, 1, usize::MAX),
            chunk_bytes: number("PYGPU_STAGED_COPY_CHUNK_BYTES", STAGING_CHUNK_BYTES, 4096, 1 << 30),
            buffers: number("PYGPU_STAGED_COPY_BUFFERS", STAGING_BUFFERS, 2, 64),
            threads: number("PYGPU_STAGED_COPY_THREADS", STAGING_THREADS, 1, 64),
        }
    }
}

fn staging_config() -> &'static StagingConfig {
    static CONFIG: OnceLock<StagingConfig> = OnceLock::new();
    CONFIG.get_or_init(|| StagingConfig::from_env(|name| std::env::var(name).ok()))
}

/// The threads that share a chunk's memcpy; None where one thread does it.
fn memcpy_threads() -> Option<&'static rayon_core::ThreadPool> {
    static POOL: OnceLock<Option<rayon_core::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = staging_config().threads;
        if threads < 2 {
            return None;
        }
        rayon_core::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("pygpu-memcpy-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// Copies `len` bytes from `src` to `dst`, in parts on `pool`'s threads when they are large enough.
/// # Safety
/// `src` is valid for reads and `dst` for writes of `len` bytes, and the ranges do not overlap.
unsafe fn parallel_memcpy(dst: *mut u8, src: *const u8, len: usize, pool: Option<&rayon_core::ThreadPool>) {
    let parts = pool.map_or(1, |p| p.current_num_threads()).min(len / PARALLEL_PART_MIN_BYTES);
    match pool {
        Some(pool) if parts > 1 => {
            let part = len.div_ceil(parts).next_multiple_of(4096);
            let (d, s) = (dst as usize, src as usize);
            pool.scope(|scope| {
                for offset in (0..len).step_by(part) {
                    let n = part.min(len - offset);
                    // SAFETY: each part is a disjoint piece of the ranges the caller vouched for,
                    // and `scope` returns only once every part is copied.
                    scope.spawn(move |_| unsafe {
                        std::ptr::copy_nonoverlapping((s + offset) as *const u8, (d + offset) as *mut u8, n)
                    });
                }
            });
        }
        // SAFETY: forwarded from the caller.
        _ => unsafe { std::ptr::copy_nonoverlapping(src, dst, len) },
    }
}

/// One context's page-locked staging buffers, and for each the event recorded after the DMA
/// that last used it (host addresses and event handles kept as integers).
struct StagingRing {
    buffers: Vec<usize>,
    events: Vec<usize>,
    /// Whether the buffer's event was recorded and not yet waited for.
    pending: Vec<bool>,
    chunk_bytes: usize,
}

/// The rings, by context (address); made on a context's first staged copy, kept for the process.
fn rings() -> &'static Mutex<HashMap<usize, Arc<Mutex<StagingRing>>>> {
    static RINGS: OnceLock<Mutex<HashMap<usize, Arc<Mutex<StagingRing>>>>> = OnceLock::new();
    RINGS.get_or_init(Default::default)
}

fn lock_ring(ring: &Mutex<StagingRing>) -> MutexGuard<'_, StagingRing> {
    // A copy that panicked leaves the ring whole (pending flags only err towards waiting).
    ring.lock().unwrap_or_else(|e| e.into_inner())
}

impl CudaBackend {
    /// The ring for a copy of `bytes` to or from the host memory at `host`, or None when the
    /// copy is better made by one driver call: small, page-locked memory, a capturing stream,
    /// the staged path off, or no staging memory to be had.
    fn staging_ring(
        &self,
        host: usize,
        bytes: usize,
        s: Option<StreamHandle>,
    ) -> Result<Option<Arc<Mutex<StagingRing>>>> {
        let config = staging_config();
        if !config.enabled || bytes < config.min_bytes {
            return Ok(None);
        }
        let mut memory_type: c_uint = 0;
        // SAFETY: valid out-pointer; the driver only looks the address up.
        let known = unsafe {
            (self.api.cuPointerGetAttribute)(
                (&mut memory_type as *mut c_uint).cast(),
                CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                host as CUdeviceptr,
            )
        };
        if known == 0 {
            return Ok(None); // page-locked or registered: the DMA reads it directly
        }
        if s.is_some() {
            let mut capturing: c_int = 0;
            // SAFETY: valid out-pointer; the stream handle came from the caller.
            check(unsafe { (self.api.cuStreamIsCapturing)(stream(s), &mut capturing) })?;
            if capturing != 0 {
                return Ok(None);
            }
        }
        let mut ctx: CUcontext = null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { (self.api.cuCtxGetCurrent)(&mut ctx) })?;
        let mut table = rings().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(ring) = table.get(&(ctx as usize)) {
            return Ok(Some(ring.clone()));
        }
        Ok(self.new_staging_ring(config).map(|ring| {
            let ring = Arc::new(Mutex::new(ring));
            table.insert(ctx as usize, ring.clone());
            ring
        }))
    }

    /// Page-locked buffers and events in the current context, or None (and nothing kept)
    /// where the driver refuses them: copies then go the driver's own way.
    fn new_staging_ring(&self, config: &StagingConfig) -> Option<StagingRing> {
        let mut ring = StagingRing {
            buffers: Vec::new(),
            events: Vec::new(),
            pending: Vec::new(),
            chunk_bytes: config.chunk_bytes,
        };
        for _ in 0..config.buffers {
            let mut buffer: *mut c_void = null_mut();
            let mut event: CUevent = null_mut();
            // SAFETY: valid out-pointers; PORTABLE (1) pins for every context; events without
            // timing (2) are the cheap kind.
            let made = unsafe {
                (self.api.cuMemHostAlloc)(&mut buffer, config.chunk_bytes, 1) == 0
                    && (self.api.cuEventCreate)(&mut event, 2) == 0
            };
            if !buffer.is_null() {
                ring.buffers.push(buffer as usize);
            }
            if !event.is_null() {
                ring.events.push(event as usize);
            }
            if !made {
                for &b in &ring.buffers {
                    // SAFETY: allocated above by cuMemHostAlloc, never handed out.
                    unsafe { (self.api.cuMemFreeHost)(b as *mut c_void) };
                }
                for &e in &ring.events {
                    // SAFETY: created above, never recorded.
                    unsafe { (self.api.cuEventDestroy_v2)(e as CUevent) };
                }
                return None;
            }
            ring.pending.push(false);
        }
        Some(ring)
    }

    /// Waits until the DMA last using staging buffer `k` is done.
    fn wait_staging(&self, ring: &mut StagingRing, k: usize) -> Result<()> {
        if ring.pending[k] {
            // SAFETY: a live event of this ring.
            check(unsafe { (self.api.cuEventSynchronize)(ring.events[k] as CUevent) })?;
            ring.pending[k] = false;
        }
        Ok(())
    }

    /// Queues the DMA of staging buffer `k`'s first `len` bytes by `dma`, then its event.
    fn queue_staging(
        &self,
        ring: &mut StagingRing,
        k: usize,
        st: CUstream,
        dma: impl FnOnce(*mut c_void) -> c_int,
    ) -> Result<()> {
        check(dma(ring.buffers[k] as *mut c_void))?;
        // SAFETY: a live event of this ring, recorded on the caller's stream.
        check(unsafe { (self.api.cuEventRecord)(ring.events[k] as CUevent, st) })?;
        ring.pending[k] = true;
        Ok(())
    }

    /// Host to device through the ring: chunk k+1 is copied into its buffer while chunk k's
    /// DMA runs. Without a stream it returns once the data arrived (cuMemcpyHtoD); on a
    /// stream, once the source was read (the DMAs stay queued, as cuMemcpyHtoDAsync's).
    /// # Safety
    /// `src` is valid for reads of `bytes` bytes.
    unsafe fn staged_htod(
        &self,
        ring: &mut StagingRing,
        dst: DevicePtr,
        src: *const u8,
        bytes: usize,
        s: Option<StreamHandle>,
    ) -> Result<()> {
        let (st, n, chunk, pool) = (stream(s), ring.buffers.len(), ring.chunk_bytes, memcpy_threads());
        let mut last = 0;
        for (index, offset) in (0..bytes).step_by(chunk).enumerate() {
            let (k, len) = (index % n, chunk.min(bytes - offset));
            self.wait_staging(ring, k)?;
            // SAFETY: offset + len <= bytes, within the caller's source; the staging buffer
            // holds `chunk` >= len bytes and no DMA reads it any more (waited for above).
            unsafe { parallel_memcpy(ring.buffers[k] as *mut u8, src.add(offset), len, pool) };
            // SAFETY: the staging buffer is page-locked and stays allocated for the process;
            // the driver validates the device range.
            self.queue_staging(ring, k, st, |buffer| unsafe {
                (self.api.cuMemcpyHtoDAsync_v2)(dst + offset as u64, buffer, len, st)
            })?;
            last = k;
        }
        if s.is_none() {
            // Every chunk was queued in order on one stream: the last one's event covers all.
            self.wait_staging(ring, last)?;
        }
        Ok(())
    }

    /// Device to host through the ring: the DMAs of the next chunks run while the current
    /// one is copied out of its buffer. Returns once `dst` holds the data (as CUDA's pageable
    /// copies do, on a stream too).
    /// # Safety
    /// `dst` is valid for writes of `bytes` bytes.
    unsafe fn staged_dtoh(
        &self,
        ring: &mut StagingRing,
        dst: *mut u8,
        src: DevicePtr,
        bytes: usize,
        s: Option<StreamHandle>,
    ) -> Result<()> {
        let (st, n, chunk, pool) = (stream(s), ring.buffers.len(), ring.chunk_bytes, memcpy_threads());
        let count = bytes.div_ceil(chunk);
        let piece = |index: usize| (index * chunk, chunk.min(bytes - index * chunk));
        let queue = |ring: &mut StagingRing, index: usize| -> Result<()> {
            let (k, (offset, len)) = (index % n, piece(index));
            self.wait_staging(ring, k)?;
            // SAFETY: the staging buffer is page-locked, holds `chunk` >= len bytes and is no
            // longer read (waited for above); the driver validates the device range.
            self.queue_staging(ring, k, st, |buffer| unsafe {
                (self.api.cuMemcpyDtoHAsync_v2)(buffer, src + offset as u64, len, st)
            })
        };
        for index in 0..count.min(n) {
            queue(ring, index)?;
        }
        for index in 0..count {
            let (k, (offset, len)) = (index % n, piece(index));
            self.wait_staging(ring, k)?;
            // SAFETY: the DMA into the buffer is done (waited for above); offset + len <= bytes,
            // within the caller's destination.
            unsafe { parallel_memcpy(dst.add(offset), ring.buffers[k] as *const u8, len, pool) };
            if index + n < count {
                queue(ring, index + n)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_settings_come_from_the_environment_within_bounds() {
        let defaults = StagingConfig::from_env(|_| None);
        assert_eq!(
            defaults,
            StagingConfig {
                enabled: true,
                min_bytes: STAGED_COPY_MIN_BYTES,
                chunk_bytes: STAGING_CHUNK_BYTES,
                buffers: STAGING_BUFFERS,
                threads: STAGING_THREADS
            }
        );
        let set = StagingConfig::from_env(|name| {
            Some(
                match name {
                    "PYGPU_STAGED_COPY" => "off",
                    "PYGPU_STAGED_COPY_MIN_BYTES" => "1048576",
                    "PYGPU_STAGED_COPY_CHUNK_BYTES" => "12",
                    "PYGPU_STAGED_COPY_BUFFERS" => "1000",
                    _ => "not a number",
                }
                .to_string(),
            )
        });
        assert_eq!(
            (set.enabled, set.min_bytes, set.chunk_bytes, set.buffers, set.threads),
            (false, 1 << 20, 4096, 64, 4)
        );
    }

    #[test]
    fn parallel_memcpy_copies_odd_sizes_and_offsets() {
        let pool = rayon_core::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let src: Vec<u8> = (0..3_000_017u32).map(|i| (i * 7 % 251) as u8).collect();
        for (offset, len) in [(0, 0), (1, 1), (3, 262_143), (5, 1_048_579), (17, 3_000_000)] {
            for threads in [None, Some(&pool)] {
                let mut dst = vec![0u8; len + 2];
                // SAFETY: src holds offset + len bytes, dst len + 2; distinct vectors.
                unsafe { parallel_memcpy(dst.as_mut_ptr().add(1), src.as_ptr().add(offset), len, threads) };
                assert_eq!(&dst[1..len + 1], &src[offset..offset + len]);
                assert_eq!((dst[0], dst[len + 1]), (0, 0), "nothing written outside");
            }
        }
    }
}
