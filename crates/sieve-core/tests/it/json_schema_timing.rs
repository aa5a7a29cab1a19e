//! Where schema compile time goes: the JSON Schema translation against
//! compiling the grammar it gives. Ignored by default; run with
//! `SIEVE_MASKBENCH_DIR=/path/to/maskbench-files cargo test --release --test it json_schema_timing -- --ignored --nocapture`.

use sieve_core::{Constraint, Limits};
use sieve_core::json_schema::{JsonSchemaOptions, PropertyOrder, to_grammar};
use std::time::Instant;

fn pct(v: &mut [u128], q: f64) -> u128 {
    v.sort_unstable();
    if v.is_empty() { 0 } else { v[((v.len() - 1) as f64 * q).round() as usize] }
}

#[test]
#[ignore]
fn translation_and_grammar_compile_times() {
    let Ok(dir) = std::env::var("SIEVE_MASKBENCH_DIR") else {
        eprintln!("SIEVE_MASKBENCH_DIR not set");
        return;
    };
    for (label, order) in [("schema order", PropertyOrder::Schema), ("any order up to 12", PropertyOrder::AnyUpTo(12))] {
        let options = JsonSchemaOptions { property_order: order, ..Default::default() };
        let (mut tr, mut gc, mut bytes) = (Vec::new(), Vec::new(), Vec::new());
        for e in std::fs::read_dir(&dir).unwrap() {
            let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
            let file: serde_json::Value = serde_json::from_str(&text).unwrap();
            let t0 = Instant::now();
            let Ok(g) = to_grammar(&file["schema"], &options, &Limits::default()) else { continue };
            let t1 = Instant::now();
            if Constraint::from_grammar(&g, &Default::default()).is_err() {
                continue;
            }
            tr.push((t1 - t0).as_micros());
            gc.push(t1.elapsed().as_micros());
            bytes.push(g.gbnf().len() as u128);
        }
        eprintln!(
            "{label}: {} schemas; translate p50 {} / p90 {} us; grammar compile p50 {} / p90 {} us; GBNF p50 {} / p90 {} bytes",
            tr.len(),
            pct(&mut tr, 0.5),
            pct(&mut tr, 0.9),
            pct(&mut gc, 0.5),
            pct(&mut gc, 0.9),
            pct(&mut bytes, 0.5),
            pct(&mut bytes, 0.9)
        );
    }
}
