//! sieve-web: sieve's JavaScript API, compiled to WebAssembly.
//!
//! wasm-pack builds this crate into the npm package (`scripts/build-web.sh`
//! puts it in `web/pkg`). It binds the constraint engine (`sieve-core`) and the
//! model (`sieve-model`) for pages and workers. Every exported function returns
//! a JS `Error` on failure; none may panic, since a panic aborts the module and
//! the loaded model with it.

use wasm_bindgen::prelude::*;

/// Initialises WebGPU for sieve, once per page or worker; later calls reuse it.
///
/// Rejects with an `Error` that says WebGPU is unavailable when the browser
/// offers no adapter.
#[wasm_bindgen(js_name = initGpu)]
pub async fn init_gpu() -> Result<(), JsError> {
    sieve_model::gpu::wgpu_device()
        .await
        .map(|_| ())
        .map_err(|e| JsError::new(&format!("WebGPU is not available in this browser: {e}")))
}
