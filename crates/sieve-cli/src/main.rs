//! `sieve`: the command line for the constraint engine and the model.
//!
//! Every command prints JSON on stdout. A bad input prints
//! `{"error": "..."}` and exits with status 2.
//!
//! - `check`: does a text follow a constraint (exit 0 yes, 1 no)?
//! - `sample`: random outputs of a constraint.
//! - `bench`: vocabulary, compile and mask timings.
//!
//! The constraint flags live in `args.rs` ([`args::ConstraintArgs`]) so
//! every command takes the same ones.

mod args;
mod bench;
mod check;
mod decode_bench;
mod fail;
mod generate;
mod maskbench;
mod sample;

use clap::{Parser, Subcommand};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc.h (the same index in its v2 and v3).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Keeps freed memory in the process instead of handing it back to the OS.
///
/// By default mimalloc returns free pages a second after they were freed, so
/// the next request that needs them faults them in again. The engine's
/// working set is bounded, so keeping it resident costs little; in the
/// browser, wasm memory never shrinks either, so the CLI now times what the
/// page does. Memory new to the process is still faulted in on first use:
/// mimalloc is built without transparent huge pages (`no_thp`), where one
/// fault zeroed 2 MiB inside a mask or a compile and cost milliseconds.
fn keep_freed_memory() {
    // SAFETY: `mi_option_set` only writes mimalloc's option table; -1 is the
    // documented value for "never purge".
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
}

#[derive(Parser, Debug)]
#[command(name = "sieve", version, about = "Guaranteed-structure LLM output: constraints to token masks.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check a text against a constraint, token by token.
    Check(check::CheckArgs),
    /// Print random outputs of a constraint.
    Sample(sample::SampleArgs),
    /// Time vocabulary preparation, compilation and masks.
    Bench(bench::BenchArgs),
    /// Run the MaskBench protocol over JSON Schema test files.
    Maskbench(maskbench::MaskbenchArgs),
    /// Generate text with a GGUF model under a constraint (wgpu, or the CPU as a fallback).
    Generate(generate::GenerateArgs),
    /// Measure decoding: tokens/s, the constraint's cost, and what jump-forward saves.
    BenchDecode(decode_bench::DecodeBenchArgs),
}

fn main() {
    keep_freed_memory();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp || e.kind() == clap::error::ErrorKind::DisplayVersion => {
            print!("{e}");
            std::process::exit(0);
        }
        Err(e) => {
            println!("{}", serde_json::json!({ "error": e.to_string().trim() }));
            std::process::exit(2);
        }
    };
    let result = match &cli.command {
        Command::Check(a) => check::run(a),
        Command::Sample(a) => sample::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Maskbench(a) => maskbench::run(a),
        Command::Generate(a) => generate::run(a),
        Command::BenchDecode(a) => decode_bench::run(a),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            println!("{}", serde_json::json!({ "error": e.0 }));
            std::process::exit(2);
        }
    }
}
