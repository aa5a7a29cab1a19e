//! Errors as values across the boundary: a constraint that fails to compile rejects with a
//! JS `Error` named `SieveError` (js/errors.js's class recognises it) that keeps sieve-core's
//! fields: `kind`, and where they apply the `keyword` and JSON `pointer` of a schema error, or
//! the byte `offset`, `line` and `column` of a regex or grammar error, and the `tool` whose
//! definition is wrong.

use sieve_core::json_schema::{JsonSchemaError, SchemaError};
use sieve_core::CompileError;
use sieve_model::tools::ToolError;
use wasm_bindgen::prelude::*;

use crate::js_error;
use crate::request::RequestError;

/// Where a compile error points.
#[derive(Default)]
struct Place<'a> {
    tool: Option<&'a str>,
    keyword: Option<&'a str>,
    pointer: Option<&'a str>,
    offset: Option<usize>,
    line_col: Option<(usize, usize)>,
}

/// A `SieveError`: `context: message`, with `kind` and the fields of `place` that are known.
fn sieve_error(context: &str, message: &str, kind: &str, place: Place<'_>) -> JsValue {
    let error = js_sys::Error::new(&format!("{context}: {message}"));
    error.set_name("SieveError");
    let set = |key: &str, value: JsValue| {
        let _ = js_sys::Reflect::set(&error, &JsValue::from_str(key), &value);
    };
    set("kind", JsValue::from_str(kind));
    if let Some(tool) = place.tool {
        set("tool", JsValue::from_str(tool));
    }
    if let Some(keyword) = place.keyword {
        set("keyword", JsValue::from_str(keyword));
    }
    if let Some(pointer) = place.pointer {
        set("pointer", JsValue::from_str(pointer));
    }
    if let Some(offset) = place.offset {
        set("offset", JsValue::from_f64(offset as f64));
    }
    if let Some((line, column)) = place.line_col {
        set("line", JsValue::from_f64(line as f64));
        set("column", JsValue::from_f64(column as f64));
    }
    error.into()
}

/// A regex, grammar or compiled schema's error, after `context` (what was being compiled).
pub(crate) fn compile_error(context: &str, e: &CompileError) -> JsValue {
    sieve_error(context, &e.to_string(), e.kind.name(), Place { offset: e.offset, line_col: e.line_col, ..Place::default() })
}

/// A JSON Schema's translation error: its kind (as [`compile_error`] names the same classes),
/// keyword and pointer.
pub(crate) fn schema_error(context: &str, e: &SchemaError) -> JsValue {
    let place = Place { keyword: Some(&e.keyword), pointer: Some(&e.pointer), ..Place::default() };
    sieve_error(context, &e.to_string(), e.kind.compile_kind().name(), place)
}


/// A request refused before any model work, as the caller sees it.
pub(crate) fn request_error(e: RequestError) -> JsValue {
    match e {
        RequestError::Bad(why) => JsError::new(&format!("bad request: {why}")).into(),
        RequestError::Tool(e) => tool_error(&e),
        RequestError::Schema(e) => schema_error("response_format.json_schema", &e),
        RequestError::Compile(e) => compile_error("response_format", &e),
        RequestError::Prompt(e) => js_error(e).into(),
    }
}

/// A request's bad `tools` or `tool_choice`: kind `tool`, or its schema error's kind, keyword
/// and pointer (into the tool's `parameters`), with the `tool` named.
fn tool_error(e: &ToolError) -> JsValue {
    let place = Place {
        tool: e.tool.as_deref(),
        keyword: e.schema.as_ref().map(|s| s.keyword.as_str()),
        pointer: e.schema.as_ref().map(|s| s.pointer.as_str()),
        ..Place::default()
    };
    sieve_error("tools", &e.to_string(), e.schema.as_ref().map_or("tool", |s| s.kind.compile_kind().name()), place)
}

/// [`sieve_core::Constraint::json_schema`]'s error.
pub(crate) fn json_schema_error(context: &str, e: &JsonSchemaError) -> JsValue {
    match e {
        JsonSchemaError::Schema(e) => schema_error(context, e),
        JsonSchemaError::Grammar(e) => compile_error(context, e),
    }
}

/// Schema text that is not JSON: a `schema` error at its line and column.
pub(crate) fn not_json(context: &str, e: &serde_json::Error) -> JsValue {
    let place = Place { line_col: Some((e.line(), e.column())), ..Place::default() };
    sieve_error(context, &format!("not JSON: {e}"), "schema", place)
}
