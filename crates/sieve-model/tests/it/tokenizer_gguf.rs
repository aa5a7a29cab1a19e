//! Tokenizers rebuilt from GGUF metadata against the families' own: the Llama 3, Qwen 3 and
//! Llama 2 `tokenizer.json`s written into GGUF metadata as llama.cpp's converter writes them
//! (tokens by id, added tokens as control or user-defined, byte-level BPE's merges and
//! pre-tokenizer name, SentencePiece's scores and byte tokens), read back by
//! [`Tokenizer::from_gguf`] and held to Hugging Face `tokenizers` on the original file, on
//! hand-picked texts and on random mixes of scripts, digits, whitespace and special tokens.

use serde_json::Value as Json;
use sieve_core::rng::Rng;
use sieve_model::{Gguf, Tokenizer};

use crate::common;
use crate::gguf::{Writer, string};

const NORMAL: i32 = 1;
const UNKNOWN: i32 = 2;
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;
const BYTE: i32 = 6;

fn array(ty: u32, items: impl ExactSizeIterator<Item = Vec<u8>>) -> Vec<u8> {
    let mut out = ty.to_le_bytes().to_vec();
    out.extend((items.len() as u64).to_le_bytes());
    items.for_each(|item| out.extend(item));
    out
}

/// The GGUF metadata llama.cpp's converter writes for a `tokenizer.json`: byte-level BPE with
/// pre-tokenizer `pre`, or SentencePiece (`pre` = `None`), whose scores here rank each piece
/// by the first merge that makes it (as a SentencePiece BPE model ranks its pieces).
fn gguf_from_tokenizer_json(json: &Json, pre: Option<&str>, eos: u32) -> Writer {
    let model = &json["model"];
    let mut tokens: Vec<(String, i32)> = Vec::new();
    let mut put = |id: usize, token: &str, ty: i32| {
        if tokens.len() <= id {
            tokens.resize(id + 1, (String::new(), NORMAL));
        }
        tokens[id] = (token.to_string(), ty);
    };
    for (token, id) in model["vocab"].as_object().unwrap() {
        put(id.as_u64().unwrap() as usize, token, NORMAL);
    }
    let unk = json["model"]["unk_token"].as_str();
    for added in json["added_tokens"].as_array().unwrap() {
        let ty = match added["special"].as_bool().unwrap() {
            true if added["content"].as_str() == unk => UNKNOWN,
            true => CONTROL,
            false => USER_DEFINED,
        };
        put(added["id"].as_u64().unwrap() as usize, added["content"].as_str().unwrap(), ty);
    }
    let merges: Vec<String> = model["merges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| match m {
            Json::String(s) => s.clone(),
            pair => format!("{} {}", pair[0].as_str().unwrap(), pair[1].as_str().unwrap()),
        })
        .collect();
    let mut meta = vec![("general.architecture".into(), 8, string("llama"))];
    match pre {
        Some(pre) => {
            meta.push(("tokenizer.ggml.model".into(), 8, string("gpt2")));
            meta.push(("tokenizer.ggml.pre".into(), 8, string(pre)));
            meta.push(("tokenizer.ggml.merges".into(), 9, array(8, merges.iter().map(|m| string(m)))));
        }
        None => {
            let mut score = vec![0.0f32; tokens.len()];
            let ids: std::collections::HashMap<&str, usize> = tokens.iter().enumerate().map(|(i, (t, _))| (t.as_str(), i)).collect();
            for (rank, merge) in merges.iter().enumerate().rev() {
                score[ids[merge.replace(' ', "").as_str()]] = -(rank as f32);
            }
            for (token, ty) in &mut tokens {
                if *ty == NORMAL && token.len() == 6 && token.starts_with("<0x") {
                    *ty = BYTE;
                }
            }
            meta.push(("tokenizer.ggml.model".into(), 8, string("llama")));
            meta.push(("tokenizer.ggml.scores".into(), 9, array(6, score.iter().map(|s| s.to_le_bytes().to_vec()))));
        }
    }
    meta.push(("tokenizer.ggml.tokens".into(), 9, array(8, tokens.iter().map(|(t, _)| string(t)))));
    meta.push(("tokenizer.ggml.token_type".into(), 9, array(5, tokens.iter().map(|(_, ty)| ty.to_le_bytes().to_vec()))));
    meta.push(("tokenizer.ggml.eos_token_id".into(), 4, eos.to_le_bytes().to_vec()));
    Writer { meta, tensors: vec![] }
}

const TEXTS: &[&str] = &[
    "Hello, world! I'll say it's DON'T and we've they'd.",
    "1234567 + 89 = 1234656; pi is 3.14159265358979",
    "naïve café — 日本語のテキスト, 한국어, Ελληνικά, русский 🎉🚀",
    "  fn main() {\n\tprintln!(\"hi\");\n}\n\n\n   trailing   ",
    "{\"name\": \"Ada\", \"age\": 36, \"tags\": [\"x\", \"y\"]}\r\n",
    "<|im_start|>user\nhi there<|im_end|>\n<|im_start|>assistant\n<think>\nok\n</think>\n",
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>",
    "e\u{301}cole, A\u{30a}ngstro\u{308}m, \u{212b}, ﬁne, Ⅻ, ①②",
    "a\u{a0}b\u{2003}c\u{3000}d \u{200b} e",
];

/// A random text over a pool of letters, digits, marks, emoji, whitespace and special tokens.
fn random_text(rng: &mut Rng) -> String {
    const POOL: &[&str] = &[
        "a", "Z", "é", "e\u{301}", "ß", "日", "本", "ー", "😀", "🇫🇷", "0", "7", "42", "٣", " ", "  ", "\n", "\r\n", "\t", "'s", "'LL",
        "'", "\"", "{", "}", ":", ",", ".", "-", "_", "<", ">", "|", "<|im_end|>", "<|eot_id|>", "<think>", "\u{a0}", "Ω", "ǅ",
    ];
    let len = rng.below(24);
    (0..len).map(|_| POOL[rng.below(POOL.len())]).collect()
}

fn check(file: &str, pre: Option<&str>, eos: u32) {
    let path = common::package_dir().join("../../assets/tokenizers").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}\nrun `bash scripts/fetch-assets.sh`", path.display()));
    let json: Json = serde_json::from_str(&text).unwrap();
    let reference: tokenizers::Tokenizer = text.parse().unwrap();
    let bytes = gguf_from_tokenizer_json(&json, pre, eos).bytes();
    let ours = Tokenizer::from_gguf(&Gguf::parse(&bytes).unwrap()).unwrap();
    assert_eq!(ours.eos(), eos);
    // SentencePiece's merges come back from the scores as the original lists them.
    let rebuilt: Json = serde_json::from_str(ours.json()).unwrap();
    let pair = |m: &Json| match m {
        Json::String(s) => s.clone(),
        pair => format!("{} {}", pair[0].as_str().unwrap(), pair[1].as_str().unwrap()),
    };
    let merges = |doc: &Json| doc["model"]["merges"].as_array().unwrap().iter().map(pair).collect::<Vec<_>>();
    assert_eq!(merges(&rebuilt), merges(&json), "{file}: merges");
    let mut rng = Rng(0x70c);
    let random: Vec<String> = (0..400).map(|_| random_text(&mut rng)).collect();
    for text in TEXTS.iter().copied().chain(random.iter().map(String::as_str)) {
        let want = reference.encode(text, false).unwrap().get_ids().to_vec();
        let got = ours.encode(text).unwrap();
        assert_eq!(got, want, "{file}: {text:?}");
        assert_eq!(ours.decode(&got).unwrap(), reference.decode(&want, false).unwrap(), "{file}: decoding {text:?}");
        // Text that continues a sequence (jump-forward's) gets no dummy prefix: after a space,
        // SentencePiece's text splits as the whole text does with its prefix.
        if text.is_empty() {
            continue;
        }
        let continued = if pre.is_none() { format!(" {text}") } else { text.to_string() };
        // Exactly: unless a special token or a normalizer (NFC) changes the text.
        let special = want.iter().any(|&id| ours.is_special(id));
        let spelled: Vec<u8> = want.iter().flat_map(|&id| ours.token_bytes(id).to_vec()).collect();
        let exact = !special && spelled == continued.as_bytes();
        assert_eq!(ours.encode_exact(continued.as_bytes()).unwrap(), exact.then_some(want), "{file}: continuing with {continued:?}");
    }
}

#[test]
fn llama3_tokenizer_from_gguf_matches_its_tokenizer_json() {
    check("llama3.json", Some("llama-bpe"), 128009);
}

#[test]
fn qwen3_tokenizer_from_gguf_matches_its_tokenizer_json() {
    check("qwen3.json", Some("qwen2"), 151645);
}

#[test]
fn llama2_sentencepiece_tokenizer_from_gguf_matches_its_tokenizer_json() {
    check("llama2.json", None, 2);
}

#[test]
fn an_unknown_pre_tokenizer_is_an_error() {
    let json: Json = serde_json::from_str(r#"{"model": {"vocab": {"a": 0}, "merges": []}, "added_tokens": []}"#).unwrap();
    let bytes = gguf_from_tokenizer_json(&json, Some("tekken"), 0).bytes();
    let err = Tokenizer::from_gguf(&Gguf::parse(&bytes).unwrap()).unwrap_err();
    assert!(err.to_string().contains("`tekken` is not supported"), "{err}");
}

/// Llama 3's file asks for a beginning-of-sequence token and ends turns with `<|eot_id|>`.
#[test]
fn prompts_start_with_bos_where_asked_and_turns_end_at_eot() {
    let path = common::package_dir().join("../../assets/tokenizers/llama3.json");
    let json: Json = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut writer = gguf_from_tokenizer_json(&json, Some("llama-bpe"), 128001);
    writer.meta.push(("tokenizer.ggml.add_bos_token".into(), 7, vec![1]));
    writer.meta.push(("tokenizer.ggml.bos_token_id".into(), 4, 128000u32.to_le_bytes().to_vec()));
    writer.meta.push(("tokenizer.ggml.eot_token_id".into(), 4, 128009u32.to_le_bytes().to_vec()));
    let tokenizer = Tokenizer::from_gguf(&Gguf::parse(&writer.bytes()).unwrap()).unwrap();
    assert_eq!(tokenizer.end_ids(), &[128001, 128009]);
    assert!(tokenizer.is_end(128009) && !tokenizer.is_end(128000));
    let plain = tokenizer.encode("Hello").unwrap();
    assert_eq!(tokenizer.encode_prompt("Hello").unwrap(), [&[128000], &plain[..]].concat());
    // A chat template's text that starts with the token keeps one.
    let templated = tokenizer.encode_prompt("<|begin_of_text|>Hello").unwrap();
    assert_eq!(templated, [&[128000], &plain[..]].concat());
    // Without the key, nothing is added.
    let without = Tokenizer::from_gguf(&Gguf::parse(&gguf_from_tokenizer_json(&json, Some("llama-bpe"), 128001).bytes()).unwrap()).unwrap();
    assert_eq!(without.encode_prompt("Hello").unwrap(), plain);
    assert_eq!(without.end_ids(), &[128001]);
}
