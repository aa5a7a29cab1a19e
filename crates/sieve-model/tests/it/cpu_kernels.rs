//! The CPU path's products against the dequantized rows, in f64: one token's dot products and
//! several tokens' tile products, for every weight type, random blocks (scales of both signs,
//! every nibble and byte value), rows taken from the middle of a matrix, and each instruction
//! set this processor (or this wasm build) runs: the portable kernels and AVX2 natively,
//! WebAssembly SIMD in the browser.

use half::f16;
use sieve_model::cpu::matrix::{Activation, Matrix, Simd};
use sieve_model::gguf::{TensorType, dequantize};
use wasm_bindgen_test::wasm_bindgen_test;

use crate::rng::{Floats, Rng};

fn f16_bytes(x: f32) -> [u8; 2] {
    f16::from_f32(x).to_le_bytes()
}

/// `rows` random rows of `cols` values of `ty`, encoded: random bytes with the f16 scales (and
/// minima) of each block set to finite values of both signs.
fn random_rows(ty: TensorType, rows: usize, cols: usize, rng: &mut Rng) -> Vec<u8> {
    let (elems, size) = ty.block();
    let mut out = Vec::new();
    for _ in 0..rows * cols / elems {
        let mut block = rng.bytes(size);
        // Where each type keeps its f16 fields, and their magnitude.
        let halves: &[(usize, f32)] = match ty {
            TensorType::F32 => {
                block = rng.value(2.0).to_le_bytes().to_vec();
                &[]
            }
            TensorType::F16 => &[(0, 2.0)],
            TensorType::BF16 => {
                block = (half::bf16::from_f32(rng.value(2.0)).to_bits()).to_le_bytes().to_vec();
                &[]
            }
            TensorType::Q4_0 => &[(0, 0.1)],
            TensorType::Q4_1 | TensorType::Q5_1 => &[(0, 0.1), (2, 1.0)],
            TensorType::Q5_0 => &[(0, 0.1)],
            TensorType::Q8_0 => &[(0, 0.02)],
            TensorType::Q4_K | TensorType::Q5_K => &[(0, 0.01), (2, 0.01)],
            TensorType::Q6_K => &[(208, 0.001)],
        };
        for &(at, scale) in halves {
            block[at..at + 2].copy_from_slice(&f16_bytes(rng.value(scale)));
        }
        out.extend(block);
    }
    out
}

/// The exact product of a dequantized row `w` with `x`, the sum of the terms' magnitudes, and
/// how far the SIMD kernels' 16-bit activations may move it: each value by at most half of the
/// largest magnitude of its run of 256 over 32,767 (here twice that).
fn exact_product(w: &[f32], x: &[f32]) -> (f64, f64, f64) {
    let exact = w.iter().zip(x).map(|(&w, &x)| f64::from(w) * f64::from(x)).sum();
    let magnitude = w.iter().zip(x).map(|(&w, &x)| f64::from((w * x).abs())).sum();
    let steps: Vec<f32> = x.chunks(256).map(|run| run.iter().fold(0.0f32, |m, v| m.max(v.abs())) / 32767.0).collect();
    let rounding = w.iter().enumerate().map(|(k, &w)| f64::from(w.abs() * steps[k / 256])).sum();
    (exact, magnitude, rounding)
}

#[wasm_bindgen_test(unsupported = test)]
fn dot_products_match_the_dequantized_rows() {
    let mut rng = Rng(0x5eed);
    let simds = Simd::available();
    // Every sieve wasm build has WebAssembly SIMD; natively AVX2 is tested where the processor
    // has it.
    assert!(simds.len() == 2 || !cfg!(target_family = "wasm"), "no SIMD kernels: {simds:?}");
    for ty in TensorType::ALL {
        let widths: &[usize] = match ty.block().0 {
            1 => &[1, 7, 8, 37, 576],
            32 => &[32, 64, 96, 576, 1536],
            _ => &[256, 512, 1536],
        };
        for &cols in widths {
            let rows = 6;
            let data = random_rows(ty, rows, cols, &mut rng);
            let matrix = Matrix::from_bytes(ty, rows, cols, data.clone()).expect("whole rows");
            let xs: Vec<Vec<f32>> = (0..5).map(|_| (0..cols).map(|_| rng.value(3.0)).collect()).collect();
            let acts: Vec<Activation<'_>> = xs.iter().map(|x| Activation::new(x)).collect();
            let weights = dequantize(ty, &data);
            let expected: Vec<Vec<(f64, f64, f64)>> = weights.chunks_exact(cols).map(|w| xs.iter().map(|x| exact_product(w, x)).collect()).collect();
            for &simd in &simds {
                // All rows, then the rows from the third on; one token, three, then five (the
                // kernels that unpack a block for several tokens take four, then one).
                for (first, n) in [(0, 1), (2, 1), (0, 3), (2, 3), (0, 5)] {
                    let mut out = vec![f32::NAN; (rows - first) * n];
                    matrix.dot_rows(simd, first, &acts[..n], &mut out);
                    for (i, &got) in out.iter().enumerate() {
                        let (exact, magnitude, rounding) = expected[first + i / n][i % n];
                        let rounding = if simd != Simd::Portable { rounding } else { 0.0 };
                        let error = (f64::from(got) - exact).abs();
                        assert!(error <= 1e-5 * magnitude + 1e-6 + rounding, "{ty:?} x {cols}, {simd:?}, row {}, token {}: {got} vs {exact}", first + i / n, i % n);
                        // A token's product does not depend on the tokens beside it: a pass of
                        // several tokens (a prefill, forced text) computes what decoding them
                        // one at a time would.
                        let mut alone = vec![f32::NAN; rows - first];
                        matrix.dot_rows(simd, first, &acts[i % n..i % n + 1], &mut alone);
                        assert_eq!(got.to_bits(), alone[i / n].to_bits(), "{ty:?} x {cols}, {simd:?}, row {}, token {} of {n}", first + i / n, i % n);
                    }
                }
            }
        }
    }
}

/// The K-quant kernels and tiles sum runs of products in 32-bit integers: the largest weights and
/// activations each format holds (every scale and value at its extreme, every activation of one
/// sign and the largest of its run) still give the exact product.
#[wasm_bindgen_test(unsupported = test)]
fn the_largest_super_blocks_do_not_overflow() {
    let cols = 512;
    let block = |ty: TensorType| -> Vec<u8> {
        match ty {
            // Scales and minimums 63, values 15 (31 with Q5_K's fifth bits); d 1, dmin 0.
            TensorType::Q4_K | TensorType::Q5_K => {
                let mut block = vec![0xff; ty.block().1];
                block[..4].copy_from_slice(&[f16_bytes(1.0), f16_bytes(0.0)].concat());
                block
            }
            // Values 0 (-32 once centred), scales -128, d 1.
            TensorType::Q6_K => [vec![0; 192], vec![0x80; 16], f16_bytes(1.0).to_vec()].concat(),
            _ => unreachable!(),
        }
    };
    for ty in [TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K] {
        let data: Vec<u8> = (0..cols / 256).flat_map(|_| block(ty)).collect();
        let matrix = Matrix::from_bytes(ty, 1, cols, data.clone()).expect("a whole row");
        let weights = dequantize(ty, &data);
        for sign in [1.0, -1.0] {
            let x = vec![sign; cols];
            let (exact, magnitude, rounding) = exact_product(&weights, &x);
            let acts = [Activation::new(&x), Activation::new(&x)];
            for simd in Simd::available() {
                // One token's dot product, and a tile's products with two.
                let (mut dot, mut tile) = ([f32::NAN], [f32::NAN; 2]);
                matrix.dot_rows(simd, 0, &acts[..1], &mut dot);
                matrix.product_rows(simd, 0, 1, &[&x[..], &x[..]].concat(), &acts, &mut tile);
                for (kernel, got) in [("dot", dot[0]), ("tile", tile[0]), ("tile", tile[1])] {
                    let error = (f64::from(got) - exact).abs();
                    assert!(error <= 1e-5 * magnitude + rounding, "{ty:?}, {simd:?}, {kernel}, activations {sign}: {got} vs {exact}");
                }
            }
        }
    }
}

/// Several tokens at once (a prefill): rows unpacked into tiles of four, the last tile
/// partial, and an odd number of tokens; the SIMD kernels' K-quant tiles multiply 16-bit
/// activations, within the dot kernels' bound, and the other tiles f32 ones.
#[wasm_bindgen_test(unsupported = test)]
fn tile_products_match_the_dequantized_rows() {
    let mut rng = Rng(0x7113);
    for ty in TensorType::ALL {
        let (rows, cols) = (7, [37, 96, 512][[1, 32, 256].iter().position(|&b| b == ty.block().0).unwrap()]);
        let data = random_rows(ty, rows, cols, &mut rng);
        let matrix = Matrix::from_bytes(ty, rows, cols, data.clone()).expect("whole rows");
        let weights = dequantize(ty, &data);
        for n in [2, 3, 5] {
            let xs: Vec<f32> = (0..n * cols).map(|_| rng.value(3.0)).collect();
            let acts: Vec<Activation<'_>> = xs.chunks_exact(cols).map(Activation::new).collect();
            for &simd in &Simd::available() {
                for first in [0, 1] {
                    let count = rows - first;
                    let mut out = vec![f32::NAN; count * n];
                    matrix.product_rows(simd, first, count, &xs, &acts, &mut out);
                    for (i, w) in weights.chunks_exact(cols).skip(first).enumerate() {
                        for (t, x) in xs.chunks_exact(cols).enumerate() {
                            let (exact, magnitude, rounding) = exact_product(w, x);
                            let integer = simd != Simd::Portable && matches!(ty, TensorType::Q4_K | TensorType::Q5_K | TensorType::Q6_K);
                            let rounding = if integer { rounding } else { 0.0 };
                            let got = out[i * n + t];
                            assert!(
                                (f64::from(got) - exact).abs() <= 1e-5 * magnitude + 1e-6 + rounding,
                                "{ty:?}, {simd:?}, {n} tokens, row {}, token {t}: {got} vs {exact}",
                                first + i
                            );
                        }
                    }
                    // A token's products do not depend on the tokens beside it.
                    let mut alone = vec![f32::NAN; count];
                    matrix.product_rows(simd, first, count, &xs[cols..2 * cols], &acts[1..2], &mut alone);
                    for (i, alone) in alone.iter().enumerate() {
                        assert_eq!(alone.to_bits(), out[i * n + 1].to_bits(), "{ty:?}, {simd:?}, {n} tokens, row {}", first + i);
                    }
                }
            }
        }
    }
}

#[wasm_bindgen_test(unsupported = test)]
fn encoded_rows_of_the_wrong_size_are_errors() {
    assert!(Matrix::from_bytes(TensorType::Q4_1, 2, 32, vec![0; 40]).is_ok());
    assert!(Matrix::from_bytes(TensorType::Q4_1, 2, 32, vec![0; 39]).is_err());
    assert!(Matrix::from_bytes(TensorType::Q4_1, 2, 48, vec![0; 60]).is_err(), "48 columns are not whole blocks");
    assert!(Matrix::from_bytes(TensorType::F32, usize::MAX, 4, vec![0; 16]).is_err());
}

/// The runs of 16 `scale * q + min` the GPU's weights are packed from give every block type's
/// dequantized values exactly; float types have none.
#[wasm_bindgen_test(unsupported = test)]
fn int8_blocks_reproduce_the_dequantized_values() {
    let mut rng = Rng(0x1b8);
    for ty in TensorType::ALL {
        let data = random_rows(ty, 3, 512, &mut rng);
        let mut values = Vec::new();
        let blocked = sieve_model::gguf::int8_blocks(ty, &data, |scale, min, q| values.extend(q.iter().map(|&q| scale * f32::from(q) + min)));
        assert_eq!(blocked, !matches!(ty, TensorType::F32 | TensorType::F16 | TensorType::BF16), "{ty:?}");
        if blocked {
            let expected = dequantize(ty, &data);
            assert_eq!(values.len(), expected.len(), "{ty:?}");
            for (i, (a, b)) in values.iter().zip(&expected).enumerate() {
                assert!(a.to_bits() == b.to_bits() || (*a == 0.0 && *b == 0.0), "{ty:?} value {i}: {a} vs {b}");
            }
        }
    }
}
