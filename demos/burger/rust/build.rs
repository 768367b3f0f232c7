// The embedded interpreter is a shared libpython: record its folder as the binary's rpath, so a
// libpython outside the system's library path (pyenv, conda, a venv's base) is found at run time.
// For a cross build (PYO3_CROSS_LIB_DIR) the folder is the build machine's copy, absent on the
// target, where the system path finds it.
fn main() {
    pyo3_build_config::add_libpython_rpath_link_args();
}
