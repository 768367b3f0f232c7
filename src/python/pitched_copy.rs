//! `memcpy_pitched`: the 2-D/3-D copy behind `pygpu.driver.Memcpy2D`/`Memcpy3D`.

use pyo3::prelude::*;

use super::buffer::HostView;
use super::memory::device_address;
use super::stream::{stream_handle, CudaStream};
use crate::runtime::pitched::{Memory, PitchedCopy, PitchedSide};
use crate::runtime::{backend, Error};

/// One side as Python gives it: ("host" | "device", buffer or pointer, x_in_bytes, y, z,
/// pitch, slice height).
type SideArgs<'py> = (String, Bound<'py, PyAny>, usize, usize, usize, usize, usize);

/// The side's memory, with the host view that must outlive the copy.
fn side(name: &str, args: &SideArgs<'_>, writable: bool) -> PyResult<(PitchedSide, Option<HostView>, usize)> {
    let (kind, target, x_in_bytes, y, z, pitch, height) = args;
    let (memory, view, capacity) = match kind.as_str() {
        "host" => {
            let view = HostView::get(target, writable)?;
            let len = view.len();
            (Memory::Host(view.ptr() as usize), Some(view), Some(len))
        }
        "device" => {
            let (ptr, capacity) = device_address(target)?;
            (Memory::Device(ptr), None, capacity)
        }
        other => {
            return Err(Error::InvalidArgument(format!("{name} memory is 'host' or 'device', not {other:?}")).into())
        }
    };
    let side = PitchedSide { memory, x_in_bytes: *x_in_bytes, y: *y, z: *z, pitch: *pitch, height: *height };
    Ok((side, view, capacity.unwrap_or(usize::MAX)))
}

/// Copies `depth` slices of `height` rows of `width_in_bytes` bytes from `src` to `dst`
/// (each a side tuple, see `SideArgs`); on `stream` when given. Host sides are checked
/// against their buffers, DeviceAllocations against their size.
#[pyfunction]
#[pyo3(signature = (dst, src, width_in_bytes, height, depth = 1, stream = None))]
pub fn memcpy_pitched(
    dst: SideArgs<'_>,
    src: SideArgs<'_>,
    width_in_bytes: usize,
    height: usize,
    depth: usize,
    stream: Option<&Bound<'_, CudaStream>>,
) -> PyResult<()> {
    let (dst_side, _dst_view, dst_capacity) = side("destination", &dst, true)?;
    let (src_side, _src_view, src_capacity) = side("source", &src, false)?;
    let copy = PitchedCopy { src: src_side, dst: dst_side, width_in_bytes, height, depth };
    copy.validate()?;
    for (name, s, capacity) in [("source", &copy.src, src_capacity), ("destination", &copy.dst, dst_capacity)] {
        let end = copy.end(s).ok_or_else(|| Error::InvalidArgument(format!("the {name} offsets overflow")))?;
        if end > capacity {
            return Err(Error::InvalidArgument(format!(
                "the copy reaches byte {end} of the {name}, which has {capacity} bytes"
            ))
            .into());
        }
    }
    let s = stream.map(|s| stream_handle(Some(s))).transpose()?;
    // SAFETY: host sides are live views (held until this returns) of at least `end` bytes,
    // checked above; an async copy from or to pageable memory completes before returning,
    // and with page-locked memory the caller owns it until the stream is synchronised, as in CUDA.
    Ok(unsafe { backend()?.memcpy_pitched(&copy, s) }?)
}
