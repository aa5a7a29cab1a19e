//! Regex front end: any pattern compiles or fails with an error, never a
//! panic or a hang; compiled ones survive whole-string checks and a matcher.

#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use sieve_core::{Constraint, ConstraintSource};

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let Ok(pattern) = std::str::from_utf8(&data[..split]) else { return };
    let rest = data.get(split + 1..).unwrap_or_default();
    if let Ok(c) = Constraint::compile(&ConstraintSource::Regex(pattern.to_string()), &common::limits()) {
        let _ = c.matches(rest);
        common::drive(&c, &common::vocab(), rest);
    }
});
