//! Memory and events shared with other processes (CUDA IPC): a handle's bytes travel to the
//! other process, which opens them.

use crate::runtime::{DevicePtr, EventHandle, Result};

/// `CU_IPC_HANDLE_SIZE`: an interprocess handle's bytes (64 in CUDA and HIP).
pub const IPC_HANDLE_BYTES: usize = 64;

pub trait Interprocess {
    /// An interprocess handle for the allocation that holds `ptr` (`cuIpcGetMemHandle`).
    fn ipc_get_mem_handle(&self, ptr: DevicePtr) -> Result<[u8; IPC_HANDLE_BYTES]>;
    /// Maps another process's allocation (`cuIpcOpenMemHandle`, CU_IPC_MEM_* flags).
    fn ipc_open_mem_handle(&self, handle: &[u8; IPC_HANDLE_BYTES], flags: u32) -> Result<DevicePtr>;
    /// # Safety
    /// `ptr` came from `ipc_open_mem_handle` and nothing uses it afterwards.
    unsafe fn ipc_close_mem_handle(&self, ptr: DevicePtr) -> Result<()>;
    /// The interprocess handle of an event made with `EVENT_INTERPROCESS` (`cuIpcGetEventHandle`).
    fn ipc_get_event_handle(&self, event: EventHandle) -> Result<[u8; IPC_HANDLE_BYTES]>;
    /// Opens another process's event (`cuIpcOpenEventHandle`); `event_destroy` releases it.
    fn ipc_open_event_handle(&self, handle: &[u8; IPC_HANDLE_BYTES]) -> Result<EventHandle>;
}
