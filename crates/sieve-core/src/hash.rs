//! Hashes for the engine's maps. Integer keys (state ids, item and state
//! sets) take FxHash's step: they come from the compiled automata, not
//! straight from input text, so they need no defence against flooding.
//! Keys of input text take foldhash, seeded per process ([`TextMap`]).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// FxHash, one 64-bit word at a time.
#[derive(Default)]
pub(crate) struct FastHasher(u64);

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut word = [0u8; 8];
            word.copy_from_slice(w);
            self.add(u64::from_le_bytes(word));
        }
        words.remainder().iter().for_each(|&b| self.add(b as u64));
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A hash map keyed by integers or integer slices.
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// A hash set of integers or integer slices.
pub(crate) type FastSet<K> = HashSet<K, BuildHasherDefault<FastHasher>>;

/// A hash map keyed by text from the input (rule names, rule bodies, JSON
/// pointers): foldhash, seeded per process so crafted keys cannot flood
/// it, and several times faster than SipHash on short strings.
pub(crate) type TextMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
