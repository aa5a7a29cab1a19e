//! Weight matrices kept in their GGUF encoding, and their products with activations: the CPU
//! path's inner loops.
//!
//! For one token a row is dequantized block by block inside its dot product, never into
//! memory, so a quantized model takes about its file's size and a decode step reads each weight
//! once. For several tokens (a prefill) four rows at a time are dequantized into a small f32
//! tile that every token's dot products then read, four rows by two tokens per step (the
//! K-quants' SIMD kernels keep the tile in 16-bit integers, [`IntTile`]). The
//! SIMD dot kernels of the quantized types multiply the weights' integers with 16-bit copies of
//! the activations (see [`Activation`]), which moves a product by at most 1/65,534 of the
//! largest activation of each run of 256 times its weights (llama.cpp quantizes them to 8
//! bits); the K-quant kernels sum a super-block's products in integers, their sub-blocks'
//! integer scales multiplied into the weights, and so do their integer tiles. The other
//! kernels and the f32 tiles keep f32 activations.
//!
//! Each kernel has a portable version, the reference, and versions for AVX2 (x86-64, detected
//! at run time; the integer kernels are compiled a second time with AVX-512 VNNI's fused
//! multiply-add, used where the processor has it) and WebAssembly SIMD (compiled in when the
//! module targets `simd128`, as sieve's wasm builds do).

use std::sync::Arc;

use crate::error::ModelError;
use crate::gguf::{Gguf, TensorType, dequantize_into, f16_at, k_scale_min};

/// Elements per quantization block of the block types.
const BLOCK: usize = 32;
/// Rows of a dequantized tile.
const TILE_ROWS: usize = 4;
/// Fewest tokens for which a product dequantizes its rows into tiles rather than taking each
/// row's dot product with each token, by the kind of dot kernel ([`Matrix::tile_from`]). The
/// tiles cost a dequantization of every weight, which a pass of a few tokens (jump-forward's
/// forced text) does not earn back. Measured with SmolLM2 Q4_1 on one AVX2 thread, one token
/// taking 7.8 ms: a token at a time, 2, 4 and 7 tokens took 13.6, 25.1 and 43.0 ms by dot
/// products and 25.6, 29.7 and 38.7 ms by tiles; with each block unpacked once for four tokens,
/// 2, 4, 8 and 18 tokens took 10.2, 14.8, 27.8 and 70.0 ms by dot products, and 8 and 18 took
/// 36.3 and 62.7 ms by tiles. Every quantized type's SIMD kernels now unpack a block once for
/// four tokens: with Qwen3-0.6B's shape in Q4_K_M (Q4_K and Q6_K rows), a whole pass of one
/// token taking 57 ms, 2, 4 and 8 tokens took 98, 179 and 262 ms (the last by tiles) with a
/// dot product per token, and 76, 115 and 216 ms unpacked once for four; 12 tokens take 308
/// ms by tiles either way. In WebAssembly (Chromium, one thread) tiles pay from 5 tokens
/// whatever the kernel: with SmolLM2 Q4_1, 5 and 8 tokens took 97 and 121 ms by dot products
/// and 69 and 79 by tiles (4: 65 by dot products); with Qwen3-0.6B's shape 367 and 498 by dot
/// products and 319 and 379 by tiles (4: 265). With the 16-bit products of the AVX2 kernels
/// (one token: 47 ms on Qwen3's shape, 9.7 on SmolLM2), 11 tokens take 237 and 49 ms by dot
/// products, 12 take 317 and 54 by tiles, and 16 by tiles 371 and 67. With the K-quants'
/// integer tiles ([`IntTile`]) and integer super-block sums, passes of Qwen3's and
/// Llama-3.2-1B's shapes take the same time both ways at 12 tokens natively (Qwen3: 176 and
/// 179 ms, 10 tokens 155 and 159, 16 tokens 236 and 218), and in WebAssembly at 8 (318 and
/// 324 ms; 12 tokens 455 and 429).
const TILE_TOKENS: usize = 5;
/// Activation values that share one scale in their 16-bit copy ([`Activation`]): a K-quant
/// super-block, so that its kernels sum a super-block's products in integers and scale them once.
#[cfg(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128")))]
const INT_RUN: usize = 256;
/// [`TILE_TOKENS`] for the AVX2 kernels of the quantized types, and for the integer tiles.
#[cfg(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128")))]
const TILE_TOKENS_SHARED_BLOCKS: usize = 12;

/// Bytes of a block of the 32-value types: f16 scale `d`, then an f16 minimum `m` unless
/// `centred` (Q4_0, Q5_0), the 32 values' fifth bits where `five` (Q5_0, Q5_1), then 16 bytes
/// of nibbles (low nibbles are values 0..16, high nibbles 16..32). `w = d * q + m`, a centred
/// type's `m` being `-8 d` (four bits) or `-16 d` (five).
const fn block32_size(centred: bool, five: bool) -> usize {
    2 + if centred { 0 } else { 2 } + if five { 4 } else { 0 } + 16
}

/// A block's `(d, m)` (see [`block32_size`]).
fn block32_scale_min<const CENTRED: bool, const FIVE: bool>(block: &[u8]) -> (f32, f32) {
    let d = f16_at(block, 0);
    match CENTRED {
        true => (d, block32_centred_minimum::<FIVE>(d)),
        false => (d, f16_at(block, 2)),
    }
}

/// A centred block's minimum, from its scale `d`.
#[inline(always)]
fn block32_centred_minimum<const FIVE: bool>(d: f32) -> f32 {
    (if FIVE { -16.0 } else { -8.0 }) * d
}

/// A block's fifth bits (bit `j` for value `j`), zero without them.
fn block32_fifth_bits<const FIVE: bool>(block: &[u8], size: usize) -> u32 {
    match FIVE {
        true => u32::from_le_bytes([block[size - 20], block[size - 19], block[size - 18], block[size - 17]]),
        false => 0,
    }
}

/// A Q4_K super-block's bytes and where its nibbles start: f16 `d` and `dmin`, 12 bytes of
/// packed 6-bit scales and minimums, then 128 bytes of nibbles (each 32 bytes two sub-blocks
/// of 32: low nibbles, then high). Q5_K (`five`) has 32 bytes of fifth bits before the
/// nibbles: bit `j` of byte `l` for value `l` of sub-block `j`.
/// The eight 6-bit scales, then the eight 6-bit minimums, of a Q4_K or Q5_K super-block (see
/// [`k_scale_min`]) as the bytes of four words, unpacked a word at a time.
#[cfg(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128")))]
#[inline(always)]
fn k_scales_mins(block: &[u8]) -> [u32; 4] {
    let word = |i: usize| u32::from_le_bytes([block[4 + 4 * i], block[5 + 4 * i], block[6 + 4 * i], block[7 + 4 * i]]);
    let (a, b, c) = (word(0), word(1), word(2));
    let (low6, low4, top2) = (0x3f3f_3f3f, 0x0f0f_0f0f, 0x0303_0303);
    [a & low6, (c & low4) | (((a >> 6) & top2) << 4), b & low6, ((c >> 4) & low4) | (((b >> 6) & top2) << 4)]
}

/// The byte indices of 16-bit lane `lane` (below 8) as a 16-bit lane: a byte shuffle by this
/// index in every lane (`_mm256_shuffle_epi8`, `i8x16_swizzle`) copies that lane to all of them.
#[cfg(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128")))]
const fn pick16(lane: usize) -> i16 {
    (((2 * lane + 1) << 8) | (2 * lane)) as i16
}

/// [`pick16`] of each lane in all sixteen lanes of a vector.
#[cfg(target_arch = "x86_64")]
static PICKS: [[i16; 16]; 8] = {
    let mut picks = [[0; 16]; 8];
    let mut lane = 0;
    while lane < 8 {
        picks[lane] = [pick16(lane); 16];
        lane += 1;
    }
    picks
};

const fn k4_layout(five: bool) -> (usize, usize) {
    if five { (176, 48) } else { (144, 16) }
}

/// The BF16 value at `at` of `bytes`: the top half of an f32's bits.
fn bf16_at(bytes: &[u8], at: usize) -> f32 {
    f32::from_bits(u32::from(u16::from_le_bytes([bytes[at], bytes[at + 1]])) << 16)
}

/// The instructions the kernels use, chosen once per model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Simd {
    /// Portable Rust, the reference.
    Portable,
    /// AVX2 with FMA and F16C.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// [`Simd::Avx2`]'s kernels with AVX-512 VNNI's fused multiply-add of 16-bit pairs
    /// (`vpdpwssd`, on 256-bit vectors with AVX-512 VL) in the integer kernels, where AVX2 takes
    /// a multiply-add of pairs and an add.
    #[cfg(target_arch = "x86_64")]
    Avx2Vnni,
    /// WebAssembly's 128-bit SIMD.
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    Simd128,
}

impl Simd {
    /// The fastest kind this processor (or this wasm build) has.
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c") {
            return match is_x86_feature_detected!("avx512vnni") && is_x86_feature_detected!("avx512vl") {
                true => Self::Avx2Vnni,
                false => Self::Avx2,
            };
        }
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        return Self::Simd128;
        #[allow(unreachable_code)]
        Self::Portable
    }

    /// Every kind this processor can run, the portable one first (for tests).
    pub fn available() -> Vec<Self> {
        let mut all = vec![Self::Portable];
        #[cfg(target_arch = "x86_64")]
        if Self::detect() == Self::Avx2Vnni {
            all.push(Self::Avx2);
        }
        if Self::detect() != Self::Portable {
            all.push(Self::detect());
        }
        all
    }
}

/// `a · b` over the shorter of the two, with `simd`.
pub fn dot(simd: Simd, a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    match simd {
        // SAFETY: `Simd::Avx2` and `Simd::Avx2Vnni` are only chosen when the processor has
        // AVX2 and FMA.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 | Simd::Avx2Vnni => unsafe { avx2::f32_dot(a, b) },
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        Simd::Simd128 => simd128::f32_dot(a, b),
        Simd::Portable => portable::f32_dot(a, b),
    }
}

/// A `[rows, cols]` weight matrix in one of the GGUF encodings, row-major.
#[derive(Debug, Clone)]
pub struct Matrix {
    ty: TensorType,
    rows: usize,
    cols: usize,
    row_bytes: usize,
    data: Data,
}

#[derive(Debug, Clone)]
enum Data {
    F32(Vec<f32>),
    /// Shared with the stream the bytes arrived from until it forgets them.
    Encoded(Arc<Vec<u8>>),
}

/// An activation vector prepared for dot products with any row: the values and the sum of each
/// 32-element block (the block types with a minimum need it); for the SIMD kernels of the
/// quantized types also the values as 16-bit integers, a scale for each run of [`INT_RUN`]
/// (its largest magnitude over 32,767): widening weight bytes to f32 takes three instructions
/// a vector where an integer multiply-add of pairs (`_mm256_madd_epi16`, `i32x4_dot_i16x8`)
/// takes one, and WebAssembly has no fused multiply-add. A value moves by at most half its
/// run's scale, 1/65,534 of the run's largest.
pub struct Activation<'a> {
    x: &'a [f32],
    block_sums: Vec<f32>,
    /// The 16-bit values and the runs' scales, made when a kernel first asks (tiles never do).
    #[cfg(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128")))]
    ints: std::sync::OnceLock<(Vec<i16>, Vec<f32>)>,
}

impl<'a> Activation<'a> {
    pub fn new(x: &'a [f32]) -> Self {
        Self {
            x,
            block_sums: x.chunks(BLOCK).map(|c| c.iter().sum()).collect(),
            #[cfg(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128")))]
            ints: std::sync::OnceLock::new(),
        }
    }

    /// The values as 16-bit integers, and each run's scale.
    #[cfg(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128")))]
    fn ints(&self) -> (&[i16], &[f32]) {
        let (ints, scales) = self.ints.get_or_init(|| {
            let mut ints = Vec::with_capacity(self.x.len());
            let scales = self
                .x
                .chunks(INT_RUN)
                .map(|block| {
                    let largest = block.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                    let to_int = if largest > 0.0 { 32767.0 / largest } else { 0.0 };
                    // Rounded half away from zero (`as` truncates, and saturates: a value a
                    // rounding past ±32,767 stays in range).
                    ints.extend(block.iter().map(|v| (v * to_int + 0.5f32.copysign(*v)) as i16));
                    largest / 32767.0
                })
                .collect();
            (ints, scales)
        });
        (ints, scales)
    }
}

impl Matrix {
    /// The tensor `name` of `gguf`, checked to have shape `[rows, cols]`: a stream's bytes as
    /// they arrived (shared), a whole file's copied.
    pub fn from_gguf(gguf: &Gguf<'_>, name: &str, rows: usize, cols: usize) -> Result<Self, ModelError> {
        let (ty, bytes) = gguf.tensor_bytes(name, &[rows, cols])?;
        let data = gguf.arrived_bytes(name).unwrap_or_else(|| Arc::new(bytes.to_vec()));
        Self::from_shared(ty, rows, cols, data).map_err(|message| ModelError::Tensor { name: name.into(), message })
    }

    /// A matrix from its encoded rows; an error unless `data` holds exactly `rows` rows of
    /// `cols` values of `ty`.
    pub fn from_bytes(ty: TensorType, rows: usize, cols: usize, data: Vec<u8>) -> Result<Self, String> {
        Self::from_shared(ty, rows, cols, Arc::new(data))
    }

    fn from_shared(ty: TensorType, rows: usize, cols: usize, data: Arc<Vec<u8>>) -> Result<Self, String> {
        let (block, block_bytes) = ty.block();
        if !cols.is_multiple_of(block) {
            return Err(format!("{cols} columns are not whole blocks of {block}"));
        }
        let row_bytes = cols / block * block_bytes;
        if Some(data.len()) != rows.checked_mul(row_bytes) {
            return Err(format!("{} bytes for {rows} rows of {row_bytes}", data.len()));
        }
        let data = match ty {
            TensorType::F32 => Data::F32(data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()),
            _ => Data::Encoded(data),
        };
        Ok(Self { ty, rows, cols, row_bytes, data })
    }

    /// An f32 matrix from `rows * cols` row-major values.
    pub fn from_f32(rows: usize, cols: usize, values: Vec<f32>) -> Self {
        assert_eq!(values.len(), rows * cols, "{rows} x {cols} values");
        Self { ty: TensorType::F32, rows, cols, row_bytes: cols * 4, data: Data::F32(values) }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Rows `range` as a matrix of their own (a copy).
    pub fn rows_range(&self, range: std::ops::Range<usize>) -> Self {
        assert!(range.start <= range.end && range.end <= self.rows, "rows {range:?} of {}", self.rows);
        let data = match &self.data {
            Data::F32(values) => Data::F32(values[range.start * self.cols..range.end * self.cols].to_vec()),
            Data::Encoded(bytes) => Data::Encoded(Arc::new(bytes[range.start * self.row_bytes..range.end * self.row_bytes].to_vec())),
        };
        Self { rows: range.len(), data, ..*self }
    }

    /// How the rows are encoded (F32 for a matrix made from f32 values).
    pub fn tensor_type(&self) -> TensorType {
        self.ty
    }

    /// Inputs of a row that share one scale and minimum in [`Matrix::row_int8_blocks`]'s runs
    /// ([`TensorType::scale_run`]); `None` for float rows.
    pub fn scale_run(&self) -> Option<usize> {
        match self.data {
            Data::Encoded(_) => self.ty.scale_run(),
            Data::F32(_) => None,
        }
    }

    /// Row `r` as runs of 16 `scale * q + min` (see [`crate::gguf::int8_blocks`]); false, and
    /// nothing emitted, for float rows.
    pub fn row_int8_blocks(&self, r: usize, emit: impl FnMut(f32, f32, &[i8; 16])) -> bool {
        match &self.data {
            Data::Encoded(bytes) => crate::gguf::int8_blocks(self.ty, &bytes[r * self.row_bytes..(r + 1) * self.row_bytes], emit),
            Data::F32(_) => false,
        }
    }

    /// The rows in the order `order` gives (row `i` of the result is row `order[i]`).
    pub fn reorder_rows(&self, order: &[usize]) -> Self {
        let data = match &self.data {
            Data::F32(values) => Data::F32(order.iter().flat_map(|&r| values[r * self.cols..][..self.cols].iter().copied()).collect()),
            Data::Encoded(bytes) => Data::Encoded(Arc::new(order.iter().flat_map(|&r| bytes[r * self.row_bytes..][..self.row_bytes].iter().copied()).collect())),
        };
        Self { rows: order.len(), data, ..*self }
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Bytes of weights held.
    pub fn bytes(&self) -> usize {
        self.rows * self.row_bytes
    }

    /// Row `r` as f32 values, into `out` (`cols` of them).
    pub fn row_into(&self, r: usize, out: &mut [f32]) {
        match &self.data {
            Data::F32(values) => out.copy_from_slice(&values[r * self.cols..(r + 1) * self.cols]),
            Data::Encoded(bytes) => dequantize_into(self.ty, &bytes[r * self.row_bytes..(r + 1) * self.row_bytes], out),
        }
    }

    /// `out[i * n + t] = row(first + i) · xs[t]` for the `n` tokens of `xs` (`[n, cols]`, and
    /// the same as `acts`) and as many rows as `out` holds, by the faster kernel for `n`: dot
    /// products ([`Matrix::dot_rows`]) for fewer tokens than `Matrix::tile_from` says, rows
    /// dequantized into tiles ([`Matrix::product_rows`]) for more.
    pub fn products(&self, simd: Simd, first: usize, xs: &[f32], acts: &[Activation<'_>], out: &mut [f32]) {
        let n = acts.len();
        if n < self.tile_from(simd) {
            self.dot_rows(simd, first, acts, out);
        } else {
            self.product_rows(simd, first, out.len() / n, xs, acts, out);
        }
    }

    /// Fewest tokens for which tiles beat dot products with `simd`: later for the AVX2 kernels
    /// of the quantized types, and for the K-quants' kernels, whose dot products unpack each
    /// block once for several tokens as their integer tiles do once for all, see
    /// [`TILE_TOKENS`].
    fn tile_from(&self, simd: Simd) -> usize {
        match simd {
            #[cfg(target_arch = "x86_64")]
            Simd::Avx2 | Simd::Avx2Vnni if self.ty.value_bits().is_some() => TILE_TOKENS_SHARED_BLOCKS,
            #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
            Simd::Simd128 if IntTile::holds(self.ty) => TILE_TOKENS_SHARED_BLOCKS,
            _ => TILE_TOKENS,
        }
    }

    /// `out[i * n + t] = row(first + i) · xs[t]` for each row `i` and each of the `n` tokens of
    /// `xs`: each row dequantized inside its dot products, which read it from memory once and
    /// from the cache for the other tokens. For a few tokens this beats dequantizing whole rows
    /// into tiles ([`Matrix::product_rows`]).
    pub fn dot_rows(&self, simd: Simd, first: usize, xs: &[Activation<'_>], out: &mut [f32]) {
        let n = xs.len();
        // The kernels read `cols` values of each `x` and whole rows.
        assert!(
            n > 0 && xs.iter().all(|x| x.x.len() == self.cols) && out.len().is_multiple_of(n) && first + out.len() / n <= self.rows,
            "dot_rows out of range"
        );
        let bytes = match &self.data {
            Data::F32(values) => {
                for (o, row) in out.chunks_exact_mut(n).zip(values[first * self.cols..].chunks_exact(self.cols)) {
                    for (o, x) in o.iter_mut().zip(xs) {
                        *o = dot(simd, row, x.x);
                    }
                }
                return;
            }
            Data::Encoded(bytes) => &bytes[first * self.row_bytes..],
        };
        let rows = bytes.chunks_exact(self.row_bytes);
        macro_rules! each {
            ($dot:expr) => {
                for (o, row) in out.chunks_exact_mut(n).zip(rows) {
                    for (o, x) in o.iter_mut().zip(xs) {
                        *o = $dot(row, x.x, &x.block_sums[..]);
                    }
                }
            };
        }
        // A kernel that takes all the tokens at once, unpacking each block once for them.
        macro_rules! block32 {
            ($dots:expr) => {
                for (o, row) in out.chunks_exact_mut(n).zip(rows) {
                    $dots(row, xs, o);
                }
            };
        }
        match (simd, self.ty) {
            (_, TensorType::F32) => unreachable!("f32 rows are not encoded"),
            // SAFETY (the AVX2 arms): `Simd::Avx2` is only chosen when the processor has AVX2,
            // FMA and F16C, `Simd::Avx2Vnni` when it also has AVX-512 VNNI and VL; rows and
            // each `x` have the lengths the type implies (checked above and at construction).
            #[cfg(target_arch = "x86_64")]
            (Simd::Avx2 | Simd::Avx2Vnni, TensorType::F16) => unsafe { each!(|r, x, _| avx2::half_dot::<false>(r, x)) },
            #[cfg(target_arch = "x86_64")]
            (Simd::Avx2 | Simd::Avx2Vnni, TensorType::BF16) => unsafe { each!(|r, x, _| avx2::half_dot::<true>(r, x)) },
            #[cfg(target_arch = "x86_64")]
            (Simd::Avx2, ty) => unsafe { block32!(|row, xs, o| avx2::madd::int_dots(ty, row, xs, o)) },
            #[cfg(target_arch = "x86_64")]
            (Simd::Avx2Vnni, ty) => unsafe { block32!(|row, xs, o| avx2::vnni::int_dots(ty, row, xs, o)) },
            #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
            (Simd::Simd128, TensorType::BF16) => each!(|r, x, _| simd128::bf16_dot(r, x)),
            #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
            (Simd::Simd128, TensorType::Q4_0) => block32!(simd128::block32_dots::<true, false>),
            #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
            (Simd::Simd128, TensorType::Q4_1) => block32!(simd128::block32_dots::<false, false>),
            #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
            (Simd::Simd128, TensorType::Q5_0) => block32!(simd128::block32_dots::<true, true>),
            #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
            (Simd::Simd128, TensorType::Q5_1) => block32!(simd128::block32_dots::<false, true>),
            #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
            (Simd::Simd128, TensorType::Q8_0) => block32!(simd128::q8_0_dots),
            #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
            (Simd::Simd128, TensorType::Q4_K) => block32!(simd128::k4_dots::<false>),
            #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
            (Simd::Simd128, TensorType::Q5_K) => block32!(simd128::k4_dots::<true>),
            #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
            (Simd::Simd128, TensorType::Q6_K) => block32!(simd128::q6_k_dots),
            (_, TensorType::F16) => each!(|r, x, _| portable::f16_dot(r, x)),
            (_, TensorType::BF16) => each!(|r, x, _| portable::bf16_dot(r, x)),
            (_, TensorType::Q4_0) => each!(portable::block32_dot::<true, false>),
            (_, TensorType::Q4_1) => each!(portable::block32_dot::<false, false>),
            (_, TensorType::Q5_0) => each!(portable::block32_dot::<true, true>),
            (_, TensorType::Q5_1) => each!(portable::block32_dot::<false, true>),
            (_, TensorType::Q8_0) => each!(|r, x, _| portable::q8_0_dot(r, x)),
            (_, TensorType::Q4_K) => each!(portable::k4_dot::<false>),
            (_, TensorType::Q5_K) => each!(portable::k4_dot::<true>),
            (_, TensorType::Q6_K) => each!(|r, x, _| portable::q6_k_dot(r, x)),
        }
    }

    /// `out[i * n + t] = row(first + i) · xs[t]` for `i` in `0..count` and each of the `n`
    /// tokens of `xs` (`[n, cols]`, and the same as `acts`): several tokens' products, four rows
    /// unpacked at a time into a tile that all the tokens read. The SIMD kernels of the K-quant
    /// types keep the tile in integers ([`IntTile`]); the others dequantize it to f32.
    pub fn product_rows(&self, simd: Simd, first: usize, count: usize, xs: &[f32], acts: &[Activation<'_>], out: &mut [f32]) {
        let cols = self.cols;
        let n = xs.len() / cols;
        assert!(
            xs.len() == n * cols && acts.len() == n && out.len() == count * n && first + count <= self.rows,
            "product_rows out of range"
        );
        #[cfg(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128")))]
        if simd != Simd::Portable
            && let Data::Encoded(bytes) = &self.data
            && IntTile::holds(self.ty)
        {
            let mut tile = IntTile::new(self.ty, cols);
            for start in (0..count).step_by(TILE_ROWS) {
                let rows = (count - start).min(TILE_ROWS);
                tile.unpack(simd, &bytes[(first + start) * self.row_bytes..][..rows * self.row_bytes]);
                for t in (0..n).step_by(2) {
                    let pair = [&acts[t], &acts[(t + 1).min(n - 1)]];
                    let sums = tile.products(simd, pair);
                    for r in 0..rows {
                        out[(start + r) * n + t] = sums[2 * r];
                        if t + 1 < n {
                            out[(start + r) * n + t + 1] = sums[2 * r + 1];
                        }
                    }
                }
            }
            return;
        }
        let mut tile = vec![0.0; TILE_ROWS * cols];
        for start in (0..count).step_by(TILE_ROWS) {
            let rows = (count - start).min(TILE_ROWS);
            for (r, row) in tile.chunks_exact_mut(cols).enumerate() {
                match r < rows {
                    true => self.row_into(first + start + r, row),
                    false => row.fill(0.0),
                }
            }
            for t in (0..n).step_by(2) {
                let x0 = &xs[t * cols..(t + 1) * cols];
                let x1 = if t + 1 < n { &xs[(t + 1) * cols..(t + 2) * cols] } else { x0 };
                let sums = tile_product(simd, &tile, x0, x1);
                for r in 0..rows {
                    out[(start + r) * n + t] = sums[2 * r];
                    if t + 1 < n {
                        out[(start + r) * n + t + 1] = sums[2 * r + 1];
                    }
                }
            }
        }
    }
}

/// Four rows of a K-quant matrix unpacked for the SIMD kernels' tile products: each weight is
/// `scale * level + min`, its level a 16-bit integer (the sub-block's scale multiplied in, as
/// the dot kernels do), a scale per super-block of 256 and a minimum per 32 (Q4_K and Q5_K).
/// The products with two tokens' 16-bit activations are summed in 32-bit integers over runs
/// of [`int_run`] values and scaled once a run: where f32 tiles take a multiply-add for each
/// weight and token (two instructions in WebAssembly), these take one for two. The types of
/// 32-value blocks keep f32 tiles: a float scale every 32 values would cost a conversion and
/// a multiply-add a run for each row and token, as many instructions as the f32 tile's
/// multiply-adds (SmolLM2 Q4_1 prefilled 30% slower natively).
#[cfg(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128")))]
struct IntTile {
    ty: TensorType,
    cols: usize,
    levels: Vec<i16>,
    scales: Vec<f32>,
    mins: Vec<f32>,
}

#[cfg(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128")))]
impl IntTile {
    /// Values of a super-block, sharing a scale: also the activations' run ([`INT_RUN`]), so
    /// that a run of the products has one scale of each.
    const SPAN: usize = INT_RUN;

    /// Whether the tiles of `ty` are integer tiles: the K-quant types'.
    fn holds(ty: TensorType) -> bool {
        matches!(ty, TensorType::Q4_K | TensorType::Q5_K | TensorType::Q6_K)
    }

    fn new(ty: TensorType, cols: usize) -> Self {
        let (levels, scales, mins) = (vec![0; TILE_ROWS * cols], vec![0.0; TILE_ROWS * cols / Self::SPAN], vec![0.0; TILE_ROWS * cols / BLOCK]);
        Self { ty, cols, levels, scales, mins }
    }

    /// Unpacks the encoded `rows` (one to four) with `simd`'s kernels; the tile's other rows
    /// keep what they held (finite values, whose products nobody reads).
    fn unpack(&mut self, simd: Simd, rows: &[u8]) {
        let cols = self.cols;
        let row_bytes = cols / Self::SPAN * self.ty.block().1;
        for ((r, levels), row) in self.levels.chunks_exact_mut(cols).enumerate().zip(rows.chunks_exact(row_bytes)) {
            let (scales, mins) = (&mut self.scales[r * cols / Self::SPAN..][..cols / Self::SPAN], &mut self.mins[r * cols / BLOCK..][..cols / BLOCK]);
            int_scales(self.ty, row, scales, mins);
            match simd {
                // SAFETY: `Simd::Avx2` and `Simd::Avx2Vnni` are only chosen when the processor
                // has AVX2.
                #[cfg(target_arch = "x86_64")]
                Simd::Avx2 | Simd::Avx2Vnni => unsafe { avx2::int_levels(self.ty, row, levels) },
                #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
                Simd::Simd128 => simd128::int_levels(self.ty, row, levels),
                Simd::Portable => unreachable!("integer tiles are for the SIMD kernels"),
            }
        }
    }

    /// The products of the four rows with the tokens `xs`: `[r0·x0, r0·x1, r1·x0, ...]`.
    fn products(&self, simd: Simd, xs: [&Activation<'_>; 2]) -> [f32; 2 * TILE_ROWS] {
        let ints = Ints::of_each(xs, self.cols);
        let mut out = match simd {
            // SAFETY: `Simd::Avx2` is only chosen when the processor has AVX2 and FMA,
            // `Simd::Avx2Vnni` when it also has AVX-512 VNNI and VL; `ints` holds the tile's
            // columns.
            #[cfg(target_arch = "x86_64")]
            Simd::Avx2 => unsafe { avx2::madd::int_tile_product(self, int_run(self.ty, 8), &ints) },
            #[cfg(target_arch = "x86_64")]
            Simd::Avx2Vnni => unsafe { avx2::vnni::int_tile_product(self, int_run(self.ty, 8), &ints) },
            #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
            Simd::Simd128 => simd128::int_tile_product(self, int_run(self.ty, 4), &ints),
            Simd::Portable => unreachable!("integer tiles are for the SIMD kernels"),
        };
        if self.ty != TensorType::Q6_K {
            let blocks = self.cols / BLOCK;
            for (i, o) in out.iter_mut().enumerate() {
                *o += dot(simd, &self.mins[i / 2 * blocks..][..blocks], &xs[i % 2].block_sums);
            }
        }
        out
    }
}

/// The most values of a run of an [`IntTile`] of `ty` whose 16-bit products (`largest level *
/// 32,767` each) one of `lanes` 32-bit lanes sums without overflow, where each lane takes
/// `1 / lanes` of a run's products: a power of two up to the super-block.
#[cfg(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128")))]
fn int_run(ty: TensorType, lanes: usize) -> usize {
    let largest = if ty == TensorType::Q6_K { 32 * 128 } else { 31 * 63 };
    let most = (i32::MAX as usize / (largest * 32767)) * lanes;
    let mut run = IntTile::SPAN;
    while run > most {
        run /= 2;
    }
    run
}

/// One encoded row of a K-quant type's [`IntTile`] scales, one per super-block, and (Q4_K,
/// Q5_K) minimums, one per 32; the SIMD kernels unpack its levels.
#[cfg(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128")))]
fn int_scales(ty: TensorType, row: &[u8], scales: &mut [f32], mins: &mut [f32]) {
    for (b, block) in row.chunks_exact(ty.block().1).enumerate() {
        match ty {
            TensorType::Q4_K | TensorType::Q5_K => {
                let (d, dmin) = (f16_at(block, 0), f16_at(block, 2));
                scales[b] = d;
                let [_, _, low, high] = k_scales_mins(block).map(u32::to_le_bytes);
                for (min, m) in mins[8 * b..][..8].iter_mut().zip(low.into_iter().chain(high)) {
                    *min = -(dmin * f32::from(m));
                }
            }
            TensorType::Q6_K => scales[b] = f16_at(block, 208),
            _ => unreachable!("{ty:?} has no integer tiles"),
        }
    }
}

/// The dot products of the tile's four rows with `x0` and `x1`: `[r0·x0, r0·x1, r1·x0, ...]`.
fn tile_product(simd: Simd, tile: &[f32], x0: &[f32], x1: &[f32]) -> [f32; 2 * TILE_ROWS] {
    debug_assert!(tile.len() == TILE_ROWS * x0.len() && x0.len() == x1.len());
    match simd {
        // SAFETY: `Simd::Avx2` and `Simd::Avx2Vnni` are only chosen when the processor has AVX2
        // and FMA; the tile holds four rows as long as `x0` and `x1`.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 | Simd::Avx2Vnni => unsafe { avx2::tile_product(tile, x0, x1) },
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        Simd::Simd128 => simd128::tile_product(tile, x0, x1),
        Simd::Portable => portable::tile_product(tile, x0, x1),
    }
}

/// The 16-bit activations of `N` tokens ([`Activation::ints`]), checked once to hold `len`
/// values (and a scale per [`INT_RUN`] and a sum per 32) so that the SIMD kernels read them unchecked: a check
/// a read cost the Q4_K kernels a fifth of their speed.
#[cfg(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128")))]
struct Ints<'x, const N: usize> {
    values: [&'x [i16]; N],
    scales: [&'x [f32]; N],
    sums: [&'x [f32]; N],
}

#[cfg(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128")))]
impl<'x, const N: usize> Ints<'x, N> {
    fn of(xs: &'x [Activation<'_>], len: usize) -> Self {
        Self::of_each(std::array::from_fn(|t| &xs[t]), len)
    }

    fn of_each(xs: [&'x Activation<'_>; N], len: usize) -> Self {
        let each: [(&[i16], &[f32]); N] = xs.map(Activation::ints);
        let ints = Self { values: each.map(|e| e.0), scales: each.map(|e| e.1), sums: xs.map(|x| &x.block_sums[..]) };
        let (blocks, runs) = (len.div_ceil(BLOCK), len.div_ceil(INT_RUN));
        assert!((0..N).all(|t| ints.values[t].len() >= len && ints.scales[t].len() >= runs && ints.sums[t].len() >= blocks), "activations shorter than the row");
        ints
    }

    /// Token `t`'s 16 values from `at`.
    ///
    /// # Safety
    /// `at + 16 <= len`.
    #[inline(always)]
    unsafe fn sixteen(&self, t: usize, at: usize) -> *const i16 {
        debug_assert!(at + 16 <= self.values[t].len());
        // SAFETY: `at + 16 <= len`, checked against the values in `of`.
        unsafe { self.values[t].as_ptr().add(at) }
    }

    /// Token `t`'s scale of its value `at` (shared by the run of [`INT_RUN`] values around it).
    ///
    /// # Safety
    /// `at < len`.
    #[inline(always)]
    unsafe fn scale(&self, t: usize, at: usize) -> f32 {
        debug_assert!(at / INT_RUN < self.scales[t].len());
        // SAFETY: `at < len`, and `of` checked that the scales cover `len` values.
        unsafe { *self.scales[t].get_unchecked(at / INT_RUN) }
    }

    /// The sums of token `t`'s 32 values (in f32) from `32 * block` on, then of the next 32,
    /// and so on.
    ///
    /// # Safety
    /// `block < len / 32`; the caller reads no sum past `len / 32`.
    #[inline(always)]
    unsafe fn sums(&self, t: usize, block: usize) -> *const f32 {
        debug_assert!(block < self.sums[t].len());
        // SAFETY: as for `scale`.
        unsafe { self.sums[t].as_ptr().add(block) }
    }

    /// The sum of token `t`'s 32 values (in f32) from `32 * block` on.
    ///
    /// # Safety
    /// `block < len / 32`.
    #[inline(always)]
    unsafe fn sum(&self, t: usize, block: usize) -> f32 {
        debug_assert!(block < self.sums[t].len());
        // SAFETY: as for `scale`.
        unsafe { *self.sums[t].get_unchecked(block) }
    }
}

/// Runs the kernel `$kernel::<N, ...>` (which takes the first `N` tokens of `xs` and returns
/// `N`) over all of `xs`, four tokens at a time and the rest together: the multi-token dot
/// kernels unpack each block once for the tokens of a call.
macro_rules! in_fours {
    ($kernel:ident $(, $param:tt)*; $row:expr, $xs:expr, $out:expr) => {{
        let mut done = 0;
        while done < $xs.len() {
            let (xs, out) = (&$xs[done..], &mut $out[done..]);
            done += match xs.len() {
                1 => $kernel::<1 $(, $param)*>($row, xs, out),
                2 => $kernel::<2 $(, $param)*>($row, xs, out),
                3 => $kernel::<3 $(, $param)*>($row, xs, out),
                _ => $kernel::<4 $(, $param)*>($row, xs, out),
            };
        }
    }};
}

/// The reference kernels: plain loops.
mod portable {
    use super::{BLOCK, TILE_ROWS, f16_at, k_scale_min};

    pub fn f32_dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(a, b)| a * b).sum()
    }

    pub fn f16_dot(row: &[u8], x: &[f32]) -> f32 {
        (0..x.len()).map(|i| f16_at(row, 2 * i) * x[i]).sum()
    }

    pub fn bf16_dot(row: &[u8], x: &[f32]) -> f32 {
        (0..x.len()).map(|i| super::bf16_at(row, 2 * i) * x[i]).sum()
    }

    /// Blocks of 32 values (see [`super::block32_size`]): a block's product is
    /// `d * sum(q * x) + m * sum(x)`.
    pub fn block32_dot<const CENTRED: bool, const FIVE: bool>(row: &[u8], x: &[f32], sums: &[f32]) -> f32 {
        let size = super::block32_size(CENTRED, FIVE);
        let mut total = 0.0;
        for (b, block) in row.chunks_exact(size).enumerate() {
            let xs = &x[b * BLOCK..(b + 1) * BLOCK];
            let qs = &block[size - 16..];
            let high = super::block32_fifth_bits::<FIVE>(block, size);
            let fifth = |j: usize| (((high >> j) & 1) << 4) as u8;
            let q: f32 = qs.iter().enumerate().zip(&xs[..16]).map(|((j, &q), x)| f32::from(q & 0x0f | fifth(j)) * x).sum::<f32>()
                + qs.iter().enumerate().zip(&xs[16..]).map(|((j, &q), x)| f32::from(q >> 4 | fifth(j + 16)) * x).sum::<f32>();
            let (d, minimum) = super::block32_scale_min::<CENTRED, FIVE>(block);
            total += d * q + minimum * sums[b];
        }
        total
    }

    /// Q4_K super-blocks (Q5_K where `FIVE`, see [`super::k4_layout`]): sub-block `j`'s product
    /// is `d * sc_j * sum(q * x) - dmin * m_j * sum(x)`, its sum of `x` from `sums`.
    pub fn k4_dot<const FIVE: bool>(row: &[u8], x: &[f32], sums: &[f32]) -> f32 {
        let (size, qs_at) = super::k4_layout(FIVE);
        let mut total = 0.0;
        for (b, block) in row.chunks_exact(size).enumerate() {
            let (d, dmin) = (f16_at(block, 0), f16_at(block, 2));
            for j in 0..8 {
                let (sc, m) = k_scale_min(&block[4..16], j);
                let qs = &block[qs_at + 32 * (j / 2)..][..32];
                let xs = &x[b * 256 + 32 * j..][..32];
                let shift = 4 * (j % 2);
                let fifth = |l: usize| if FIVE { ((block[16 + l] >> j) & 1) << 4 } else { 0 };
                let q: f32 = qs.iter().enumerate().zip(xs).map(|((l, &q), x)| f32::from((q >> shift) & 0x0f | fifth(l)) * x).sum();
                total += d * f32::from(sc) * q - dmin * f32::from(m) * sums[8 * b + j];
            }
        }
        total
    }

    /// Q6_K super-blocks of 210 bytes: runs of 16 values share a signed scale,
    /// `w = d * sc * (q - 32)`.
    pub fn q6_k_dot(row: &[u8], x: &[f32]) -> f32 {
        let mut total = 0.0;
        for (b, block) in row.chunks_exact(210).enumerate() {
            let d = f16_at(block, 208);
            for h in 0..2 {
                let (ql, qh, sc) = (&block[64 * h..][..64], &block[128 + 32 * h..][..32], &block[192 + 8 * h..][..8]);
                for k in 0..4 {
                    let xs = &x[b * 256 + 128 * h + 32 * k..][..32];
                    let ql = &ql[32 * (k % 2)..][..32];
                    let (low_shift, high_shift) = (4 * (k / 2), 2 * k);
                    let q = |l: usize| {
                        let q = ((ql[l] >> low_shift) & 0x0f) | (((qh[l] >> high_shift) & 3) << 4);
                        f32::from(q as i8 - 32)
                    };
                    let first: f32 = (0..16).map(|l| q(l) * xs[l]).sum();
                    let second: f32 = (16..32).map(|l| q(l) * xs[l]).sum();
                    total += d * f32::from(sc[2 * k] as i8) * first + d * f32::from(sc[2 * k + 1] as i8) * second;
                }
            }
        }
        total
    }

    /// Blocks of 34 bytes: f16 scale `d`, 32 signed bytes `q`; `w = d * q`.
    pub fn q8_0_dot(row: &[u8], x: &[f32]) -> f32 {
        let mut total = 0.0;
        for (b, block) in row.chunks_exact(34).enumerate() {
            let xs = &x[b * BLOCK..(b + 1) * BLOCK];
            let q: f32 = block[2..34].iter().zip(xs).map(|(&q, x)| f32::from(q as i8) * x).sum();
            total += f16_at(block, 0) * q;
        }
        total
    }

    pub fn tile_product(tile: &[f32], x0: &[f32], x1: &[f32]) -> [f32; 2 * TILE_ROWS] {
        let mut out = [0.0; 2 * TILE_ROWS];
        for (r, row) in tile.chunks_exact(x0.len()).enumerate() {
            out[2 * r] = f32_dot(row, x0);
            out[2 * r + 1] = f32_dot(row, x1);
        }
        out
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{Activation, BLOCK, IntTile, Ints, TILE_ROWS, TensorType, f16_at};

    /// How the integer kernels add products of 16-bit integers to 32-bit lanes.
    trait PairSums {
        /// `sum` plus `w[2i] x[2i] + w[2i + 1] x[2i + 1]` in each lane `i`.
        ///
        /// # Safety
        /// The processor has the implementation's instructions.
        unsafe fn add(sum: __m256i, w: __m256i, x: __m256i) -> __m256i;
    }

    /// AVX2's multiply-add of pairs (`vpmaddwd`), then an add.
    struct Madd;

    impl PairSums for Madd {
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn add(sum: __m256i, w: __m256i, x: __m256i) -> __m256i {
            _mm256_add_epi32(sum, _mm256_madd_epi16(w, x))
        }
    }

    /// AVX-512 VNNI's fused multiply-add of pairs (`vpdpwssd`), on 256-bit vectors (AVX-512
    /// VL).
    struct Dpwssd;

    impl PairSums for Dpwssd {
        #[inline]
        #[target_feature(enable = "avx512vnni,avx512vl")]
        unsafe fn add(sum: __m256i, w: __m256i, x: __m256i) -> __m256i {
            _mm256_dpwssd_epi32(sum, w, x)
        }
    }

    /// Sub-block `j` of a Q4_K or Q5_K super-block as levels, each value times the sub-block's
    /// scale (at most 31 * 63 = 1,953): values 0..16 and 16..32, from its pair's bytes
    /// ([`k4_pair_bytes`]) and the super-block's scales and fifth bits ([`k4_scales`]). A macro,
    /// so that the dot kernels' loops keep it inline (a function was 5% slower for one token),
    /// and without closures, which LLVM may leave out of line (one made the Q4_K kernel six
    /// times slower).
    macro_rules! k4_levels {
        ($five:expr, $qs:expr, $scales:expr, $high:expr, $j:expr) => {{
            let (qs, high, j): ([__m256i; 2], [__m256i; 2], usize) = ($qs, $high, $j);
            let (low, one) = (_mm256_set1_epi16(0x0f), _mm256_set1_epi16(1));
            // SAFETY: `PICKS` holds eight vectors.
            let sc = _mm256_shuffle_epi8($scales, unsafe { _mm256_loadu_si256($crate::cpu::matrix::PICKS[j].as_ptr() as *const __m256i) });
            let mut q = match j.is_multiple_of(2) {
                true => [_mm256_and_si256(qs[0], low), _mm256_and_si256(qs[1], low)],
                false => [_mm256_srli_epi16(qs[0], 4), _mm256_srli_epi16(qs[1], 4)],
            };
            if $five {
                for (q, high) in q.iter_mut().zip(high) {
                    let bit = _mm256_and_si256(_mm256_srl_epi16(high, _mm_cvtsi32_si128(j as i32)), one);
                    *q = _mm256_or_si256(*q, _mm256_slli_epi16(bit, 4));
                }
            }
            [_mm256_mullo_epi16(q[0], sc), _mm256_mullo_epi16(q[1], sc)]
        }};
    }

    #[target_feature(enable = "avx2,fma")]
    fn hsum(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
        _mm_cvtss_f32(s)
    }

    /// # Safety
    /// AVX2 and FMA must be available; `a` and `b` have the same length.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn f32_dot(a: &[f32], b: &[f32]) -> f32 {
        debug_assert_eq!(a.len(), b.len());
        let n = a.len() / 8 * 8;
        let mut acc = _mm256_setzero_ps();
        for i in (0..n).step_by(8) {
            // SAFETY: i + 8 <= n <= the length of both.
            acc = unsafe { _mm256_fmadd_ps(_mm256_loadu_ps(a.as_ptr().add(i)), _mm256_loadu_ps(b.as_ptr().add(i)), acc) };
        }
        let tail: f32 = (n..a.len()).map(|i| a[i] * b[i]).sum();
        hsum(acc) + tail
    }

    /// 16-bit floats: F16 (converted by F16C), or BF16 where `BRAIN` (the top half of an f32's
    /// bits).
    ///
    /// # Safety
    /// AVX2, FMA and F16C must be available; `row` holds `2 * x.len()` bytes.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn half_dot<const BRAIN: bool>(row: &[u8], x: &[f32]) -> f32 {
        debug_assert_eq!(row.len(), 2 * x.len());
        let n = x.len() / 8 * 8;
        let mut acc = _mm256_setzero_ps();
        for i in (0..n).step_by(8) {
            // SAFETY: the 16 bytes at 2 * i and the 8 floats at i lie inside `row` and `x`.
            let halves = unsafe { _mm_loadu_si128(row.as_ptr().add(2 * i) as *const __m128i) };
            let w = if BRAIN { _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(halves), 16)) } else { _mm256_cvtph_ps(halves) };
            acc = unsafe { _mm256_fmadd_ps(w, _mm256_loadu_ps(x.as_ptr().add(i)), acc) };
        }
        let value = |i: usize| if BRAIN { super::bf16_at(row, 2 * i) } else { f16_at(row, 2 * i) };
        let tail: f32 = (n..x.len()).map(|i| value(i) * x[i]).sum();
        hsum(acc) + tail
    }

    /// The two f16 values at the start of `block` (a block's scale and its minimum), converted
    /// by F16C. Only where both are f16 values: F16C takes a slow path on some other bit
    /// patterns (subnormals), and Q8_0's kernel, which read its scale and two of its values
    /// this way, took 50% longer for one token than with the scale alone in scalar code.
    #[target_feature(enable = "avx2,f16c")]
    fn f16_pair(block: &[u8]) -> (f32, f32) {
        f16_halves(u32::from_le_bytes([block[0], block[1], block[2], block[3]]))
    }

    /// The f16 values in the low and the high half of `bits`, converted by F16C.
    #[target_feature(enable = "avx2,f16c")]
    fn f16_halves(bits: u32) -> (f32, f32) {
        let both = _mm_cvtph_ps(_mm_cvtsi32_si128(bits as i32));
        (_mm_cvtss_f32(both), _mm_cvtss_f32(_mm_movehdup_ps(both)))
    }

    /// The fifth bits of 16 values (bit `j` of `bits` for value `j`) as bytes of 0 or 16.
    #[target_feature(enable = "avx2")]
    fn fifth_bits(bits: u32) -> __m128i {
        let spread = _mm_shuffle_epi8(_mm_set1_epi16(bits as u16 as i16), _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
        let select = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
        _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(spread, select), select), _mm_set1_epi8(16))
    }

    /// The 16 bytes at `at` of `bytes` as 16-bit lanes.
    #[target_feature(enable = "avx2")]
    fn widen_bytes(bytes: &[u8], at: usize) -> __m256i {
        let b = &bytes[at..at + 16];
        // SAFETY: `b` holds 16 bytes.
        _mm256_cvtepu8_epi16(unsafe { _mm_loadu_si128(b.as_ptr() as *const __m128i) })
    }

    /// The 32 bytes at `at` of `bytes`.
    #[target_feature(enable = "avx2")]
    fn bytes32(bytes: &[u8], at: usize) -> __m256i {
        let b = &bytes[at..at + 32];
        // SAFETY: `b` holds 32 bytes.
        unsafe { _mm256_loadu_si256(b.as_ptr() as *const __m256i) }
    }

    /// The 32 bytes `q` as two vectors of sixteen 16-bit integers (signed bytes where `SIGNED`).
    #[target_feature(enable = "avx2")]
    fn widen16<const SIGNED: bool>(q: __m256i) -> [__m256i; 2] {
        let (lo, hi) = (_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        match SIGNED {
            true => [_mm256_cvtepi8_epi16(lo), _mm256_cvtepi8_epi16(hi)],
            false => [_mm256_cvtepu8_epi16(lo), _mm256_cvtepu8_epi16(hi)],
        }
    }

    /// A Q4_K or Q5_K super-block's eight scales as 16-bit lanes (in both halves of a vector),
    /// its minimums times `dmin` in f32, and (Q5_K) values 0..16 and 16..32's fifth bits as
    /// 16-bit lanes, bit j for sub-block j.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn k4_scales<const FIVE: bool>(block: &[u8], dmin: f32) -> (__m256i, __m256, [__m256i; 2]) {
        let [a, b, c, d] = super::k_scales_mins(block).map(|w| w as i32);
        let packed = _mm_set_epi32(d, c, b, a);
        let scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(packed));
        let mins = _mm256_mul_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(packed, 8))));
        let high = if FIVE { [widen_bytes(block, 16), widen_bytes(block, 32)] } else { [_mm256_setzero_si256(); 2] };
        (scales, mins, high)
    }

    /// Bytes 0..16 and 16..32 of the 32 that hold sub-blocks `2 pair` (low nibbles) and `2 pair +
    /// 1` (high nibbles) of a Q4_K or Q5_K super-block, as 16-bit lanes.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn k4_pair_bytes<const FIVE: bool>(block: &[u8], pair: usize) -> [__m256i; 2] {
        let (_, qs_at) = super::k4_layout(FIVE);
        [widen_bytes(block, qs_at + 32 * pair), widen_bytes(block, qs_at + 32 * pair + 16)]
    }

    /// Half `h` (values `128 h ..`) of a Q6_K super-block as levels, each value (centred) times
    /// its run's scale (at most 32 * 128 = 4,096): four groups of 32, values 0..16 and 16..32
    /// of each.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn q6_k_half(block: &[u8], h: usize) -> [[__m256i; 2]; 4] {
        let (low, two, bias) = (_mm256_set1_epi8(0x0f), _mm256_set1_epi8(3), _mm256_set1_epi8(32));
        let (ql0, ql1, qh) = (bytes32(block, 64 * h), bytes32(block, 64 * h + 32), bytes32(block, 128 + 32 * h));
        // Each group's top two bits, at bits 4 and 5 of each byte.
        let high = [0, 2, 4, 6].map(|shift| _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(shift)), two), 4));
        let groups = [
            _mm256_or_si256(_mm256_and_si256(ql0, low), high[0]),
            _mm256_or_si256(_mm256_and_si256(ql1, low), high[1]),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low), high[2]),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low), high[3]),
        ];
        // The half's eight scales as 16-bit integers, in both halves of a vector.
        let sc = _mm_set1_epi64x(i64::from_le_bytes(block[192 + 8 * h..][..8].try_into().expect("eight bytes")));
        let scales = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(sc));
        let mut levels = [[_mm256_setzero_si256(); 2]; 4];
        for (k, (q, levels)) in groups.into_iter().zip(&mut levels).enumerate() {
            let w = widen16::<true>(_mm256_sub_epi8(q, bias));
            for (i, level) in levels.iter_mut().enumerate() {
                // SAFETY: `PICKS` holds eight vectors.
                *level = _mm256_mullo_epi16(w[i], _mm256_shuffle_epi8(scales, unsafe { _mm256_loadu_si256(super::PICKS[2 * k + i].as_ptr() as *const __m256i) }));
            }
        }
        levels
    }

    /// Stores an encoded K-quant row's levels ([`k4_levels`], [`q6_k_half`]) in `levels`.
    ///
    /// # Safety
    /// AVX2 must be available.
    #[target_feature(enable = "avx2")]
    pub unsafe fn int_levels(ty: TensorType, row: &[u8], levels: &mut [i16]) {
        let size = ty.block().1;
        assert!(levels.len() == row.len() / size * 256, "int_levels out of range");
        let mut store = |at: usize, w: __m256i| {
            let out = &mut levels[at..at + 16];
            // SAFETY: `out` holds 16 values.
            unsafe { _mm256_storeu_si256(out.as_mut_ptr() as *mut __m256i, w) }
        };
        for (b, block) in row.chunks_exact(size).enumerate() {
            match ty {
                TensorType::Q4_K | TensorType::Q5_K => {
                    let five = ty == TensorType::Q5_K;
                    let (scales, _, high) = if five { k4_scales::<true>(block, 0.0) } else { k4_scales::<false>(block, 0.0) };
                    for j in 0..8 {
                        let qs = if five { k4_pair_bytes::<true>(block, j / 2) } else { k4_pair_bytes::<false>(block, j / 2) };
                        let w = k4_levels!(five, qs, scales, high, j);
                        store(256 * b + 32 * j, w[0]);
                        store(256 * b + 32 * j + 16, w[1]);
                    }
                }
                TensorType::Q6_K => {
                    for h in 0..2 {
                        for (k, w) in q6_k_half(block, h).into_iter().enumerate() {
                            store(256 * b + 128 * h + 32 * k, w[0]);
                            store(256 * b + 128 * h + 32 * k + 16, w[1]);
                        }
                    }
                }
                _ => unreachable!("{ty:?} has no integer tiles"),
            }
        }
    }

    /// # Safety
    /// AVX2 and FMA must be available; `tile` holds four rows as long as `x0` and `x1`.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn tile_product(tile: &[f32], x0: &[f32], x1: &[f32]) -> [f32; 2 * TILE_ROWS] {
        let cols = x0.len();
        debug_assert!(tile.len() == TILE_ROWS * cols && x1.len() == cols);
        let n = cols / 8 * 8;
        let mut acc = [_mm256_setzero_ps(); 2 * TILE_ROWS];
        for k in (0..n).step_by(8) {
            // SAFETY: k + 8 <= n <= cols, and each of the tile's rows has `cols` values.
            unsafe {
                let (a, b) = (_mm256_loadu_ps(x0.as_ptr().add(k)), _mm256_loadu_ps(x1.as_ptr().add(k)));
                for r in 0..TILE_ROWS {
                    let w = _mm256_loadu_ps(tile.as_ptr().add(r * cols + k));
                    acc[2 * r] = _mm256_fmadd_ps(w, a, acc[2 * r]);
                    acc[2 * r + 1] = _mm256_fmadd_ps(w, b, acc[2 * r + 1]);
                }
            }
        }
        let mut out = [0.0; 2 * TILE_ROWS];
        for r in 0..TILE_ROWS {
            let row = &tile[r * cols..(r + 1) * cols];
            out[2 * r] = hsum(acc[2 * r]) + (n..cols).map(|k| row[k] * x0[k]).sum::<f32>();
            out[2 * r + 1] = hsum(acc[2 * r + 1]) + (n..cols).map(|k| row[k] * x1[k]).sum::<f32>();
        }
        out
    }

    /// Defines module `$module` with the integer kernels (the quantized types' dot products and
    /// the integer tiles' product), compiled for the target features `$features` and summing
    /// pairs with `$pairs`. A macro, because a function's target features cannot depend on a
    /// type parameter: kernels generic in their pair sums would have to be compiled without
    /// the features and rely on being inlined into a function that has them, and a closure or
    /// helper LLVM left out of line there made a kernel thirty times slower.
    macro_rules! int_kernels {
        ($module:ident, $features:literal, $pairs:ident) => {
            pub mod $module {
                use super::$pairs as P;
                use super::*;

                /// `out[t] = row · xs[t]` for each token, `row` of a quantized type, by its kernel,
                /// four tokens at a time and the rest together: the kernels unpack each block once
                /// for the tokens of a call.
                ///
                /// # Safety
                /// The processor has this module's target features; `row` holds `x.len()` values
                /// for each `x` of `xs`, and `out` one value per token.
                #[target_feature(enable = $features)]
                pub unsafe fn int_dots(ty: TensorType, row: &[u8], xs: &[Activation<'_>], out: &mut [f32]) {
                    // SAFETY: the caller's guarantees.
                    unsafe {
                        match ty {
                            TensorType::Q4_0 => in_fours!(block32_dots, true, false; row, xs, out),
                            TensorType::Q4_1 => in_fours!(block32_dots, false, false; row, xs, out),
                            TensorType::Q5_0 => in_fours!(block32_dots, true, true; row, xs, out),
                            TensorType::Q5_1 => in_fours!(block32_dots, false, true; row, xs, out),
                            TensorType::Q8_0 => in_fours!(q8_0_dots; row, xs, out),
                            TensorType::Q4_K => in_fours!(k4_dots, false; row, xs, out),
                            TensorType::Q5_K => in_fours!(k4_dots, true; row, xs, out),
                            TensorType::Q6_K => in_fours!(q6_k_dots; row, xs, out),
                            TensorType::F32 | TensorType::F16 | TensorType::BF16 => unreachable!("{ty:?} has no integer kernel"),
                        }
                    }
                }

                /// `out[t] = row · xs[t]` for the first `N` tokens, blocks of 32 values (see
                /// [`super::super::block32_size`]); returns `N`. Each block's weights are unpacked once for all
                /// the tokens, and each token's sums run in the same order whatever the number of tokens,
                /// so a token's result does not depend on the others. Here, as in every quantized kernel of
                /// this module, the products are 16-bit integers' ([`PairSums`], the activation as
                /// [`Activation`]'s 16-bit values) and their sum is scaled once a block.
                ///
                /// # Safety
                /// As for [`int_dots`].
                #[target_feature(enable = $features)]
                unsafe fn block32_dots<const N: usize, const CENTRED: bool, const FIVE: bool>(row: &[u8], xs: &[Activation<'_>], out: &mut [f32]) -> usize {
                    let size = super::super::block32_size(CENTRED, FIVE);
                    let ints = Ints::<N>::of(xs, row.len() / size * BLOCK);
                    let low = _mm_set1_epi8(0x0f);
                    let mut acc = [_mm256_setzero_ps(); N];
                    let mut minimums = [0.0f32; N];
                    for (b, block) in row.chunks_exact(size).enumerate() {
                        // A minimum of its own is read with the scale, by F16C.
                        let (scale, minimum) = match CENTRED {
                            // The scale twice, for F16C: a word from a general register, where
                            // the scale alone went into a vector register's low lane, keeping
                            // the rest, and so waited on that register's last use (the
                            // minimums' sum) and chained the blocks. In scalar code a block
                            // took 28% longer.
                            true => {
                                let h = u32::from(u16::from_le_bytes([block[0], block[1]]));
                                let (d, twin) = f16_halves(h | h << 16);
                                (d, super::super::block32_centred_minimum::<FIVE>(twin))
                            }
                            false => f16_pair(block),
                        };
                        // SAFETY: a block has 16 bytes of nibbles at its end.
                        let qs = unsafe { _mm_loadu_si128(block.as_ptr().add(size - 16) as *const __m128i) };
                        let mut lo = _mm_and_si128(qs, low);
                        let mut hi = _mm_and_si128(_mm_srli_epi16(qs, 4), low);
                        if FIVE {
                            let high = super::super::block32_fifth_bits::<FIVE>(block, size);
                            lo = _mm_or_si128(lo, fifth_bits(high));
                            hi = _mm_or_si128(hi, fifth_bits(high >> 16));
                        }
                        let (lo, hi) = (_mm256_cvtepu8_epi16(lo), _mm256_cvtepu8_epi16(hi));
                        let at = b * BLOCK;
                        for t in 0..N {
                            // SAFETY: `at + 32` and the run are within the row, whose length `Ints::of` checked.
                            unsafe {
                                let p = dot16::<N>(dot16::<N>(_mm256_setzero_si256(), &ints, t, lo, at), &ints, t, hi, at + 16);
                                acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(scale * ints.scale(t, at)), _mm256_cvtepi32_ps(p), acc[t]);
                                minimums[t] += minimum * ints.sum(t, b);
                            }
                        }
                    }
                    for t in 0..N {
                        out[t] = hsum(acc[t]) + minimums[t];
                    }
                    N
                }

                /// `out[t] = row · xs[t]` for the first `N` tokens, Q8_0 blocks of 34 bytes (an f16 scale
                /// and 32 signed values), as [`block32_dots`] takes them; returns `N`.
                ///
                /// # Safety
                /// As for [`int_dots`].
                #[target_feature(enable = $features)]
                unsafe fn q8_0_dots<const N: usize>(row: &[u8], xs: &[Activation<'_>], out: &mut [f32]) -> usize {
                    let ints = Ints::<N>::of(xs, row.len() / 34 * BLOCK);
                    let mut acc = [_mm256_setzero_ps(); N];
                    for (b, block) in row.chunks_exact(34).enumerate() {
                        let w = widen16::<true>(bytes32(block, 2));
                        let d = f16_at(block, 0);
                        let at = b * BLOCK;
                        for (t, acc) in acc.iter_mut().enumerate() {
                            // SAFETY: `at + 32` and the run are within the row, whose length `Ints::of` checked.
                            unsafe {
                                let p = dot16::<N>(dot16::<N>(_mm256_setzero_si256(), &ints, t, w[0], at), &ints, t, w[1], at + 16);
                                *acc = _mm256_fmadd_ps(_mm256_set1_ps(d * ints.scale(t, at)), _mm256_cvtepi32_ps(p), *acc);
                            }
                        }
                    }
                    for t in 0..N {
                        out[t] = hsum(acc[t]);
                    }
                    N
                }

                /// `sum` plus the products of 16 weights `w` (16-bit integers) with token `t`'s values `at
                /// .. at + 16`, summed in pairs into eight lanes.
                ///
                /// # Safety
                /// The processor has this module's target features; `at + 16 <= len` of `ints`.
                #[inline]
                #[target_feature(enable = $features)]
                unsafe fn dot16<const N: usize>(sum: __m256i, ints: &Ints<'_, N>, t: usize, w: __m256i, at: usize) -> __m256i {
                    // SAFETY: the caller's; `sixteen` then points at 16 values.
                    unsafe { P::add(sum, w, _mm256_loadu_si256(ints.sixteen(t, at) as *const __m256i)) }
                }

                /// `out[t] = row · xs[t]` for the first `N` tokens, Q4_K super-blocks (Q5_K where `FIVE`,
                /// see [`super::super::k4_layout`]), as [`block32_dots`] takes them; returns `N`. Sub-block `j`'s
                /// product is `d * sc_j * sum(q * x) - dmin * m_j * sum(x)`, its sum of `x` from the
                /// activation's block sums. `sum(sc_j * q * x)` is summed over the super-block in 32-bit
                /// integers (the activation's 16-bit values, `Activation::ints`, share a scale there) and
                /// scaled once; a row's work no longer waits on a chain of float additions a sub-block,
                /// which had held one token's kernel to the speed of two tokens'.
                ///
                /// # Safety
                /// As for [`int_dots`].
                #[target_feature(enable = $features)]
                unsafe fn k4_dots<const N: usize, const FIVE: bool>(row: &[u8], xs: &[Activation<'_>], out: &mut [f32]) -> usize {
                    let (size, _) = super::super::k4_layout(FIVE);
                    let ints = Ints::<N>::of(xs, row.len() / size * 256);
                    let mut acc = [_mm256_setzero_ps(); N];
                    let mut minimums = [_mm256_setzero_ps(); N];
                    for (b, block) in row.chunks_exact(size).enumerate() {
                        let (d, dmin) = f16_pair(block);
                        let (scales, mins, high) = k4_scales::<FIVE>(block, dmin);
                        // Four sums a token, so that fused multiply-adds ([`Dpwssd`]) make four chains
                        // rather than one. Each lane sums 8 products of at most 1,953 * 32,767.
                        let mut sums = [[_mm256_setzero_si256(); 4]; N];
                        for pair in 0..4 {
                            let qs = k4_pair_bytes::<FIVE>(block, pair);
                            for half in 0..2 {
                                let w = k4_levels!(FIVE, qs, scales, high, 2 * pair + half);
                                let at = b * 256 + 32 * (2 * pair + half);
                                for (t, sum) in sums.iter_mut().enumerate() {
                                    // SAFETY: `at + 32` is within the row, whose length `Ints::of` checked.
                                    unsafe {
                                        sum[2 * half] = dot16::<N>(sum[2 * half], &ints, t, w[0], at);
                                        sum[2 * half + 1] = dot16::<N>(sum[2 * half + 1], &ints, t, w[1], at + 16);
                                    }
                                }
                            }
                        }
                        for (t, [s0, s1, s2, s3]) in sums.into_iter().enumerate() {
                            let sum = _mm256_add_epi32(_mm256_add_epi32(s0, s1), _mm256_add_epi32(s2, s3));
                            // SAFETY (both): the super-block is within the row.
                            let x = unsafe { ints.scale(t, b * 256) };
                            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * x), _mm256_cvtepi32_ps(sum), acc[t]);
                            minimums[t] = _mm256_fmadd_ps(mins, unsafe { _mm256_loadu_ps(ints.sums(t, 8 * b)) }, minimums[t]);
                        }
                    }
                    for t in 0..N {
                        out[t] = hsum(acc[t]) - hsum(minimums[t]);
                    }
                    N
                }

                /// `out[t] = row · xs[t]` for the first `N` tokens, Q6_K super-blocks of 210 bytes (see
                /// `TensorType::Q6_K`), as [`block32_dots`] takes them; returns `N`. Runs of 16 values share
                /// a signed scale, `w = d * sc * (q - 32)`. In integers as [`k4_dots`]: the weights times
                /// their run's scale, summed over half a super-block (the most 32-bit lanes hold) and
                /// scaled once.
                ///
                /// # Safety
                /// As for [`int_dots`].
                #[target_feature(enable = $features)]
                unsafe fn q6_k_dots<const N: usize>(row: &[u8], xs: &[Activation<'_>], out: &mut [f32]) -> usize {
                    let ints = Ints::<N>::of(xs, row.len() / 210 * 256);
                    let mut acc = [_mm256_setzero_ps(); N];
                    for (b, block) in row.chunks_exact(210).enumerate() {
                        let d = f16_at(block, 208);
                        for h in 0..2 {
                            // Two sums a token, two chains of fused multiply-adds; each lane sums 8 of the
                            // half's products of at most 32 * 128 * 32,767: below 2^31.
                            let mut sums = [[_mm256_setzero_si256(); 2]; N];
                            for (k, w) in q6_k_half(block, h).into_iter().enumerate() {
                                let at = b * 256 + 128 * h + 32 * k;
                                for (t, sum) in sums.iter_mut().enumerate() {
                                    // SAFETY: `at + 32` is within the row, whose length `Ints::of` checked.
                                    unsafe {
                                        sum[0] = dot16::<N>(sum[0], &ints, t, w[0], at);
                                        sum[1] = dot16::<N>(sum[1], &ints, t, w[1], at + 16);
                                    }
                                }
                            }
                            for (t, [s0, s1]) in sums.into_iter().enumerate() {
                                // SAFETY: the super-block is within the row.
                                let x = unsafe { ints.scale(t, b * 256) };
                                acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * x), _mm256_cvtepi32_ps(_mm256_add_epi32(s0, s1)), acc[t]);
                            }
                        }
                    }
                    for t in 0..N {
                        out[t] = hsum(acc[t]);
                    }
                    N
                }

                /// The products of an integer tile's four rows with two tokens, `[r0·x0, r0·x1, ...]`,
                /// without the minimums: each row's 16-bit levels times each token's 16-bit values, summed
                /// over runs of `run` values in 32-bit lanes (four rows by two tokens a step), then scaled.
                ///
                /// # Safety
                /// The processor has this module's target features; `ints` holds the tile's columns;
                /// `run` divides the tile's span and keeps each lane's sum below 2^31
                /// ([`super::super::int_run`] with eight lanes).
                #[target_feature(enable = $features)]
                pub unsafe fn int_tile_product(tile: &IntTile, run: usize, ints: &Ints<'_, 2>) -> [f32; 2 * TILE_ROWS] {
                    let (cols, span) = (tile.cols, IntTile::SPAN);
                    assert!(tile.levels.len() == TILE_ROWS * cols && cols.is_multiple_of(span) && span.is_multiple_of(run) && run.is_multiple_of(16), "int_tile_product out of range");
                    let (spans, levels) = (cols / span, tile.levels.as_ptr());
                    let mut acc = [_mm256_setzero_ps(); 2 * TILE_ROWS];
                    for start in (0..cols).step_by(run) {
                        let mut sums = [_mm256_setzero_si256(); 2 * TILE_ROWS];
                        for k in (start..start + run).step_by(16) {
                            // SAFETY: `k + 16 <= cols`, the length of the tokens' values (`Ints::of_each`)
                            // and of each of the tile's rows (asserted above).
                            unsafe {
                                let (a, b) = (_mm256_loadu_si256(ints.sixteen(0, k) as *const __m256i), _mm256_loadu_si256(ints.sixteen(1, k) as *const __m256i));
                                for r in 0..TILE_ROWS {
                                    let w = _mm256_loadu_si256(levels.add(r * cols + k) as *const __m256i);
                                    sums[2 * r] = P::add(sums[2 * r], w, a);
                                    sums[2 * r + 1] = P::add(sums[2 * r + 1], w, b);
                                }
                            }
                        }
                        // SAFETY: `start < cols`.
                        let x = unsafe { [ints.scale(0, start), ints.scale(1, start)] };
                        for (i, sum) in sums.into_iter().enumerate() {
                            let scale = tile.scales[i / 2 * spans + start / span] * x[i % 2];
                            acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(scale), _mm256_cvtepi32_ps(sum), acc[i]);
                        }
                    }
                    acc.map(|a| hsum(a))
                }
            }
        };
    }

    int_kernels!(madd, "avx2,fma,f16c", Madd);
    int_kernels!(vnni, "avx2,fma,f16c,avx512vnni,avx512vl", Dpwssd);
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd128 {
    use std::arch::wasm32::*;

    use super::{Activation, BLOCK, IntTile, Ints, TILE_ROWS, TensorType, f16_at};

    fn hsum(v: v128) -> f32 {
        f32x4_extract_lane::<0>(v) + f32x4_extract_lane::<1>(v) + f32x4_extract_lane::<2>(v) + f32x4_extract_lane::<3>(v)
    }

    /// Four f32 values from `x` at `at`. Callers slice `x` so that the check folds away (a
    /// check per load, which the engine cannot drop, costs the inner loops a third).
    #[inline(always)]
    fn load(x: &[f32], at: usize) -> v128 {
        assert!(at + 4 <= x.len());
        // SAFETY: the four values at `at` lie inside `x`; wasm loads need no alignment.
        unsafe { v128_load(x.as_ptr().add(at) as *const v128) }
    }

    /// Four f32 values from `x` at `at`, for loops that check their bounds once.
    ///
    /// # Safety
    /// `at + 4 <= x.len()`.
    #[inline(always)]
    unsafe fn load_unchecked(x: &[f32], at: usize) -> v128 {
        debug_assert!(at + 4 <= x.len());
        // SAFETY: the caller's; wasm loads need no alignment.
        unsafe { v128_load(x.as_ptr().add(at) as *const v128) }
    }

    #[inline(always)]
    fn bytes16(bytes: &[u8], at: usize) -> v128 {
        assert!(at + 16 <= bytes.len());
        // SAFETY: the 16 bytes at `at` lie inside `bytes`.
        unsafe { v128_load(bytes.as_ptr().add(at) as *const v128) }
    }

    pub fn f32_dot(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len()) / 4 * 4;
        let mut acc = f32x4_splat(0.0);
        for (a, b) in a[..n].chunks_exact(4).zip(b[..n].chunks_exact(4)) {
            acc = f32x4_add(acc, f32x4_mul(load(a, 0), load(b, 0)));
        }
        hsum(acc) + (n..a.len()).map(|i| a[i] * b[i]).sum::<f32>()
    }

    /// 16 byte values as two vectors of eight 16-bit integers (signed bytes where `SIGNED`).
    #[inline(always)]
    fn widen<const SIGNED: bool>(v: v128) -> [v128; 2] {
        match SIGNED {
            true => [i16x8_extend_low_i8x16(v), i16x8_extend_high_i8x16(v)],
            false => [u16x8_extend_low_u8x16(v), u16x8_extend_high_u8x16(v)],
        }
    }

    /// The products of 16 weights `w` ([`widen`]) with token `t`'s values `at .. at + 16`,
    /// summed into four lanes.
    ///
    /// # Safety
    /// `at + 16 <= len` of `ints`.
    #[inline(always)]
    unsafe fn dot<const N: usize>(ints: &Ints<'_, N>, t: usize, w: [v128; 2], at: usize) -> v128 {
        // SAFETY: the caller's `at`; `sixteen` then points at 16 values, and wasm loads need no
        // alignment.
        let (a, b) = unsafe {
            let p = ints.sixteen(t, at);
            (v128_load(p as *const v128), v128_load(p.add(8) as *const v128))
        };
        i32x4_add(i32x4_dot_i16x8(w[0], a), i32x4_dot_i16x8(w[1], b))
    }

    /// `out[t] = row · xs[t]` for each token, blocks of 32 values (see
    /// [`super::block32_size`]), four tokens at a time: each block's weights are unpacked once
    /// for all of them, and each token's sums run in the same order whatever the number of
    /// tokens, so a token's result does not depend on the others. Here, as in every quantized
    /// kernel of this module, the products are 16-bit integers' (`i32x4_dot_i16x8`, the
    /// activation as [`Activation`]'s 16-bit values) and their sum is scaled once a block.
    pub fn block32_dots<const CENTRED: bool, const FIVE: bool>(row: &[u8], xs: &[Activation<'_>], out: &mut [f32]) {
        in_fours!(block32_dots_n, CENTRED, FIVE; row, xs, out)
    }

    /// The fifth bits of 16 values (bit `j` of `bits` for value `j`) as bytes of 0 or 16.
    fn fifth_bits(bits: u32) -> v128 {
        let spread = i8x16_swizzle(u16x8_splat(bits as u16), i8x16(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
        let select = u8x16(1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128);
        v128_and(i8x16_eq(v128_and(spread, select), select), u8x16_splat(16))
    }

    /// [`block32_dots`] for the first `N` tokens; returns `N`.
    fn block32_dots_n<const N: usize, const CENTRED: bool, const FIVE: bool>(row: &[u8], xs: &[Activation<'_>], out: &mut [f32]) -> usize {
        let size = super::block32_size(CENTRED, FIVE);
        let low = u8x16_splat(0x0f);
        let mut acc = [f32x4_splat(0.0); N];
        let mut minimums = [0.0f32; N];
        let ints = Ints::<N>::of(xs, row.len() / size * BLOCK);
        for (b, block) in row.chunks_exact(size).enumerate() {
            let qs = bytes16(block, size - 16);
            let (mut lo, mut hi) = (v128_and(qs, low), u8x16_shr(qs, 4));
            if FIVE {
                let high = super::block32_fifth_bits::<FIVE>(block, size);
                lo = v128_or(lo, fifth_bits(high));
                hi = v128_or(hi, fifth_bits(high >> 16));
            }
            let (lo, hi) = (widen::<false>(lo), widen::<false>(hi));
            let (d, minimum) = super::block32_scale_min::<CENTRED, FIVE>(block);
            for t in 0..N {
                // SAFETY: `at + 32` and the run are within the row, whose length `Ints::of` checked.
                unsafe {
                    let at = b * BLOCK;
                    let p = i32x4_add(dot(&ints, t, lo, at), dot(&ints, t, hi, at + 16));
                    acc[t] = f32x4_add(acc[t], f32x4_mul(f32x4_convert_i32x4(p), f32x4_splat(d * ints.scale(t, at))));
                    minimums[t] += minimum * ints.sum(t, b);
                }
            }
        }
        for t in 0..N {
            out[t] = hsum(acc[t]) + minimums[t];
        }
        N
    }

    /// `out[t] = row · xs[t]` for each token, Q4_K super-blocks (Q5_K where `FIVE`, see
    /// [`super::k4_layout`]), four tokens at a time as [`block32_dots`] takes them: sub-block
    /// `j`'s product is `d * sc_j * sum(q * x) - dmin * m_j * sum(x)`, its sum of `x` from the
    /// activation's block sums and `sum(sc_j * q * x)` in 32-bit integers over the super-block
    /// as the AVX2 kernel sums it.
    pub fn k4_dots<const FIVE: bool>(row: &[u8], xs: &[Activation<'_>], out: &mut [f32]) {
        in_fours!(k4_dots_n, FIVE; row, xs, out)
    }

    /// [`k4_dots`] for the first `N` tokens; returns `N`.
    fn k4_dots_n<const N: usize, const FIVE: bool>(row: &[u8], xs: &[Activation<'_>], out: &mut [f32]) -> usize {
        let (size, _) = super::k4_layout(FIVE);
        let ints = Ints::<N>::of(xs, row.len() / size * 256);
        let mut acc = [f32x4_splat(0.0); N];
        let mut minimums = [f32x4_splat(0.0); N];
        for (b, block) in row.chunks_exact(size).enumerate() {
            let (d, dmin) = (f16_at(block, 0), f16_at(block, 2));
            let (scales, mins, high) = k4_scales::<FIVE>(block);
            let dmin = f32x4_splat(dmin);
            let mins = mins.map(|m| f32x4_mul(dmin, m));
            // Each lane sums 32 products of at most 1,953 * 32,767 (below 2^31): the first 16
            // values of each sub-block, and apart the last 16.
            let mut sums = [[i32x4_splat(0); 2]; N];
            for j in 0..8 {
                let [w_lo, w_hi] = k4_sub_block::<FIVE>(block, scales, high, j);
                let at = b * 256 + 32 * j;
                for (t, sums) in sums.iter_mut().enumerate() {
                    // SAFETY: `at + 32` is within the row, whose length `Ints::of` checked.
                    unsafe {
                        sums[0] = i32x4_add(sums[0], dot(&ints, t, w_lo, at));
                        sums[1] = i32x4_add(sums[1], dot(&ints, t, w_hi, at + 16));
                    }
                }
            }
            for t in 0..N {
                // SAFETY (all three): the super-block is within the row.
                let x = unsafe { ints.scale(t, b * 256) };
                let sum = f32x4_add(f32x4_convert_i32x4(sums[t][0]), f32x4_convert_i32x4(sums[t][1]));
                acc[t] = f32x4_add(acc[t], f32x4_mul(sum, f32x4_splat(d * x)));
                let (low_sums, high_sums) = unsafe { (v128_load(ints.sums(t, 8 * b) as *const v128), v128_load(ints.sums(t, 8 * b + 4) as *const v128)) };
                minimums[t] = f32x4_add(minimums[t], f32x4_add(f32x4_mul(mins[0], low_sums), f32x4_mul(mins[1], high_sums)));
            }
        }
        for t in 0..N {
            out[t] = hsum(acc[t]) - hsum(minimums[t]);
        }
        N
    }

    /// `out[t] = row · xs[t]` for each token, Q6_K super-blocks of 210 bytes (see
    /// `TensorType::Q6_K`): runs of 16 values share a signed scale, `w = d * sc * (q - 32)`.
    /// Four tokens at a time as [`block32_dots`] takes them, the weights times their run's
    /// scale summed in 32-bit integers over a quarter super-block (the most four lanes hold).
    pub fn q6_k_dots(row: &[u8], xs: &[Activation<'_>], out: &mut [f32]) {
        in_fours!(q6_k_dots_n; row, xs, out)
    }

    /// [`q6_k_dots`] for the first `N` tokens; returns `N`.
    fn q6_k_dots_n<const N: usize>(row: &[u8], xs: &[Activation<'_>], out: &mut [f32]) -> usize {
        let ints = Ints::<N>::of(xs, row.len() / 210 * 256);
        let mut acc = [f32x4_splat(0.0); N];
        for (b, block) in row.chunks_exact(210).enumerate() {
            let d = f16_at(block, 208);
            for h in 0..2 {
                for l0 in [0, 16] {
                    // Each lane sums the four groups' 16 products of at most 32 * 128 * 32,767:
                    // below 2^31.
                    let mut sums = [i32x4_splat(0); N];
                    for (k, w) in q6_k_quarter(block, h, l0).into_iter().enumerate() {
                        let at = b * 256 + 128 * h + 32 * k + l0;
                        for (t, sum) in sums.iter_mut().enumerate() {
                            // SAFETY: `at + 16` is within the row, whose length `Ints::of` checked.
                            *sum = i32x4_add(*sum, unsafe { dot(&ints, t, w, at) });
                        }
                    }
                    for t in 0..N {
                        // SAFETY: the super-block is within the row.
                        let x = unsafe { ints.scale(t, b * 256) };
                        acc[t] = f32x4_add(acc[t], f32x4_mul(f32x4_convert_i32x4(sums[t]), f32x4_splat(d * x)));
                    }
                }
            }
        }
        for t in 0..N {
            out[t] = hsum(acc[t]);
        }
        N
    }

    /// A Q4_K or Q5_K super-block's eight scales as 16-bit lanes, its minimums in f32 (two
    /// vectors), and (Q5_K) values 0..16 and 16..32's fifth bits, bit j for sub-block j.
    fn k4_scales<const FIVE: bool>(block: &[u8]) -> (v128, [v128; 2], [v128; 2]) {
        let [w0, w1, w2, w3] = super::k_scales_mins(block);
        let packed = u32x4(w0, w1, w2, w3);
        let mins = u16x8_extend_high_u8x16(packed);
        let mins = [u32x4_extend_low_u16x8(mins), u32x4_extend_high_u16x8(mins)].map(|m| f32x4_convert_i32x4(m));
        let high = if FIVE { [bytes16(block, 16), bytes16(block, 32)] } else { [u8x16_splat(0); 2] };
        (u16x8_extend_low_u8x16(packed), mins, high)
    }

    /// Sub-block `j` of a Q4_K or Q5_K super-block ([`k4_scales`]) as levels, each value times
    /// the sub-block's scale (at most 31 * 63 = 1,953): values 0..16 and 16..32.
    fn k4_sub_block<const FIVE: bool>(block: &[u8], scales: v128, high: [v128; 2], j: usize) -> [[v128; 2]; 2] {
        let (_, qs_at) = super::k4_layout(FIVE);
        let (low, one) = (u8x16_splat(0x0f), u8x16_splat(1));
        let sc = i8x16_swizzle(scales, i16x8_splat(super::pick16(j)));
        // The pair's 32 bytes: low nibbles are sub-block 2 pair, high ones 2 pair + 1.
        let qs = [bytes16(block, qs_at + 32 * (j / 2)), bytes16(block, qs_at + 16 + 32 * (j / 2))];
        [0, 1].map(|i| {
            let q = if j.is_multiple_of(2) { v128_and(qs[i], low) } else { u8x16_shr(qs[i], 4) };
            widen::<false>(if FIVE { v128_or(q, u8x16_shl(v128_and(u8x16_shr(high[i], j as u32), one), 4)) } else { q }).map(|w| i16x8_mul(w, sc))
        })
    }

    /// Values `l0 .. l0 + 16` of the four groups of 32 of half `h` of a Q6_K super-block as
    /// levels, each value (centred) times its run's scale (at most 32 * 128 = 4,096).
    fn q6_k_quarter(block: &[u8], h: usize, l0: usize) -> [[v128; 2]; 4] {
        let (low, two, bias) = (u8x16_splat(0x0f), u8x16_splat(3), i8x16_splat(32));
        let (ql0, ql1, qh) = (bytes16(block, 64 * h + l0), bytes16(block, 64 * h + 32 + l0), bytes16(block, 128 + 32 * h + l0));
        let high = |shift: u32| u8x16_shl(v128_and(u8x16_shr(qh, shift), two), 4);
        let groups = [
            v128_or(v128_and(ql0, low), high(0)),
            v128_or(v128_and(ql1, low), high(2)),
            v128_or(u8x16_shr(ql0, 4), high(4)),
            v128_or(u8x16_shr(ql1, 4), high(6)),
        ];
        std::array::from_fn(|k| {
            let sc = i16x8_splat(i16::from(block[192 + 8 * h + 2 * k + l0 / 16] as i8));
            widen::<true>(i8x16_sub(groups[k], bias)).map(|w| i16x8_mul(w, sc))
        })
    }

    /// Stores an encoded K-quant row's levels ([`k4_sub_block`], [`q6_k_quarter`]) in `levels`.
    pub fn int_levels(ty: TensorType, row: &[u8], levels: &mut [i16]) {
        let size = ty.block().1;
        assert!(levels.len() == row.len() / size * 256, "int_levels out of range");
        let mut store = |at: usize, w: [v128; 2]| {
            let out = &mut levels[at..at + 16];
            // SAFETY: `out` holds 16 values; wasm stores need no alignment.
            unsafe {
                v128_store(out.as_mut_ptr() as *mut v128, w[0]);
                v128_store(out.as_mut_ptr().add(8) as *mut v128, w[1]);
            }
        };
        for (b, block) in row.chunks_exact(size).enumerate() {
            match ty {
                TensorType::Q4_K | TensorType::Q5_K => {
                    let five = ty == TensorType::Q5_K;
                    let (scales, _, high) = if five { k4_scales::<true>(block) } else { k4_scales::<false>(block) };
                    for j in 0..8 {
                        let [lo, hi] = if five { k4_sub_block::<true>(block, scales, high, j) } else { k4_sub_block::<false>(block, scales, high, j) };
                        store(256 * b + 32 * j, lo);
                        store(256 * b + 32 * j + 16, hi);
                    }
                }
                TensorType::Q6_K => {
                    for (h, l0) in [(0, 0), (0, 16), (1, 0), (1, 16)] {
                        for (k, w) in q6_k_quarter(block, h, l0).into_iter().enumerate() {
                            store(256 * b + 128 * h + 32 * k + l0, w);
                        }
                    }
                }
                _ => unreachable!("{ty:?} has no integer tiles"),
            }
        }
    }

    pub fn bf16_dot(row: &[u8], x: &[f32]) -> f32 {
        let n = x.len() / 4 * 4;
        assert!(row.len() >= 2 * x.len(), "bf16_dot out of range");
        let mut acc = f32x4_splat(0.0);
        for i in (0..n).step_by(4) {
            // SAFETY: the 8 bytes at 2 * i lie inside `row` (checked above); wasm loads need no
            // alignment.
            let halves = unsafe { v128_load64_zero(row.as_ptr().add(2 * i) as *const u64) };
            // A BF16 value is the top half of an f32's bits.
            let w = i32x4_shl(u32x4_extend_low_u16x8(halves), 16);
            acc = f32x4_add(acc, f32x4_mul(w, load(x, i)));
        }
        hsum(acc) + (n..x.len()).map(|i| super::bf16_at(row, 2 * i) * x[i]).sum::<f32>()
    }

    /// `out[t] = row · xs[t]` for each token, Q8_0 blocks of 34 bytes (an f16 scale and 32
    /// signed values), four tokens at a time as [`block32_dots`] takes them.
    pub fn q8_0_dots(row: &[u8], xs: &[Activation<'_>], out: &mut [f32]) {
        in_fours!(q8_0_dots_n; row, xs, out)
    }

    /// [`q8_0_dots`] for the first `N` tokens; returns `N`.
    fn q8_0_dots_n<const N: usize>(row: &[u8], xs: &[Activation<'_>], out: &mut [f32]) -> usize {
        let ints = Ints::<N>::of(xs, row.len() / 34 * BLOCK);
        let mut acc = [f32x4_splat(0.0); N];
        for (b, block) in row.chunks_exact(34).enumerate() {
            let (w_lo, w_hi) = (widen::<true>(bytes16(block, 2)), widen::<true>(bytes16(block, 18)));
            let d = f16_at(block, 0);
            let at = b * BLOCK;
            for (t, acc) in acc.iter_mut().enumerate() {
                // SAFETY: `at + 32` and the run are within the row, whose length `Ints::of` checked.
                unsafe {
                    let p = i32x4_add(dot(&ints, t, w_lo, at), dot(&ints, t, w_hi, at + 16));
                    *acc = f32x4_add(*acc, f32x4_mul(f32x4_convert_i32x4(p), f32x4_splat(d * ints.scale(t, at))));
                }
            }
        }
        for t in 0..N {
            out[t] = hsum(acc[t]);
        }
        N
    }

    /// [`super::avx2::int_tile_product`]'s products with `i32x4_dot_i16x8`: `run` keeps each
    /// of four lanes' sums below 2^31 ([`super::int_run`] with four lanes).
    pub fn int_tile_product(tile: &IntTile, run: usize, ints: &Ints<'_, 2>) -> [f32; 2 * TILE_ROWS] {
        let (cols, span) = (tile.cols, IntTile::SPAN);
        assert!(tile.levels.len() == TILE_ROWS * cols && cols.is_multiple_of(span) && span.is_multiple_of(run) && run.is_multiple_of(16), "int_tile_product out of range");
        let (spans, levels) = (cols / span, tile.levels.as_ptr());
        let mut acc = [f32x4_splat(0.0); 2 * TILE_ROWS];
        for start in (0..cols).step_by(run) {
            let mut sums = [i32x4_splat(0); 2 * TILE_ROWS];
            for k in (start..start + run).step_by(16) {
                // SAFETY: `k + 16 <= cols`, the length of the tokens' values (`Ints::of_each`)
                // and of each of the tile's rows (asserted above); wasm loads need no alignment.
                unsafe {
                    let x = [ints.sixteen(0, k), ints.sixteen(1, k)];
                    for half in [0, 8] {
                        let (a, b) = (v128_load(x[0].add(half) as *const v128), v128_load(x[1].add(half) as *const v128));
                        for r in 0..TILE_ROWS {
                            let w = v128_load(levels.add(r * cols + k + half) as *const v128);
                            sums[2 * r] = i32x4_add(sums[2 * r], i32x4_dot_i16x8(w, a));
                            sums[2 * r + 1] = i32x4_add(sums[2 * r + 1], i32x4_dot_i16x8(w, b));
                        }
                    }
                }
            }
            // SAFETY: `start < cols`.
            let x = unsafe { [ints.scale(0, start), ints.scale(1, start)] };
            for (i, sum) in sums.into_iter().enumerate() {
                let scale = tile.scales[i / 2 * spans + start / span] * x[i % 2];
                acc[i] = f32x4_add(acc[i], f32x4_mul(f32x4_convert_i32x4(sum), f32x4_splat(scale)));
            }
        }
        acc.map(hsum)
    }

    pub fn tile_product(tile: &[f32], x0: &[f32], x1: &[f32]) -> [f32; 2 * TILE_ROWS] {
        let cols = x0.len();
        let n = cols / 4 * 4;
        let mut acc = [f32x4_splat(0.0); 2 * TILE_ROWS];
        assert!(tile.len() == TILE_ROWS * cols && x1.len() == cols, "tile_product out of range");
        for k in (0..n).step_by(4) {
            // SAFETY (here and for `w`): k + 4 <= n <= cols, the length of `x0`, `x1` and each
            // of the tile's rows.
            let (a, b) = unsafe { (load_unchecked(x0, k), load_unchecked(x1, k)) };
            for r in 0..TILE_ROWS {
                let w = unsafe { load_unchecked(tile, r * cols + k) };
                acc[2 * r] = f32x4_add(acc[2 * r], f32x4_mul(w, a));
                acc[2 * r + 1] = f32x4_add(acc[2 * r + 1], f32x4_mul(w, b));
            }
        }
        let mut out = [0.0; 2 * TILE_ROWS];
        for r in 0..TILE_ROWS {
            let row = &tile[r * cols..(r + 1) * cols];
            out[2 * r] = hsum(acc[2 * r]) + (n..cols).map(|k| row[k] * x0[k]).sum::<f32>();
            out[2 * r + 1] = hsum(acc[2 * r + 1]) + (n..cols).map(|k| row[k] * x1[k]).sum::<f32>();
        }
        out
    }
}
