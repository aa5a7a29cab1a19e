//! The `sieve` binary end to end: JSON out, exit codes, with the committed
//! SmolLM2 tokenizer.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn tokenizer() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../sieve-core/tests/fixtures/smollm2.json")
        .display()
        .to_string()
}

fn sieve(args: &[&str]) -> (i32, Vec<Value>) {
    let out = Command::new(env!("CARGO_BIN_EXE_sieve")).args(args).output().expect("runs");
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect();
    (out.status.code().unwrap_or(-1), lines)
}

fn temp(name: &str, text: &str) -> String {
    let p = std::env::temp_dir().join(format!("sieve-cli-{}-{name}", std::process::id()));
    std::fs::write(&p, text).expect("write");
    p.display().to_string()
}

#[test]
fn check_accepts_and_rejects() {
    let t = tokenizer();
    let good = temp("good.json", r#"{"name": "Ada", "tags": ["x", 1.5e3, null]}"#);
    let (code, out) = sieve(&["check", "--tokenizer", &t, "--any-json", "--text", &good]);
    assert_eq!((code, &out[0]["accepted"], &out[0]["rejected_at"]), (0, &Value::Bool(true), &Value::Null));
    let bad = temp("bad.json", r#"{"name": "Ada",, 1}"#);
    let (code, out) = sieve(&["check", "--tokenizer", &t, "--any-json", "--text", &bad]);
    assert_eq!(code, 1);
    assert_eq!(out[0]["accepted"], Value::Bool(false));
    assert!(out[0]["rejected_at"].as_u64().is_some());
    let partial = temp("partial.txt", "2024-01");
    let (code, out) = sieve(&["check", "--tokenizer", &t, "--regex", "[0-9]{4}-[0-9]{2}-[0-9]{2}", "--text", &partial]);
    assert_eq!(code, 1);
    assert!(out[0]["rejected_at"].as_u64().is_some());
    let grammar = temp("g.gbnf", "root ::= (\"yes\" | \"no\") \"!\"");
    let yes = temp("yes.txt", "yes!");
    assert_eq!(sieve(&["check", "--tokenizer", &t, "--grammar", &grammar, "--text", &yes]).0, 0);
    assert_eq!(sieve(&["check", "--tokenizer", &t, "--choices", "yes!,no!", "--text", &yes]).0, 0);
}

#[test]
fn bad_input_is_a_json_error_with_status_2() {
    let t = tokenizer();
    let text = temp("any.txt", "x");
    for args in [
        vec!["check", "--tokenizer", &t, "--regex", "a(", "--text", &text],
        vec!["check", "--tokenizer", "/nonexistent.json", "--any-json", "--text", &text],
        vec!["check", "--tokenizer", &t, "--any-json", "--regex", "a", "--text", &text],
        vec!["frobnicate"],
    ] {
        let (code, out) = sieve(&args);
        assert_eq!(code, 2, "{args:?}");
        assert!(out[0]["error"].is_string(), "{args:?}");
    }
}

#[test]
fn samples_follow_the_constraint() {
    let t = tokenizer();
    let (code, out) = sieve(&["sample", "--tokenizer", &t, "--any-json", "--n", "5", "--seed", "3", "--max-tokens", "40"]);
    assert_eq!(code, 0);
    assert_eq!(out.len(), 5);
    let c = sieve_core::Constraint::any_json();
    for s in &out {
        let text = s["text"].as_str().unwrap();
        if s["finished"] == Value::Bool(true) {
            assert!(c.matches(text.as_bytes()).unwrap(), "{text}");
            // serde_json refuses numbers beyond f64 and lone surrogate escapes,
            // which JSON's grammar allows.
            let parsed = serde_json::from_str::<Value>(text);
            let exempt = parsed.as_ref().is_err_and(|e| e.to_string().contains("out of range"))
                || text.to_lowercase().contains("\\ud");
            assert!(parsed.is_ok() || exempt, "{text}");
        }
        assert!(s["tokens"].as_array().unwrap().len() <= 40);
    }
    // Same seed, same samples.
    assert_eq!(out, sieve(&["sample", "--tokenizer", &t, "--any-json", "--n", "5", "--seed", "3", "--max-tokens", "40"]).1);
}

#[test]
fn bench_reports_figures() {
    let t = tokenizer();
    let (code, out) = sieve(&["bench", "--tokenizer", &t, "--regex", "[a-z]+@[a-z]+\\.com", "--limit", "3", "--steps", "5", "--compiles", "2"]);
    assert_eq!(code, 0);
    assert!(out[0]["mask_us"]["p50"].as_f64().is_some());
    assert!(out[0]["compile_us"]["p99"].as_f64().is_some());
    assert!(out[0]["constraint_bytes_compiled"].as_u64().unwrap() > 0);
}
