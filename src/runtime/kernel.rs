//! What a kernel launch needs, independent of the backend: the launch shape and the
//! argument values, packed once so that a launch (or a graph capturing it) can copy them.

use std::ffi::{c_void, CString};

use smallvec::SmallVec;

use super::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
}

/// Function attributes, numbered as CUfunction_attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FunctionAttribute {
    MaxThreadsPerBlock = 0,
    SharedSizeBytes = 1,
    ConstSizeBytes = 2,
    LocalSizeBytes = 3,
    NumRegs = 4,
    PtxVersion = 5,
    BinaryVersion = 6,
}

impl FunctionAttribute {
    /// The typed attribute for a `CUfunction_attribute` number, where it is one of these.
    pub(crate) fn from_raw(attribute: i32) -> Option<Self> {
        [
            Self::MaxThreadsPerBlock,
            Self::SharedSizeBytes,
            Self::ConstSizeBytes,
            Self::LocalSizeBytes,
            Self::NumRegs,
            Self::PtxVersion,
            Self::BinaryVersion,
        ]
        .into_iter()
        .find(|a| *a as i32 == attribute)
    }
}

/// The most bytes one kernel argument may have: CUDA's and HIP's 4 KiB of kernel parameters.
pub const MAX_ARGUMENT_BYTES: usize = 4096;

/// Arguments kept inline (on the stack), beyond which KernelArgs allocates: launches with up
/// to 16 values and 256 bytes of them (nearly all) allocate nothing.
const INLINE_ARGS: usize = 16;

/// Argument values laid out one after another, each at its natural alignment, the way
/// cuLaunchKernel's `kernelParams` points at them.
#[derive(Debug, Clone, Default)]
pub struct KernelArgs {
    /// 16-byte chunks keep every value at its alignment, up to the 16 bytes of double2,
    /// float4 and complex<double>, which host kernels load with aligned instructions.
    storage: SmallVec<[ArgChunk; INLINE_ARGS]>,
    used: usize,
    offsets: SmallVec<[usize; INLINE_ARGS]>,
    sizes: SmallVec<[usize; INLINE_ARGS]>,
}

#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(16))]
struct ArgChunk([u8; 16]);

impl KernelArgs {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    pub fn clear(&mut self) {
        self.used = 0;
        self.offsets.clear();
        self.sizes.clear();
    }

    /// The size in bytes of each value, in order.
    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }

    /// Appends one value given as its bytes (alignment = min(size rounded up to a power of
    /// two, 16)). Structs passed by value (numpy structured scalars) may be up to
    /// MAX_ARGUMENT_BYTES, the parameter space every CUDA and HIP device has.
    pub fn push_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let size = bytes.len();
        if size == 0 || size > MAX_ARGUMENT_BYTES {
            return Err(Error::InvalidArgument(format!(
                "a kernel argument must be 1 to {MAX_ARGUMENT_BYTES} bytes, not {size}"
            )));
        }
        let chunk = std::mem::size_of::<ArgChunk>();
        let align = size.next_power_of_two().min(chunk);
        let offset = self.used.next_multiple_of(align);
        self.used = offset + size;
        self.storage.resize(self.used.div_ceil(chunk), ArgChunk::default());
        // SAFETY: storage holds at least `used` bytes (resized just above) and u8 has no
        // alignment requirement, so viewing it as bytes is sound.
        let raw =
            unsafe { std::slice::from_raw_parts_mut(self.storage.as_mut_ptr() as *mut u8, self.storage.len() * chunk) };
        raw[offset..offset + size].copy_from_slice(bytes);
        self.offsets.push(offset);
        self.sizes.push(size);
        Ok(())
    }

    pub fn push<T: Copy>(&mut self, value: T) -> Result<()> {
        // SAFETY: T is Copy (plain data) and the slice covers exactly its bytes.
        let bytes = unsafe { std::slice::from_raw_parts(&value as *const T as *const u8, std::mem::size_of::<T>()) };
        self.push_bytes(bytes)
    }

    /// Pointers to each value, valid while `self` is neither moved nor changed. They are
    /// `*mut` only because cuLaunchKernel's signature says so: launches only read them.
    pub fn pointers(&self) -> Vec<*mut c_void> {
        let base = self.storage.as_ptr() as *mut u8;
        // SAFETY: every offset lies inside storage (push_bytes grew it to cover it).
        self.offsets.iter().map(|&o| unsafe { base.add(o) } as *mut c_void).collect()
    }

    /// `launch` of the pointers to each value, in an array on the stack for up to 32 values
    /// (a launch then allocates nothing), as `pointers` gives them.
    pub fn with_pointers<R>(&self, launch: impl FnOnce(&mut [*mut c_void]) -> R) -> R {
        const INLINE: usize = 32;
        if self.offsets.len() > INLINE {
            return launch(&mut self.pointers());
        }
        let base = self.storage.as_ptr() as *mut u8;
        let mut inline = [std::ptr::null_mut(); INLINE];
        for (slot, &o) in inline.iter_mut().zip(&self.offsets) {
            // SAFETY: every offset lies inside storage (push_bytes grew it to cover it).
            *slot = unsafe { base.add(o) } as *mut c_void;
        }
        launch(&mut inline[..self.offsets.len()])
    }

    /// Each value's bytes, in order.
    pub fn values(&self) -> impl Iterator<Item = &[u8]> + '_ {
        // SAFETY: storage holds `used` bytes of plain data, viewed as bytes (no alignment).
        let raw = unsafe { std::slice::from_raw_parts(self.storage.as_ptr() as *const u8, self.used) };
        self.offsets.iter().zip(&self.sizes).map(move |(&o, &size)| &raw[o..o + size])
    }

    /// The values of 8 bytes (the ones that may be device addresses), in order.
    pub fn eight_byte_values(&self) -> impl Iterator<Item = u64> + '_ {
        self.values().filter_map(|v| v.try_into().ok().map(u64::from_ne_bytes))
    }
}

/// A C string for a symbol lookup; a name with a NUL byte cannot name anything.
pub(crate) fn symbol_name(name: &str) -> Result<CString> {
    CString::new(name).map_err(|_| Error::InvalidArgument(format!("a symbol name cannot contain NUL bytes: {name:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_aligned_and_readable() {
        let mut args = KernelArgs::new();
        args.push(0x1122_3344_5566_7788u64).expect("u64");
        args.push(7i32).expect("i32");
        args.push(2.5f64).expect("f64");
        args.push(1u8).expect("u8");
        assert_eq!(args.len(), 4);
        args.push([1.5f64, -2.0f64]).expect("double2");
        let ptrs = args.pointers();
        assert_eq!(ptrs[2] as usize % 8, 0);
        assert_eq!(ptrs[4] as usize % 16, 0);
        // SAFETY: the pointers point at the values pushed above, with their alignment.
        unsafe {
            assert_eq!(*(ptrs[0] as *const u64), 0x1122_3344_5566_7788);
            assert_eq!(*(ptrs[1] as *const i32), 7);
            assert_eq!(*(ptrs[2] as *const f64), 2.5);
            assert_eq!(*(ptrs[3] as *const u8), 1);
        }
        let inline = args.with_pointers(|p| p.to_vec());
        assert_eq!(inline, args.pointers());
        assert_eq!(args.eight_byte_values().collect::<Vec<_>>(), [0x1122_3344_5566_7788, 2.5f64.to_bits()]);
        assert!(args.push_bytes(&[0; MAX_ARGUMENT_BYTES + 1]).is_err());
        assert!(args.push_bytes(&[0; 416]).is_ok());
    }
}
