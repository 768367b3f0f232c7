//! Memory and events shared with other processes (cuIpc*).

use super::*;

impl Interprocess for CudaBackend {
    fn ipc_get_mem_handle(&self, ptr: DevicePtr) -> Result<[u8; IPC_HANDLE_BYTES]> {
        self.ensure_context()?;
        let mut handle = CUipcMemHandle { reserved: [0; IPC_HANDLE_BYTES] };
        // SAFETY: valid out-pointer; the driver checks that ptr is device memory of its own.
        check(unsafe { (self.api.cuIpcGetMemHandle)(&mut handle, ptr) })?;
        Ok(handle.reserved.map(|b| b as u8))
    }

    fn ipc_open_mem_handle(&self, handle: &[u8; IPC_HANDLE_BYTES], flags: u32) -> Result<DevicePtr> {
        self.ensure_context()?;
        let handle = CUipcMemHandle { reserved: handle.map(|b| b as c_char) };
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: valid out-pointer; the handle is opaque bytes the driver validates.
        check(unsafe { (self.api.cuIpcOpenMemHandle_v2)(&mut ptr, handle, flags) })?;
        Ok(ptr)
    }

    unsafe fn ipc_close_mem_handle(&self, ptr: DevicePtr) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: the caller hands over a mapping from ipc_open_mem_handle.
        check(unsafe { (self.api.cuIpcCloseMemHandle)(ptr) })
    }

    fn ipc_get_event_handle(&self, event: EventHandle) -> Result<[u8; IPC_HANDLE_BYTES]> {
        self.ensure_context()?;
        let mut handle = CUipcEventHandle { reserved: [0; IPC_HANDLE_BYTES] };
        // SAFETY: valid out-pointer; the event is a live handle of ours (the driver checks its flags).
        check(unsafe { (self.api.cuIpcGetEventHandle)(&mut handle, event.0 as CUevent) })?;
        Ok(handle.reserved.map(|b| b as u8))
    }

    fn ipc_open_event_handle(&self, handle: &[u8; IPC_HANDLE_BYTES]) -> Result<EventHandle> {
        self.ensure_context()?;
        let handle = CUipcEventHandle { reserved: handle.map(|b| b as c_char) };
        let mut event: CUevent = null_mut();
        // SAFETY: valid out-pointer; the handle is opaque bytes the driver validates.
        check(unsafe { (self.api.cuIpcOpenEventHandle)(&mut event, handle) })?;
        Ok(EventHandle(event as usize))
    }
}
