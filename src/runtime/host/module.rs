//! Kernels on the host backend: a kernels shared library built from the same source as
//! the GPU code objects (kernels/pygpu_kernel.h describes its ABI), loaded from memory,
//! and the work a captured stream records instead of running.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Arc;

use libloading::Library;

use crate::runtime::kernel::{symbol_name, KernelArgs, LaunchConfig};
use crate::runtime::{BackendKind, DevicePtr, Error, Result};

/// The kernels-library ABI this loader speaks.
const HOST_ABI_VERSION: c_uint = 1;
const ELF_MAGIC: &[u8] = b"\x7fELF";
// cudaErrorInvalidKernelImage / cudaErrorSymbolNotFound: what a GPU reports for the same faults.
use crate::runtime::error::{
    CUDA_ERROR_INVALID_KERNEL_IMAGE as INVALID_IMAGE, CUDA_ERROR_SYMBOL_NOT_FOUND as SYMBOL_NOT_FOUND,
};

type LaunchFn = unsafe extern "C" fn(*const c_uint, *const c_uint, *mut *mut c_void, usize) -> c_int;

pub(super) struct HostLibrary {
    library: Library,
    kernel_names: Vec<String>,
    /// Held open while loaded: dlopen recognises a path it has loaded before, so the
    /// /proc/self/fd/N name must not be reused by another image meanwhile.
    _image: std::fs::File,
}

fn module_error(code: i32, detail: String) -> Error {
    Error::Detailed { code, backend: BackendKind::Host, detail }
}

impl HostLibrary {
    /// Loads a kernels library from its bytes, through an anonymous in-memory file.
    pub(super) fn load(image: &[u8]) -> Result<Self> {
        if !image.starts_with(ELF_MAGIC) {
            return Err(module_error(
                INVALID_IMAGE,
                "the host backend loads kernels shared libraries (lib<name>.so built by kernels/build.sh); \
                 this image is not an ELF file (PTX, cubin and fatbin are for the cuda backend)"
                    .to_string(),
            ));
        }
        // SAFETY: memfd_create takes a NUL-terminated name and returns a new fd or -1.
        let fd = unsafe { libc::memfd_create(c"pygpu-kernels".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(module_error(
                INVALID_IMAGE,
                format!("memfd_create failed: {}", std::io::Error::last_os_error()),
            ));
        }
        // SAFETY: fd is a fresh descriptor that nothing else owns.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut file = std::fs::File::from(owned);
        file.write_all(image).map_err(|e| module_error(INVALID_IMAGE, format!("writing the image failed: {e}")))?;
        let path = format!("/proc/self/fd/{fd}");
        // SAFETY: loading runs the library's static initialisers, which for a kernels
        // library only fill in its kernel-name table (pygpu_kernel.h); any other ELF
        // library runs its own initialisers, as with ctypes.CDLL.
        let library = unsafe { Library::new(&path) }
            .map_err(|e| module_error(INVALID_IMAGE, format!("the shared library did not load: {e}")))?;
        // SAFETY: a kernels library exports these as the types declared in pygpu_kernel.h.
        let version =
            unsafe { library.get::<*const c_uint>(b"pygpu_host_abi_version\0") }.ok().map(|sym| unsafe { **sym });
        if version != Some(HOST_ABI_VERSION) {
            return Err(module_error(
                INVALID_IMAGE,
                format!("not a pygpu kernels library of ABI {HOST_ABI_VERSION} (found {version:?}): rebuild it with kernels/build.sh"),
            ));
        }
        // SAFETY: the ABI version check above proved this is a pygpu kernels library.
        let kernel_names = unsafe { kernel_names(&library) };
        Ok(HostLibrary { library, kernel_names, _image: file })
    }

    pub(super) fn function(self: &Arc<Self>, name: &str) -> Result<HostFunction> {
        let symbol = symbol_name(&format!("pygpu_launch_{name}"))?;
        // SAFETY: pygpu_launch_<name> has the LaunchFn signature in every kernels library.
        let launch = unsafe { self.library.get::<LaunchFn>(symbol.as_bytes_with_nul()) }.map(|f| *f).map_err(|_| {
            module_error(
                SYMBOL_NOT_FOUND,
                format!("no kernel named {name:?} in this module; it has: {}", self.kernel_names.join(", ")),
            )
        })?;
        let sizes_symbol = symbol_name(&format!("pygpu_param_sizes_{name}"))?;
        // SAFETY: pygpu_param_sizes_<name> is a `const size_t* const` to a 0-terminated
        // array (pygpu_kernel.h); a kernel has at most a few dozen parameters.
        let param_sizes = unsafe { self.library.get::<*const *const usize>(sizes_symbol.as_bytes_with_nul()) }
            .ok()
            .map(|sym| unsafe {
                let array = **sym;
                (0..256).map(|i| *array.add(i)).take_while(|&n| n != 0).collect()
            });
        Ok(HostFunction { _library: Arc::clone(self), launch, param_sizes })
    }

    pub(super) fn global(&self, name: &str) -> Result<(DevicePtr, usize)> {
        let missing = || module_error(SYMBOL_NOT_FOUND, format!("no global named {name:?} in this module"));
        let address = symbol_name(&format!("pygpu_global_{name}"))?;
        let size = symbol_name(&format!("pygpu_global_size_{name}"))?;
        // SAFETY: PYGPU_GLOBAL exports the variable and a `const size_t` with its size.
        unsafe {
            let ptr = self.library.get::<*mut c_void>(address.as_bytes_with_nul()).map_err(|_| missing())?;
            let bytes = self.library.get::<*const usize>(size.as_bytes_with_nul()).map_err(|_| missing())?;
            Ok((*ptr as DevicePtr, **bytes))
        }
    }
}

/// # Safety
/// `library` is a kernels library: `pygpu_kernel_names` holds `pygpu_kernel_count`
/// NUL-terminated strings.
unsafe fn kernel_names(library: &Library) -> Vec<String> {
    // SAFETY: per the function's contract.
    unsafe {
        let (Ok(count), Ok(names)) = (
            library.get::<*const c_uint>(b"pygpu_kernel_count\0"),
            library.get::<*const *const c_char>(b"pygpu_kernel_names\0"),
        ) else {
            return Vec::new();
        };
        (0..**count as usize)
            .map(|i| *(*names).add(i))
            .filter(|p| !p.is_null())
            .map(|p| CStr::from_ptr(p).to_string_lossy().into_owned())
            .collect()
    }
}

/// A kernel's launch entry point; holds its library loaded.
pub(super) struct HostFunction {
    _library: Arc<HostLibrary>,
    launch: LaunchFn,
    pub(super) param_sizes: Option<Vec<usize>>,
}

impl HostFunction {
    /// Runs every thread of the grid on the calling thread.
    /// # Safety
    /// `args` matches the kernel's parameters and its pointers are valid for the kernel.
    pub(super) unsafe fn run(&self, config: &LaunchConfig, args: &KernelArgs) -> Result<()> {
        let mut pointers = args.pointers();
        let argv = if pointers.is_empty() { std::ptr::null_mut() } else { pointers.as_mut_ptr() };
        // SAFETY: grid and block are 3-element arrays; argv points at the packed values;
        // the caller vouches for what the kernel does with them.
        let code =
            unsafe { (self.launch)(config.grid.as_ptr(), config.block.as_ptr(), argv, config.shared_bytes as usize) };
        if code == 0 {
            Ok(())
        } else {
            Err(Error::api(code, BackendKind::Host))
        }
    }
}

/// One piece of work a captured stream recorded; a graph replays them in order.
pub(super) enum HostOp {
    Launch { function: Arc<HostFunction>, config: LaunchConfig, args: KernelArgs },
    HostToDevice { dst: DevicePtr, src: usize, bytes: usize },
    DeviceToHost { dst: usize, src: DevicePtr, bytes: usize },
    DeviceToDevice { dst: DevicePtr, src: DevicePtr, bytes: usize },
    Memset { dst: DevicePtr, value: u32, element_size: usize, count: usize },
}
