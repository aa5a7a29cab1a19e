//! Random values for the kernel tests, drawn from sieve-core's seeded generator so that failures
//! replay exactly, in the browser as natively.

pub use sieve_core::rng::Rng;

/// The floats the kernel tests draw.
pub trait Floats {
    /// Uniform in `[-scale, scale)`.
    fn value(&mut self, scale: f32) -> f32;
    /// A logit in `[-10, 10)`.
    fn logit(&mut self) -> f32;
}

impl Floats for Rng {
    fn value(&mut self, scale: f32) -> f32 {
        (self.unit() * 2.0 - 1.0) as f32 * scale
    }

    fn logit(&mut self) -> f32 {
        (self.unit() * 20.0 - 10.0) as f32
    }
}
