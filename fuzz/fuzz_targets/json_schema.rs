//! JSON Schema translator, on schemas generated from the input's structure (types, bounds,
//! patterns, formats, objects, arrays, combinators, references, `$defs`) in every option: any
//! schema compiles or fails with an error, never a panic, a stack overflow or a hang, and a
//! compiled one's masks agree with `accept_token` on a stream of operations.

#![no_main]

#[path = "common.rs"]
mod common;
#[path = "schemas.rs"]
mod schemas;

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use schemas::Node;
use serde_json::{Map, Value};
use sieve_core::json_schema::{JsonSchemaOptions, Mode, PropertyOrder, Whitespace};
use sieve_core::{Constraint, ConstraintSource};

#[derive(Arbitrary, Debug)]
struct Input {
    root: Node,
    defs: Vec<Node>,
    whitespace: u8,
    lenient: bool,
    any_order: Option<u8>,
    closed: bool,
    ops: Vec<u8>,
}

fuzz_target!(|input: Input| {
    let mut schema = input.root.value();
    if let Value::Object(m) = &mut schema {
        let defs: Map<String, Value> = input.defs.iter().take(4).enumerate().map(|(i, d)| (format!("d{i}"), d.value())).collect();
        m.insert("$defs".into(), Value::Object(defs));
    }
    let limits = common::limits();
    let options = JsonSchemaOptions {
        whitespace: match input.whitespace % 3 {
            0 => Whitespace::Any,
            1 => Whitespace::Compact,
            _ => Whitespace::Bounded(2),
        },
        mode: if input.lenient { Mode::Lenient } else { Mode::Strict },
        property_order: input.any_order.map_or(PropertyOrder::Schema, |n| PropertyOrder::AnyUpTo(n % 6)),
        additional_properties_default: !input.closed,
    };
    if std::env::var_os("SIEVE_FUZZ_PRINT").is_some() {
        // To turn an input into a regression test: the schema and options it stands for.
        eprintln!("{schema}\n{options:?}");
    }
    let source = ConstraintSource::JsonSchema(schema.to_string(), options);
    if let Ok(c) = Constraint::compile(&source, &limits) {
        common::drive(&c, &common::vocab(), &input.ops);
    }
});
