//! A model's file read into its place: whole ([`Llama::from_gguf`]), or as it arrives
//! ([`ModelLoader`]), a part at a time (the token embedding, the output head, the final norm,
//! each layer), each placed as soon as its tensors are whole.

use crate::config::CONFIG_TENSORS;
use crate::cpu::Layer;
use crate::cpu::matrix::Matrix;
use crate::cpu::parts::Shard;
use crate::error::ModelError;
use crate::gguf::{Gguf, GgufStream};
use crate::model::{Assembler, Llama, LlamaConfig, Placement};

/// A part of a model placed whole, and the tensors it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// `token_embd.weight`
    Embed,
    /// `output.weight`, where the file has it (the head is the embedding elsewhere).
    Head,
    /// `output_norm.weight`
    Norm,
    /// `blk.{i}.*`
    Layer(usize),
}

impl Part {
    /// The parts of `gguf`'s model of `layers` layers, in the order files hold them.
    pub(crate) fn all(gguf: &Gguf<'_>, layers: usize) -> Vec<Part> {
        let mut parts = vec![Part::Embed];
        parts.extend((0..layers).map(Part::Layer));
        parts.push(Part::Norm);
        if gguf.tensors.contains_key("output.weight") {
            parts.push(Part::Head);
        }
        parts
    }

    /// Whether tensor `name` belongs to this part.
    fn holds(self, name: &str) -> bool {
        match self {
            Part::Embed => name == "token_embd.weight",
            Part::Head => name == "output.weight",
            Part::Norm => name == "output_norm.weight",
            Part::Layer(i) => layer_of(name) == Some(i),
        }
    }

    /// Whether every tensor of this part that the file lists has arrived.
    fn arrived(self, gguf: &Gguf<'_>) -> bool {
        gguf.tensors.keys().filter(|name| self.holds(name)).all(|name| gguf.has_bytes(name))
    }

    /// Reads this part from `gguf` and places it.
    pub(crate) fn place(self, gguf: &Gguf<'_>, assembler: &mut Assembler) -> Result<(), ModelError> {
        let c = assembler.config();
        let (vocab, d) = (c.vocab, c.hidden);
        match self {
            Part::Embed => assembler.embed(Matrix::from_gguf(gguf, "token_embd.weight", vocab, d)?),
            Part::Head => assembler.head(Matrix::from_gguf(gguf, "output.weight", vocab, d)?),
            Part::Norm => {
                assembler.norm(gguf.tensor_f32("output_norm.weight", &[d])?);
                Ok(())
            }
            Part::Layer(i) => {
                let layer = Layer::from_gguf(gguf, c, i)?;
                assembler.layer(i, layer)
            }
        }
    }
}

/// The layer a tensor name `blk.{i}.…` belongs to.
fn layer_of(name: &str) -> Option<usize> {
    let (index, _) = name.strip_prefix("blk.")?.split_once('.')?;
    index.parse().ok()
}

/// Whether a model reads tensor `name`: the stream keeps only these.
fn read_by_model(name: &str) -> bool {
    ["token_embd.weight", "output.weight", "output_norm.weight"].contains(&name) || CONFIG_TENSORS.contains(&name) || layer_of(name).is_some()
}

/// A model loaded as its GGUF file arrives (a download). The header is checked and the
/// configuration read as soon as they are whole, so a file of an unsupported architecture or
/// tensor type fails before any weight is placed; then each part is placed once its tensors
/// have arrived and its bytes are dropped, so the file is never held whole (on a GPU, the
/// device's copy of the weights is the only one). Any order of tensors in the file works; one
/// where a part's tensors are far apart holds more until it is whole.
pub struct ModelLoader {
    stream: GgufStream,
    max_seq: usize,
    /// Where the model goes, until the configuration is read.
    placement: Option<Placement>,
    /// On the CPU path, the part of every product's rows kept: `(part, parts)`.
    part: (usize, usize),
    assembler: Option<Assembler>,
    /// The parts not yet placed.
    parts: Vec<Part>,
}

impl ModelLoader {
    /// A loader of a model for a context of `max_seq` tokens (the model's maximum where that is
    /// smaller) onto `placement`, from a file of `file_len` bytes where that is known.
    pub fn new(placement: impl Into<Placement>, max_seq: usize, file_len: Option<usize>) -> Self {
        let stream = GgufStream::new(file_len, read_by_model);
        Self { stream, max_seq, placement: Some(placement.into()), part: (0, 1), assembler: None, parts: Vec::new() }
    }

    /// On the CPU path, keeps only part `part` of `parts` of every product's rows as they
    /// arrive (see [`crate::cpu::parts`]), so that each worker of a split model holds its part
    /// alone: part 0 makes the model of the worker that runs it ([`ModelLoader::finish`], then
    /// [`Llama::set_helpers`]), another a helper's shard ([`ModelLoader::finish_shard`]), which
    /// skips the token embedding unless it is the output head too. An error on another path or
    /// for a part past the last.
    pub fn keep_part(mut self, part: usize, parts: usize) -> Result<Self, ModelError> {
        if part >= parts || !matches!(self.placement, Some(Placement::Cpu { .. })) {
            return Err(ModelError::Input(format!("part {part} of {parts} of the rows: parts are for the CPU path, numbered from 0")));
        }
        self.part = (part, parts);
        Ok(self)
    }

    /// Reads the file's next bytes, placing every part they make whole.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), ModelError> {
        let whole = self.stream.push(chunk)?;
        self.place_arrived(whole)
    }

    /// Places every part whose tensors have arrived (`whole` became whole just now), reading the
    /// configuration first once it can be.
    fn place_arrived(&mut self, whole: usize) -> Result<(), ModelError> {
        if whole == 0 && self.assembler.is_some() {
            return Ok(());
        }
        let Some(gguf) = self.stream.gguf_mut() else {
            return Ok(());
        };
        let assembler = match &mut self.assembler {
            Some(assembler) => assembler,
            None => {
                // The configuration reads the rope's factors: files hold them first.
                if CONFIG_TENSORS.iter().any(|name| gguf.tensors.contains_key(*name) && !gguf.has_bytes(name)) {
                    return Ok(());
                }
                let config = LlamaConfig::from_gguf(gguf, self.max_seq)?;
                for name in CONFIG_TENSORS {
                    gguf.forget(name);
                }
                self.parts = Part::all(gguf, config.layers);
                let Some(placement) = self.placement.take() else {
                    return Err(ModelError::Input("this load failed already".into()));
                };
                let mut assembler = Assembler::new(config, placement)?;
                let (part, parts) = self.part;
                if parts > 1 {
                    assembler.keep_part(part, parts)?;
                }
                // A helper's part reads the embedding only as its head.
                if part > 0 && self.parts.contains(&Part::Head) {
                    self.parts.retain(|p| *p != Part::Embed);
                    self.stream.skip("token_embd.weight");
                }
                self.assembler.insert(assembler)
            }
        };
        let Some(gguf) = self.stream.gguf_mut() else {
            return Ok(());
        };
        let mut i = 0;
        while i < self.parts.len() {
            let part = self.parts[i];
            if !part.arrived(gguf) {
                i += 1;
                continue;
            }
            part.place(gguf, assembler)?;
            let names: Vec<String> = gguf.tensors.keys().filter(|name| part.holds(name)).cloned().collect();
            for name in names {
                gguf.forget(&name);
            }
            self.parts.swap_remove(i);
        }
        Ok(())
    }

    /// The file's header (metadata and tensor table), once it has arrived.
    pub fn gguf(&self) -> Option<&Gguf<'static>> {
        self.stream.gguf()
    }

    /// Bytes pushed so far.
    pub fn bytes_read(&self) -> usize {
        self.stream.bytes_read()
    }

    /// Bytes of the file's tensors held until their part is whole (the rest were placed and
    /// dropped, or are not read).
    pub fn held_bytes(&self) -> usize {
        self.stream.held_bytes()
    }

    /// The fraction (0 to 1) of the model's layers placed so far.
    pub fn fraction(&self) -> f64 {
        self.assembler.as_ref().map_or(0.0, Assembler::fraction)
    }

    /// The model, once the whole file has been pushed; an error naming what did not arrive
    /// where it ended early.
    pub fn finish(self) -> Result<Llama, ModelError> {
        self.end()?.finish()
    }

    /// A helper's shard ([`ModelLoader::keep_part`], past part 0), once the whole file has been
    /// pushed; an error naming what did not arrive where it ended early.
    pub fn finish_shard(self) -> Result<Shard, ModelError> {
        self.end()?.finish_shard()
    }

    /// Ends the file and places what its last bytes made whole.
    fn end(mut self) -> Result<Assembler, ModelError> {
        let whole = self.stream.end()?;
        self.place_arrived(whole)?;
        self.assembler.ok_or_else(|| ModelError::Input("the model's configuration was never read".into()))
    }
}
