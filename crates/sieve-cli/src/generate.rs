//! `sieve generate`: SmolLM2 from a GGUF file, decoding under a constraint.
//!
//! Runs on a GPU through wgpu (Vulkan, Metal, DX12), with masking and token choice on the GPU,
//! or on the CPU kernels, which choose tokens on the CPU. `--device auto` takes the GPU when
//! wgpu's adapter is a real one and the CPU otherwise: a software adapter (lavapipe on a
//! machine without a GPU) is many times slower than the CPU path.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::{Args, ValueEnum};
use serde_json::json;
use sieve_core::json_schema::{JsonSchemaOptions, Whitespace};
use sieve_core::{Constraint, ConstraintSource, Limits, Matcher, Vocabulary};
use sieve_model::decode::{GenerateConfig, Picker, StopReason, TokenConstraint, Unconstrained, generate};
use sieve_model::sampling::Sampling;
use sieve_model::tools::{Tool, ToolChoice, Toolbox};
use sieve_model::gpu::{Adapter, default_adapter};
use sieve_model::{Backend, Device, Gguf, Llama, LlamaConfig, Placement, Tokenizer};

use crate::args::{read, structural_tag};
use crate::fail::CliError;

/// Longest context the command allocates for (prompt plus completion).
const MAX_CONTEXT: usize = 4096;

/// Generate text with a GGUF model, optionally under a constraint.
#[derive(Args, Debug)]
pub struct GenerateArgs {
    /// The model: a llama-architecture GGUF (SmolLM2-135M-Instruct Q4_1).
    #[arg(long, value_name = "FILE")]
    pub model: PathBuf,
    #[command(flatten)]
    pub constraint: GenerateConstraint,
    /// The prompt text (it may start with `-`).
    #[arg(long, allow_hyphen_values = true)]
    pub prompt: String,
    /// Wrap the prompt in the model's chat template as a user message.
    #[arg(long)]
    pub chat: bool,
    /// Functions the model may call: a JSON file of OpenAI `tools` (implies `--chat`; the reply
    /// is text and calls, each call's arguments valid for its tool's schema).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["json_schema", "regex", "grammar", "structural_tag"])]
    pub tools: Option<PathBuf>,
    /// Which calls the reply may hold: `auto` (text or calls), `required` (calls first),
    /// `none` (text only), or a tool's name (one call of it).
    #[arg(long, default_value = "auto", requires = "tools")]
    pub tool_choice: String,
    /// At most one call.
    #[arg(long, requires = "tools")]
    pub no_parallel_tool_calls: bool,
    /// Most completion tokens.
    #[arg(long, default_value_t = 256)]
    pub max_tokens: usize,
    /// Sampling temperature; 0 is greedy.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f32,
    /// Keep only the k most likely tokens (0: off).
    #[arg(long, default_value_t = 0)]
    pub top_k: u32,
    /// Keep the smallest set of tokens holding this much probability (1: off).
    #[arg(long, default_value_t = 1.0)]
    pub top_p: f32,
    /// Seed of the sampler; the same seed gives the same output.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Sample forced continuations token by token instead of prefilling them.
    #[arg(long)]
    pub no_jump_forward: bool,
    /// Print `{"text", "tool_calls" (with --tools), "finish_reason", "tokens", "stats"}` instead
    /// of the text.
    #[arg(long)]
    pub json: bool,
    /// Where the model runs.
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    pub device: DeviceChoice,
    /// CPU threads when the model runs on the CPU (0: all the machine has).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

/// At most one constraint; none means free generation.
#[derive(Args, Debug, Clone)]
#[group(required = false, multiple = false)]
pub struct GenerateConstraint {
    /// A JSON Schema file (compact JSON: no whitespace between tokens).
    #[arg(long, value_name = "FILE")]
    pub json_schema: Option<PathBuf>,
    /// A regex the whole output must match (it may start with `-`).
    #[arg(long, allow_hyphen_values = true)]
    pub regex: Option<String>,
    /// A GBNF grammar file (start rule `root`).
    #[arg(long, value_name = "FILE")]
    pub grammar: Option<PathBuf>,
    /// A structural tag file (see `sieve check --help`; schemas compact).
    #[arg(long, value_name = "FILE")]
    pub structural_tag: Option<PathBuf>,
}

/// Where the model runs.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceChoice {
    /// The GPU when wgpu's adapter is a real GPU, the CPU otherwise.
    Auto,
    /// The GPU through wgpu, whatever the adapter (lavapipe included).
    #[value(alias = "wgpu")]
    Gpu,
    /// The CPU kernels.
    Cpu,
}

impl GenerateConstraint {
    /// The compiled constraint, `None` when no flag names one.
    pub(crate) fn compile(&self) -> Result<Option<Constraint>, CliError> {
        let source = if let Some(path) = &self.json_schema {
            let schema: serde_json::Value = serde_json::from_str(&read(path)?)
                .map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
            let options = JsonSchemaOptions { whitespace: Whitespace::Compact, ..JsonSchemaOptions::default() };
            return Ok(Some(Constraint::json_schema(&schema, &options)?.0));
        } else if let Some(r) = &self.regex {
            ConstraintSource::Regex(r.clone())
        } else if let Some(path) = &self.grammar {
            ConstraintSource::Gbnf(read(path)?)
        } else if let Some(path) = &self.structural_tag {
            structural_tag(path, JsonSchemaOptions { whitespace: Whitespace::Compact, ..JsonSchemaOptions::default() })?
        } else {
            return Ok(None);
        };
        Ok(Some(Constraint::compile(&source, &Limits::default())?))
    }
}

/// Where the model runs for `choice`, on `threads` CPU threads (0: all), and where tokens are
/// chosen.
fn placement(choice: DeviceChoice, threads: usize) -> Result<(Placement, Picker), CliError> {
    let cpu = || (if threads == 0 { Placement::cpu() } else { Placement::Cpu { threads } }, Picker::Cpu);
    let gpu = || match Device::wgpu_options().init() {
        Ok(device) => Ok((Placement::Device(device), Picker::Gpu)),
        Err(e) => Err(CliError::new(format!("no wgpu adapter: {e}"))),
    };
    match choice {
        DeviceChoice::Cpu => Ok(cpu()),
        DeviceChoice::Gpu => gpu(),
        DeviceChoice::Auto => match pollster::block_on(default_adapter()) {
            Adapter::Hardware(_) => gpu(),
            Adapter::Software(_) | Adapter::None(_) => Ok(cpu()),
        },
    }
}

/// A GGUF model loaded on the chosen device, with its tokenizer and where tokens are chosen.
pub(crate) struct Loaded {
    pub model: Llama,
    pub tokenizer: Tokenizer,
    pub picker: Picker,
}

impl Loaded {
    /// Reads the model file and loads it for a context of [`MAX_CONTEXT`] tokens.
    pub(crate) fn new(path: &Path, device: DeviceChoice, threads: usize) -> Result<Self, CliError> {
        let bytes = std::fs::read(path).map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
        let gguf = Gguf::parse(&bytes)?;
        let tokenizer = Tokenizer::from_gguf(&gguf)?;
        let (placement, picker) = placement(device, threads)?;
        let model = Llama::from_gguf(&gguf, LlamaConfig::from_gguf(&gguf, MAX_CONTEXT)?, placement)?;
        Ok(Self { model, tokenizer, picker })
    }

    /// Where the model runs, for reports: `"gpu"`, `"cpu"` or `"reference"`, and the CPU
    /// threads.
    pub(crate) fn device(&self) -> (&'static str, Option<usize>) {
        match self.model.backend() {
            Backend::Gpu => ("gpu", None),
            Backend::Cpu { threads } => ("cpu", Some(threads)),
            Backend::Reference => ("reference", None),
        }
    }

    /// The tokenizer's vocabulary for sieve-core, ending at the model's end-of-sequence token.
    pub(crate) fn vocabulary(&self) -> Result<Arc<Vocabulary>, CliError> {
        let vocab = Vocabulary::from_tokenizer_json(self.tokenizer.json())?.with_eos_ids(self.tokenizer.end_ids())?;
        Ok(Arc::new(vocab))
    }
}

/// Generates and prints the completion; returns the exit status.
pub fn run(args: &GenerateArgs) -> Result<i32, CliError> {
    let mut constraint = args.constraint.compile()?;
    let loaded = Loaded::new(&args.model, args.device, args.threads)?;
    let Loaded { model, tokenizer, picker } = &loaded;
    let picker = *picker;
    let messages = [json!({"role": "user", "content": args.prompt})];
    let toolbox = args.tools.as_ref().map(|path| toolbox(path, args, tokenizer)).transpose()?;
    let prompt = match (&toolbox, args.chat) {
        (Some(toolbox), _) => {
            constraint = Some(Constraint::compile(&ConstraintSource::StructuralTag(toolbox.constraint()), &Limits::default())?);
            toolbox.prompt(tokenizer.chat_template(), &messages, &Default::default())?
        }
        (None, true) => tokenizer.chat_prompt(&messages, &Default::default())?,
        (None, false) => args.prompt.clone(),
    };
    let prompt = tokenizer.encode_prompt(&prompt)?;
    let mut matcher: Box<dyn TokenConstraint> = match &constraint {
        Some(c) => Box::new(Matcher::new(c, &loaded.vocabulary()?)),
        None => Box::new(Unconstrained::new(model.config().vocab)),
    };
    let config = GenerateConfig {
        max_tokens: args.max_tokens,
        sampling: Sampling { temperature: args.temperature, top_k: args.top_k, top_p: args.top_p, seed: args.seed },
        jump_forward: !args.no_jump_forward,
        picker,
    };
    let origin = Instant::now();
    let clock = || origin.elapsed().as_secs_f64() * 1000.0;
    let out = pollster::block_on(generate(model, tokenizer, matcher.as_mut(), &prompt, &config, &clock))?;
    let s = &out.stats;
    let mut finish_reason = match out.stop {
        StopReason::EndOfSequence | StopReason::ConstraintTerminated => "stop",
        StopReason::MaxTokens => "length",
        StopReason::Cancelled => "abort",
    };
    let (text, tool_calls) = match &toolbox {
        None => (out.text.clone(), None),
        Some(toolbox) => {
            let mut reader = toolbox.reader("call_");
            reader.push(&out.text);
            let reply = reader.finish();
            if !reply.calls.is_empty() && finish_reason == "stop" {
                finish_reason = "tool_calls";
            }
            let calls = reply.calls.iter().map(|c| {
                let arguments: serde_json::Value = serde_json::from_str(&c.arguments).unwrap_or(json!(c.arguments));
                json!({"name": c.name, "arguments": arguments})
            });
            (reply.content.unwrap_or_default(), Some(calls.collect::<Vec<_>>()))
        }
    };
    if args.json {
        let stats = json!({
            "prompt_tokens": s.prompt_tokens,
            "completion_tokens": s.completion_tokens,
            "forced_tokens": s.forced_tokens,
            "forward_passes": s.forward_passes,
            "device": loaded.device().0,
            "threads": loaded.device().1,
            "launches_per_pass": model.launches_per_pass(),
            "weight_bytes": model.weight_bytes(),
            "tokens_per_s": s.tokens_per_s(),
            "mask_us_p50": s.mask_us_quantile(0.5),
            "mask_us_p99": s.mask_us_quantile(0.99),
            "constraint_ms": s.constraint_ms,
        });
        let mut report = json!({"text": text, "finish_reason": finish_reason, "tokens": out.tokens, "stats": stats});
        if let Some(calls) = tool_calls {
            report["tool_calls"] = json!(calls);
        }
        println!("{report}");
    } else {
        println!("{text}");
        for call in tool_calls.iter().flatten() {
            println!("{call}");
        }
        eprintln!(
            "sieve: {} tokens ({} forced) in {} forward passes, {:.1} tokens/s, stop: {:?}",
            s.completion_tokens,
            s.forced_tokens,
            s.forward_passes,
            s.tokens_per_s(),
            out.stop
        );
    }
    Ok(0)
}

/// The tools of `--tools` with `--tool-choice`, for the model's template.
fn toolbox(path: &Path, args: &GenerateArgs, tokenizer: &Tokenizer) -> Result<Toolbox, CliError> {
    let file = |e: &dyn std::fmt::Display| CliError::new(format!("{}: {e}", path.display()));
    let tools: serde_json::Value = serde_json::from_str(&read(&path.to_path_buf())?).map_err(|e| file(&e))?;
    let choice = match args.tool_choice.as_str() {
        "auto" => ToolChoice::Auto,
        "required" => ToolChoice::Required,
        "none" => ToolChoice::None,
        name => ToolChoice::Function(name.to_string()),
    };
    let tools = Tool::from_openai(&tools).map_err(|e| file(&e))?;
    Toolbox::new(tools, choice, !args.no_parallel_tool_calls, tokenizer.chat_template()).map_err(|e| file(&e))
}
