//! Kernel attributes on the host backend: the CUDA attribute numbers answered from the compiled host function.

use super::*;

/// A GPU's default dynamic shared-memory limit per block, which host kernels keep to.
const MAX_SHARED_PER_BLOCK: i32 = 48 * 1024;
const FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: i32 = 8;
const FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: i32 = 9;

impl HostBackend {
    pub(super) fn cpu_function_get_attribute(&self, function: FunctionHandle, attribute: i32) -> Result<i32> {
        let set = {
            let state = self.state();
            if !state.functions.contains_key(&function.0) {
                return Err(Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE));
            }
            state.function_settings.get(&(function.0, attribute)).copied()
        };
        if let Some(value) = set {
            return Ok(value);
        }
        match attribute {
            0..=6 => match FunctionAttribute::from_raw(attribute) {
                Some(a) => self.function_attribute(function, a),
                None => Err(Self::err(CUDA_ERROR_INVALID_VALUE)),
            },
            FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES => Ok(MAX_SHARED_PER_BLOCK),
            FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT => Ok(-1),
            7 | 10..=17 => Ok(0),
            _ => Err(Self::err(CUDA_ERROR_INVALID_VALUE)),
        }
    }

    pub(super) fn cpu_function_set_attribute(
        &self,
        function: FunctionHandle,
        attribute: i32,
        value: i32,
    ) -> Result<()> {
        let mut state = self.state();
        if !state.functions.contains_key(&function.0) {
            return Err(Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE));
        }
        let valid = match attribute {
            FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES => (0..=MAX_SHARED_PER_BLOCK).contains(&value),
            FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT => (-1..=100).contains(&value),
            _ => false,
        };
        if !valid {
            return Err(Error::detailed(
                CUDA_ERROR_INVALID_VALUE,
                BackendKind::Host,
                format!(
                    "function attribute {attribute} cannot be set to {value}: settable are \
                     MAX_DYNAMIC_SHARED_SIZE_BYTES (0..={MAX_SHARED_PER_BLOCK}) and PREFERRED_SHARED_MEMORY_CARVEOUT (-1..=100)"
                ),
            ));
        }
        state.function_settings.insert((function.0, attribute), value);
        Ok(())
    }

    pub(super) fn cpu_function_set_cache_config(&self, function: FunctionHandle, config: i32) -> Result<()> {
        if !self.state().functions.contains_key(&function.0) {
            return Err(Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE));
        }
        // A CPU's caches are not partitioned: any valid preference is accepted and has no effect.
        if (0..=3).contains(&config) {
            Ok(())
        } else {
            Err(Self::err(CUDA_ERROR_INVALID_VALUE))
        }
    }
}
