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

/// The adapter wgpu would choose natively, found without starting a device on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Adapter {
    /// A GPU (discrete, integrated or virtual), by name.
    Hardware(String),
    /// A GPU emulated on the CPU (lavapipe, SwiftShader, WARP), by name: slower than the CPU
    /// path.
    Software(String),
    /// No adapter; the reason.
    None(String),
}

/// The adapter [`wgpu_device`] would come up on: the high-performance one of the first graphics
/// API that has one, as burn's runtime chooses.
#[cfg(not(target_family = "wasm"))]
pub async fn default_adapter() -> Adapter {
    use burn::tensor::wgpu::wgpu;
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
    let options = wgpu::RequestAdapterOptions { power_preference: wgpu::PowerPreference::HighPerformance, ..Default::default() };
    match instance.request_adapter(&options).await {
        Ok(adapter) => {
            let info = adapter.get_info();
            match info.device_type {
                wgpu::DeviceType::Cpu => Adapter::Software(info.name),
                _ => Adapter::Hardware(info.name),
            }
        }
        Err(e) => Adapter::None(e.to_string()),
    }
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
