//! sieve for Python: the same engine as the Rust crate `sieve-core`, for serving engines
//! (vLLM, SGLang, transformers). A [`Vocabulary`] from a tokenizer.json, a [`Constraint`]
//! compiled once per source, a [`Matcher`] per sequence that writes its row of an int32 token
//! bitmask of shape `[batch, ceil(width / 32)]` in place (any C-contiguous writable array in CPU
//! memory: a NumPy array, or a torch tensor through DLPack, without a copy), and
//! [`fill_next_token_bitmasks`] filling many rows on threads with the GIL released. The package
//! `sieve` (python/sieve) re-exports this module and adds what is written in Python.

use std::sync::Arc;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;
use sieve_core::json_schema::{JsonSchemaError, JsonSchemaOptions, Mode, PropertyOrder, Whitespace};
use sieve_core::{ConstraintSource, Limits, MatchError as CoreMatchError};

pyo3::create_exception!(
    sieve,
    CompileError,
    PyException,
    "A constraint that does not compile. Attributes: kind (\"schema\", \"unsupported\", \"limit\", \"empty\", \"regex\", \"syntax\", ...), keyword and pointer (JSON Schema errors), offset, line and column (regex and grammar errors), each None where it does not apply."
);
pyo3::create_exception!(sieve, MatchError, PyException, "A matcher operation that failed (the matcher is left as it was).");

/// A `CompileError` with its fields set (None where they do not apply).
fn compile_error(py: Python<'_>, message: String, kind: &str, keyword: Option<&str>, pointer: Option<&str>, place: Option<(usize, (usize, usize))>) -> PyErr {
    let err = CompileError::new_err(message);
    let value = err.value(py);
    let set = |key: &str, v: Py<PyAny>| {
        let _ = value.setattr(key, v);
    };
    set("kind", PyString::new(py, kind).into_any().unbind());
    set("keyword", keyword.into_pyobject(py).map(|v| v.into_any().unbind()).unwrap_or_else(|_| py.None()));
    set("pointer", pointer.into_pyobject(py).map(|v| v.into_any().unbind()).unwrap_or_else(|_| py.None()));
    let (offset, line, column) = match place {
        Some((o, (l, c))) => (Some(o), Some(l), Some(c)),
        None => (None, None, None),
    };
    for (key, v) in [("offset", offset), ("line", line), ("column", column)] {
        set(key, v.into_pyobject(py).map(|v| v.into_any().unbind()).unwrap_or_else(|_| py.None()));
    }
    err
}

fn from_compile_error(py: Python<'_>, e: &sieve_core::CompileError) -> PyErr {
    let place = e.offset.zip(e.line_col);
    compile_error(py, e.to_string(), e.kind.name(), None, None, place)
}

fn from_schema_error(py: Python<'_>, e: &JsonSchemaError) -> PyErr {
    match e {
        JsonSchemaError::Schema(s) => compile_error(py, s.to_string(), s.kind.compile_kind().name(), Some(&s.keyword), Some(&s.pointer), None),
        JsonSchemaError::Grammar(g) => from_compile_error(py, g),
    }
}

fn match_error(e: CoreMatchError) -> PyErr {
    MatchError::new_err(e.to_string())
}

/// JSON text of `value`: a `str` as it is, anything else through `json.dumps`.
fn json_text(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(s.to_str()?.to_string());
    }
    value.py().import("json")?.call_method1("dumps", (value,))?.extract()
}

/// A tokenizer's vocabulary: token id to bytes, the end-of-sequence ids, the logits width.
#[pyclass(frozen, module = "sieve")]
struct Vocabulary {
    inner: Arc<sieve_core::Vocabulary>,
}

#[pymethods]
impl Vocabulary {
    /// From a Hugging Face tokenizer.json text; `eos_ids` replaces the tokenizer's usual
    /// end-of-sequence tokens, `width` is the model's logits width when larger.
    #[staticmethod]
    #[pyo3(signature = (text, eos_ids = None, width = None))]
    fn from_tokenizer_json(text: &str, eos_ids: Option<Vec<u32>>, width: Option<usize>) -> PyResult<Self> {
        let bad = |e: sieve_core::VocabError| PyValueError::new_err(e.to_string());
        let mut vocab = sieve_core::Vocabulary::from_tokenizer_json(text).map_err(bad)?;
        if let Some(ids) = eos_ids {
            vocab = vocab.with_eos_ids(&ids).map_err(bad)?;
        }
        if let Some(w) = width {
            vocab = vocab.with_width(w).map_err(bad)?;
        }
        Ok(Vocabulary { inner: Arc::new(vocab) })
    }

    /// From a Hugging Face `transformers` tokenizer (a fast one: its `backend_tokenizer` is the
    /// tokenizer.json read here): the end-of-sequence ids are its `eos_token_id` unless
    /// `eos_ids` says otherwise, and `width` the model's logits width when larger.
    #[staticmethod]
    #[pyo3(signature = (tokenizer, eos_ids = None, width = None))]
    fn from_huggingface(tokenizer: &Bound<'_, PyAny>, eos_ids: Option<Vec<u32>>, width: Option<usize>) -> PyResult<Self> {
        let backend = tokenizer
            .getattr("backend_tokenizer")
            .map_err(|_| PyValueError::new_err("not a fast tokenizer: it has no backend_tokenizer (load it with use_fast=True)"))?;
        let text: String = backend.call_method0("to_str")?.extract()?;
        let eos_ids = match eos_ids {
            Some(ids) => Some(ids),
            None => tokenizer.getattr("eos_token_id")?.extract::<Option<u32>>()?.map(|id| vec![id]),
        };
        Self::from_tokenizer_json(&text, eos_ids, width)
    }

    /// Tokens in the vocabulary.
    #[getter]
    fn size(&self) -> usize {
        self.inner.len()
    }

    /// The logits width (at least `size`).
    #[getter]
    fn width(&self) -> usize {
        self.inner.width()
    }

    /// int32 words in one bitmask row: `ceil(width / 32)`.
    #[getter]
    fn mask_words(&self) -> usize {
        self.inner.mask_words()
    }

    /// The end-of-sequence ids.
    #[getter]
    fn eos_ids(&self) -> Vec<u32> {
        self.inner.eos_ids().to_vec()
    }
}

/// A compiled constraint: immutable, shared by every matcher that follows it.
#[pyclass(frozen, module = "sieve")]
struct Constraint {
    inner: sieve_core::Constraint,
}

/// Compiles `source`, through `cache` when given. A schema is translated first, so that its
/// errors keep their keyword and pointer.
fn compile(py: Python<'_>, source: ConstraintSource, cache: Option<&sieve_core::ConstraintCache>) -> PyResult<Constraint> {
    if let Some(inner) = cache.and_then(|c| c.cached(&source)) {
        return Ok(Constraint { inner });
    }
    let grammar = match &source {
        ConstraintSource::JsonSchema(text, options) => {
            let value: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| compile_error(py, format!("the schema is not JSON: {e}"), "schema", None, None, None))?;
            let limits = cache.map_or(Limits::default(), |c| *c.limits());
            let g = sieve_core::json_schema::to_grammar(&value, options, &limits).map_err(|e| from_schema_error(py, &JsonSchemaError::Schema(e)))?;
            Some(g)
        }
        _ => None,
    };
    let build = |limits: &Limits| match &grammar {
        Some(g) => sieve_core::Constraint::from_grammar(g, limits),
        None => sieve_core::Constraint::compile(&source, limits),
    };
    let compiled = match cache {
        Some(c) => c.get_with(&source, build),
        None => build(&Limits::default()),
    };
    compiled.map(|inner| Constraint { inner }).map_err(|e| from_compile_error(py, &e))
}

/// The source of a structural tag given as JSON text or a `dict` (see [`Constraint::structural_tag`]).
fn structural_tag_source(py: Python<'_>, tag: &Bound<'_, PyAny>, strict: bool) -> PyResult<ConstraintSource> {
    let value: serde_json::Value = serde_json::from_str(&json_text(tag)?)
        .map_err(|e| compile_error(py, format!("the structural tag is not JSON: {e}"), "structural_tag", None, None, None))?;
    let tag = sieve_core::StructuralTag::from_json(&value, schema_options(strict)).map_err(|e| from_compile_error(py, &e))?;
    Ok(ConstraintSource::StructuralTag(tag))
}

fn schema_options(strict: bool) -> JsonSchemaOptions {
    JsonSchemaOptions { mode: if strict { Mode::Strict } else { Mode::Lenient }, ..JsonSchemaOptions::default() }
}

/// A JSON Schema's options from Python: `whitespace` `"any"` (default), `"compact"` or a most
/// count of whitespace characters; `property_order` `"schema"` (default) or n, any order for
/// objects of at most n properties; `additional_properties`, the value of a missing keyword.
fn json_schema_options(strict: bool, whitespace: Option<&Bound<'_, PyAny>>, property_order: Option<&Bound<'_, PyAny>>, additional_properties: bool) -> PyResult<JsonSchemaOptions> {
    let whitespace = match whitespace {
        None => Whitespace::Any,
        Some(w) => match (w.extract::<String>().ok().as_deref(), w.extract::<u32>().ok()) {
            (Some("any"), _) => Whitespace::Any,
            (Some("compact"), _) => Whitespace::Compact,
            (_, Some(n)) => Whitespace::Bounded(n),
            _ => return Err(PyValueError::new_err(format!("whitespace is \"any\", \"compact\" or a count, not {w}"))),
        },
    };
    let property_order = match property_order {
        None => PropertyOrder::Schema,
        Some(p) => match (p.extract::<String>().ok().as_deref(), p.extract::<u8>().ok()) {
            (Some("schema"), _) => PropertyOrder::Schema,
            (_, Some(n)) => PropertyOrder::AnyUpTo(n),
            _ => return Err(PyValueError::new_err(format!("property_order is \"schema\" or a count up to 255, not {p}"))),
        },
    };
    Ok(JsonSchemaOptions { whitespace, property_order, additional_properties_default: additional_properties, ..schema_options(strict) })
}

#[pymethods]
impl Constraint {
    /// A JSON Schema (a `str` or a `dict`). Strict (the default): a keyword that cannot be
    /// enforced exactly raises; `strict=False` leaves it out and lists it in `warnings`.
    /// `whitespace` (`"any"`, `"compact"` or a count), `property_order` (`"schema"` or n: any
    /// order for objects of at most n properties) and `additional_properties` (the value of a
    /// missing keyword) as in the other APIs.
    #[staticmethod]
    #[pyo3(signature = (schema, strict = true, whitespace = None, property_order = None, additional_properties = true))]
    fn json_schema(
        py: Python<'_>,
        schema: &Bound<'_, PyAny>,
        strict: bool,
        whitespace: Option<&Bound<'_, PyAny>>,
        property_order: Option<&Bound<'_, PyAny>>,
        additional_properties: bool,
    ) -> PyResult<Self> {
        let options = json_schema_options(strict, whitespace, property_order, additional_properties)?;
        compile(py, ConstraintSource::JsonSchema(json_text(schema)?, options), None)
    }

    /// A regex the whole output must match.
    #[staticmethod]
    fn regex(py: Python<'_>, pattern: &str) -> PyResult<Self> {
        compile(py, ConstraintSource::Regex(pattern.to_string()), None)
    }

    /// A GBNF grammar (llama.cpp's format) whose start rule is `root`.
    #[staticmethod]
    fn grammar(py: Python<'_>, gbnf: &str) -> PyResult<Self> {
        compile(py, ConstraintSource::Gbnf(gbnf.to_string()), None)
    }

    /// Exactly one of these strings.
    #[staticmethod]
    fn choices(py: Python<'_>, choices: Vec<String>) -> PyResult<Self> {
        compile(py, ConstraintSource::Choices(choices), None)
    }

    /// Any JSON value.
    #[staticmethod]
    fn any_json() -> Self {
        Constraint { inner: sieve_core::Constraint::any_json() }
    }

    /// Free text in which a trigger starts a tagged section (tool calls): vLLM's shape,
    /// `{"structures": [{"begin", "schema" or "grammar", "end"}], "triggers": [...]}`, plus
    /// `at_least_one` and `stop_after_first` (a `str` or a `dict`).
    #[staticmethod]
    #[pyo3(signature = (tag, strict = true))]
    fn structural_tag(py: Python<'_>, tag: &Bound<'_, PyAny>, strict: bool) -> PyResult<Self> {
        compile(py, structural_tag_source(py, tag, strict)?, None)
    }

    /// Keywords a non-strict schema left out, as messages.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.inner.warnings().iter().map(ToString::to_string).collect()
    }

    /// Whether `text` as a whole satisfies the constraint.
    fn matches(&self, text: &str) -> PyResult<bool> {
        self.inner.matches(text.as_bytes()).map_err(match_error)
    }

    /// Approximate bytes held by the compiled form and its caches.
    fn memory_bytes(&self) -> usize {
        self.inner.memory_bytes()
    }
}

/// `array`'s memory: through the buffer protocol (NumPy), or through DLPack for arrays that only
/// speak it, such as CPU torch tensors (`numpy.from_dlpack` views the same memory).
fn array_buffer<T: pyo3::buffer::Element>(array: &Bound<'_, PyAny>) -> PyResult<PyBuffer<T>> {
    match PyBuffer::<T>::get(array) {
        Err(_) if array.hasattr("__dlpack__")? => {
            let view = array.py().import("numpy")?.call_method1("from_dlpack", (array,)).map_err(|e| {
                PyValueError::new_err(format!("the array must be in CPU memory (NumPy cannot view it without a copy: {e})"))
            })?;
            PyBuffer::get(&view)
        }
        result => result,
    }
}

/// The rows of an int32 bitmask: C-contiguous and writable, of shape `[batch, words]` or
/// `[words]`, `words` at least the vocabulary's `mask_words`. Returns the memory as `u32`
/// words (the same bits) and the words per row.
fn mask_rows(buffer: &mut PyBuffer<i32>, needed: usize) -> PyResult<(&mut [u32], usize)> {
    if buffer.readonly() || !buffer.is_c_contiguous() {
        return Err(PyValueError::new_err("the bitmask must be a writable, C-contiguous int32 array"));
    }
    let words = match buffer.shape() {
        [words] | [_, words] => *words,
        shape => return Err(PyValueError::new_err(format!("the bitmask has shape {shape:?}; it is [batch, words] or [words]"))),
    };
    if words < needed {
        return Err(PyValueError::new_err(format!("the bitmask rows have {words} words; the vocabulary needs {needed}")));
    }
    // SAFETY: the buffer is writable, C-contiguous, of `item_count` int32 items (checked by
    // `PyBuffer::<i32>::get`), and stays alive while the slice is used; u32 and i32 have the
    // same size and alignment.
    let words_all = unsafe { std::slice::from_raw_parts_mut(buffer.buf_ptr().cast::<u32>(), buffer.item_count()) };
    Ok((words_all, words))
}

/// Follows one sequence through a constraint over a vocabulary.
#[pyclass(module = "sieve")]
struct Matcher {
    inner: sieve_core::Matcher,
}

#[pymethods]
impl Matcher {
    #[new]
    fn new(constraint: &Constraint, vocabulary: &Vocabulary) -> Self {
        Matcher { inner: sieve_core::Matcher::new(&constraint.inner, &vocabulary.inner) }
    }

    /// Writes row `index` of `bitmask`: bit `i % 32` of word `i / 32` is set when token `i`
    /// may come next.
    #[pyo3(signature = (bitmask, index = 0))]
    fn fill_next_token_bitmask(&mut self, py: Python<'_>, bitmask: &Bound<'_, PyAny>, index: usize) -> PyResult<()> {
        let mut buffer = array_buffer::<i32>(bitmask)?;
        let needed = self.inner.vocabulary().mask_words();
        let (all, words) = mask_rows(&mut buffer, needed)?;
        let row = all.chunks_mut(words).nth(index).ok_or_else(|| PyValueError::new_err(format!("the bitmask has no row {index}")))?;
        let inner = &mut self.inner;
        py.detach(move || inner.fill_next_token_bitmask(&mut row[..needed])).map_err(match_error)
    }

    /// Takes `token`: True, or False (and no change) when it is not allowed (special and
    /// padding ids never are).
    fn accept_token(&mut self, token: u32) -> PyResult<bool> {
        match self.inner.accept_token(token) {
            Ok(()) => Ok(true),
            Err(CoreMatchError::TokenRejected { .. } | CoreMatchError::UnknownToken { .. }) => Ok(false),
            Err(e) => Err(match_error(e)),
        }
    }

    /// Takes `tokens` in order: True, or False (and none taken) when one is not allowed.
    fn accept_tokens(&mut self, tokens: Vec<u32>) -> PyResult<bool> {
        let allowed = self.inner.validate_tokens(&tokens);
        if allowed < tokens.len() {
            return Ok(false);
        }
        for t in tokens {
            self.inner.accept_token(t).map_err(match_error)?;
        }
        Ok(true)
    }

    /// How many of the draft `tokens`, from the first, are allowed (nothing is taken).
    fn validate_tokens(&mut self, tokens: Vec<u32>) -> usize {
        self.inner.validate_tokens(&tokens)
    }

    /// Undoes the last `n` tokens.
    fn rollback(&mut self, n: usize) -> PyResult<()> {
        self.inner.rollback(n).map_err(match_error)
    }

    /// The text every valid continuation starts with, as `(bytes, backoff, tokens)`: roll back
    /// `backoff` tokens and take `tokens`; `tokenize` (bytes to token ids, or None) gives
    /// the canonical tokens, and without it `tokens` is empty and `backoff` 0.
    #[pyo3(signature = (tokenize = None))]
    fn jump_forward(&mut self, tokenize: Option<Bound<'_, PyAny>>) -> PyResult<(Vec<u8>, usize, Vec<u32>)> {
        let mut failure = None;
        let jump = self
            .inner
            .jump_forward(|bytes| {
                let f = tokenize.as_ref()?;
                match f.call1((pyo3::types::PyBytes::new(f.py(), bytes),)).and_then(|r| r.extract::<Option<Vec<u32>>>()) {
                    Ok(ids) => ids,
                    Err(e) => {
                        failure = Some(e);
                        None
                    }
                }
            })
            .map_err(match_error)?;
        if let Some(e) = failure {
            return Err(e);
        }
        Ok((jump.bytes, jump.backoff, jump.tokens))
    }

    /// Whether the output so far is complete (an end-of-sequence token is allowed).
    fn is_accepting(&self) -> bool {
        self.inner.is_accepting()
    }

    /// Whether an end-of-sequence token was taken.
    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }

    /// Back to the start.
    fn reset(&mut self) {
        self.inner.reset();
    }

    /// An independent copy at the same position.
    fn fork(&self) -> Self {
        Matcher { inner: self.inner.clone() }
    }
}

/// Fills the bitmask rows of many matchers on threads, the GIL released: row `indices[i]` (or
/// `i`) for `matchers[i]`. Returns per row None or the error's message, instead of raising for
/// the whole batch.
#[pyfunction]
#[pyo3(signature = (matchers, bitmask, indices = None))]
fn fill_next_token_bitmasks(
    py: Python<'_>,
    mut matchers: Vec<PyRefMut<'_, Matcher>>,
    bitmask: &Bound<'_, PyAny>,
    indices: Option<Vec<usize>>,
) -> PyResult<Vec<Option<String>>> {
    let mut buffer = array_buffer::<i32>(bitmask)?;
    let needed = matchers.iter().map(|m| m.inner.vocabulary().mask_words()).max().unwrap_or(0);
    let (all, words) = mask_rows(&mut buffer, needed)?;
    let indices = indices.unwrap_or_else(|| (0..matchers.len()).collect());
    if indices.len() != matchers.len() {
        return Err(PyValueError::new_err(format!("{} matchers and {} indices", matchers.len(), indices.len())));
    }
    let mut rows: Vec<Option<&mut [u32]>> = all.chunks_mut(words).map(Some).collect();
    let mut work: Vec<(&mut sieve_core::Matcher, &mut [u32])> = Vec::with_capacity(matchers.len());
    for (m, &i) in matchers.iter_mut().zip(&indices) {
        let row = rows.get_mut(i).and_then(Option::take).ok_or_else(|| PyValueError::new_err(format!("row {i} is missing or named twice")))?;
        work.push((&mut m.inner, row));
    }
    let results = py.detach(move || sieve_core::fill_bitmask_rows(work));
    Ok(results.into_iter().map(|r| r.err().map(|e| e.to_string())).collect())
}

/// Compiled constraints keyed by their source, so a schema seen before is not compiled again:
/// the same constructors as [`Constraint`], returning the shared compiled constraint. Holds at
/// most `capacity` (the oldest goes first).
#[pyclass(frozen, module = "sieve")]
struct ConstraintCache {
    inner: sieve_core::ConstraintCache,
}

impl ConstraintCache {
    fn get(&self, py: Python<'_>, source: ConstraintSource) -> PyResult<Constraint> {
        compile(py, source, Some(&self.inner))
    }
}

#[pymethods]
impl ConstraintCache {
    #[new]
    #[pyo3(signature = (capacity = 256))]
    fn new(capacity: usize) -> Self {
        ConstraintCache { inner: sieve_core::ConstraintCache::new(Limits::default(), capacity) }
    }

    /// As [`Constraint::json_schema`].
    #[pyo3(signature = (schema, strict = true, whitespace = None, property_order = None, additional_properties = true))]
    fn json_schema(
        &self,
        py: Python<'_>,
        schema: &Bound<'_, PyAny>,
        strict: bool,
        whitespace: Option<&Bound<'_, PyAny>>,
        property_order: Option<&Bound<'_, PyAny>>,
        additional_properties: bool,
    ) -> PyResult<Constraint> {
        let options = json_schema_options(strict, whitespace, property_order, additional_properties)?;
        self.get(py, ConstraintSource::JsonSchema(json_text(schema)?, options))
    }

    fn regex(&self, py: Python<'_>, pattern: &str) -> PyResult<Constraint> {
        self.get(py, ConstraintSource::Regex(pattern.to_string()))
    }

    fn grammar(&self, py: Python<'_>, gbnf: &str) -> PyResult<Constraint> {
        self.get(py, ConstraintSource::Gbnf(gbnf.to_string()))
    }

    fn choices(&self, py: Python<'_>, choices: Vec<String>) -> PyResult<Constraint> {
        self.get(py, ConstraintSource::Choices(choices))
    }

    /// As [`Constraint::structural_tag`].
    #[pyo3(signature = (tag, strict = true))]
    fn structural_tag(&self, py: Python<'_>, tag: &Bound<'_, PyAny>, strict: bool) -> PyResult<Constraint> {
        self.get(py, structural_tag_source(py, tag, strict)?)
    }

    /// Constraints held.
    fn __len__(&self) -> usize {
        self.inner.len()
    }
}

/// Sets the logits of tokens a bitmask does not allow to minus infinity, in place: row
/// `indices[i]` (or `i`) of `bitmask` for row `i` of `logits`, a C-contiguous float32 array of
/// shape `[batch, vocab]` or `[vocab]` (columns past the bitmask's bits are never allowed).
#[pyfunction]
#[pyo3(signature = (logits, bitmask, indices = None))]
fn apply_token_bitmask_inplace(py: Python<'_>, logits: &Bound<'_, PyAny>, bitmask: &Bound<'_, PyAny>, indices: Option<Vec<usize>>) -> PyResult<()> {
    let scores = array_buffer::<f32>(logits)?;
    if scores.readonly() || !scores.is_c_contiguous() {
        return Err(PyValueError::new_err("the logits must be a writable, C-contiguous float32 array"));
    }
    let (batch, vocab) = match scores.shape() {
        [v] => (1, *v),
        [b, v] => (*b, *v),
        shape => return Err(PyValueError::new_err(format!("the logits have shape {shape:?}; they are [batch, vocab] or [vocab]"))),
    };
    let mut mask = array_buffer::<i32>(bitmask)?;
    let (words_all, words) = mask_rows(&mut mask, 0)?;
    let indices = indices.unwrap_or_else(|| (0..batch).collect());
    if indices.len() != batch || indices.iter().any(|&i| (i + 1) * words > words_all.len()) {
        return Err(PyValueError::new_err(format!("{batch} rows of logits need {batch} bitmask rows that exist")));
    }
    // SAFETY: writable, C-contiguous, `batch * vocab` float32 items (checked above), alive here.
    let all = unsafe { std::slice::from_raw_parts_mut(scores.buf_ptr().cast::<f32>(), scores.item_count()) };
    let words_all: &[u32] = words_all;
    py.detach(move || {
        for (row, &i) in all.chunks_mut(vocab).zip(&indices) {
            let bits = &words_all[i * words..(i + 1) * words];
            for (t, score) in row.iter_mut().enumerate() {
                if bits.get(t / 32).is_none_or(|w| w >> (t % 32) & 1 == 0) {
                    *score = f32::NEG_INFINITY;
                }
            }
        }
    });
    Ok(())
}

/// The module `sieve._sieve`, re-exported by the package `sieve`.
#[pymodule]
fn _sieve(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Vocabulary>()?;
    m.add_class::<Constraint>()?;
    m.add_class::<Matcher>()?;
    m.add_class::<ConstraintCache>()?;
    m.add_function(wrap_pyfunction!(fill_next_token_bitmasks, m)?)?;
    m.add_function(wrap_pyfunction!(apply_token_bitmask_inplace, m)?)?;
    m.add("CompileError", m.py().get_type::<CompileError>())?;
    m.add("MatchError", m.py().get_type::<MatchError>())?;
    Ok(())
}
