// Masked argmax and masked sampling kernels: launchers for shaders/masked_argmax.wgsl and
// shaders/masked_sample.wgsl on a logits row's own buffer.

use burn::backend::Wgpu;
use burn::backend::wgpu::{KernelSource, SourceKernel, SourceTemplate, into_contiguous};
use burn::cubecl::prelude::KernelId;
use burn::cubecl::server::KernelArguments;
use burn::cubecl::{CubeCount, CubeDim};
use burn::tensor::Tensor;

use crate::error::ModelError;
use crate::sampling::{PICK_WORKGROUP, Sampling};

/// `shaders/masked_sample.wgsl` when `SAMPLE`, `shaders/masked_argmax.wgsl` otherwise.
struct PickKernel<const SAMPLE: bool>;

impl<const SAMPLE: bool> KernelSource for PickKernel<SAMPLE> {
    fn source(&self) -> SourceTemplate {
        let text = match SAMPLE {
            true => include_str!("../../../shaders/masked_sample.wgsl"),
            false => include_str!("../../../shaders/masked_argmax.wgsl"),
        };
        SourceTemplate::new(text).register("workgroup_size", PICK_WORKGROUP.to_string())
    }

    fn id(&self) -> KernelId {
        KernelId::new::<Self>()
    }

    fn lang(&self) -> &'static str {
        "wgsl"
    }
}

/// Chooses the next token of a `[1, V]` logits row on the GPU, exactly as
/// [`pick_reference`](crate::sampling::pick_reference) does on the CPU: one dispatch, the mask
/// uploaded once (`ceil(V / 32) * 4` bytes), the 4-byte id read back asynchronously.
pub async fn masked_pick(logits: Tensor<2>, mask: &[u32], vocab: usize, sampling: &Sampling, step: u32) -> Result<u32, ModelError> {
    let [rows, width] = logits.dims();
    if rows != 1 || mask.len() != width.div_ceil(32) {
        return Err(ModelError::Input(format!(
            "masked pick wants one row and ceil(width / 32) mask words, got {rows} rows of {width} and {} words",
            mask.len()
        )));
    }
    let width = u32::try_from(width).map_err(|_| ModelError::Input("logits row too wide".into()))?;
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
        ],
    };
    let mask = client.create_from_slice(bytemuck::cast_slice(mask));
    let params = client.create_from_slice(bytemuck::cast_slice(&params));
    let out = client.empty(4);
    let args = KernelArguments::new().with_buffers(vec![
        logits.handle.clone().binding(),
        mask.binding(),
        params.binding(),
        out.clone().binding(),
    ]);
    let dim = CubeDim::new_1d(PICK_WORKGROUP as u32);
    match sampling.is_greedy() {
        true => client.launch(Box::new(SourceKernel::new(PickKernel::<false>, dim)), CubeCount::Static(1, 1, 1), args),
        false => client.launch(Box::new(SourceKernel::new(PickKernel::<true>, dim)), CubeCount::Static(1, 1, 1), args),
    }
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
