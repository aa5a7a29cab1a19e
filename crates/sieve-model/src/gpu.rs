//! The one wgpu device of the process.
//!
//! burn registers a wgpu runtime once per process; asking twice is an error.
//! [`wgpu_device`] initialises it on first use and hands out clones after that.
//! In the browser this is WebGPU (async only); natively it is whatever Vulkan,
//! Metal or DX12 adapter wgpu finds (lavapipe on a machine without a GPU).

use burn::tensor::Device;
pub use burn::tensor::wgpu::WgpuInitError;

/// The process's wgpu device, initialised on first call.
///
/// # Errors
/// [`WgpuInitError`] when no adapter comes up (no WebGPU in the browser, no
/// Vulkan driver natively). There is no silent fallback to another backend.
#[cfg(not(target_family = "wasm"))]
pub async fn wgpu_device() -> Result<Device, WgpuInitError> {
    use std::sync::Mutex;
    static DEVICE: Mutex<Option<Device>> = Mutex::new(None);
    let mut device = DEVICE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(device) = device.as_ref() {
        return Ok(device.clone());
    }
    let initialised = Device::wgpu_options().init()?;
    *device = Some(initialised.clone());
    Ok(initialised)
}

/// The page's (or worker's) WebGPU device, initialised on first call.
///
/// # Errors
/// [`WgpuInitError`] when the browser offers no WebGPU adapter.
#[cfg(target_family = "wasm")]
pub async fn wgpu_device() -> Result<Device, WgpuInitError> {
    use std::cell::RefCell;
    thread_local! {
        static DEVICE: RefCell<Option<Device>> = const { RefCell::new(None) };
    }
    if let Some(device) = DEVICE.with(|device| device.borrow().clone()) {
        return Ok(device);
    }
    let initialised = Device::wgpu_options().init_async().await?;
    DEVICE.with(|device| *device.borrow_mut() = Some(initialised.clone()));
    Ok(initialised)
}
