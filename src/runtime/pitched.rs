//! A pitched copy: `height` rows of `width_in_bytes` bytes in each of `depth` slices, between
//! host and device memory laid out with their own pitches (bytes from one row to the next)
//! and slice heights (rows from one slice to the next), as `cuMemcpy2D`/`cuMemcpy3D` take it.

use super::error::CUDA_ERROR_INVALID_VALUE;
use super::{Backend, DevicePtr, Error, Result, StreamHandle};

/// Where one side of a copy lives: host memory (an address) or device memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Memory {
    Host(usize),
    Device(DevicePtr),
}

/// One side of a copy: its memory, the copy's origin in it, and its layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PitchedSide {
    pub memory: Memory,
    pub x_in_bytes: usize,
    pub y: usize,
    pub z: usize,
    pub pitch: usize,
    /// Rows per slice; only used when the copy has more than one slice, or `z` > 0.
    pub height: usize,
}

impl PitchedSide {
    /// The byte offset (from the side's base) of row `row` of slice `slice` of the copy.
    pub fn offset(&self, row: usize, slice: usize) -> Option<usize> {
        let slab = self.pitch.checked_mul(self.height)?;
        self.x_in_bytes
            .checked_add(self.y.checked_add(row)?.checked_mul(self.pitch)?)?
            .checked_add(self.z.checked_add(slice)?.checked_mul(slab)?)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PitchedCopy {
    pub src: PitchedSide,
    pub dst: PitchedSide,
    pub width_in_bytes: usize,
    pub height: usize,
    pub depth: usize,
}

fn invalid(message: String) -> Error {
    Error::InvalidArgument(message)
}

impl PitchedCopy {
    pub fn is_empty(&self) -> bool {
        self.width_in_bytes == 0 || self.height == 0 || self.depth == 0
    }

    /// One past the last byte the copy touches on `side`, from its base.
    pub fn end(&self, side: &PitchedSide) -> Option<usize> {
        if self.is_empty() {
            return Some(0);
        }
        side.offset(self.height - 1, self.depth - 1)?.checked_add(self.width_in_bytes)
    }

    /// Checks the layout: each pitch holds a row, each slice its rows, nothing overflows.
    pub fn validate(&self) -> Result<()> {
        for (name, side) in [("source", &self.src), ("destination", &self.dst)] {
            if self.is_empty() {
                break;
            }
            if side.pitch < self.width_in_bytes {
                return Err(invalid(format!(
                    "the {name} pitch ({}) is smaller than the row width ({} bytes)",
                    side.pitch, self.width_in_bytes
                )));
            }
            if (self.depth > 1 || side.z > 0) && side.height < self.height {
                return Err(invalid(format!(
                    "the {name} slice height ({} rows) is smaller than the copy's height ({})",
                    side.height, self.height
                )));
            }
            if self.end(side).is_none() {
                return Err(invalid(format!("the {name} offsets of this copy overflow")));
            }
        }
        Ok(())
    }

    /// Copies row by row with the backend's linear copies (one copy when every row is
    /// contiguous on both sides): the way for backends without a native pitched copy.
    ///
    /// # Safety
    /// Host sides are valid for the bytes the copy touches until the copy has completed.
    pub unsafe fn by_rows<B: Backend + ?Sized>(&self, backend: &B, stream: Option<StreamHandle>) -> Result<()> {
        self.validate()?;
        if self.is_empty() {
            return Ok(());
        }
        let dense = |s: &PitchedSide| s.pitch == self.width_in_bytes && (self.depth == 1 || s.height == self.height);
        let (rows, row_bytes) = if dense(&self.src) && dense(&self.dst) {
            (1, self.width_in_bytes * self.height * self.depth)
        } else {
            (self.height * self.depth, self.width_in_bytes)
        };
        if let (Memory::Host(_), Memory::Host(_), Some(s)) = (self.src.memory, self.dst.memory, stream) {
            // Host-to-host copies happen here, in stream order: earlier work first.
            backend.stream_synchronize(s)?;
        }
        for i in 0..rows {
            let (row, slice) = (i % self.height, i / self.height);
            let overflow = || Error::api(CUDA_ERROR_INVALID_VALUE, backend.kind());
            let src = self.src.offset(row, slice).ok_or_else(overflow)?;
            let dst = self.dst.offset(row, slice).ok_or_else(overflow)?;
            match (self.src.memory, self.dst.memory) {
                (Memory::Host(h), Memory::Device(d)) => {
                    // SAFETY: the caller vouches for host sides over every byte the copy touches.
                    unsafe { backend.memcpy_htod(d + dst as u64, (h + src) as *const u8, row_bytes, stream) }?
                }
                (Memory::Device(d), Memory::Host(h)) => {
                    // SAFETY: as above.
                    unsafe { backend.memcpy_dtoh((h + dst) as *mut u8, d + src as u64, row_bytes, stream) }?
                }
                (Memory::Device(s), Memory::Device(d)) => {
                    backend.memcpy_dtod(d + dst as u64, s + src as u64, row_bytes, stream)?
                }
                // SAFETY: as above; rows of distinct buffers (or of one, like memmove) may overlap.
                (Memory::Host(s), Memory::Host(d)) => unsafe {
                    std::ptr::copy((s + src) as *const u8, (d + dst) as *mut u8, row_bytes)
                },
            }
        }
        Ok(())
    }
}
