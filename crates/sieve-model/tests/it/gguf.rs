//! The GGUF reader on files written here: values and tensors round-trip, quantized blocks
//! dequantize as their formula says, and no truncation or corruption makes it panic.

use half::f16;
use proptest::prelude::*;
use sieve_model::ModelError;
use sieve_model::gguf::{Gguf, TensorType, Value, dequantize};

/// A minimal GGUF v3 writer: `(key, type id, encoded value)` metadata and raw tensors.
pub struct Writer {
    pub meta: Vec<(String, u32, Vec<u8>)>,
    pub tensors: Vec<(String, Vec<u64>, u32, Vec<u8>)>,
}

/// A GGUF string's encoding (type id 8).
pub fn string(s: &str) -> Vec<u8> {
    let mut v = (s.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

impl Writer {
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend((self.tensors.len() as u64).to_le_bytes());
        out.extend((self.meta.len() as u64).to_le_bytes());
        for (k, t, v) in &self.meta {
            out.extend(string(k));
            out.extend(t.to_le_bytes());
            out.extend(v);
        }
        let mut offset = 0u64;
        let mut offsets = Vec::new();
        for (name, dims, ty, data) in &self.tensors {
            out.extend(string(name));
            out.extend((dims.len() as u32).to_le_bytes());
            for d in dims {
                out.extend(d.to_le_bytes());
            }
            out.extend(ty.to_le_bytes());
            out.extend(offset.to_le_bytes());
            offsets.push(offset);
            offset += (data.len() as u64).div_ceil(32) * 32;
        }
        while !out.len().is_multiple_of(32) {
            out.push(0);
        }
        let base = out.len();
        for ((_, _, _, data), off) in self.tensors.iter().zip(offsets) {
            out.resize(base + off as usize, 0);
            out.extend(data);
        }
        out
    }
}

fn q4_1_block(d: f32, m: f32, q: &[u8; 32]) -> Vec<u8> {
    let mut b = f16::from_f32(d).to_le_bytes().to_vec();
    b.extend(f16::from_f32(m).to_le_bytes());
    b.extend((0..16).map(|j| q[j] | (q[j + 16] << 4)));
    b
}

fn sample() -> Writer {
    let mut arr = 8u32.to_le_bytes().to_vec();
    arr.extend(2u64.to_le_bytes());
    arr.extend(string("a"));
    arr.extend(string("bc"));
    let q: [u8; 32] = std::array::from_fn(|i| (i % 16) as u8);
    let mut q8 = f16::from_f32(0.5).to_le_bytes().to_vec();
    q8.extend((0..32).map(|i| (i as i8 - 16) as u8));
    Writer {
        meta: vec![
            ("general.architecture".into(), 8, string("llama")),
            ("n".into(), 4, 7u32.to_le_bytes().to_vec()),
            ("x".into(), 6, 1.5f32.to_le_bytes().to_vec()),
            ("list".into(), 9, arr),
        ],
        tensors: vec![
            ("f".into(), vec![2, 3], 0, (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect()),
            ("q4".into(), vec![32, 1], 3, q4_1_block(0.25, -1.0, &q)),
            ("q8".into(), vec![32], 8, q8),
            ("h".into(), vec![2], 1, [f16::from_f32(2.0).to_le_bytes(), f16::from_f32(-3.5).to_le_bytes()].concat()),
        ],
    }
}

#[test]
fn metadata_and_tensors_round_trip() {
    let bytes = sample().bytes();
    let g = Gguf::parse(&bytes).unwrap();
    assert_eq!(g.get_str("general.architecture").unwrap(), "llama");
    assert_eq!(g.get_u64("n").unwrap(), 7);
    assert_eq!(g.get_f64("x").unwrap(), 1.5);
    assert_eq!(g.get_array("list").unwrap(), &[Value::String("a".into()), Value::String("bc".into())]);
    // GGUF dims are innermost first; shapes here are outermost first.
    assert_eq!(g.tensor_f32("f", &[3, 2]).unwrap(), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let q4: Vec<f32> = (0..32).map(|i| 0.25 * (i % 16) as f32 - 1.0).collect();
    assert_eq!(g.tensor_f32("q4", &[1, 32]).unwrap(), q4);
    let q8: Vec<f32> = (0..32).map(|i| 0.5 * (i - 16) as f32).collect();
    assert_eq!(g.tensor_f32("q8", &[32]).unwrap(), q8);
    assert_eq!(g.tensor_f32("h", &[2]).unwrap(), vec![2.0, -3.5]);
    assert!(matches!(g.tensor_f32("f", &[2, 3]), Err(ModelError::Tensor { .. })));
    assert!(matches!(g.tensor_f32("nope", &[1]), Err(ModelError::Tensor { .. })));
    assert!(matches!(g.get_u64("missing"), Err(ModelError::Metadata { .. })));
}

#[test]
fn unsupported_type_and_bad_ranges_are_errors() {
    let mut w = sample();
    w.tensors[0].2 = 10; // Q2_K
    assert!(matches!(Gguf::parse(&w.bytes()), Err(ModelError::Tensor { .. })));
    let mut w = sample();
    w.tensors[0].1 = vec![2, 3_000_000_000];
    assert!(matches!(Gguf::parse(&w.bytes()), Err(ModelError::Gguf { .. })));
    let mut w = sample();
    w.tensors[1].1 = vec![16, 2]; // a Q4_1 row must be whole blocks
    assert!(matches!(Gguf::parse(&w.bytes()), Err(ModelError::Tensor { .. })));
    assert!(matches!(Gguf::parse(b"GGUF"), Err(ModelError::Gguf { offset: 4, .. })));
    assert!(matches!(Gguf::parse(b"GGML\x03\0\0\0"), Err(ModelError::Gguf { offset: 0, .. })));
}

proptest! {
    #[test]
    fn truncation_is_an_error_never_a_panic(cut in 0usize..400) {
        let bytes = sample().bytes();
        let cut = cut.min(bytes.len() - 1);
        prop_assert!(Gguf::parse(&bytes[..cut]).is_err());
    }

    #[test]
    fn corruption_never_panics(pos in 0usize..400, byte in any::<u8>()) {
        let mut bytes = sample().bytes();
        let pos = pos % bytes.len();
        bytes[pos] = byte;
        if let Ok(g) = Gguf::parse(&bytes) {
            for info in g.tensors.values() {
                let _ = g.tensor_f32(&info.name, &info.shape.clone());
            }
        }
    }

    #[test]
    fn q4_1_matches_its_formula(d in -4.0f32..4.0, m in -4.0f32..4.0, q in prop::array::uniform32(0u8..16)) {
        let block = q4_1_block(d, m, &q);
        let (d, m) = (f16::from_f32(d).to_f32(), f16::from_f32(m).to_f32());
        let want: Vec<f32> = q.iter().map(|&x| d * x as f32 + m).collect();
        prop_assert_eq!(dequantize(TensorType::Q4_1, &block), want);
    }
}
