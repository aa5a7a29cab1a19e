//! Random token streams through matchers of fixed constraints: masks and
//! accept_token must agree, rollback and jump-forward must not panic.

#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use sieve_core::{Constraint, ConstraintSource};
use std::sync::OnceLock;

fn constraints() -> &'static [Constraint] {
    static C: OnceLock<Vec<Constraint>> = OnceLock::new();
    C.get_or_init(|| {
        let l = common::limits();
        [
            ConstraintSource::AnyJson,
            ConstraintSource::Regex(r#"\{"a": (true|[0-9]{1,4})(, "b": "[a-zé中]*")?\}"#.into()),
            ConstraintSource::Gbnf("root ::= e\ne ::= e \"+\" t | t\nt ::= [0-9]+ | \"(\" e \")\"".into()),
            ConstraintSource::Choices(vec!["true".into(), "null".into(), "abc".into()]),
        ]
        .iter()
        .map(|s| Constraint::compile(s, &l).expect("fixed constraints compile"))
        .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, ops)) = data.split_first() else { return };
    let cs = constraints();
    common::drive(&cs[which as usize % cs.len()], &common::vocab(), ops);
});
