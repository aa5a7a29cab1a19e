//! The CLI's one error type: printed as `{"error": "..."}`, exit status 2.

use std::fmt::Display;

/// A failure to report as JSON.
#[derive(Debug)]
pub struct CliError(pub String);

impl CliError {
    pub fn new(msg: impl Into<String>) -> Self {
        CliError(msg.into())
    }
}

impl<E: Display> From<E> for CliError
where
    E: std::error::Error,
{
    fn from(e: E) -> Self {
        CliError(e.to_string())
    }
}

/// A small seeded RNG (xorshift64*), so runs are reproducible without dependencies.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E3779B97F4A7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}
