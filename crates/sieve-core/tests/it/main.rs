//! sieve-core's integration tests, in one binary so that it links once and, compiled to wasm32,
//! loads once in the browser: the same tests run natively and in headless Chromium
//! (`cargo test --target wasm32-unknown-unknown -p sieve-core --test it`, scripts/test.sh).

// In a dedicated worker, so that loading the module and long synchronous tests never block the
// page's main thread, which chromedriver must reach within 30 s on each poll of the output.
#[cfg(target_family = "wasm")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_dedicated_worker);

mod common;

mod gbnf;
mod grammar;
mod json_schema_cases;
mod json_schema_props;
mod json_schema_suite;
// Native only: it reads MaskBench files from disk.
#[cfg(not(target_family = "wasm"))]
mod json_schema_timing;
#[cfg(not(target_family = "wasm"))]
mod limits;
mod matcher;
mod oracle;
