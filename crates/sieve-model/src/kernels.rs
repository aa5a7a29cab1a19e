//! GPU kernels that work on the model's own buffers.
//!
//! Each kernel is hand-written WGSL from the repository's `shaders/` folder,
//! launched through burn's raw-kernel route (`KernelSource` + `SourceKernel`)
//! on the buffer behind a burn tensor, so logits never leave the GPU. Each one
//! has a plain CPU reference beside it that tests compare it with.

use std::fmt;

use burn::backend::Wgpu;
use burn::backend::wgpu::{KernelSource, SourceKernel, SourceTemplate, into_contiguous};
use burn::cubecl::prelude::KernelId;
use burn::cubecl::server::KernelArguments;
use burn::cubecl::{CubeCount, CubeDim};
use burn::tensor::Tensor;

/// Invocations per workgroup for the element-wise kernels.
const WORKGROUP_SIZE: u32 = 256;

/// A kernel launch that could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelError {
    /// The tensor does not live on the wgpu runtime (these kernels are WGSL).
    NotOnWgpu(String),
    /// The bitmask does not hold `rows * ceil(width / 32)` words.
    MaskLength { expected: usize, actual: usize },
    /// A dimension does not fit the `u32` indices the shader uses.
    TooLarge { what: &'static str, value: usize },
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::NotOnWgpu(why) => write!(f, "GPU kernels need a wgpu tensor: {why}"),
            KernelError::MaskLength { expected, actual } => {
                write!(f, "bitmask has {actual} words, expected {expected}")
            }
            KernelError::TooLarge { what, value } => {
                write!(f, "{what} = {value} does not fit the kernel's 32-bit indices")
            }
        }
    }
}

impl std::error::Error for KernelError {}

/// Number of `u32` words in one bitmask row for `width` logits.
pub fn mask_words(width: usize) -> usize {
    width.div_ceil(32)
}

fn to_u32(what: &'static str, value: usize) -> Result<u32, KernelError> {
    u32::try_from(value).map_err(|_| KernelError::TooLarge { what, value })
}

struct ApplyBitmask;

impl KernelSource for ApplyBitmask {
    fn source(&self) -> SourceTemplate {
        SourceTemplate::new(include_str!("../../../shaders/apply_bitmask.wgsl"))
            .register("workgroup_size", WORKGROUP_SIZE.to_string())
    }

    fn id(&self) -> KernelId {
        KernelId::new::<Self>()
    }

    fn lang(&self) -> &'static str {
        "wgsl"
    }
}

/// Sets every logit whose token the bitmask forbids to `-inf`, on the GPU.
///
/// Bit `i % 32` of word `i / 32` of a row's mask allows token `i`; ids at or
/// past `vocab_size` are forbidden whatever their bit says. The mask is
/// uploaded once (`rows * ceil(width / 32) * 4` bytes); nothing is read back.
///
/// # Shapes
/// - `logits`: `[rows, width]`, float, on a wgpu device
/// - `mask`: `rows * ceil(width / 32)` words, row-major
/// - returns `[rows, width]`
pub fn apply_bitmask(
    logits: Tensor<2>,
    mask: &[u32],
    vocab_size: usize,
) -> Result<Tensor<2>, KernelError> {
    let [rows, width] = logits.dims();
    let words = mask_words(width);
    let expected = rows * words;
    if mask.len() != expected {
        return Err(KernelError::MaskLength {
            expected,
            actual: mask.len(),
        });
    }
    let params = [
        to_u32("width", width)?,
        to_u32("mask words", words)?,
        u32::try_from(vocab_size).unwrap_or(u32::MAX),
        to_u32("rows", rows)?,
        f32::NEG_INFINITY.to_bits(),
    ];
    let logits = logits
        .try_into_primitive::<Wgpu>()
        .map_err(|e| KernelError::NotOnWgpu(format!("{e:?}")))?;
    let logits = into_contiguous(logits);
    let client = logits.client.clone();
    let mask = client.create_from_slice(bytemuck::cast_slice(mask));
    let params = client.create_from_slice(bytemuck::cast_slice(&params));
    let groups_x = to_u32("width", width)?.div_ceil(WORKGROUP_SIZE);
    client.launch(
        Box::new(SourceKernel::new(ApplyBitmask, CubeDim::new_1d(WORKGROUP_SIZE))),
        CubeCount::Static(groups_x, to_u32("rows", rows)?, 1),
        KernelArguments::new().with_buffers(vec![
            logits.handle.clone().binding(),
            mask.binding(),
            params.binding(),
        ]),
    );
    Ok(Tensor::from_primitive::<Wgpu>(logits))
}

/// CPU reference for [`apply_bitmask`] on one row-major block of logits.
pub fn apply_bitmask_reference(logits: &mut [f32], width: usize, mask: &[u32], vocab_size: usize) {
    let words = mask_words(width);
    for (row, values) in logits.chunks_mut(width).enumerate() {
        for (token, value) in values.iter_mut().enumerate() {
            let word = mask[row * words + token / 32];
            let allowed = token < vocab_size && (word >> (token % 32)) & 1 == 1;
            if !allowed {
                *value = f32::NEG_INFINITY;
            }
        }
    }
}
