//! Mask and compile times per tokenizer and constraint.
//!
//! `cargo bench -p sieve-core --bench masks`. Uses the committed SmolLM2
//! tokenizer and, when fetched (`bash scripts/fetch-assets.sh`), Llama-2
//! (32k), Llama-3 (128k) and Qwen3 (152k). Mask times are for states met on
//! seeded random walks, with the constraint's caches warm, as in a decode
//! loop after its first steps.

use criterion::{BenchmarkId, Criterion, black_box, criterion_group, criterion_main};
use sieve_core::rng::Rng;
use sieve_core::{Constraint, ConstraintSource, Limits, Matcher, Vocabulary};
use std::path::PathBuf;
use std::sync::Arc;

const ARITH: &str = "root ::= expr\nexpr ::= term ((\"+\" | \"-\") term)*\nterm ::= factor ((\"*\" | \"/\") factor)*\nfactor ::= [0-9]+ | \"(\" expr \")\"\n";
const CSV: &str = "root ::= row (\"\\n\" row)* \"\\n\"?\nrow ::= cell (\",\" cell)*\ncell ::= [^,\"\\n]* | \"\\\"\" ([^\"] | \"\\\"\\\"\")* \"\\\"\"\n";
const EMAIL: &str = r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,12}";
const URL: &str = r"https?://[a-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~%!$&'()*+,;=:@-]*)*(\?[A-Za-z0-9._~%!$&'()*+,;=:@/?-]*)?";

fn long_alternation() -> String {
    let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett"];
    let mut alts = Vec::new();
    for a in words {
        for b in words {
            alts.push(format!("{a} {b}"));
        }
    }
    alts.join("|")
}

fn sources() -> Vec<(&'static str, ConstraintSource)> {
    vec![
        ("any_json", ConstraintSource::AnyJson),
        ("arith", ConstraintSource::Gbnf(ARITH.into())),
        ("csv", ConstraintSource::Gbnf(CSV.into())),
        ("email", ConstraintSource::Regex(EMAIL.into())),
        ("url", ConstraintSource::Regex(URL.into())),
        ("alternation", ConstraintSource::Regex(long_alternation())),
    ]
}

/// This package's folder, as cargo names it when it runs the benchmarks (not the one the binary
/// was built from: a shared target folder may hold it from another clone).
fn package_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("benchmarks run under cargo"))
}

fn vocabs() -> Vec<(&'static str, Arc<Vocabulary>)> {
    let root = package_dir();
    let mut out = Vec::new();
    for (name, path) in [
        ("smollm2", root.join("tests/fixtures/smollm2.json")),
        ("llama2", root.join("../../assets/tokenizers/llama2.json")),
        ("llama3", root.join("../../assets/tokenizers/llama3.json")),
        ("qwen3", root.join("../../assets/tokenizers/qwen3.json")),
    ] {
        match std::fs::read_to_string(&path) {
            Ok(text) => out.push((name, Arc::new(Vocabulary::from_tokenizer_json(&text).expect("tokenizer parses")))),
            Err(_) => eprintln!("skipping {name}: {} not found (run scripts/fetch-assets.sh)", path.display()),
        }
    }
    out
}

/// Matchers at the states of seeded random walks.
fn states(c: &Constraint, vocab: &Arc<Vocabulary>) -> Vec<Matcher> {
    let mut rng = Rng::new(0);
    let mut out = Vec::new();
    let mut mask = vec![0u32; vocab.mask_words()];
    for _ in 0..8 {
        let mut m = Matcher::new(c, vocab);
        for _ in 0..24 {
            m.fill_next_token_bitmask(&mut mask).expect("mask");
            let allowed: Vec<u32> = (0..vocab.len() as u32)
                .filter(|&t| mask[(t / 32) as usize] >> (t % 32) & 1 == 1 && !vocab.is_eos(t))
                .collect();
            if allowed.is_empty() {
                break;
            }
            out.push(m.clone());
            m.accept_token(allowed[rng.below(allowed.len())]).expect("allowed token");
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    for (vname, vocab) in vocabs() {
        let mut g = c.benchmark_group(format!("mask/{vname}"));
        for (name, src) in sources() {
            let constraint = Constraint::compile(&src, &Limits::default()).expect("compiles");
            let mut ms = states(&constraint, &vocab);
            let mut mask = vec![0u32; vocab.mask_words()];
            let mut i = 0;
            g.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter(|| {
                    i = (i + 1) % ms.len();
                    ms[i].fill_next_token_bitmask(black_box(&mut mask)).expect("mask");
                })
            });
        }
        g.finish();
    }
    let mut g = c.benchmark_group("compile");
    for (name, src) in sources() {
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| Constraint::compile(black_box(&src), &Limits::default()).expect("compiles"))
        });
    }
    g.finish();
    if let Some((vname, _)) = vocabs().into_iter().find(|(n, _)| *n == "llama3") {
        let text = std::fs::read_to_string(package_dir().join("../../assets/tokenizers/llama3.json"))
            .expect("read");
        c.bench_function(&format!("vocabulary/{vname}"), |b| {
            b.iter(|| Vocabulary::from_tokenizer_json(black_box(&text)).expect("parses"))
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
