//! Linear copies and memsets, synchronous or ordered on a stream.
//!
//! Large copies between pageable host memory and the device go through page-locked staging
//! buffers, a chunk at a time, by several threads at once: each takes the next chunk, copies it
//! between the user's memory and a free staging buffer with the CPU, and queues its DMA, so that
//! the CPU copies of some chunks overlap the DMAs of others. The driver's own pageable path
//! stages a piece at a time on one thread and reaches a fraction of the link's speed. Small
//! copies, copies from page-locked memory and copies into a capturing stream stay one driver call.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::*;
use crate::runtime::CUDA_STREAM_PER_THREAD;

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
        let ctx = self.ensure_context()?;
        if let Some(staging) = self.staging(ctx, src as usize, bytes, s)? {
            // SAFETY: forwarded from the caller.
            return unsafe { self.staged_htod(&staging, ctx, dst, src, bytes, s) };
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
        let ctx = self.ensure_context()?;
        if let Some(staging) = self.staging(ctx, dst as usize, bytes, s)? {
            // SAFETY: forwarded from the caller.
            return unsafe { self.staged_dtoh(&staging, ctx, dst, src, bytes, s) };
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

/// Defaults of the staged path, chosen by `bench/copies.py --sweep` on an H200 host (16 cores;
/// docs/benchmarks.md): the least page-locked memory within 5 % of the best (24 MiB per context).
/// The `PYGPU_STAGED_COPY_*` variables override them without a rebuild.
/// Pageable copies at least this large are staged (below it, one driver call was as fast).
pub(crate) const STAGED_COPY_MIN_BYTES: usize = 4 << 20;
/// Bytes per staging buffer: the largest chunk.
pub(crate) const STAGING_CHUNK_BYTES: usize = 2 << 20;
/// Staging buffers per context: chunks being copied or in flight at once.
pub(crate) const STAGING_BUFFERS: usize = 12;
/// Threads copying chunks at once, at most (no more than the machine's cores).
pub(crate) const STAGING_THREADS: usize = 8;
/// Chunks are made smaller than a buffer, down to this, so that every thread gets one.
const MIN_CHUNK_BYTES: usize = 256 << 10;

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
        StagingConfig {
            enabled: !get("PYGPU_STAGED_COPY").is_some_and(|v| crate::runtime::environment::switched_off(&v)),
            min_bytes: number("PYGPU_STAGED_COPY_MIN_BYTES", STAGED_COPY_MIN_BYTES, 1, usize::MAX),
            chunk_bytes: number("PYGPU_STAGED_COPY_CHUNK_BYTES", STAGING_CHUNK_BYTES, 4096, 1 << 30),
            buffers: number("PYGPU_STAGED_COPY_BUFFERS", STAGING_BUFFERS, 1, 64),
            threads: number("PYGPU_STAGED_COPY_THREADS", default_threads(), 1, 64),
        }
    }

    /// The chunk for a copy of `bytes`: a buffer's size, or less, so that each thread gets
    /// one (not below MIN_CHUNK_BYTES, in whole pages).
    fn chunk_for(&self, bytes: usize) -> usize {
        let even = bytes.div_ceil(self.threads).next_multiple_of(4096);
        even.clamp(MIN_CHUNK_BYTES.min(self.chunk_bytes), self.chunk_bytes)
    }
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).min(STAGING_THREADS)
}

fn staging_config() -> &'static StagingConfig {
    static CONFIG: OnceLock<StagingConfig> = OnceLock::new();
    CONFIG.get_or_init(|| StagingConfig::from_env(|name| std::env::var(name).ok()))
}

/// The threads that copy chunks; None where the calling thread does it alone.
fn copy_threads() -> Option<&'static rayon_core::ThreadPool> {
    static POOL: OnceLock<Option<rayon_core::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = staging_config().threads;
        if threads < 2 {
            return None;
        }
        rayon_core::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("pygpu-copy-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// One page-locked staging buffer and the event recorded after the DMA that last used it
/// (host address and event handle kept as integers).
struct StagingBuffer {
    buffer: usize,
    event: usize,
    /// Whether the event was recorded and not yet waited for.
    pending: bool,
}

/// One context's staging buffers. Copies running at once (from several Python threads) share
/// them: a chunk locks one buffer from its CPU copy until its DMA is queued (host to device) or
/// done (device to host).
struct Staging {
    buffers: Vec<Mutex<StagingBuffer>>,
}

/// The staging buffers, by context (address); made on a context's first staged copy, kept for
/// the process.
fn stagings() -> &'static Mutex<HashMap<usize, Arc<Staging>>> {
    static STAGINGS: OnceLock<Mutex<HashMap<usize, Arc<Staging>>>> = OnceLock::new();
    STAGINGS.get_or_init(Default::default)
}

fn lock_buffer(buffer: &Mutex<StagingBuffer>) -> MutexGuard<'_, StagingBuffer> {
    // A chunk that failed leaves the buffer whole (`pending` only errs towards waiting).
    buffer.lock().unwrap_or_else(|e| e.into_inner())
}

/// A host address, stream or context that the chunk threads share, as an integer (raw pointers
/// are not `Sync`); the caller vouches for it for the length of the copy.
#[derive(Clone, Copy)]
struct Raw(usize);

impl CudaBackend {
    /// The staging buffers of the current context `ctx` for a copy of `bytes` to or from the host
    /// memory at `host`, or None when the copy is better made by one driver call: small,
    /// page-locked memory, a capturing stream, the staged path off, or no staging memory to be had.
    fn staging(
        &self,
        ctx: CUcontext,
        host: usize,
        bytes: usize,
        s: Option<StreamHandle>,
    ) -> Result<Option<Arc<Staging>>> {
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
        let mut table = stagings().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(staging) = table.get(&(ctx as usize)) {
            return Ok(Some(staging.clone()));
        }
        Ok(self.new_staging(config).map(|staging| {
            let staging = Arc::new(staging);
            table.insert(ctx as usize, staging.clone());
            staging
        }))
    }

    /// Page-locked buffers and events in the current context, or None (and nothing kept)
    /// where the driver refuses them: copies then go the driver's own way.
    fn new_staging(&self, config: &StagingConfig) -> Option<Staging> {
        let (mut buffers, mut events) = (Vec::new(), Vec::new());
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
                buffers.push(buffer as usize);
            }
            if !event.is_null() {
                events.push(event as usize);
            }
            if !made {
                for &b in &buffers {
                    // SAFETY: allocated above by cuMemHostAlloc, never handed out.
                    unsafe { (self.api.cuMemFreeHost)(b as *mut c_void) };
                }
                for &e in &events {
                    // SAFETY: created above, never recorded.
                    unsafe { (self.api.cuEventDestroy_v2)(e as CUevent) };
                }
                return None;
            }
        }
        let buffers = buffers
            .into_iter()
            .zip(events)
            .map(|(buffer, event)| Mutex::new(StagingBuffer { buffer, event, pending: false }))
            .collect();
        Some(Staging { buffers })
    }

    /// Waits until the DMA last using `b` is done.
    fn wait_staging(&self, b: &mut StagingBuffer) -> Result<()> {
        if b.pending {
            // SAFETY: a live event of this staging.
            check(unsafe { (self.api.cuEventSynchronize)(b.event as CUevent) })?;
            b.pending = false;
        }
        Ok(())
    }

    /// Queues `dma` of buffer `b`, then its event, on `st`.
    fn queue_staging(&self, b: &mut StagingBuffer, st: CUstream, dma: impl FnOnce(*mut c_void) -> c_int) -> Result<()> {
        check(dma(b.buffer as *mut c_void))?;
        // SAFETY: a live event of this staging, recorded on the caller's stream.
        check(unsafe { (self.api.cuEventRecord)(b.event as CUevent, st) })?;
        b.pending = true;
        Ok(())
    }

    /// Runs `chunk(buffer, offset, len)` for every chunk of a copy of `bytes` on stream `st`, on
    /// the copy threads with `ctx` current (or on this thread), each chunk holding a staging buffer.
    /// Returns the first error; the chunks not yet started are then skipped.
    fn for_each_chunk(
        &self,
        staging: &Staging,
        ctx: CUcontext,
        st: CUstream,
        bytes: usize,
        chunk: impl Fn(&mut StagingBuffer, usize, usize) -> Result<()> + Sync,
    ) -> Result<()> {
        let size = staging_config().chunk_for(bytes);
        // The per-thread default stream is another stream on every thread: only the caller's
        // thread may queue on the caller's.
        let threads = copy_threads().filter(|_| st != CUDA_STREAM_PER_THREAD as CUstream);
        let count = bytes.div_ceil(size);
        let next = AtomicUsize::new(0);
        let failure: Mutex<Option<Error>> = Mutex::new(None);
        let ctx = Raw(ctx as usize);
        let work = || {
            // SAFETY: the caller's current context, which outlives the copy (the caller waits).
            if let Err(e) = check(unsafe { (self.api.cuCtxSetCurrent)(ctx.0 as CUcontext) }) {
                failure.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                return;
            }
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= count {
                    return;
                }
                let offset = index * size;
                let mut buffer = lock_buffer(&staging.buffers[index % staging.buffers.len()]);
                if let Err(e) = chunk(&mut buffer, offset, size.min(bytes - offset)) {
                    next.store(count, Ordering::Relaxed);
                    failure.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                    return;
                }
            }
        };
        match threads {
            Some(pool) if count > 1 => pool.scope(|scope| {
                for _ in 0..pool.current_num_threads().min(count) {
                    scope.spawn(|_| work());
                }
            }),
            _ => work(),
        }
        failure.into_inner().unwrap_or_else(|p| p.into_inner()).map_or(Ok(()), Err)
    }

    /// Host to device through the staging buffers. Without a stream it returns once the data
    /// arrived (as cuMemcpyHtoD); on a stream, once the source was read (the DMAs stay queued,
    /// as cuMemcpyHtoDAsync's).
    /// # Safety
    /// `src` is valid for reads of `bytes` bytes, and `ctx` is the current context.
    unsafe fn staged_htod(
        &self,
        staging: &Staging,
        ctx: CUcontext,
        dst: DevicePtr,
        src: *const u8,
        bytes: usize,
        s: Option<StreamHandle>,
    ) -> Result<()> {
        let (st, src) = (Raw(stream(s) as usize), Raw(src as usize));
        self.for_each_chunk(staging, ctx, st.0 as CUstream, bytes, |b, offset, len| {
            self.wait_staging(b)?;
            // SAFETY: offset + len <= bytes, within the caller's source; the staging buffer
            // holds chunk_bytes >= len bytes and no DMA reads it any more (waited for above).
            unsafe { std::ptr::copy_nonoverlapping((src.0 + offset) as *const u8, b.buffer as *mut u8, len) };
            // SAFETY: the staging buffer is page-locked and stays allocated for the process;
            // the driver validates the device range.
            self.queue_staging(b, st.0 as CUstream, |buffer| unsafe {
                (self.api.cuMemcpyHtoDAsync_v2)(dst + offset as u64, buffer, len, st.0 as CUstream)
            })
        })?;
        if s.is_none() {
            // Every chunk went to the legacy stream: its end covers them all.
            // SAFETY: the context is current.
            check(unsafe { (self.api.cuStreamSynchronize)(null_mut()) })?;
        }
        Ok(())
    }

    /// Device to host through the staging buffers: each chunk's DMA, then its CPU copy out of
    /// the buffer, while other threads do the same for the next chunks. Returns once `dst`
    /// holds the data (as CUDA's pageable copies do, on a stream too).
    /// # Safety
    /// `dst` is valid for writes of `bytes` bytes, and `ctx` is the current context.
    unsafe fn staged_dtoh(
        &self,
        staging: &Staging,
        ctx: CUcontext,
        dst: *mut u8,
        src: DevicePtr,
        bytes: usize,
        s: Option<StreamHandle>,
    ) -> Result<()> {
        let (st, dst) = (Raw(stream(s) as usize), Raw(dst as usize));
        self.for_each_chunk(staging, ctx, st.0 as CUstream, bytes, |b, offset, len| {
            self.wait_staging(b)?;
            // SAFETY: the staging buffer is page-locked, holds chunk_bytes >= len bytes and no
            // DMA uses it any more (waited for above); the driver validates the device range.
            self.queue_staging(b, st.0 as CUstream, |buffer| unsafe {
                (self.api.cuMemcpyDtoHAsync_v2)(buffer, src + offset as u64, len, st.0 as CUstream)
            })?;
            self.wait_staging(b)?;
            // SAFETY: the DMA into the buffer is done (waited for above); offset + len <= bytes,
            // within the caller's destination.
            unsafe { std::ptr::copy_nonoverlapping(b.buffer as *const u8, (dst.0 + offset) as *mut u8, len) };
            Ok(())
        })
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
                threads: default_threads()
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
            (false, 1 << 20, 4096, 64, default_threads())
        );
    }

    #[test]
    fn chunks_shrink_so_that_every_thread_gets_one() {
        let config = StagingConfig { enabled: true, min_bytes: 1, chunk_bytes: 8 << 20, buffers: 8, threads: 8 };
        assert_eq!(config.chunk_for(1 << 30), 8 << 20);
        assert_eq!(config.chunk_for(16 << 20), 2 << 20);
        assert_eq!(config.chunk_for((16 << 20) + 1), (2 << 20) + 4096);
        assert_eq!(config.chunk_for(1 << 20), MIN_CHUNK_BYTES);
        let tiny = StagingConfig { chunk_bytes: 4096, ..config };
        assert_eq!(tiny.chunk_for(1 << 20), 4096);
    }
}
