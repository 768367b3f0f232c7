//! The runtime compilers, NVRTC (CUDA) and hiprtc (HIP), loaded at run time by our own
//! loader: a missing or unexpected library is an error value, never a panic, and any
//! NVRTC major (libnvrtc.so.12, .so.13) works, since only calls that every version since
//! CUDA 11.2 has are used. The two libraries have the same C API under different prefixes.
//! Which file to load is the caller's choice (the Python side searches pip wheels, conda,
//! CUDA_PATH and the system path).

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use libloading::Library;

use super::error::{Error, Result};

/// Which runtime compiler a library is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RtcKind {
    Nvrtc,
    Hiprtc,
}

impl RtcKind {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "nvrtc" => Ok(RtcKind::Nvrtc),
            "hiprtc" => Ok(RtcKind::Hiprtc),
            other => {
                Err(Error::InvalidArgument(format!("unknown runtime compiler {other:?}: use \"nvrtc\" or \"hiprtc\"")))
            }
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            RtcKind::Nvrtc => "nvrtc",
            RtcKind::Hiprtc => "hiprtc",
        }
    }
}

/// What a compilation produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtcOutput {
    /// NVRTC: a cubin for the `--gpu-architecture=sm_XY` given.
    Cubin,
    /// NVRTC: PTX for the `compute_XY` given.
    Ptx,
    /// hiprtc: a code object.
    Code,
}

impl RtcOutput {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "cubin" => Ok(RtcOutput::Cubin),
            "ptx" => Ok(RtcOutput::Ptx),
            "code" => Ok(RtcOutput::Code),
            other => Err(Error::InvalidArgument(format!(
                "unknown compiler output {other:?}: use \"cubin\", \"ptx\" or \"code\""
            ))),
        }
    }

    fn getter(self) -> &'static str {
        match self {
            RtcOutput::Cubin => "CUBIN",
            RtcOutput::Ptx => "PTX",
            RtcOutput::Code => "Code",
        }
    }
}

type Program = *mut c_void;
type VersionFn = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;
type CreateFn = unsafe extern "C" fn(
    *mut Program,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> c_int;
type CompileFn = unsafe extern "C" fn(Program, c_int, *const *const c_char) -> c_int;
type SizeFn = unsafe extern "C" fn(Program, *mut usize) -> c_int;
type FillFn = unsafe extern "C" fn(Program, *mut c_char) -> c_int;
type DestroyFn = unsafe extern "C" fn(*mut Program) -> c_int;
type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;
type CountFn = unsafe extern "C" fn(*mut c_int) -> c_int;
type ArchsFn = unsafe extern "C" fn(*mut c_int) -> c_int;

/// One loaded runtime compiler library and the entry points pygpu uses.
pub struct RuntimeCompiler {
    kind: RtcKind,
    path: PathBuf,
    version: VersionFn,
    create: CreateFn,
    compile: CompileFn,
    log_size: SizeFn,
    log: FillFn,
    destroy: DestroyFn,
    error_string: ErrorStringFn,
    /// Held so the function pointers above stay valid; never unloaded (see `load`).
    _library: Library,
}

/// The result of one compilation: the binary, or None when the source or options were
/// rejected, and the compiler's log either way.
pub struct Compiled {
    pub binary: Option<Vec<u8>>,
    pub log: String,
}

static LOADED: Mutex<Option<HashMap<(RtcKind, PathBuf), &'static RuntimeCompiler>>> = Mutex::new(None);

fn unavailable(kind: RtcKind, path: &Path, why: impl std::fmt::Display) -> Error {
    Error::Unavailable(format!("cannot use {} at {}: {why}", kind.prefix(), path.display()))
}

/// The error and its causes: libloading's own text ("dlopen failed") leaves out dlerror's.
pub(crate) fn with_sources(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text.push_str(": ");
        text.push_str(&e.to_string());
        cause = e.source();
    }
    text
}

/// # Safety
/// `T` is the C type of the symbol `name` in `library`.
unsafe fn symbol<T: Copy>(library: &Library, kind: RtcKind, path: &Path, name: &str) -> Result<T> {
    let full = format!("{}{name}\0", kind.prefix());
    // SAFETY: per the function's contract.
    unsafe { library.get::<T>(full.as_bytes()) }
        .map(|s| *s)
        .map_err(|e| unavailable(kind, path, format!("it has no {}{name} ({e})", kind.prefix())))
}

impl RuntimeCompiler {
    /// Loads the library at `path` once per process; later calls return the same object.
    /// Libraries are never unloaded: programs may be compiling on other threads, and a
    /// process needs at most a few.
    pub fn load(kind: RtcKind, path: &Path) -> Result<&'static RuntimeCompiler> {
        let mut loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner());
        let map = loaded.get_or_insert_with(HashMap::new);
        if let Some(rtc) = map.get(&(kind, path.to_path_buf())) {
            return Ok(rtc);
        }
        // SAFETY: NVRTC's and hiprtc's initialisers only set up the libraries themselves.
        let library = unsafe { Library::new(path) }.map_err(|e| unavailable(kind, path, with_sources(&e)))?;
        // SAFETY: each symbol has the C signature of the NVRTC/hiprtc headers (nvrtc.h, hiprtc.h).
        let rtc = unsafe {
            RuntimeCompiler {
                kind,
                path: path.to_path_buf(),
                version: symbol(&library, kind, path, "Version")?,
                create: symbol(&library, kind, path, "CreateProgram")?,
                compile: symbol(&library, kind, path, "CompileProgram")?,
                log_size: symbol(&library, kind, path, "GetProgramLogSize")?,
                log: symbol(&library, kind, path, "GetProgramLog")?,
                destroy: symbol(&library, kind, path, "DestroyProgram")?,
                error_string: symbol(&library, kind, path, "GetErrorString")?,
                _library: library,
            }
        };
        let rtc: &'static RuntimeCompiler = Box::leak(Box::new(rtc));
        map.insert((kind, path.to_path_buf()), rtc);
        Ok(rtc)
    }

    fn fail(&self, call: &str, code: c_int) -> Error {
        Error::Unavailable(format!(
            "{}{call} failed with {} ({code}) in {}",
            self.kind.prefix(),
            self.describe(code),
            self.path.display()
        ))
    }

    fn describe(&self, code: c_int) -> String {
        // SAFETY: GetErrorString takes any code and returns a static string or NULL.
        let text = unsafe { (self.error_string)(code) };
        if text.is_null() {
            format!("error {code}")
        } else {
            // SAFETY: a NUL-terminated static string from the library.
            unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
        }
    }

    /// (major, minor) of the library.
    pub fn version(&self) -> Result<(i32, i32)> {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: two out-parameters.
        let code = unsafe { (self.version)(&mut major, &mut minor) };
        if code != 0 {
            return Err(self.fail("Version", code));
        }
        Ok((major, minor))
    }

    /// The `sm_XY` numbers (XY) this NVRTC can compile for; hiprtc has no such list.
    pub fn supported_archs(&self) -> Result<Vec<i32>> {
        if self.kind != RtcKind::Nvrtc {
            return Err(Error::InvalidArgument("hiprtc does not list its architectures".into()));
        }
        // SAFETY: NVRTC has had these two since CUDA 11.2 with these C signatures.
        let (count_fn, archs_fn): (CountFn, ArchsFn) = unsafe {
            (
                symbol(&self._library, self.kind, &self.path, "GetNumSupportedArchs")?,
                symbol(&self._library, self.kind, &self.path, "GetSupportedArchs")?,
            )
        };
        let mut count = 0;
        // SAFETY: one out-parameter.
        let code = unsafe { count_fn(&mut count) };
        if code != 0 {
            return Err(self.fail("GetNumSupportedArchs", code));
        }
        let mut archs = vec![0; usize::try_from(count).unwrap_or(0)];
        // SAFETY: the buffer holds the `count` entries NVRTC writes.
        let code = unsafe { archs_fn(archs.as_mut_ptr()) };
        if code != 0 {
            return Err(self.fail("GetSupportedArchs", code));
        }
        Ok(archs)
    }

    /// Compiles `source` (named `name` in messages) with `options`. A source or option
    /// the compiler rejects gives `binary: None` and its log; an unusable library is an error.
    pub fn compile(&self, source: &str, name: &str, options: &[String], output: RtcOutput) -> Result<Compiled> {
        let bad = |what: &str| Error::InvalidArgument(format!("the {what} contains a NUL character"));
        let source = CString::new(source).map_err(|_| bad("kernel source"))?;
        let name = CString::new(name).map_err(|_| bad("program name"))?;
        let options: Vec<CString> =
            options.iter().map(|o| CString::new(o.as_str()).map_err(|_| bad("option"))).collect::<Result<_>>()?;
        let option_ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let option_count =
            c_int::try_from(option_ptrs.len()).map_err(|_| Error::InvalidArgument("too many options".into()))?;
        // SAFETY: each getter has the (program, size_t*) / (program, char*) signature.
        let (size_fn, fill_fn): (SizeFn, FillFn) = unsafe {
            (
                symbol(&self._library, self.kind, &self.path, &format!("Get{}Size", output.getter()))?,
                symbol(&self._library, self.kind, &self.path, &format!("Get{}", output.getter()))?,
            )
        };

        let mut program: Program = std::ptr::null_mut();
        // SAFETY: valid NUL-terminated strings; no headers are passed (count 0, NULL lists).
        let code = unsafe {
            (self.create)(&mut program, source.as_ptr(), name.as_ptr(), 0, std::ptr::null(), std::ptr::null())
        };
        if code != 0 {
            return Err(self.fail("CreateProgram", code));
        }
        let program = ProgramGuard { rtc: self, program };
        let options_arg = if option_ptrs.is_empty() { std::ptr::null() } else { option_ptrs.as_ptr() };
        // SAFETY: the program was created above; `option_count` pointers to live strings.
        let status = unsafe { (self.compile)(program.program, option_count, options_arg) };
        let log = program.read(self.log_size, self.log).unwrap_or_default();
        let log_text = String::from_utf8_lossy(log.split(|&b| b == 0).next().unwrap_or(&[])).into_owned();
        if status != 0 {
            let message = format!("{} ({status})", self.describe(status));
            let log = if log_text.trim().is_empty() { message } else { format!("{message}\n{log_text}") };
            return Ok(Compiled { binary: None, log });
        }
        let binary =
            program.read(size_fn, fill_fn).map_err(|code| self.fail(&format!("Get{}", output.getter()), code))?;
        Ok(Compiled { binary: Some(binary), log: log_text })
    }
}

/// Destroys the program however `compile` returns.
struct ProgramGuard<'a> {
    rtc: &'a RuntimeCompiler,
    program: Program,
}

impl ProgramGuard<'_> {
    /// Reads a (size, fill) pair of outputs: the log, PTX, cubin or code object.
    fn read(&self, size_fn: SizeFn, fill_fn: FillFn) -> std::result::Result<Vec<u8>, c_int> {
        let mut size = 0usize;
        // SAFETY: a live program and one out-parameter.
        let code = unsafe { size_fn(self.program, &mut size) };
        if code != 0 {
            return Err(code);
        }
        let mut buffer = vec![0u8; size];
        if size == 0 {
            return Ok(buffer);
        }
        // SAFETY: the buffer holds the `size` bytes the library said it writes.
        let code = unsafe { fill_fn(self.program, buffer.as_mut_ptr().cast()) };
        if code != 0 {
            return Err(code);
        }
        Ok(buffer)
    }
}

impl Drop for ProgramGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: created by CreateProgram and destroyed only here. Its status is ignored:
        // destroying a valid program cannot fail, and a destructor must not.
        unsafe { (self.rtc.destroy)(&mut self.program) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_library_is_an_error_not_a_panic() {
        let result = RuntimeCompiler::load(RtcKind::Nvrtc, Path::new("/nonexistent/libnvrtc.so.12"));
        match result {
            Err(Error::Unavailable(msg)) => assert!(msg.contains("/nonexistent/libnvrtc.so.12"), "{msg}"),
            _ => panic!("expected Unavailable"),
        }
    }

    #[test]
    fn names_parse() {
        assert_eq!(RtcKind::parse("hiprtc").ok(), Some(RtcKind::Hiprtc));
        assert!(RtcKind::parse("nvcc").is_err());
        assert_eq!(RtcOutput::parse("cubin").ok(), Some(RtcOutput::Cubin));
        assert!(RtcOutput::parse("elf").is_err());
    }
}
