//! Checks of a code object's bytes before a loader sees them: a truncated image must be an
//! error, while the loaders fault on it (dlopen maps segments straight from the file, and a page
//! past its end is SIGBUS) or hang (the CUDA driver, for tens of seconds).

use object::elf::{FileHeader32, FileHeader64, SHT_NOBITS};
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::Endianness;

use super::error::CUDA_ERROR_INVALID_KERNEL_IMAGE;
use super::{BackendKind, Error, Result};

const ELF_MAGIC: &[u8] = b"\x7fELF";
/// `fatBinaryHeader.magic` of CUDA's fatbin container (little-endian 0xBA55ED50).
const FATBIN_MAGIC: u32 = 0xBA55_ED50;

/// Refuses an ELF image (host kernels library, cubin, HSACO) or a fatbin whose headers or
/// contents reach past its end. Other images (PTX text) are the loader's to check.
pub fn check_fits(image: &[u8], backend: BackendKind) -> Result<()> {
    let damaged = |what: String| {
        Error::detailed(
            CUDA_ERROR_INVALID_KERNEL_IMAGE,
            backend,
            format!("this code object is damaged or truncated ({} bytes): {what}", image.len()),
        )
    };
    if image.starts_with(ELF_MAGIC) {
        return match image.get(4) {
            Some(1) => elf_fits::<FileHeader32<Endianness>>(image),
            _ => elf_fits::<FileHeader64<Endianness>>(image),
        }
        .map_err(damaged);
    }
    if image.len() >= 4 && u32::from_le_bytes([image[0], image[1], image[2], image[3]]) == FATBIN_MAGIC {
        return fatbin_fits(image).map_err(damaged);
    }
    Ok(())
}

fn elf_fits<H: FileHeader<Endian = Endianness>>(image: &[u8]) -> std::result::Result<(), String> {
    let header = H::parse(image).map_err(|e| format!("the ELF header: {e}"))?;
    let endian = header.endian().map_err(|e| format!("the ELF header: {e}"))?;
    for segment in header.program_headers(endian, image).map_err(|e| format!("the program headers: {e}"))? {
        segment.data(endian, image).map_err(|()| "a segment ends past the end of the file".to_string())?;
    }
    let sections = header.sections(endian, image).map_err(|e| format!("the section headers: {e}"))?;
    for section in sections.iter() {
        if section.sh_type(endian) != SHT_NOBITS {
            section.data(endian, image).map_err(|e| format!("a section: {e}"))?;
        }
    }
    Ok(())
}

/// A fatbin: a 16-byte header (magic, version, header size, size of what follows), then
/// entries, each a header (kind, version, header size, padded payload size, ...) and payload.
fn fatbin_fits(image: &[u8]) -> std::result::Result<(), String> {
    let u16_at = |at: usize| image.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize);
    let u32_at = |at: usize| image.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    let u64_at =
        |at: usize| image.get(at..at + 8).map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]));
    let (Some(header), Some(body)) = (u16_at(6), u64_at(8)) else {
        return Err("the fatbin header is cut short".to_string());
    };
    let end = (header as u64).checked_add(body).filter(|&e| e <= image.len() as u64);
    let Some(end) = end else {
        return Err(format!("the fatbin header promises {} bytes", header as u64 + body));
    };
    let mut at = header;
    while at < end as usize {
        let (Some(entry_header), Some(payload)) = (u32_at(at + 4), u64_at(at + 8)) else {
            return Err("a fatbin entry header is cut short".to_string());
        };
        let payload = usize::try_from(payload).unwrap_or(usize::MAX);
        let next = at.checked_add(entry_header).and_then(|n| n.checked_add(payload));
        match next {
            Some(next) if next <= end as usize && entry_header > 0 => at = next,
            _ => return Err("a fatbin entry ends past the end of the file".to_string()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_elf_images_are_refused() {
        let image = std::fs::read("/proc/self/exe").expect("this test's own ELF file");
        assert!(check_fits(&image, BackendKind::Host).is_ok());
        for len in [4, 63, 64, 4096, image.len() / 2, image.len() - 1] {
            assert!(check_fits(&image[..len], BackendKind::Host).is_err(), "{len} bytes of {} accepted", image.len());
        }
    }

    #[test]
    fn truncated_fatbins_are_refused() {
        // A header and one entry of 16 + 32 bytes.
        let mut fatbin = Vec::new();
        fatbin.extend_from_slice(&FATBIN_MAGIC.to_le_bytes());
        fatbin.extend_from_slice(&1u16.to_le_bytes());
        fatbin.extend_from_slice(&16u16.to_le_bytes());
        fatbin.extend_from_slice(&48u64.to_le_bytes());
        let mut entry = vec![0u8; 16];
        entry[4..8].copy_from_slice(&16u32.to_le_bytes());
        entry[8..12].copy_from_slice(&32u32.to_le_bytes());
        fatbin.extend_from_slice(&entry);
        fatbin.extend_from_slice(&[0u8; 32]);
        assert!(check_fits(&fatbin, BackendKind::Cuda).is_ok());
        for len in [4, 15, 16, 40, fatbin.len() - 1] {
            assert!(check_fits(&fatbin[..len], BackendKind::Cuda).is_err(), "{len} bytes accepted");
        }
        assert!(check_fits(b"// PTX text\n.version 8.0", BackendKind::Cuda).is_ok());
    }

    #[test]
    fn the_bundled_code_objects_pass_and_their_truncations_do_not() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("python/pygpu/kernels");
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for path in entries.flatten().map(|e| e.path()) {
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            if !matches!(ext, "so" | "fatbin" | "hsaco") {
                continue;
            }
            let image = std::fs::read(&path).expect("readable");
            assert!(check_fits(&image, BackendKind::Cuda).is_ok(), "{} refused", path.display());
            assert!(check_fits(&image[..image.len() / 2], BackendKind::Cuda).is_err(), "half of {}", path.display());
        }
    }
}
