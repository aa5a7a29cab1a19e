//! sieve-web: sieve's JavaScript API, compiled to WebAssembly.
//!
//! `scripts/build-web.sh` compiles this crate to wasm32, writes its bindings with
//! `wasm-bindgen`, and adds the JavaScript engine from `js/` to make the npm package (in
//! `web/pkg`). Two layers:
//!
//! - [`constraint`]: the low-level API for any model: [`constraint::Vocabulary`],
//!   [`constraint::Constraint`] and [`constraint::Matcher`], which fills token bitmasks.
//! - [`model`]: SmolLM2 on WebGPU or the CPU with the constrained decode loop
//!   ([`model::Model`]), which the JavaScript engine (`js/engine.js`) drives from a Web Worker;
//!   [`parts`]: the CPU path's other threads, helper workers that each hold a part of the rows;
//!   [`request`]: a request's tools, constraint and prompt text, checked before any model work
//!   without touching JavaScript (so the request fuzz target runs it natively).
//!
//! Every export returns a JS `Error` on failure (a constraint that does not compile: a
//! `SieveError` with its kind and place, see [`error`]); none may panic, since a panic aborts the
//! module and the loaded model with it.

pub mod constraint;
mod error;
pub mod model;
pub mod parts;
pub mod request;

use wasm_bindgen::prelude::*;

#[cfg(target_family = "wasm")]
unsafe extern "C" {
    /// The static constructors (dependencies register kernels with `inventory`), synthesised by
    /// wasm-ld. When nothing calls it, wasm-ld runs it at the top of every exported function,
    /// which cost hundreds of microseconds per mask; calling it once here stops that.
    fn __wasm_call_ctors();
}

/// Runs when the module is instantiated: runs the static constructors once, and makes a panic
/// (a bug: every failure is meant to be an `Error`) log its message before the module aborts.
#[wasm_bindgen(start)]
fn start() {
    // SAFETY: called once, first thing after instantiation, before any other export runs.
    #[cfg(target_family = "wasm")]
    unsafe {
        __wasm_call_ctors()
    };
    std::panic::set_hook(Box::new(|info| {
        let console = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("console")).ok();
        let error = console.as_ref().and_then(|c| js_sys::Reflect::get(c, &JsValue::from_str("error")).ok());
        if let (Some(console), Some(error)) = (console, error.and_then(|e| e.dyn_into::<js_sys::Function>().ok())) {
            let _ = error.call1(&console, &JsValue::from_str(&format!("sieve: internal error (a bug): {info}")));
        }
    }));
}

/// Initialises WebGPU for sieve, once per page or worker; later calls reuse it.
///
/// Rejects with an `Error` that says WebGPU is unavailable when the browser
/// offers no adapter.
#[wasm_bindgen(js_name = initGpu)]
pub async fn init_gpu() -> Result<(), JsError> {
    sieve_model::gpu::wgpu_device().await.map(|_| ()).map_err(no_webgpu)
}

/// The error for a browser without a usable WebGPU adapter.
fn no_webgpu(e: impl std::fmt::Display) -> JsError {
    JsError::new(&format!("WebGPU is not available in this browser: {e}"))
}

/// A JS error carrying `e`'s message.
fn js_error(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

/// The message of a thrown JS value: an `Error`'s, or the value as text.
fn js_message(e: &JsValue) -> String {
    match e.dyn_ref::<js_sys::Error>() {
        Some(error) => error.message().into(),
        None => e.as_string().unwrap_or_else(|| format!("{e:?}")),
    }
}

/// Milliseconds from the page's or worker's time origin (`performance.now()`).
fn now_ms() -> f64 {
    let performance = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("performance")).ok();
    let now = performance.as_ref().and_then(|p| js_sys::Reflect::get(p, &JsValue::from_str("now")).ok());
    match (performance, now.and_then(|f| f.dyn_into::<js_sys::Function>().ok())) {
        (Some(p), Some(now)) => now.call0(&p).ok().and_then(|v| v.as_f64()).unwrap_or(0.0),
        _ => js_sys::Date::now(),
    }
}
