//! SmolLM2 on WebGPU or on the CPU, with the constrained decode loop, for the JavaScript engine.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

use serde_json::json;
use sieve_core::{CompileError, Constraint, ConstraintCache, Limits, Matcher};
use sieve_model::decode::{Deferred, Delta, GenerateConfig, Picker, StopReason, TokenConstraint, Unconstrained, generate_streaming};
use sieve_model::sampling::Sampling;
use sieve_model::tools::Event;
use sieve_model::{Backend, Llama, ModelError, Placement, Tokenizer};
use wasm_bindgen::prelude::*;

use crate::constraint::{Vocabulary, from_js, to_js};
use crate::error::{compile_error, request_error};
use crate::parts::{HelperPool, PoolHelpers};
use crate::request::{Output, Request};
use crate::{js_error, no_webgpu, now_ms};

/// Longest context (prompt plus completion) a page may ask for: the WGSL attention dispatches a
/// row of workgroups per position.
pub(crate) const MAX_CONTEXT: usize = 65_535;
/// Completion tokens when a request names no `max_tokens`.
const DEFAULT_MAX_TOKENS: usize = 256;
/// Compiled constraints kept by source text, so a repeated schema is free.
const CONSTRAINT_CACHE: usize = 32;

/// A loaded model, its tokenizer and the compiled constraints of past requests.
#[wasm_bindgen]
pub struct Model {
    inner: Rc<Loaded>,
}

struct Loaded {
    /// The file's `general.name` (its architecture's where it has none).
    name: String,
    model: Llama,
    tokenizer: Tokenizer,
    vocab: Arc<sieve_core::Vocabulary>,
    constraints: ConstraintCache,
}

#[wasm_bindgen]
impl Model {
    /// The model's vocabulary, for the low-level API.
    #[wasm_bindgen(getter)]
    pub fn vocabulary(&self) -> Vocabulary {
        Vocabulary::new(self.inner.vocab.clone())
    }

    /// `{name, architecture, vocab, layers, hidden, maxContext, device, threads, weightBytes}`:
    /// `name` is the file's, `architecture` its GGUF architecture, `device` is
    /// `"webgpu"` or `"cpu"`, `threads` the CPU threads (null on WebGPU), `weightBytes` the
    /// memory the weights take where they run (on the CPU, in this module: its helpers hold
    /// their own parts).
    #[wasm_bindgen(getter)]
    pub fn info(&self) -> Result<JsValue, JsError> {
        let model = &self.inner.model;
        let c = model.config();
        let (device, threads) = match model.backend() {
            Backend::Cpu { threads } => ("cpu", Some(threads)),
            Backend::Gpu | Backend::Reference => ("webgpu", None),
        };
        to_js(&json!({
            "name": self.inner.name,
            "architecture": c.arch.name(),
            "vocab": c.vocab,
            "layers": c.layers,
            "hidden": c.hidden,
            "maxContext": c.max_seq,
            "device": device,
            "threads": threads,
            "weightBytes": model.weight_bytes(),
        }))
    }

    /// Runs one completion request (OpenAI-shaped: `messages` or `prompt`, `response_format`,
    /// `tools`, `tool_choice`, `parallel_tool_calls`, `max_tokens`, `temperature`, `top_p`,
    /// `top_k`, `seed`, `jump_forward`, `chat_template_kwargs`). Calls `onDelta(text, forced,
    /// toolCall)` with each step's new text, or with tools, its text outside calls and each
    /// piece of a call as OpenAI's `delta.tool_calls[i]`; returning `false` from it stops the
    /// generation (`finish_reason: "abort"`). Resolves to `{text, content, tool_calls,
    /// finish_reason, warnings, usage, timings}`; rejects on a bad request with an error that
    /// says what is wrong.
    pub fn generate(&self, request: JsValue, on_delta: Option<js_sys::Function>) -> js_sys::Promise {
        let loaded = self.inner.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let request: Request = from_js(&request).map_err(|e| JsError::new(&format!("bad request: {e}")))?;
            run(&loaded, &request, on_delta.as_ref()).await
        })
    }
}

/// A model of a supported architecture (llama, qwen2, qwen3, phi3, gemma3) loaded from its
/// GGUF file as the file arrives (a download, or a file in memory handed over in pieces), each
/// part of it placed as soon as its tensors are whole, so the file is never held whole in this
/// module's memory (see `sieve_model::ModelLoader`). On the CPU with helper workers (see
/// [`crate::parts`]) it keeps its own part of the rows alone.
#[wasm_bindgen]
pub struct ModelLoader {
    loader: sieve_model::ModelLoader,
    /// The file's name and tokenizer, read as soon as its header arrives.
    header: Option<(String, Tokenizer)>,
}

#[wasm_bindgen]
impl ModelLoader {
    /// A loader onto `device` (`"webgpu"` or `"cpu"`) for a context of `context` tokens (the
    /// model's maximum when that is smaller); on the CPU, of part 0 of `parts` of the rows
    /// where helper workers will hold the others (`parts` > 1).
    pub async fn start(device: &str, context: u32, parts: u32) -> Result<ModelLoader, JsError> {
        if context == 0 || context as usize > MAX_CONTEXT {
            return Err(JsError::new(&format!("a context of {context} tokens: it is 1 to {MAX_CONTEXT}")));
        }
        let placement = match device {
            "webgpu" => Placement::from(sieve_model::gpu::wgpu_device().await.map_err(no_webgpu)?),
            "cpu" => Placement::Cpu { threads: 1 },
            other => return Err(JsError::new(&format!("unknown device {other:?}: \"webgpu\" or \"cpu\""))),
        };
        let mut loader = sieve_model::ModelLoader::new(placement, context as usize, None);
        if parts > 1 {
            loader = loader.keep_part(0, parts as usize).map_err(js_error)?;
        }
        Ok(ModelLoader { loader, header: None })
    }

    /// Reads the file's next bytes and places every part of the model they make whole. An
    /// error as soon as the bytes show that the file cannot be run (not a GGUF, an architecture,
    /// tensor type or tokenizer that is not supported), before any weight is placed.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), JsError> {
        self.loader.push(chunk).map_err(js_error)?;
        if self.header.is_none()
            && let Some(gguf) = self.loader.gguf()
        {
            let tokenizer = Tokenizer::from_gguf(gguf).map_err(js_error)?;
            let arch = gguf.get_str("general.architecture").unwrap_or("unknown");
            let name = gguf.get_str("general.name").unwrap_or(arch).to_string();
            self.header = Some((name, tokenizer));
        }
        Ok(())
    }

    /// The fraction (0 to 1) of the model's layers placed so far.
    #[wasm_bindgen(getter)]
    pub fn fraction(&self) -> f64 {
        self.loader.fraction()
    }

    /// The model, once the whole file has been pushed (on the CPU, with the `helpers` workers
    /// holding the other parts); an error naming what is missing where the file ended early.
    pub fn finish(self, helpers: Option<HelperPool>) -> Result<Model, JsError> {
        let mut model = self.loader.finish().map_err(js_error)?;
        let (name, tokenizer) = self.header.ok_or_else(|| JsError::new("the model file ended inside its header"))?;
        if let Some(pool) = helpers {
            model.set_helpers(Box::new(PoolHelpers(pool))).map_err(js_error)?;
        }
        let vocab = sieve_core::Vocabulary::from_tokenizer_json(tokenizer.json())
            .and_then(|v| v.with_eos_ids(tokenizer.end_ids()))
            .and_then(|v| v.with_width(model.config().vocab))
            .map_err(js_error)?;
        let vocab = Arc::new(vocab);
        // The mask code is optimised by the browser before the first request.
        sieve_core::warm_up(&vocab);
        let constraints = ConstraintCache::new(Limits::default(), CONSTRAINT_CACHE);
        Ok(Model { inner: Rc::new(Loaded { name, model, tokenizer, vocab, constraints }) })
    }
}

/// Runs one request. A constraint that does not compile rejects it with a `SieveError`.
async fn run(loaded: &Loaded, request: &Request, on_delta: Option<&js_sys::Function>) -> Result<JsValue, JsValue> {
    let start = now_ms();
    let template = loaded.tokenizer.chat_template();
    let toolbox = request.toolbox(template).map_err(request_error)?;
    let planned = request.plan(&loaded.constraints, toolbox.as_ref()).map_err(request_error)?;
    let compile_ms = &Cell::new(now_ms() - start);
    let prompt = request.prompt_text(template, toolbox.as_ref()).map_err(request_error)?;
    let prompt = loaded.tokenizer.encode_prompt(&prompt).map_err(js_error)?;
    let room = loaded.model.config().max_seq.saturating_sub(prompt.len());
    if room == 0 {
        return Err(JsError::new(&format!("the prompt has {} tokens; the context holds {}", prompt.len(), loaded.model.config().max_seq)).into());
    }
    let max_tokens = request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS).min(room);
    let sampling = Sampling {
        temperature: request.temperature.unwrap_or(0.0),
        top_k: request.top_k.unwrap_or(0),
        top_p: request.top_p.unwrap_or(1.0),
        seed: request.seed.unwrap_or(0),
    };
    // Tokens are chosen where the logits are: on the GPU with WebGPU, on the CPU otherwise.
    let picker = if loaded.model.backend() == Backend::Gpu { Picker::Gpu } else { Picker::Cpu };
    let config = GenerateConfig { max_tokens, sampling, jump_forward: request.jump_forward.unwrap_or(true), picker };
    // The deferred compile's error, kept whole for the `SieveError` (the decode loop carries
    // only its message).
    let compile_failure = &Cell::new(None::<CompileError>);
    let mut constraint: Box<dyn TokenConstraint> = match planned.output {
        Output::Text => Box::new(Unconstrained::new(loaded.model.config().vocab)),
        Output::Ready(c) => Box::new(Matcher::new(&c, &loaded.vocab)),
        Output::Compile(source, grammar) => Box::new(Deferred::new(Box::new(move || {
            let t0 = now_ms();
            let compiled = match &grammar {
                Some(g) => loaded.constraints.get_with(&source, |limits| Constraint::from_grammar(g, limits)),
                None => loaded.constraints.get(&source),
            };
            let c = compiled.map_err(|e| {
                let message = format!("response_format: {e}");
                compile_failure.set(Some(e));
                ModelError::Constraint(message)
            })?;
            compile_ms.set(compile_ms.get() + now_ms() - t0);
            Ok(Box::new(Matcher::new(&c, &loaded.vocab)) as Box<dyn TokenConstraint>)
        }))),
    };
    let first_text = Cell::new(None::<f64>);
    // With tools, the text goes through a reader that tells calls apart from text.
    let id_prefix = format!("call_{:08x}_", (js_sys::Math::random() * f64::from(u32::MAX)) as u32);
    let mut reader = toolbox.as_ref().map(|t| t.reader(&id_prefix));
    let mut forward = |delta: Delta<'_>| {
        if first_text.get().is_none() {
            first_text.set(Some(now_ms() - start));
        }
        match &mut reader {
            None => tell(on_delta, delta.text, delta.forced, None),
            Some(reader) => reader.push(delta.text).into_iter().all(|e| tell_event(on_delta, e, delta.forced)),
        }
    };
    let out = generate_streaming(&loaded.model, &loaded.tokenizer, constraint.as_mut(), &prompt, &config, &now_ms, &mut forward)
        .await
        .map_err(|e| match compile_failure.take() {
            Some(failure) => compile_error(if toolbox.is_some() { "tools" } else { "response_format" }, &failure),
            None => js_error(e).into(),
        })?;
    let s = &out.stats;
    let mut finish_reason = match out.stop {
        StopReason::EndOfSequence | StopReason::ConstraintTerminated => "stop",
        StopReason::MaxTokens => "length",
        StopReason::Cancelled => "abort",
    };
    let (content, tool_calls) = match reader {
        None => (json!(out.text), json!(null)),
        Some(mut reader) => {
            for e in reader.flush() {
                tell_event(on_delta, e, false);
            }
            let reply = reader.finish();
            if !reply.calls.is_empty() && finish_reason == "stop" {
                finish_reason = "tool_calls";
            }
            let calls: Vec<_> = reply
                .calls
                .iter()
                .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                .collect();
            (json!(reply.content), if calls.is_empty() { json!(null) } else { json!(calls) })
        }
    };
    to_js(&json!({
        "text": out.text,
        "content": content,
        "tool_calls": tool_calls,
        "finish_reason": finish_reason,
        "warnings": planned.warnings,
        "usage": {
            "prompt_tokens": s.prompt_tokens,
            "completion_tokens": s.completion_tokens,
            "total_tokens": s.prompt_tokens + s.completion_tokens,
            "forced_tokens": s.forced_tokens,
        },
        "timings": {
            "compile_ms": compile_ms.get(),
            "ttft_ms": first_text.get(),
            "total_ms": now_ms() - start,
            "decode_ms": s.elapsed_ms,
            "forward_passes": s.forward_passes,
            "launches_per_pass": loaded.model.launches_per_pass(),
            "tokens_per_s": s.tokens_per_s(),
            "mask_us_p50": s.mask_us_quantile(0.5),
            "mask_us_p99": s.mask_us_quantile(0.99),
            "constraint_ms": s.constraint_ms,
        },
    }))
    .map_err(JsValue::from)
}

/// Calls `onDelta(text, forced, toolCall)`; false when it asks to stop.
fn tell(on_delta: Option<&js_sys::Function>, text: &str, forced: bool, tool_call: Option<serde_json::Value>) -> bool {
    let Some(f) = on_delta else { return true };
    let call = match tool_call.map(|c| to_js(&c)) {
        None => JsValue::UNDEFINED,
        Some(Ok(c)) => c,
        Some(Err(_)) => return false,
    };
    match f.call3(&JsValue::NULL, &JsValue::from_str(text), &JsValue::from_bool(forced), &call) {
        Ok(keep) => keep.as_bool() != Some(false),
        Err(_) => false,
    }
}

/// Tells a reader's event: text as text, a call's start and arguments as OpenAI's
/// `delta.tool_calls[i]`.
fn tell_event(on_delta: Option<&js_sys::Function>, event: Event, forced: bool) -> bool {
    match event {
        Event::Text(text) => tell(on_delta, &text, forced, None),
        Event::Call { index, id, name } => {
            tell(on_delta, "", forced, Some(json!({"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}})))
        }
        Event::Arguments { index, text } => tell(on_delta, "", forced, Some(json!({"index": index, "function": {"arguments": text}}))),
    }
}
