//! The `sieve` binary end to end: JSON out, exit codes, with the committed
//! SmolLM2 tokenizer.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

/// This package's folder, as cargo names it when it runs the tests (not the one the binary was
/// built from: a shared target folder may hold it from another clone).
fn package_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("tests run under cargo"))
}

fn tokenizer() -> String {
    package_dir()
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

/// A pattern, a choice or a prompt may start with `-` (negative numbers, list items): it is the
/// option's value, not an unknown flag.
#[test]
fn values_may_start_with_a_hyphen() {
    let t = tokenizer();
    let negative = temp("negative.txt", "-42");
    let (code, out) = sieve(&["check", "--tokenizer", &t, "--regex", "-?[0-9]+", "--text", &negative]);
    assert_eq!((code, &out[0]["accepted"]), (0, &Value::Bool(true)), "{out:?}");
    let inner = temp("inner.txt", "4-2");
    assert_eq!(sieve(&["check", "--tokenizer", &t, "--regex", "-?[0-9]+", "--text", &inner]).0, 1);
    let (code, out) = sieve(&["check", "--tokenizer", &t, "--choices", "-1,-2", "--choices", "-3", "--text", &negative]);
    assert_eq!((code, &out[0]["accepted"]), (1, &Value::Bool(false)), "{out:?}");
    let three = temp("three.txt", "-3");
    assert_eq!(sieve(&["check", "--tokenizer", &t, "--choices", "-1,-2", "--choices", "-3", "--text", &three]).0, 0);
    let (code, out) = sieve(&["sample", "--tokenizer", &t, "--regex", "-[0-9]", "--n", "2", "--seed", "1"]);
    assert_eq!(code, 0, "{out:?}");
    for s in &out {
        assert!(s["text"].as_str().is_some_and(|x| x.len() == 2 && x.starts_with('-')), "{s}");
    }
    // The model commands read their other arguments first: the error is the missing model.
    for command in ["generate", "bench-decode"] {
        let args = [command, "--model", "/nonexistent.gguf", "--regex", "-[0-9]+", "--prompt", "- a list item"];
        let (code, out) = sieve(&args);
        assert_eq!(code, 2, "{args:?}");
        assert!(out[0]["error"].as_str().is_some_and(|e| e.contains("/nonexistent.gguf")), "{args:?}: {out:?}");
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

#[test]
fn maskbench_follows_the_protocol() {
    let t = tokenizer();
    let dir = std::env::temp_dir().join(format!("sieve-cli-{}-maskbench", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let file = serde_json::json!({
        "schema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"]},
        "tests": [{"data": {"n": 12}, "valid": true}, {"data": {"n": -1}, "valid": false}, {"data": {}, "valid": false}]
    });
    std::fs::write(dir.join("a.json"), file.to_string()).expect("write");
    std::fs::write(dir.join("b.json"), r#"{"schema": {"type": "string", "pattern": "(?<=a)b"}, "tests": []}"#).expect("write");
    let out = std::env::temp_dir().join(format!("sieve-cli-{}-maskbench.jsonl", std::process::id()));
    let run = Command::new(env!("CARGO_BIN_EXE_sieve"))
        .args(["maskbench", "--tokenizer", &t, "--out", &out.display().to_string(), &dir.display().to_string()])
        .output()
        .expect("runs");
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let summary = String::from_utf8_lossy(&run.stdout);
    assert!(summary.lines().any(|l| l.starts_with("passing") && l.contains(" 1 (50.0%)")), "{summary}");
    assert!(summary.lines().any(|l| l.starts_with("compile errors") && l.ends_with(" 1")), "{summary}");
    assert!(summary.lines().any(|l| l.starts_with("mask") && l.contains(" masks)")), "{summary}");
    let lines: Vec<Value> = std::fs::read_to_string(&out).expect("results").lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[1]["compile_error"].as_str().is_some_and(|e| e.contains("pattern")), "{}", lines[1]);
    let line = &lines[0];
    assert_eq!(line["id"], "a.json");
    assert!(line["ttfm_us"].as_u64().is_some());
    let tests = line["tests"].as_array().expect("tests");
    assert_eq!(tests.iter().map(|t| (t["valid"].as_bool(), t["accepted"].as_bool())).collect::<Vec<_>>(), [
        (Some(true), Some(true)),
        (Some(false), Some(false)),
        (Some(false), Some(false))
    ]);
    // `{"n": -` is refused at the minus sign, `{}` at the brace that closes it too early.
    assert!(tests[1]["rejected_at"].as_u64().is_some_and(|i| i > 2));
    assert!(tests[2]["rejected_at"].as_u64().is_some());
    // One time per token committed, plus the refused one.
    let masks = line["mask_us"].as_array().expect("mask_us").len();
    assert!(masks > 5, "{masks}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&out);
}
fn model() -> String {
    let p = package_dir().join("../../assets/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(p.exists(), "{}: run `bash scripts/fetch-assets.sh` from the repository root", p.display());
    p.display().to_string()
}

/// The real model on the CPU kernels: a schema-valid completion with its stats, and the decode
/// benchmark's figures (behaviour only: the same number of tokens free and constrained, fewer
/// passes with jump-forward).
#[test]
fn generate_and_bench_decode_with_the_real_model() {
    let m = model();
    let schema = package_dir().join("../../bench/person.schema.json").display().to_string();
    let prompt = "Describe a person as JSON with name, age, city and email.";
    let (code, out) = sieve(&["generate", "--model", &m, "--json-schema", &schema, "--chat", "--prompt", prompt, "--max-tokens", "48", "--device", "cpu", "--threads", "2", "--json"]);
    assert_eq!(code, 0);
    let stats = &out[0]["stats"];
    assert_eq!((&stats["device"], &stats["threads"], &stats["launches_per_pass"]), (&Value::from("cpu"), &Value::from(2), &Value::Null));
    assert!(stats["forced_tokens"].as_u64().unwrap() > 0, "the keys are forced: {stats}");
    let text = out[0]["text"].as_str().unwrap();
    if stats["completion_tokens"].as_u64().unwrap() < 48 {
        let v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        for key in ["name", "age", "city", "email"] {
            assert!(v.get(key).is_some(), "{key} in {text}");
        }
    }

    let (code, out) = sieve(&["bench-decode", "--model", &m, "--json-schema", &schema, "--prompt", prompt, "--max-tokens", "40", "--rounds", "1", "--device", "cpu"]);
    assert_eq!(code, 0);
    let r = &out[0];
    assert_eq!(r["device"], "cpu");
    assert_eq!(r["unconstrained"]["completion_tokens"], r["constrained"]["completion_tokens"]);
    assert_eq!(r["constrained"]["forward_passes"], r["constrained"]["completion_tokens"]);
    assert!(r["jump_forward"]["forward_passes"].as_u64().unwrap() < r["constrained"]["forward_passes"].as_u64().unwrap(), "{r}");
    assert!(r["constrained_overhead_pct"].as_f64().is_some() && r["tokens_per_s_unconstrained"].as_f64().unwrap() > 0.0);
    // The real model's greedy text is the same with jump-forward; its tokens again without
    // jump-forward are the same text, a pass per token.
    assert_eq!(r["jump_forward_same_text_rounds"], 1, "{r}");
    assert!(r["jump_forward_fewer_passes_pct"].as_f64().unwrap() > 0.0 && r["jump_forward_less_time_pct"].as_f64().is_some(), "{r}");
    let same_tokens = &r["jump_forward_same_tokens"];
    assert_eq!(same_tokens["without_jump_forward"]["completion_tokens"], r["jump_forward"]["completion_tokens"], "{r}");
    assert_eq!(same_tokens["without_jump_forward"]["forward_passes"], r["jump_forward"]["completion_tokens"], "{r}");
    assert!(same_tokens["fewer_passes_pct"].as_f64().unwrap() > 0.0, "{r}");

    // Without a constraint: free decoding of a raw prompt, exactly --max-tokens tokens.
    let (code, out) = sieve(&["bench-decode", "--model", &m, "--raw", "--prompt", "Once upon a time", "--max-tokens", "8", "--rounds", "1", "--device", "cpu", "--threads", "1"]);
    assert_eq!(code, 0, "{out:?}");
    let r = &out[0];
    assert_eq!((&r["threads"], &r["unconstrained"]["completion_tokens"], &r["constrained"]), (&Value::from(1), &Value::from(8), &Value::Null), "{r}");
    assert!(r["prompt_tokens"].as_u64().unwrap() < 8, "no chat template around the prompt: {r}");
    for key in ["prefill_tokens_per_s", "decode_tokens_per_s"] {
        assert!(r[key].as_f64().is_some_and(|x| x > 0.0), "{key}: {r}");
    }
}

/// `--device gpu` runs the WGSL kernels (lavapipe without a GPU) and `--device auto` takes the GPU
/// only when wgpu's adapter is a real one; both give the CPU path's greedy tokens.
#[test]
fn the_device_flag_picks_where_the_model_runs() {
    let m = model();
    let run = |device: &str| {
        let (code, out) = sieve(&["generate", "--model", &m, "--regex", "[A-Z][a-z]+", "--chat", "--prompt", "Name a colour.", "--max-tokens", "3", "--device", device, "--json"]);
        assert_eq!(code, 0, "--device {device}: {out:?}");
        out[0].clone()
    };
    let gpu = run("gpu");
    assert_eq!(gpu["stats"]["device"], "gpu");
    assert_eq!(gpu["stats"]["launches_per_pass"], 2 + 5 * 30);
    let cpu = run("cpu");
    assert_eq!(cpu["tokens"], gpu["tokens"], "greedy tokens on the CPU and on the GPU");
    let expected = match pollster::block_on(sieve_model::gpu::default_adapter()) {
        sieve_model::gpu::Adapter::Hardware(_) => "gpu",
        _ => "cpu",
    };
    assert_eq!(run("auto")["stats"]["device"], expected);
}

/// Tool calls with the real model: `required` without parallel calls gives exactly one call, a
/// named tool gives a call of it, `auto` may answer in text; every call names a tool and its
/// arguments are valid for that tool's schema (checked by the `jsonschema` crate). A bad tool
/// schema is an error naming the tool and the place in its schema.
#[test]
fn generate_calls_tools_with_valid_arguments() {
    let m = model();
    // The README's example tools: a weather and a calculator tool.
    let tools_file = package_dir().join("../../examples/tools.json").display().to_string();
    let tools: Value = serde_json::from_str(&std::fs::read_to_string(&tools_file).unwrap()).unwrap();
    let validator = |name: &str| {
        let tool = tools.as_array().unwrap().iter().find(|t| t["function"]["name"] == name).unwrap_or_else(|| panic!("no tool {name}"));
        jsonschema::validator_for(&tool["function"]["parameters"]).expect("schema")
    };
    let run = |choice: &str, prompt: &str, extra: &[&str]| {
        let mut args = vec!["generate", "--model", &m, "--tools", &tools_file, "--tool-choice", choice, "--prompt", prompt];
        args.extend_from_slice(&["--max-tokens", "40", "--device", "cpu", "--threads", "2", "--json"]);
        args.extend_from_slice(extra);
        let (code, out) = sieve(&args);
        assert_eq!(code, 0, "{out:?}");
        for call in out[0]["tool_calls"].as_array().expect("tool_calls") {
            let name = call["name"].as_str().unwrap();
            assert!(validator(name).is_valid(&call["arguments"]), "{call}");
        }
        out[0].clone()
    };
    let one = run("required", "What is the weather in Paris?", &["--no-parallel-tool-calls"]);
    assert_eq!((one["finish_reason"].as_str(), one["tool_calls"].as_array().unwrap().len()), (Some("tool_calls"), 1), "{one}");
    let calls = run("required", "What is the weather in Paris?", &[]);
    assert!(!calls["tool_calls"].as_array().unwrap().is_empty(), "{calls}");
    // The README's command.
    let example = run("required", "What is 12 times 7?", &["--no-parallel-tool-calls"]);
    assert_eq!((example["finish_reason"].as_str(), example["text"].as_str()), (Some("tool_calls"), Some("")), "{example}");
    let named = run("calculate", "What is 12 times 7?", &[]);
    assert_eq!(named["tool_calls"][0]["name"], "calculate", "{named}");
    let free = run("auto", "Write one word.", &[]);
    assert!(free["finish_reason"] != "tool_calls" || !free["tool_calls"].as_array().unwrap().is_empty(), "{free}");
    let none = run("none", "What is the weather in Paris?", &[]);
    assert!(none["tool_calls"].as_array().unwrap().is_empty() && !none["text"].as_str().unwrap().contains("<tool_call>"), "{none}");
    let bad = temp("bad-tools.json", r#"[{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "integer", "minimum": "zero"}}}}}]"#);
    let (code, out) = sieve(&["generate", "--model", &m, "--tools", &bad, "--prompt", "Hi", "--device", "cpu"]);
    let error = out[0]["error"].as_str().unwrap_or_default();
    assert_eq!(code, 2);
    assert!(error.contains("tool \"f\"") && error.contains("/properties/x"), "{error}");
}

/// `--structural-tag` takes vLLM's JSON shape; a malformed one is a JSON error with status 2.
#[test]
fn check_follows_a_structural_tag() {
    let t = tokenizer();
    let tag = temp("tag.json", r#"{"structures": [{"begin": "<n>", "schema": {"type": "integer"}, "end": "</n>"}], "triggers": ["<n>"]}"#);
    let text = |s: &str| temp(&format!("tag-{}.txt", s.len()), s);
    assert_eq!(sieve(&["check", "--tokenizer", &t, "--structural-tag", &tag, "--text", &text("Sum: <n>42</n>, done.")]).0, 0);
    assert_eq!(sieve(&["check", "--tokenizer", &t, "--structural-tag", &tag, "--text", &text("<n>4x</n>")]).0, 1);
    let bad = temp("bad-tag.json", r#"{"structures": [{"begin": "<n>", "end": "</n>"}], "triggers": ["<n>"]}"#);
    let (code, out) = sieve(&["check", "--tokenizer", &t, "--structural-tag", &bad, "--text", &text("x")]);
    assert_eq!(code, 2);
    assert!(out[0]["error"].as_str().unwrap().contains("structures[0]"), "{out:?}");
}

/// A second family: a small random-weight Qwen3 with the real Qwen3 tokenizer and chat template
/// (built by scripts/tiny-models.py). Its chat prompt is Qwen's, the JSON it generates under a
/// schema is valid whatever the weights, and the CPU and GPU paths pick the same tokens.
#[test]
fn generates_schema_valid_json_with_a_qwen3_model() {
    let model = package_dir().join("../../assets/tiny-models/qwen3-chat.gguf");
    assert!(model.exists(), "{}: run `bash scripts/setup.sh` to build the test models", model.display());
    let schema = temp(
        "qwen3.schema.json",
        r#"{"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "admin": {"type": "boolean"},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3}},
            "required": ["name", "admin", "tags"], "additionalProperties": false}"#,
    );
    let run = |device: &str| {
        let args = ["generate", "--model", model.to_str().unwrap(), "--json-schema", &schema, "--chat", "--prompt", "Describe a person as JSON."];
        let (code, out) = sieve(&[&args[..], &["--max-tokens", "200", "--device", device, "--json"]].concat());
        assert_eq!(code, 0, "--device {device}: {out:?}");
        out[0].clone()
    };
    let cpu = run("cpu");
    assert_eq!(cpu["finish_reason"], "stop", "{cpu}");
    let value: Value = serde_json::from_str(cpu["text"].as_str().unwrap()).expect("JSON");
    let object = value.as_object().unwrap();
    assert_eq!(object.len(), 3, "{value}");
    assert!(object["name"].as_str().unwrap().chars().count() <= 12, "{value}");
    assert!(object["admin"].is_boolean(), "{value}");
    let tags = object["tags"].as_array().unwrap();
    assert!(tags.len() <= 3 && tags.iter().all(|t| t == "a" || t == "b"), "{value}");
    // Qwen's chat format: the prompt is longer than the question alone.
    assert!(cpu["stats"]["prompt_tokens"].as_u64().unwrap() > 10, "{cpu}");
    let gpu = run("gpu");
    assert_eq!(gpu["tokens"], cpu["tokens"], "greedy tokens on the CPU and on the GPU");
    assert_eq!(gpu["stats"]["launches_per_pass"], 2 + 6 * 2);
}
