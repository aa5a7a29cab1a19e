//! A model loaded as its file arrives ([`ModelLoader`]), in chunks of every size from one byte
//! on: the same model as from the whole file, each part placed as soon as it is whole (so the
//! tensors held at once are at most one part's), in any order of the file's tensors; a file
//! that ends early or that the engine cannot run is an error that says why.

use sieve_model::gpu::wgpu_device;
use sieve_model::{Gguf, KvCache, Llama, LlamaConfig, ModelLoader, Placement};
use wasm_bindgen_test::wasm_bindgen_test;

use crate::families::fixtures;
use crate::rng::Rng;

/// `bytes` cut into chunks of 1 byte to 64 KiB (log-uniform), drawn from `seed`.
fn chunks(bytes: &[u8], seed: u64) -> Vec<&[u8]> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let most = (1usize << rng.below(17)).min(bytes.len() - at);
        let len = 1 + rng.below(most);
        out.push(&bytes[at..at + len]);
        at += len;
    }
    out
}

/// The logits after the fixture's prompt.
async fn logits(model: &Llama, reference: &serde_json::Value) -> Vec<f32> {
    logits_of(model, reference).await.unwrap()
}

/// The logits after the fixture's prompt, or the forward pass's error.
async fn logits_of(model: &Llama, reference: &serde_json::Value) -> Result<Vec<f32>, sieve_model::ModelError> {
    let prompt: Vec<u32> = reference["prompt"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect();
    Ok(model.forward(&prompt, &mut KvCache::new(model))?.into_vec().await.unwrap())
}

/// The largest part of a file's model: the embedding, the head, or a layer's tensors.
fn largest_part(gguf: &Gguf<'_>) -> usize {
    let mut parts = std::collections::BTreeMap::<String, usize>::new();
    for t in gguf.tensors.values() {
        let part = match t.name.strip_prefix("blk.") {
            Some(rest) => rest.split('.').next().unwrap().to_string(),
            None => t.name.clone(),
        };
        *parts.entry(part).or_default() += t.len;
    }
    parts.into_values().max().unwrap()
}

/// Each fixture `named` (all where empty) loaded in chunks onto `placement` gives the logits of
/// the whole file's load.
async fn streamed_loads_match(placement: impl Fn() -> Placement, named: &[&str]) {
    let mut loaded = 0;
    for (seed, (reference, bytes)) in fixtures().into_iter().enumerate() {
        let name = reference["file"].as_str().unwrap();
        if !named.is_empty() && !named.iter().any(|n| name == format!("{n}.gguf")) {
            continue;
        }
        let gguf = Gguf::parse(&bytes).unwrap();
        let whole = Llama::from_gguf(&gguf, LlamaConfig::from_gguf(&gguf, 64).unwrap(), placement()).unwrap();
        let mut loader = ModelLoader::new(placement(), 64, Some(bytes.len()));
        let mut held = 0;
        for chunk in chunks(&bytes, seed as u64) {
            loader.push(chunk).unwrap();
            held = held.max(loader.held_bytes());
        }
        assert_eq!(loader.bytes_read(), bytes.len());
        let streamed = loader.finish().unwrap();
        assert_eq!(streamed.weight_bytes(), whole.weight_bytes(), "{name}");
        assert_eq!(logits(&streamed, &reference).await, logits(&whole, &reference).await, "{name}");
        let tensors: usize = gguf.tensors.values().map(|t| t.len).sum();
        assert!(held <= largest_part(&gguf) && held < tensors, "{name}: {held} bytes of tensors held at once, of {tensors}");
        loaded += 1;
    }
    assert!(loaded > 0 && (named.is_empty() || loaded == named.len()), "{loaded} fixtures loaded");
}

#[wasm_bindgen_test(unsupported = pollster::test)]
async fn cpu_models_streamed_match_whole_files() {
    streamed_loads_match(|| Placement::Cpu { threads: 1 }, &[]).await;
}

#[wasm_bindgen_test(unsupported = pollster::test)]
async fn gpu_models_streamed_match_whole_files() {
    let device = wgpu_device().await.expect("no wgpu adapter: WebGPU (browser) or Vulkan (native) is required");
    // A quantized file, fused tensors and output norms: software GPUs are slow.
    streamed_loads_match(|| Placement::from(device.clone()), &["llama-q4_k", "phi3", "gemma3"]).await;
}

/// A fixture's model split into `parts` parts of its rows, each streamed into a loader of its
/// own (as the CPU path's workers in a page do): the worker's model (part 0) and its helpers'
/// shards hold their own rows alone, and together give the whole model's logits bit for bit.
#[wasm_bindgen_test(unsupported = pollster::test)]
async fn parts_streamed_hold_their_rows_alone() {
    use std::cell::RefCell;

    use crate::forward::LocalHelpers;

    for (seed, (reference, bytes)) in fixtures().into_iter().enumerate() {
        let name = reference["file"].as_str().unwrap();
        let gguf = Gguf::parse(&bytes).unwrap();
        let config = LlamaConfig::from_gguf(&gguf, 64).unwrap();
        let cpu = || Placement::Cpu { threads: 1 };
        let whole = Llama::from_gguf(&gguf, config.clone(), cpu()).unwrap();
        let expected = logits(&whole, &reference).await;
        // Each product's part holds its share of the rows, give or take one.
        let row_bytes = gguf.tensors.values().map(|t| t.len / t.shape[0]).max().unwrap();
        let slack = (4 * config.layers + 1) * row_bytes;
        // The worker keeps the whole embedding (it looks tokens up in it) and the norms.
        let unsplit: usize = gguf.tensors.values().filter(|t| t.shape.len() == 1 || t.name == "token_embd.weight").map(|t| t.len).sum();
        for parts in [2, 3] {
            let load = |part: usize| {
                let mut loader = ModelLoader::new(cpu(), 64, Some(bytes.len())).keep_part(part, parts).unwrap();
                for chunk in chunks(&bytes, (seed * parts + part) as u64) {
                    loader.push(chunk).unwrap();
                }
                loader
            };
            let mut model = load(0).finish().unwrap();
            let shards: Vec<_> = (1..parts).map(|part| load(part).finish_shard().unwrap()).collect();
            assert!(logits_of(&model, &reference).await.is_err(), "{name}: part 0 without its helpers");
            let split = whole.weight_bytes() - unsplit;
            assert!(model.weight_bytes() <= unsplit + split / parts + slack, "{name}, {parts} parts: the worker holds {} of {}", model.weight_bytes(), whole.weight_bytes());
            for shard in &shards {
                assert!(shard.weight_bytes() <= whole.weight_bytes() / parts + slack, "{name}, {parts} parts: a helper holds {} of {}", shard.weight_bytes(), whole.weight_bytes());
            }
            model.set_helpers(Box::new(LocalHelpers { shards, max_tokens: 64, pending: RefCell::default() })).unwrap();
            assert_eq!(logits(&model, &reference).await, expected, "{name}, {parts} parts");
        }
    }
    assert!(ModelLoader::new(Placement::Cpu { threads: 1 }, 64, None).keep_part(2, 2).is_err(), "part 2 of 2");
}

#[cfg(not(target_family = "wasm"))]
mod files {
    use sieve_model::gguf::{Gguf, Value};
    use sieve_model::{KvCache, Llama, LlamaConfig, ModelLoader, Placement};

    use super::{chunks, fixtures, logits};
    use crate::gguf::{Writer, string};

    /// A metadata value's type id and encoding.
    fn encode(value: &Value) -> (u32, Vec<u8>) {
        match value {
            Value::U8(v) => (0, v.to_le_bytes().to_vec()),
            Value::I8(v) => (1, v.to_le_bytes().to_vec()),
            Value::U16(v) => (2, v.to_le_bytes().to_vec()),
            Value::I16(v) => (3, v.to_le_bytes().to_vec()),
            Value::U32(v) => (4, v.to_le_bytes().to_vec()),
            Value::I32(v) => (5, v.to_le_bytes().to_vec()),
            Value::F32(v) => (6, v.to_le_bytes().to_vec()),
            Value::Bool(v) => (7, vec![u8::from(*v)]),
            Value::String(v) => (8, string(v)),
            Value::Array(items) => {
                let ty = items.first().map_or(4, |item| encode(item).0);
                let mut out = ty.to_le_bytes().to_vec();
                out.extend((items.len() as u64).to_le_bytes());
                items.iter().for_each(|item| out.extend(encode(item).1));
                (9, out)
            }
            Value::U64(v) => (10, v.to_le_bytes().to_vec()),
            Value::I64(v) => (11, v.to_le_bytes().to_vec()),
            Value::F64(v) => (12, v.to_le_bytes().to_vec()),
        }
    }

    /// `gguf` written again with its tensors in `order` (names; the file's order reversed when
    /// empty) and `meta` changed.
    fn rewrite(gguf: &Gguf<'_>, meta: &[(&str, Value)], order: &[&str]) -> Vec<u8> {
        let mut metadata = gguf.metadata.clone();
        metadata.extend(meta.iter().map(|(k, v)| (k.to_string(), v.clone())));
        let mut names: Vec<&str> = gguf.tensors.values().map(|t| t.name.as_str()).collect();
        names.sort_by_key(|n| gguf.tensors[*n].start);
        names.reverse();
        if !order.is_empty() {
            names = order.to_vec();
        }
        Writer {
            meta: metadata.iter().map(|(k, v)| (k.clone(), encode(v).0, encode(v).1)).collect(),
            tensors: names
                .into_iter()
                .map(|n| {
                    let t = &gguf.tensors[n];
                    let (ty, data) = gguf.tensor_bytes(n, &t.shape).unwrap();
                    (n.to_string(), t.shape.iter().rev().map(|&d| d as u64).collect(), ty.id(), data.to_vec())
                })
                .collect(),
        }
        .bytes()
    }

    /// A file whose tensors come in the opposite order (the config's rope factors last, the
    /// layers from the last) loads as the original does.
    #[test]
    fn any_order_of_tensors_loads() {
        let mut loaded = 0;
        for (reference, bytes) in fixtures().into_iter().filter(|(r, _)| ["llama3-rope.gguf", "phi3.gguf", "llama-q4_k.gguf"].contains(&r["file"].as_str().unwrap())) {
            let name = reference["file"].as_str().unwrap();
            let gguf = Gguf::parse(&bytes).unwrap();
            let reversed = rewrite(&gguf, &[], &[]);
            let mut loader = ModelLoader::new(Placement::Cpu { threads: 1 }, 64, None);
            for chunk in chunks(&reversed, 7) {
                loader.push(chunk).unwrap();
            }
            let streamed = loader.finish().unwrap();
            let whole = Llama::from_gguf(&gguf, LlamaConfig::from_gguf(&gguf, 64).unwrap(), Placement::Cpu { threads: 1 }).unwrap();
            assert_eq!(pollster::block_on(logits(&streamed, &reference)), pollster::block_on(logits(&whole, &reference)), "{name}");
            let mut cache = KvCache::new(&streamed);
            assert!(streamed.forward(&[1], &mut cache).is_ok());
            loaded += 1;
        }
        assert_eq!(loaded, 3);
    }

    /// The header's place in a fixture: where its tensors' data begin.
    fn data_start(gguf: &Gguf<'_>) -> usize {
        gguf.tensors.values().map(|t| t.start).min().unwrap()
    }

    #[test]
    fn what_the_engine_cannot_run_fails_on_the_header() {
        let (_, bytes) = fixtures().swap_remove(0);
        let gguf = Gguf::parse(&bytes).unwrap();
        // An architecture that is not supported, before any tensor's bytes.
        let mamba = rewrite(&gguf, &[("general.architecture", Value::String("mamba".into()))], &[]);
        let mut loader = ModelLoader::new(Placement::Cpu { threads: 1 }, 64, Some(mamba.len()));
        let err = loader.push(&mamba[..data_start(&Gguf::parse(&mamba).unwrap())]).unwrap_err().to_string();
        assert!(err.contains("mamba"), "{err}");
        // A tensor type that is not supported.
        let mut header = rewrite(&gguf, &[], &["token_embd.weight"]);
        let at = header.windows(17).position(|w| w == b"token_embd.weight").unwrap() + 17;
        // Its one dimension count, two dimensions, then the type id.
        header[at + 20..at + 24].copy_from_slice(&20u32.to_le_bytes());
        let err = ModelLoader::new(Placement::Cpu { threads: 1 }, 64, None).push(&header).unwrap_err().to_string();
        assert!(err.contains("token_embd.weight") && err.contains("GGML type 20"), "{err}");
    }

    #[test]
    fn a_file_that_ends_early_names_what_is_missing() {
        let (_, bytes) = fixtures().swap_remove(0);
        let start = data_start(&Gguf::parse(&bytes).unwrap());
        let mut loader = ModelLoader::new(Placement::Cpu { threads: 1 }, 64, Some(bytes.len()));
        loader.push(&bytes[..start / 2]).unwrap();
        let err = loader.finish().err().unwrap().to_string();
        assert!(err.contains("ended inside its header"), "{err}");
        let mut loader = ModelLoader::new(Placement::Cpu { threads: 1 }, 64, None);
        loader.push(&bytes[..(start + bytes.len()) / 2]).unwrap();
        let err = loader.finish().err().unwrap().to_string();
        assert!(err.contains("the file ended before tensor `blk."), "{err}");
        // A file shorter than any header: its own error, once it has ended.
        let mut loader = ModelLoader::new(Placement::Cpu { threads: 1 }, 64, None);
        loader.push(b"not a model").unwrap();
        let err = loader.finish().err().unwrap().to_string();
        assert!(err.contains("not a GGUF file"), "{err}");
    }
}
