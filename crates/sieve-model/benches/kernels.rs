//! The CPU path's matrix kernels, by weight type and by each instruction set this processor
//! runs (`Simd::available`): one token's dot products (a decode step), four tokens' (a
//! jump-forward pass) and 64 tokens' tile products (a prefill), over a 4096x2048 matrix of
//! random weights or blocks.
//!
//! `cargo bench -p sieve-model --bench kernels [-- FILTER]`; names are
//! `TYPE/KIND/tokens`, e.g. `Q4_K/Avx2Vnni/4`. Comparing the kinds in one run shows what each
//! instruction set gains on this machine, and a kernel that LLVM stopped inlining into its
//! loop shows as one many times slower than its neighbours.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sieve_core::rng::Rng;
use sieve_model::cpu::matrix::{Activation, Matrix, Simd};
use sieve_model::gguf::TensorType;
use std::hint::black_box;
use std::time::Duration;

const ROWS: usize = 4096;
const COLS: usize = 2048;

/// A `[ROWS, COLS]` matrix of `ty`: F16 and BF16 from weights spread as a model's are (some
/// of them subnormal in f16), the quantized types from random bytes with every block's f16
/// scale and minimum set to a small finite value (random bytes would make some of them
/// infinities or NaNs).
fn random_matrix(ty: TensorType, rng: &mut Rng) -> Matrix {
    if let TensorType::F16 | TensorType::BF16 = ty {
        // Uniform in (-0.05, 0.05), about the spread of a trained model's weights.
        let weights = (0..ROWS * COLS).map(|_| (rng.unit() as f32 - 0.5) / 10.0);
        let data = match ty {
            TensorType::F16 => weights.flat_map(|w| half::f16::from_f32(w).to_le_bytes()).collect(),
            _ => weights.flat_map(|w| half::bf16::from_f32(w).to_le_bytes()).collect(),
        };
        return Matrix::from_bytes(ty, ROWS, COLS, data).expect("the values fill the matrix");
    }
    let (elems, size) = ty.block();
    let halves: &[usize] = match ty {
        TensorType::Q4_0 | TensorType::Q5_0 | TensorType::Q8_0 => &[0],
        TensorType::Q4_1 | TensorType::Q5_1 | TensorType::Q4_K | TensorType::Q5_K => &[0, 2],
        TensorType::Q6_K => &[208],
        _ => unreachable!("F32 rows are not encoded"),
    };
    let mut data = rng.bytes(ROWS * COLS / elems * size);
    for block in data.chunks_exact_mut(size) {
        for &at in halves {
            // 2^-7 in f16, plus a random mantissa.
            block[at..at + 2].copy_from_slice(&[rng.next() as u8, 0x20]);
        }
    }
    Matrix::from_bytes(ty, ROWS, COLS, data).expect("the blocks fill the matrix")
}

fn kernels(c: &mut Criterion) {
    let mut rng = Rng::new(7);
    let xs: Vec<f32> = (0..64 * COLS).map(|_| rng.unit() as f32 * 2.0 - 1.0).collect();
    let acts: Vec<Activation<'_>> = xs.chunks_exact(COLS).map(Activation::new).collect();
    let mut out = vec![0.0; ROWS * 64];
    for ty in [TensorType::F16, TensorType::BF16, TensorType::Q4_0, TensorType::Q4_1, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K] {
        let matrix = random_matrix(ty, &mut rng);
        let mut group = c.benchmark_group(format!("{ty:?}"));
        group.sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
        group.throughput(Throughput::Bytes(matrix.bytes() as u64));
        for simd in Simd::available() {
            for tokens in [1, 4] {
                group.bench_function(BenchmarkId::new(format!("{simd:?}"), tokens), |b| {
                    b.iter(|| matrix.dot_rows(simd, 0, black_box(&acts[..tokens]), &mut out[..ROWS * tokens]))
                });
            }
            group.bench_function(BenchmarkId::new(format!("{simd:?}"), 64), |b| {
                b.iter(|| matrix.product_rows(simd, 0, ROWS, black_box(&xs), &acts, &mut out))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, kernels);
criterion_main!(benches);
