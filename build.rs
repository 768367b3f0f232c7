//! Embeds the bundled kernel sources (kernels/*.cu and the headers beside them) in the compiled
//! module, so that every install path (`pip install .`, a git URL, the sdist, `maturin develop`)
//! can build the bundled kernels on first use when no prebuilt binary was shipped
//! (python/pygpu/_toolchain/bundled_sources.py; kernels/README.md says why this mechanism).
//! A tree without the sources cannot give a working package, so the build fails here, loudly.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    let root = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let kernels = root.join("kernels");
    // The folder itself: a source added or removed reruns this script.
    println!("cargo:rerun-if-changed={}", kernels.display());
    let mut files: Vec<PathBuf> = match fs::read_dir(&kernels) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file() && matches!(p.extension().and_then(|e| e.to_str()), Some("cu" | "h")))
            .collect(),
        Err(e) => panic!(
            "pygpu: cannot read the kernel sources in {}: {e}. Build pygpu from a full checkout or its sdist \
             (both contain kernels/*.cu); without them the package would have no kernels.",
            kernels.display()
        ),
    };
    files.sort();
    if !files.iter().any(|p| p.extension().is_some_and(|e| e == "cu")) {
        panic!(
            "pygpu: no kernels/*.cu in {}: build pygpu from a full checkout or its sdist; without them the \
             package would have no kernels.",
            kernels.display()
        );
    }
    let mut code = String::from(
        "/// (file name, contents) of every kernels/*.cu and kernels/*.h, sorted by name.\n\
         pub static BUNDLED_SOURCES: &[(&str, &str)] = &[\n",
    );
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path.file_name().and_then(|n| n.to_str()).expect("kernel file names are UTF-8");
        code.push_str(&format!("    ({name:?}, include_str!({:?})),\n", path.display().to_string()));
    }
    code.push_str("];\n");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    write_if_changed(&out.join("bundled_sources.rs"), &code);
}

/// Leaves the file (and its modification time) alone when the contents are the same.
fn write_if_changed(path: &Path, contents: &str) {
    if fs::read_to_string(path).is_ok_and(|old| old == contents) {
        return;
    }
    fs::write(path, contents).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}
