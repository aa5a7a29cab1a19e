//! The tokenizer, rebuilt from a GGUF file's metadata.
//!
//! A GGUF carries the vocabulary (`tokenizer.ggml.tokens`), their kinds (`token_type`), the BPE
//! merges and the pre-tokenizer's name (`tokenizer.ggml.pre`). [`tokenizer_json`] turns them into
//! a Hugging Face `tokenizer.json` text, which both the `tokenizers` crate (here) and sieve-core's
//! vocabulary read, so the model and the constraint engine see the same token strings.

use serde_json::{Value as Json, json};

use crate::chat::ChatTemplate;
use crate::error::ModelError;
use crate::gguf::{Gguf, Value};

/// GGUF token kinds (`tokenizer.ggml.token_type`): control, unknown and user-defined tokens are
/// added tokens, matched whole in text.
const NORMAL: u64 = 1;
const UNKNOWN: u64 = 2;
const CONTROL: u64 = 3;
const USER_DEFINED: u64 = 4;

/// Builds a `tokenizer.json` text for a GGUF's tokenizer: byte-level BPE
/// (`tokenizer.ggml.model = "gpt2"`) or SentencePiece's BPE (`"llama"`, Llama 2 and Gemma).
///
/// Control and unknown tokens become special added tokens, user-defined ones added tokens that
/// are not special; all are matched whole. For byte-level BPE the normalizer, pre-tokenizer and
/// merge rule follow `tokenizer.ggml.pre` as llama.cpp reads it ([`pre_tokenizer`]); an unknown
/// name is an error, since a different split would tokenize differently from the model's
/// training. SentencePiece's files carry scores instead of merges ([`sentencepiece_merges`]).
pub fn tokenizer_json(gguf: &Gguf<'_>) -> Result<String, ModelError> {
    let model = gguf.get_str("tokenizer.ggml.model")?;
    let tokens = gguf.get_array("tokenizer.ggml.tokens")?;
    let types = gguf.get_array("tokenizer.ggml.token_type")?;
    if types.len() != tokens.len() {
        return Err(ModelError::Tokenizer(format!("{} token types for {} tokens", types.len(), tokens.len())));
    }
    let tokens = tokens
        .iter()
        .enumerate()
        .map(|(id, token)| match token {
            Value::String(token) => Ok(token.as_str()),
            _ => Err(ModelError::Tokenizer(format!("token {id} is not a string"))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let types: Vec<u64> = types.iter().map(|t| t.as_u64().unwrap_or(NORMAL)).collect();
    let mut seen = std::collections::HashSet::with_capacity(tokens.len());
    let mut added = Vec::new();
    for (id, (&token, &ty)) in tokens.iter().zip(&types).enumerate() {
        if !seen.insert(token) {
            return Err(ModelError::Tokenizer(format!("token {id} `{token}` appears twice")));
        }
        if matches!(ty, CONTROL | USER_DEFINED | UNKNOWN) {
            added.push(json!({
                "id": id, "content": token, "single_word": false, "lstrip": false,
                "rstrip": false, "normalized": false, "special": ty != USER_DEFINED,
            }));
        }
    }
    let vocab = Vocab(&tokens);
    let doc = match model {
        "gpt2" => {
            let merges = gguf
                .get_array("tokenizer.ggml.merges")?
                .iter()
                .enumerate()
                .map(|(i, m)| match m {
                    Value::String(s) => match s.split_once(' ') {
                        Some((a, b)) if !b.contains(' ') => Ok([a, b]),
                        _ => Err(ModelError::Tokenizer(format!("merge {i} `{s}` is not two tokens"))),
                    },
                    _ => Err(ModelError::Tokenizer(format!("merge {i} is not a string"))),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let Split { normalizer, pre_tokenizer, ignore_merges } = pre_tokenizer(gguf.get_str("tokenizer.ggml.pre").unwrap_or("default"))?;
            let decoder = json!({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true});
            let model = Bpe { unk_token: None, fuse_unk: false, byte_fallback: false, ignore_merges, vocab, merges };
            TokenizerDoc::new(normalizer, pre_tokenizer, decoder, added, model)
        }
        "llama" => {
            let scores = gguf.get_array("tokenizer.ggml.scores")?;
            if scores.len() != tokens.len() {
                return Err(ModelError::Tokenizer(format!("{} scores for {} tokens", scores.len(), tokens.len())));
            }
            let scores: Vec<f32> = scores.iter().map(|s| s.as_f64().map_or(0.0, |s| s as f32)).collect();
            // Gemma's files say no; Llama 2's omit the key, and llama.cpp's default is yes.
            let prefix = !matches!(gguf.get("tokenizer.ggml.add_space_prefix"), Ok(Value::Bool(false)));
            let space = json!({"type": "Replace", "pattern": {"String": " "}, "content": "\u{2581}"});
            let normalizer = match prefix {
                true => json!({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u{2581}"}, space]}),
                false => space,
            };
            let mut decoders = vec![
                json!({"type": "Replace", "pattern": {"String": "\u{2581}"}, "content": " "}),
                json!({"type": "ByteFallback"}),
                json!({"type": "Fuse"}),
            ];
            if prefix {
                decoders.push(json!({"type": "Strip", "content": " ", "start": 1, "stop": 0}));
            }
            let unk_token = types.iter().position(|&t| t == UNKNOWN).map(|id| tokens[id]);
            let merges = sentencepiece_merges(&tokens, &types, &scores);
            let model = Bpe { unk_token, fuse_unk: true, byte_fallback: true, ignore_merges: false, vocab, merges };
            TokenizerDoc::new(normalizer, Json::Null, json!({"type": "Sequence", "decoders": decoders}), added, model)
        }
        other => return Err(ModelError::Tokenizer(format!("tokenizer model `{other}` is not supported (`gpt2` and `llama` are)"))),
    };
    serde_json::to_string(&doc).map_err(|e| ModelError::Tokenizer(format!("tokenizer.json not written: {e}")))
}

/// A `tokenizer.json`, written straight from the GGUF's arrays: a JSON tree of a large
/// vocabulary and its merges would take several times the text's memory.
#[derive(serde::Serialize)]
struct TokenizerDoc<'a> {
    version: &'static str,
    truncation: Option<()>,
    padding: Option<()>,
    added_tokens: Vec<Json>,
    normalizer: Json,
    pre_tokenizer: Json,
    post_processor: Option<()>,
    decoder: Json,
    model: Bpe<'a>,
}

impl<'a> TokenizerDoc<'a> {
    fn new(normalizer: Json, pre_tokenizer: Json, decoder: Json, added_tokens: Vec<Json>, model: Bpe<'a>) -> Self {
        Self { version: "1.0", truncation: None, padding: None, added_tokens, normalizer, pre_tokenizer, post_processor: None, decoder, model }
    }
}

/// A BPE model's part of a `tokenizer.json`.
#[derive(serde::Serialize)]
#[serde(tag = "type", rename = "BPE")]
struct Bpe<'a> {
    unk_token: Option<&'a str>,
    fuse_unk: bool,
    byte_fallback: bool,
    ignore_merges: bool,
    vocab: Vocab<'a>,
    merges: Vec<[&'a str; 2]>,
}

/// Tokens by id, written as a JSON object of `token: id`.
struct Vocab<'a>(&'a [&'a str]);

impl serde::Serialize for Vocab<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (id, token) in self.0.iter().enumerate() {
            map.serialize_entry(token, &id)?;
        }
        map.end()
    }
}

/// The normalizer and pre-tokenizer of a `tokenizer.json` without SentencePiece's dummy prefix:
/// its `Prepend` normalizer left out, its `Metaspace` pre-tokenizer's prepending turned off;
/// `None` where it has neither.
fn without_dummy_prefix(pipeline: &Pipeline) -> Option<(Json, Json)> {
    fn strip(part: &mut Json) -> bool {
        match part.get("type").and_then(Json::as_str) {
            Some("Prepend") => {
                *part = Json::Null;
                true
            }
            Some("Metaspace") if part.get("prepend_scheme").and_then(Json::as_str) != Some("never") || part.get("add_prefix_space") == Some(&Json::Bool(true)) => {
                part["prepend_scheme"] = json!("never");
                part["add_prefix_space"] = json!(false);
                true
            }
            Some("Sequence") => {
                let key = if part.get("normalizers").is_some() { "normalizers" } else { "pretokenizers" };
                let Some(Json::Array(items)) = part.get_mut(key) else { return false };
                let changed = items.iter_mut().fold(false, |changed, item| strip(item) | changed);
                items.retain(|item| !item.is_null());
                changed
            }
            _ => false,
        }
    }
    let (mut normalizer, mut pre_tokenizer) = (pipeline.normalizer.clone(), pipeline.pre_tokenizer.clone());
    let changed = strip(&mut normalizer) | strip(&mut pre_tokenizer);
    changed.then_some((normalizer, pre_tokenizer))
}

/// The steps of a `tokenizer.json` around its model (read without the model, which is most of
/// the text and which the tokenizer holds already).
#[derive(serde::Deserialize)]
struct Pipeline {
    #[serde(default)]
    normalizer: Json,
    #[serde(default)]
    pre_tokenizer: Json,
    #[serde(default)]
    decoder: Json,
}

/// The merges a SentencePiece BPE model's scores imply, in the order llama.cpp applies them
/// (the pair whose joined piece scores highest first): every split of every normal piece into
/// two pieces of the vocabulary, ordered by the joined piece's score, then its id, then the
/// halves' ids (as Hugging Face's converter orders them).
fn sentencepiece_merges<'a>(tokens: &[&'a str], types: &[u64], scores: &[f32]) -> Vec<[&'a str; 2]> {
    let ids: std::collections::HashMap<&str, usize> =
        tokens.iter().enumerate().filter(|&(id, _)| matches!(types[id], NORMAL | USER_DEFINED)).map(|(id, &t)| (t, id)).collect();
    let mut merges = Vec::new();
    for (id, &token) in tokens.iter().enumerate().filter(|&(id, _)| types[id] == NORMAL) {
        for (at, _) in token.char_indices().skip(1) {
            let (left, right) = token.split_at(at);
            if let (Some(&l), Some(&r)) = (ids.get(left), ids.get(right)) {
                merges.push((scores[id], id, l, r));
            }
        }
    }
    merges.sort_by(|a, b| b.0.total_cmp(&a.0).then((a.1, a.2, a.3).cmp(&(b.1, b.2, b.3))));
    merges.into_iter().map(|(_, _, l, r)| [tokens[l], tokens[r]]).collect()
}

/// How a byte-level BPE family splits text before its merges.
struct Split {
    normalizer: Json,
    pre_tokenizer: Json,
    /// Whether a piece that is a token is taken whole, before any merge (Llama 3).
    ignore_merges: bool,
}

/// The split of the pre-tokenizer llama.cpp names `name` (`tokenizer.ggml.pre`), as the
/// family's own `tokenizer.json` writes it.
fn pre_tokenizer(name: &str) -> Result<Split, ModelError> {
    /// GPT-4's split with up to three digits a piece (Llama 3).
    const LLAMA3: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
    /// The same with one digit a piece (Qwen 2 and 3).
    const QWEN2: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
    let byte_level = |use_regex: bool| json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": use_regex});
    let regex_then_bytes = |regex: &str| {
        json!({"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": false}, byte_level(false)]})
    };
    let split = |normalizer: Json, pre_tokenizer: Json, ignore_merges: bool| Ok(Split { normalizer, pre_tokenizer, ignore_merges });
    match name {
        "smollm" => split(Json::Null, json!({"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": true}, byte_level(true)]}), false),
        "gpt2" | "default" => split(Json::Null, byte_level(true), false),
        "llama-bpe" | "llama3" | "llama-v3" => split(Json::Null, regex_then_bytes(LLAMA3), true),
        "qwen2" => split(json!({"type": "NFC"}), regex_then_bytes(QWEN2), false),
        other => Err(ModelError::Tokenizer(format!("pre-tokenizer `{other}` is not supported (smollm, gpt2, llama-bpe and qwen2 are)"))),
    }
}

/// A loaded tokenizer with the ids the decode loop needs.
#[derive(Clone)]
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    /// The same without SentencePiece's dummy prefix (the `▁` put before a text), for text that
    /// continues a sequence; `None` where the tokenizer puts none.
    continuation: Option<tokenizers::Tokenizer>,
    json: String,
    eos: u32,
    /// Every id that ends a generation: `eos`, and the end-of-turn and end-of-message tokens
    /// where the file names them (Gemma's `<end_of_turn>`, Llama 3's `<|eot_id|>`).
    ends: Vec<u32>,
    /// The beginning-of-sequence id a prompt starts with, where the file asks for one.
    bos: Option<u32>,
    /// The bytes each token id stands for (added tokens: their text).
    bytes: Vec<Vec<u8>>,
    /// Whether each id is an added (special) token.
    special: Vec<bool>,
    /// How chat messages become a prompt.
    chat: ChatTemplate,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer").field("vocab", &self.vocab_size()).field("eos", &self.eos).finish()
    }
}

impl Tokenizer {
    /// Builds the tokenizer from a GGUF's metadata (see [`tokenizer_json`]), with the GGUF's chat
    /// template (`tokenizer.chat_template`; ChatML without one).
    pub fn from_gguf(gguf: &Gguf<'_>) -> Result<Self, ModelError> {
        let eos = gguf.get_u64("tokenizer.ggml.eos_token_id")?;
        let mut tokenizer = Self::from_json(tokenizer_json(gguf)?, eos)?;
        let size = tokenizer.vocab_size();
        let id = |key: &str| gguf.get_u64(key).ok().and_then(|id| u32::try_from(id).ok()).filter(|&id| (id as usize) < size);
        for key in ["tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"] {
            if let Some(end) = id(key).filter(|end| !tokenizer.ends.contains(end)) {
                tokenizer.ends.push(end);
            }
        }
        if matches!(gguf.get("tokenizer.ggml.add_bos_token"), Ok(Value::Bool(true))) {
            tokenizer.bos = id("tokenizer.ggml.bos_token_id");
        }
        if let Ok(source) = gguf.get_str("tokenizer.chat_template") {
            let text = |id: Option<u64>| {
                let id = id.and_then(|id| u32::try_from(id).ok());
                String::from_utf8_lossy(id.map_or(&[][..], |id| tokenizer.token_bytes(id))).into_owned()
            };
            let bos = text(gguf.get_u64("tokenizer.ggml.bos_token_id").ok());
            tokenizer.chat = ChatTemplate::new(source, bos, text(Some(eos)));
        }
        Ok(tokenizer)
    }

    /// Loads a `tokenizer.json` text; `eos` is the end-of-sequence id. Chat prompts are ChatML.
    pub fn from_json(json: String, eos: u64) -> Result<Self, ModelError> {
        let inner: tokenizers::Tokenizer =
            json.parse().map_err(|e| ModelError::Tokenizer(format!("tokenizer.json rejected: {e}")))?;
        let size = inner.get_vocab_size(true);
        let eos = u32::try_from(eos)
            .ok()
            .filter(|&e| (e as usize) < size)
            .ok_or_else(|| ModelError::Tokenizer(format!("end-of-sequence id {eos} is past the vocabulary")))?;
        let pipeline: Pipeline = serde_json::from_str(&json).map_err(|e| ModelError::Tokenizer(format!("tokenizer.json rejected: {e}")))?;
        let continuation = without_dummy_prefix(&pipeline)
            .map(|(normalizer, pre_tokenizer)| -> Result<tokenizers::Tokenizer, serde_json::Error> {
                let mut continuation = inner.clone();
                continuation.with_normalizer(serde_json::from_value::<Option<tokenizers::NormalizerWrapper>>(normalizer)?);
                continuation.with_pre_tokenizer(serde_json::from_value::<Option<tokenizers::PreTokenizerWrapper>>(pre_tokenizer)?);
                Ok(continuation)
            })
            .transpose()
            .map_err(|e| ModelError::Tokenizer(format!("tokenizer.json without its dummy prefix rejected: {e}")))?;
        let encoding = sieve_core::TokenEncoding::of(Some(&pipeline.decoder), Some(&pipeline.pre_tokenizer));
        let added = inner.get_added_tokens_decoder();
        let mut bytes = vec![Vec::new(); size];
        let mut special = vec![false; size];
        for (token, id) in inner.get_vocab(true) {
            let slot = id as usize;
            if slot >= size {
                return Err(ModelError::Tokenizer(format!("token id {id} is past the vocabulary size {size}")));
            }
            if added.contains_key(&id) {
                bytes[slot] = token.into_bytes();
                special[slot] = true;
            } else {
                bytes[slot] = encoding.decode(&token).ok_or_else(|| ModelError::Tokenizer(format!("token {id} `{token}` is not byte-level")))?;
            }
        }
        Ok(Self { inner, continuation, json, eos, ends: vec![eos], bos: None, bytes, special, chat: ChatTemplate::chatml() })
    }

    /// The `tokenizer.json` text (for sieve-core's `Vocabulary::from_tokenizer_json`).
    pub fn json(&self) -> &str {
        &self.json
    }

    /// The end-of-sequence token id.
    pub fn eos(&self) -> u32 {
        self.eos
    }

    /// Every id that ends a generation: the end of sequence, and the end of a turn or message
    /// where the model has such tokens.
    pub fn end_ids(&self) -> &[u32] {
        &self.ends
    }

    /// Whether `id` ends a generation (see [`Tokenizer::end_ids`]).
    pub fn is_end(&self, id: u32) -> bool {
        self.ends.contains(&id)
    }

    /// Token ids of a prompt: [`Tokenizer::encode`], after the beginning-of-sequence token where
    /// the model asks for one and the text (a chat template's, say) does not start with it.
    pub fn encode_prompt(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        let mut ids = self.encode(text)?;
        if let Some(bos) = self.bos
            && ids.first() != Some(&bos)
        {
            ids.insert(0, bos);
        }
        Ok(ids)
    }

    /// Number of token ids, added tokens included.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// Token ids of `text`; special tokens written in the text (`<|im_start|>`) become their ids.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        let enc = self.inner.encode(text, false).map_err(|e| ModelError::Tokenizer(format!("encode: {e}")))?;
        Ok(enc.get_ids().to_vec())
    }

    /// The bytes token `id` stands for (empty past the vocabulary).
    pub fn token_bytes(&self, id: u32) -> &[u8] {
        self.bytes.get(id as usize).map_or(&[], Vec::as_slice)
    }

    /// Whether `id` is an added (special) token such as `<|im_end|>`.
    pub fn is_special(&self, id: u32) -> bool {
        self.special.get(id as usize).copied().unwrap_or(false)
    }

    /// The canonical ids of `bytes`, text that continues a sequence (no dummy prefix before
    /// it), when they are UTF-8 and tokenize to ordinary tokens whose bytes spell them exactly;
    /// `None` otherwise (a special-token literal in the text, say).
    pub fn encode_exact(&self, bytes: &[u8]) -> Result<Option<Vec<u32>>, ModelError> {
        let Ok(text) = std::str::from_utf8(bytes) else { return Ok(None) };
        let tokenizer = self.continuation.as_ref().unwrap_or(&self.inner);
        let ids = tokenizer.encode(text, false).map_err(|e| ModelError::Tokenizer(format!("encode: {e}")))?.get_ids().to_vec();
        let spelled: Vec<u8> = ids.iter().flat_map(|&id| self.token_bytes(id).iter().copied()).collect();
        Ok((spelled == bytes && !ids.iter().any(|&id| self.is_special(id))).then_some(ids))
    }

    /// The prompt for `messages` in the model's chat format, ending where the assistant's
    /// reply begins; `kwargs` are further template variables (see [`ChatTemplate::render`]).
    pub fn chat_prompt(&self, messages: &[Json], kwargs: &serde_json::Map<String, Json>) -> Result<String, ModelError> {
        self.chat.render(messages, kwargs)
    }

    /// The model's chat template.
    pub fn chat_template(&self) -> &ChatTemplate {
        &self.chat
    }

    /// The text of `ids`, special tokens included.
    pub fn decode(&self, ids: &[u32]) -> Result<String, ModelError> {
        self.inner.decode(ids, false).map_err(|e| ModelError::Tokenizer(format!("decode: {e}")))
    }
}

