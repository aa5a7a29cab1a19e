//! `sieve maskbench`: the MaskBench protocol over files of
//! `{"schema": ..., "tests": [{"data": ..., "valid": bool}]}`.
//!
//! Per file: compile the schema (timed), then per test write `data` as JSON
//! with `", "` and `": "` separators (non-ASCII kept), tokenize it canonically
//! without special tokens, as the continuation of a prompt (no SentencePiece
//! `▁` added in front), and for every token compute the full mask and
//! commit the token (timed together); the token must be allowed, and the
//! matcher must accept at the end. One JSON line per file goes to `--out`;
//! a summary table goes to stdout.

use crate::args::{TokenizerArgs, read};
use crate::fail::CliError;
use serde_json::{Value, json};
use sieve_core::json_schema::{JsonSchemaOptions, Mode, PropertyOrder, to_spaced_json};
use sieve_core::{Constraint, Matcher};
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct MaskbenchArgs {
    #[command(flatten)]
    pub tok: TokenizerArgs,
    /// Where to write one JSON line per file.
    #[arg(long)]
    pub out: PathBuf,
    /// Leave out keywords that cannot be enforced (reported as warnings)
    /// instead of failing the schema.
    #[arg(long)]
    pub lenient: bool,
    /// Let objects declaring at most N properties take them in any order
    /// (MaskBench instances list properties in any order; larger objects
    /// keep schema order). Such an object costs 2^N sets of members, so each
    /// step up doubles the compile time of schemas made of them.
    #[arg(long, value_name = "N", default_value_t = 10, conflicts_with = "schema_order")]
    pub any_order: u8,
    /// Declared properties in schema order only (the library's default).
    #[arg(long)]
    pub schema_order: bool,
    /// Commit tokens without computing masks: correctness columns only
    /// (fast coverage checks; the timing columns then measure commits alone).
    #[arg(long)]
    pub no_masks: bool,
    /// MaskBench files, or directories of them.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}


fn files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, CliError> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut v: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| CliError::new(format!("{}: {e}", p.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect();
            v.sort();
            out.extend(v);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

fn pct(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

pub fn run(a: &MaskbenchArgs) -> Result<i32, CliError> {
    let mut loaded = a.tok.load()?;
    loaded.tokenizer = continuation_tokenizer(&read(&a.tok.tokenizer)?)?;
    let vocab = loaded.vocab.clone();
    let options = JsonSchemaOptions {
        mode: if a.lenient { Mode::Lenient } else { Mode::Strict },
        property_order: if a.schema_order { PropertyOrder::Schema } else { PropertyOrder::AnyUpTo(a.any_order) },
        ..Default::default()
    };
    let mut out = std::fs::File::create(&a.out).map_err(|e| CliError::new(format!("{}: {e}", a.out.display())))?;
    let mut mask = vec![0u32; vocab.mask_words()];
    let (mut schemas, mut passing, mut compile_errors, mut valid_rejected, mut invalid_accepted, mut tests_total) =
        (0usize, 0usize, 0usize, 0usize, 0usize, 0usize);
    // Nanoseconds per mask: the protocol writes whole microseconds, which truncate a typical
    // mask by a third, so the summary is taken from the exact times.
    let mut all_masks_ns: Vec<u64> = Vec::new();
    let mut compiles: Vec<u64> = Vec::new();
    for path in files(&a.paths)? {
        let id = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        let text = std::fs::read_to_string(&path).map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
        let file: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => return Err(CliError::new(format!("{}: {e}", path.display()))),
        };
        schemas += 1;
        let tests = file["tests"].as_array().cloned().unwrap_or_default();
        tests_total += tests.len();
        let t0 = Instant::now();
        let compiled = Constraint::json_schema(&file["schema"], &options);
        let ttfm_us = t0.elapsed().as_micros() as u64;
        let (constraint, warnings) = match compiled {
            Ok(c) => c,
            Err(e) => {
                compile_errors += 1;
                let line = json!({"id": id, "ttfm_us": ttfm_us, "mask_us": [], "tests": [], "compile_error": e.to_string(), "warnings": []});
                writeln!(out, "{line}").map_err(|e| CliError::new(e.to_string()))?;
                continue;
            }
        };
        compiles.push(ttfm_us);
        let mut mask_us: Vec<u64> = Vec::new();
        let mut results = Vec::new();
        let mut all_ok = true;
        for t in &tests {
            let valid = t["valid"].as_bool().unwrap_or(false);
            let ids = loaded.encode(&to_spaced_json(&t["data"]))?;
            let mut m = Matcher::new(&constraint, &vocab);
            let mut rejected_at: Option<usize> = None;
            for (i, &tok) in ids.iter().enumerate() {
                let s = Instant::now();
                let allowed = a.no_masks || {
                    let filled = m.fill_next_token_bitmask(&mut mask);
                    filled.is_ok() && mask.get(tok as usize / 32).is_some_and(|w| w >> (tok % 32) & 1 == 1)
                };
                let committed = allowed && m.accept_token(tok).is_ok();
                let elapsed = s.elapsed();
                all_masks_ns.push(elapsed.as_nanos() as u64);
                mask_us.push(elapsed.as_micros() as u64);
                if !committed {
                    rejected_at = Some(i);
                    break;
                }
            }
            let accepted = rejected_at.is_none() && m.is_accepting();
            if accepted != valid {
                all_ok = false;
                if valid {
                    valid_rejected += 1;
                } else {
                    invalid_accepted += 1;
                }
            }
            results.push(json!({"valid": valid, "accepted": accepted, "rejected_at": rejected_at}));
        }
        if all_ok {
            passing += 1;
        }
        let warnings: Vec<String> = warnings.iter().map(ToString::to_string).collect();
        let line = json!({"id": id, "ttfm_us": ttfm_us, "mask_us": mask_us, "tests": results, "warnings": warnings});
        writeln!(out, "{line}").map_err(|e| CliError::new(e.to_string()))?;
    }
    all_masks_ns.sort_unstable();
    compiles.sort_unstable();
    let share = |n: usize, d: usize| if d == 0 { 0.0 } else { 100.0 * n as f64 / d as f64 };
    println!("{:<34} {:>10}", "schemas", schemas);
    println!("{:<34} {:>10} ({:.1}%)", "passing", passing, share(passing, schemas));
    println!("{:<34} {:>10}", "compile errors", compile_errors);
    println!("{:<34} {:>10} ({:.2}% of {} tests)", "validation errors (valid rejected)", valid_rejected, share(valid_rejected, tests_total), tests_total);
    println!("{:<34} {:>10}", "invalidation errors (invalid accepted)", invalid_accepted);
    let ps = [0.5, 0.75, 0.9, 0.99, 0.999];
    let us = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
    let masks: Vec<String> = ps.iter().map(|&q| us(pct(&all_masks_ns, q))).collect();
    println!(
        "{:<34} p50 {} / p75 {} / p90 {} / p99 {} / p99.9 {} / max {} us, mean {:.1} us ({} masks)",
        "mask",
        masks[0],
        masks[1],
        masks[2],
        masks[3],
        masks[4],
        us(all_masks_ns.last().copied().unwrap_or(0)),
        all_masks_ns.iter().sum::<u64>() as f64 / 1e3 / all_masks_ns.len().max(1) as f64,
        all_masks_ns.len()
    );
    println!(
        "{:<34} p50 {} / p90 {} / p99 {} / max {} us",
        "compile",
        pct(&compiles, 0.5),
        pct(&compiles, 0.9),
        pct(&compiles, 0.99),
        compiles.last().copied().unwrap_or(0)
    );
    Ok(0)
}

/// The tokenizer.json's tokenizer as generation continues a prompt: a SentencePiece tokenizer's
/// `▁` in front of the text (a `Prepend` normalizer, or the `Metaspace` pre-tokenizer's prepend
/// scheme) is left out, so that the tokens spell the instance and nothing before it.
fn continuation_tokenizer(text: &str) -> Result<tokenizers::Tokenizer, CliError> {
    fn is_prepend(value: &Value) -> bool {
        value.get("type").and_then(Value::as_str) == Some("Prepend")
    }
    fn strip(value: &mut Value) {
        if let Value::Object(map) = value {
            if map.get("type").and_then(Value::as_str) == Some("Metaspace") {
                map.insert("prepend_scheme".into(), json!("never"));
            }
            if let Some(Value::Array(parts)) = map.get_mut("normalizers") {
                parts.retain(|part| !is_prepend(part));
            }
            map.values_mut().for_each(strip);
        } else if let Value::Array(items) = value {
            items.iter_mut().for_each(strip);
        }
    }
    let mut json: Value = serde_json::from_str(text).map_err(|e| CliError::new(format!("tokenizer.json: {e}")))?;
    if json.get("normalizer").is_some_and(is_prepend) {
        json["normalizer"] = Value::Null;
    }
    strip(&mut json["normalizer"]);
    strip(&mut json["pre_tokenizer"]);
    json.to_string().parse::<tokenizers::Tokenizer>().map_err(|e| CliError::new(format!("tokenizer.json: {e}")))
}
