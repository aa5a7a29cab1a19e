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
