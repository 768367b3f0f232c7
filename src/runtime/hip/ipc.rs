//! Memory shared with other processes (hipIpc*); events are not shared on this backend yet.

use super::*;

impl Interprocess for HipBackend {
    fn ipc_get_mem_handle(&self, ptr: DevicePtr) -> Result<[u8; IPC_HANDLE_BYTES]> {
        let mut handle = hipIpcMemHandle_t { reserved: [0; IPC_HANDLE_BYTES] };
        // SAFETY: valid out-pointer; the runtime checks that ptr is device memory.
        check(unsafe { hipIpcGetMemHandle(&mut handle, ptr as *mut c_void) })?;
        Ok(handle.reserved.map(|b| b as u8))
    }

    fn ipc_open_mem_handle(&self, handle: &[u8; IPC_HANDLE_BYTES], flags: u32) -> Result<DevicePtr> {
        let handle = hipIpcMemHandle_t { reserved: handle.map(|b| b as c_char) };
        let mut ptr: *mut c_void = null_mut();
        // SAFETY: valid out-pointer; the handle is opaque bytes the runtime validates.
        check(unsafe { hipIpcOpenMemHandle(&mut ptr, handle, flags) })?;
        Ok(ptr as DevicePtr)
    }

    unsafe fn ipc_close_mem_handle(&self, ptr: DevicePtr) -> Result<()> {
        // SAFETY: the caller hands over a mapping from ipc_open_mem_handle.
        check(unsafe { hipIpcCloseMemHandle(ptr as *mut c_void) })
    }

    fn ipc_get_event_handle(&self, _event: EventHandle) -> Result<[u8; IPC_HANDLE_BYTES]> {
        Err(self.unsupported("interprocess events"))
    }

    fn ipc_open_event_handle(&self, _handle: &[u8; IPC_HANDLE_BYTES]) -> Result<EventHandle> {
        Err(self.unsupported("interprocess events"))
    }
}
