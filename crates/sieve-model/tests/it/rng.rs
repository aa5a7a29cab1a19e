//! A small deterministic generator (xorshift64*) for the kernel tests, so failures replay
//! exactly, in the browser as natively.

pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `[0, 1)`, 24 bits.
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in `[-scale, scale)`.
    pub fn value(&mut self, scale: f32) -> f32 {
        (self.unit() * 2.0 - 1.0) * scale
    }

    /// A logit in `[-10, 10)`.
    pub fn logit(&mut self) -> f32 {
        self.unit() * 20.0 - 10.0
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}
