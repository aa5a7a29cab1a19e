//! GPU kernels that work on the model's own buffers.
//!
//! Each kernel is hand-written WGSL from the crate's `shaders/` folder,
//! launched through burn's raw-kernel route (`KernelSource` + `SourceKernel`)
//! on the buffer behind a burn tensor, so logits never leave the GPU. Each one
//! has a plain CPU reference beside it that tests compare it with.

use std::fmt;

use burn::backend::Wgpu;
use burn::backend::wgpu::{KernelSource, SourceKernel, SourceTemplate, into_contiguous};
use burn::cubecl::prelude::KernelId;
use burn::cubecl::server::{BufferBinding, KernelArguments};
use burn::cubecl::{CubeCount, CubeDim};
use burn::tensor::Tensor;

use crate::error::ModelError;
use crate::sampling::{PICK_WORKGROUP, Sampling};

use burn::cubecl::client::Client;

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
                write!(
                    f,
                    "{what} = {value} does not fit the kernel's 32-bit indices"
                )
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

/// A WGSL shader from `shaders/`, launched with its `{{ workgroup_size }}`, `{{ rows }}` and
/// `{{ slices }}` filled in, and its weight form's `{{ weights }}`, `{{ run }}`, `{{ bits }}`
/// and `{{ minimum }}`.
#[derive(Clone, Copy)]
pub(crate) struct Wgsl {
    /// The shader's file name; with the constants it keys burn's pipeline cache.
    pub name: &'static str,
    pub source: &'static str,
    pub workgroup_size: u32,
    /// Rows per invocation, for the shaders that tile rows (1 elsewhere).
    pub rows: u32,
    /// Invocations that split the sum of each output column, for the projections (1 elsewhere).
    pub slices: u32,
    /// The form of the weight matrix it reads (shaders/weights.wgsl).
    pub weights: WeightForm,
}

/// How a weight matrix is held on the GPU (shaders/weights.wgsl says the layouts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum WeightForm {
    /// f32 values, 4 bytes a weight.
    F32,
    /// Runs of `run` (16 or 32) inputs, unsigned values of `bits` (4, 6 or 8) with a scale and,
    /// where `minimum`, a minimum (else the minimum is −2^(bits−1) scales): `bits / 8` bytes a
    /// weight, and 4 bytes a run of a column (8 with a minimum).
    Quantized { run: u32, bits: u32, minimum: bool },
    /// IEEE half-precision values (F16 files), 2 bytes a weight.
    F16,
    /// bfloat16 values (BF16 files), 2 bytes a weight.
    Bf16,
}

impl WeightForm {
    /// The form's number in shaders/weights.wgsl (`FORM`).
    fn code(self) -> u32 {
        match self {
            Self::F32 => 0,
            Self::Quantized { .. } => 1,
            Self::F16 => 2,
            Self::Bf16 => 3,
        }
    }

    /// Inputs of a run (`RUN`; 16 for the float forms, which have none).
    pub(crate) fn run(self) -> u32 {
        match self {
            Self::F32 | Self::F16 | Self::Bf16 => 16,
            Self::Quantized { run, .. } => run,
        }
    }

    /// Bits of a quantized value (`BITS`; 0 for the float forms).
    fn bits(self) -> u32 {
        match self {
            Self::Quantized { bits, .. } => bits,
            _ => 0,
        }
    }

    /// Whether runs hold a minimum (`MINIMUM`).
    fn minimum(self) -> bool {
        matches!(self, Self::Quantized { minimum: true, .. })
    }
}

impl KernelSource for Wgsl {
    fn source(&self) -> SourceTemplate {
        SourceTemplate::new(self.source)
            .register("workgroup_size", self.workgroup_size.to_string())
            .register("rows", self.rows.to_string())
            .register("slices", self.slices.to_string())
            .register("weights", self.weights.code().to_string())
            .register("run", self.weights.run().to_string())
            .register("bits", self.weights.bits().to_string())
            .register("minimum", self.weights.minimum().to_string())
    }

    fn id(&self) -> KernelId {
        KernelId::new::<Self>().info((self.name, self.workgroup_size, self.rows, self.slices, self.weights))
    }

    fn lang(&self) -> &'static str {
        "wgsl"
    }
}

impl Wgsl {
    pub(crate) fn launch(self, client: &Client, groups: CubeCount, buffers: Vec<BufferBinding>) {
        let dim = CubeDim::new_1d(self.workgroup_size);
        client.launch(
            Box::new(SourceKernel::new(self, dim)),
            groups,
            KernelArguments::new().with_buffers(buffers),
        );
    }
}

const APPLY_BITMASK: Wgsl = Wgsl {
    name: "apply_bitmask.wgsl",
    source: include_str!("../shaders/apply_bitmask.wgsl"),
    workgroup_size: WORKGROUP_SIZE,
    rows: 1,
    slices: 1,
    weights: WeightForm::F32,
};

const MASKED_ARGMAX: Wgsl = Wgsl {
    name: "masked_argmax.wgsl",
    source: include_str!("../shaders/masked_argmax.wgsl"),
    workgroup_size: PICK_WORKGROUP as u32,
    rows: 1,
    slices: 1,
    weights: WeightForm::F32,
};

const MASKED_SAMPLE: Wgsl = Wgsl {
    name: "masked_sample.wgsl",
    source: include_str!("../shaders/masked_sample.wgsl"),
    workgroup_size: PICK_WORKGROUP as u32,
    rows: 1,
    slices: 1,
    weights: WeightForm::F32,
};

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
    APPLY_BITMASK.launch(
        &client,
        CubeCount::Static(groups_x, to_u32("rows", rows)?, 1),
        vec![
            logits.handle.clone().binding(),
            mask.binding(),
            params.binding(),
        ],
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

/// Chooses the next token of a `[1, V]` logits row on the GPU, exactly as
/// [`pick_reference`](crate::sampling::pick_reference) does on the CPU: one dispatch, the mask
/// uploaded once (`ceil(V / 32) * 4` bytes), the 4-byte id read back asynchronously.
pub async fn masked_pick(
    logits: Tensor<2>,
    mask: &[u32],
    vocab: usize,
    sampling: &Sampling,
    step: u32,
) -> Result<u32, ModelError> {
    let [rows, width] = logits.dims();
    if rows != 1 || mask.len() != width.div_ceil(32) {
        return Err(ModelError::Input(format!(
            "masked pick wants one row and ceil(width / 32) mask words, got {rows} rows of {width} and {} words",
            mask.len()
        )));
    }
    let width =
        u32::try_from(width).map_err(|_| ModelError::Input("logits row too wide".into()))?;
    let vocab = u32::try_from(vocab).unwrap_or(u32::MAX);
    let logits = logits
        .try_into_primitive::<Wgpu>()
        .map_err(|e| ModelError::Backend(format!("the GPU picker needs a wgpu tensor: {e:?}")))?;
    let logits = into_contiguous(logits);
    let client = logits.client.clone();
    let params = match sampling.is_greedy() {
        true => vec![width, vocab],
        false => vec![
            width,
            vocab,
            sampling.top_k,
            sampling.top_p.to_bits(),
            (1.0 / sampling.temperature).to_bits(),
            sampling.seed as u32,
            (sampling.seed >> 32) as u32,
            step,
            f32::NEG_INFINITY.to_bits(),
        ],
    };
    let mask = client.create_from_slice(bytemuck::cast_slice(mask));
    let params = client.create_from_slice(bytemuck::cast_slice(&params));
    let out = client.empty(4);
    let kernel = if sampling.is_greedy() {
        MASKED_ARGMAX
    } else {
        MASKED_SAMPLE
    };
    kernel.launch(
        &client,
        CubeCount::Static(1, 1, 1),
        vec![
            logits.handle.clone().binding(),
            mask.binding(),
            params.binding(),
            out.clone().binding(),
        ],
    );
    let bytes = client
        .read_async(vec![out])
        .await
        .map_err(|e| ModelError::Backend(format!("token readback: {e:?}")))?;
    let id = bytes
        .first()
        .and_then(|b| b.get(..4))
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| ModelError::Backend("token readback returned no data".into()))?;
    match id {
        u32::MAX => Err(ModelError::Constraint("the mask allows no token".into())),
        id => Ok(id),
    }
}
