//! A small, validating GGUF reader.
//!
//! GGUF (version 2 and 3) is a header, a list of typed metadata key/values, a list of tensor
//! descriptors and an aligned data section. [`Gguf::parse`] reads the header from a byte slice and
//! checks every length, count, offset and size against the slice before using it; tensors are
//! dequantized on demand with [`Gguf::tensor_f32`]. [`GgufStream`] reads the same format as its
//! bytes arrive, keeping each tensor's bytes once they are whole. Nothing here panics on
//! malformed input.

use std::collections::BTreeMap;
use std::sync::Arc;

use half::f16;

use crate::error::ModelError;

const MAGIC: &[u8; 4] = b"GGUF";
/// Upper bounds that keep a hostile header from asking for unbounded work or memory.
const MAX_TENSORS: u64 = 1 << 16;
const MAX_METADATA: u64 = 1 << 16;
const MAX_DIMS: u32 = 4;
const MAX_NESTING: u32 = 4;
/// The most bytes a header (metadata and tensor table) may take in a stream: a tokenizer's
/// vocabulary and merges are a few MB.
const MAX_HEADER_BYTES: usize = 256 << 20;

/// A metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F32(f32),
    F64(f64),
    Bool(bool),
    String(String),
    Array(Vec<Value>),
}

impl Value {
    /// The value as an unsigned integer, when it is a non-negative integer of any width.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Self::U8(v) => Some(v.into()),
            Self::U16(v) => Some(v.into()),
            Self::U32(v) => Some(v.into()),
            Self::U64(v) => Some(v),
            Self::I8(v) => u64::try_from(v).ok(),
            Self::I16(v) => u64::try_from(v).ok(),
            Self::I32(v) => u64::try_from(v).ok(),
            Self::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The value as a float, when it is a float or an integer.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Self::F32(v) => Some(v.into()),
            Self::F64(v) => Some(v),
            _ => self.as_u64().map(|v| v as f64),
        }
    }
}

/// The element types this reader can dequantize (GGML type ids in parentheses), named as GGML
/// names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum TensorType {
    /// (id 0) little-endian f32.
    F32,
    /// (id 1) little-endian f16.
    F16,
    /// (id 2) blocks of 32: f16 scale `d`, 16 bytes of 4-bit `q`; `x = d * (q - 8)`.
    Q4_0,
    /// (id 3) blocks of 32: f16 scale `d`, f16 minimum `m`, 16 bytes of 4-bit `q`; `x = d * q + m`.
    Q4_1,
    /// (id 6) blocks of 32: f16 scale `d`, 32 fifth bits, 16 bytes of low nibbles;
    /// `x = d * (q - 16)` (llama.cpp's fallback for rows that are not whole K-quant blocks).
    Q5_0,
    /// (id 7) as Q5_0 with an f16 minimum `m` after `d`; `x = d * q + m`.
    Q5_1,
    /// (id 8) blocks of 32: f16 scale `d`, 32 signed bytes `q`; `x = d * q`.
    Q8_0,
    /// (id 12) super-blocks of 256: f16 `d` and `dmin`, eight 6-bit scales and minima packed in
    /// 12 bytes, 128 bytes of 4-bit `q`; sub-block `j` of 32: `x = d * sc_j * q - dmin * m_j`.
    Q4_K,
    /// (id 13) as Q4_K with a fifth bit of each `q` in 32 more bytes.
    Q5_K,
    /// (id 14) super-blocks of 256: 6-bit `q` (low nibbles in 128 bytes, high pairs in 64), 16
    /// signed 8-bit scales, f16 `d`; sub-block `j` of 16: `x = d * sc_j * (q - 32)`.
    Q6_K,
    /// (id 30) the upper half of an f32.
    BF16,
}

impl TensorType {
    /// Every type this reader dequantizes.
    pub const ALL: [Self; 11] = [
        Self::F32,
        Self::F16,
        Self::BF16,
        Self::Q4_0,
        Self::Q4_1,
        Self::Q5_0,
        Self::Q5_1,
        Self::Q8_0,
        Self::Q4_K,
        Self::Q5_K,
        Self::Q6_K,
    ];

    /// The type's GGML id, as a file names it.
    pub fn id(self) -> u32 {
        match self {
            Self::F32 => 0,
            Self::F16 => 1,
            Self::Q4_0 => 2,
            Self::Q4_1 => 3,
            Self::Q5_0 => 6,
            Self::Q5_1 => 7,
            Self::Q8_0 => 8,
            Self::Q4_K => 12,
            Self::Q5_K => 13,
            Self::Q6_K => 14,
            Self::BF16 => 30,
        }
    }

    fn from_id(id: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|ty| ty.id() == id)
    }

    /// Values of a row that share one scale and minimum in [`int8_blocks`]'s runs of 16, from
    /// the row's start: 32 where a block or sub-block of 32 has one scale, 16 for Q6_K; `None`
    /// for the float types.
    pub fn scale_run(self) -> Option<usize> {
        match self {
            Self::F32 | Self::F16 | Self::BF16 => None,
            Self::Q6_K => Some(16),
            Self::Q4_0 | Self::Q4_1 | Self::Q5_0 | Self::Q5_1 | Self::Q8_0 | Self::Q4_K | Self::Q5_K => Some(32),
        }
    }

    /// Bits the GPU holds each of [`int8_blocks`]'s values in: 4 for the 4-bit types, 6 for
    /// the 5- and 6-bit ones, 8 for Q8_0; `None` for the float types.
    pub fn value_bits(self) -> Option<u32> {
        match self {
            Self::F32 | Self::F16 | Self::BF16 => None,
            Self::Q4_0 | Self::Q4_1 | Self::Q4_K => Some(4),
            Self::Q5_0 | Self::Q5_1 | Self::Q5_K | Self::Q6_K => Some(6),
            Self::Q8_0 => Some(8),
        }
    }

    /// Whether [`int8_blocks`] gives this type's runs no minimum: values centred on zero, a
    /// scale only.
    pub fn centred(self) -> bool {
        matches!(self, Self::Q4_0 | Self::Q5_0 | Self::Q6_K | Self::Q8_0)
    }

    /// (elements per block, bytes per block).
    pub fn block(self) -> (usize, usize) {
        match self {
            Self::F32 => (1, 4),
            Self::F16 => (1, 2),
            Self::Q4_0 => (32, 18),
            Self::Q4_1 => (32, 20),
            Self::Q5_0 => (32, 22),
            Self::Q5_1 => (32, 24),
            Self::Q8_0 => (32, 34),
            Self::Q4_K => (256, 144),
            Self::Q5_K => (256, 176),
            Self::Q6_K => (256, 210),
            Self::BF16 => (1, 2),
        }
    }
}

/// One tensor descriptor.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    /// Row-major shape, outermost first (GGUF stores it innermost first; this is reversed).
    pub shape: Vec<usize>,
    pub ty: TensorType,
    /// Absolute byte range of the data in the file, checked to lie inside it.
    pub start: usize,
    pub len: usize,
}

/// A parsed GGUF file: its metadata, its tensor table, and its tensors' bytes (see [`Data`]).
#[derive(Debug)]
pub struct Gguf<'a> {
    data: Data<'a>,
    pub metadata: BTreeMap<String, Value>,
    pub tensors: BTreeMap<String, TensorInfo>,
}

/// Where a [`Gguf`]'s tensor bytes are.
#[derive(Debug)]
enum Data<'a> {
    /// The whole file, borrowed.
    File(&'a [u8]),
    /// The tensors of a stream that have arrived whole and are still wanted, by name (shared
    /// with the matrices made of them, so that forgetting them leaves a single copy).
    Arrived(BTreeMap<String, Arc<Vec<u8>>>),
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Set where reading went past the bytes of a part: more may make it whole.
    ran_out: bool,
}

impl<'a> Reader<'a> {
    fn err(&self, message: impl Into<String>) -> ModelError {
        ModelError::Gguf { offset: self.pos as u64, message: message.into() }
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8], ModelError> {
        let n = usize::try_from(n).map_err(|_| self.err("length does not fit in memory"))?;
        let Some(end) = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len()) else {
            self.ran_out = true;
            return Err(self.err(format!("{n} bytes wanted, file ends first")));
        };
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], ModelError> {
        let s = self.take(N as u64)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn u32(&mut self) -> Result<u32, ModelError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, ModelError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn string(&mut self) -> Result<String, ModelError> {
        let n = self.u64()?;
        let at = self.pos;
        let s = self.take(n)?;
        String::from_utf8(s.to_vec())
            .map_err(|_| ModelError::Gguf { offset: at as u64, message: "string is not UTF-8".into() })
    }

    fn remaining(&self) -> u64 {
        (self.bytes.len() - self.pos) as u64
    }

    fn value(&mut self, ty: u32, depth: u32) -> Result<Value, ModelError> {
        Ok(match ty {
            0 => Value::U8(u8::from_le_bytes(self.array()?)),
            1 => Value::I8(i8::from_le_bytes(self.array()?)),
            2 => Value::U16(u16::from_le_bytes(self.array()?)),
            3 => Value::I16(i16::from_le_bytes(self.array()?)),
            4 => Value::U32(self.u32()?),
            5 => Value::I32(i32::from_le_bytes(self.array()?)),
            6 => Value::F32(f32::from_le_bytes(self.array()?)),
            7 => match self.array::<1>()?[0] {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => return Err(self.err(format!("bool byte {b}"))),
            },
            8 => Value::String(self.string()?),
            9 => {
                if depth >= MAX_NESTING {
                    return Err(self.err("arrays nested too deep"));
                }
                let elem = self.u32()?;
                let count = self.u64()?;
                // Every element takes at least one byte, so a count past the remaining bytes is a
                // lie (in a part of the file, a sign that more must arrive).
                if count > self.remaining() {
                    self.ran_out = true;
                    return Err(self.err(format!("array of {count} elements overruns the file")));
                }
                let mut v = Vec::with_capacity(count as usize);
                for _ in 0..count {
                    v.push(self.value(elem, depth + 1)?);
                }
                Value::Array(v)
            }
            10 => Value::U64(self.u64()?),
            11 => Value::I64(i64::from_le_bytes(self.array()?)),
            12 => Value::F64(f64::from_le_bytes(self.array()?)),
            t => return Err(self.err(format!("unknown metadata value type {t}"))),
        })
    }
}

/// The metadata and tensor table of a GGUF file.
type Header = (BTreeMap<String, Value>, BTreeMap<String, TensorInfo>);

/// Reads the header, metadata and tensor table from the start of a GGUF file of `file_len`
/// bytes (unknown: `None`), of which `bytes` have arrived; each tensor's range is checked to
/// lie inside the file where its length is known. `None` where the header goes past `bytes`
/// and they are not the whole file.
fn parse_header(bytes: &[u8], file_len: Option<usize>) -> Result<Option<Header>, ModelError> {
    let mut r = Reader { bytes, pos: 0, ran_out: false };
    match read_header(&mut r, file_len) {
        Err(_) if r.ran_out && file_len != Some(bytes.len()) => Ok(None),
        read => read.map(Some),
    }
}

fn read_header(r: &mut Reader<'_>, file_len: Option<usize>) -> Result<Header, ModelError> {
    if r.take(4)? != MAGIC {
        return Err(ModelError::Gguf { offset: 0, message: "not a GGUF file (bad magic)".into() });
    }
    let version = r.u32()?;
    if !(2..=3).contains(&version) {
        return Err(r.err(format!("unsupported GGUF version {version}")));
    }
    let n_tensors = r.u64()?;
    let n_metadata = r.u64()?;
    if n_tensors > MAX_TENSORS || n_metadata > MAX_METADATA {
        return Err(r.err(format!("{n_tensors} tensors / {n_metadata} metadata entries is too many")));
    }
    let mut metadata = BTreeMap::new();
    for _ in 0..n_metadata {
        let key = r.string()?;
        let ty = r.u32()?;
        let value = r.value(ty, 0)?;
        if metadata.insert(key.clone(), value).is_some() {
            return Err(r.err(format!("duplicate metadata key `{key}`")));
        }
    }
    let mut raw = Vec::with_capacity(n_tensors as usize);
    for _ in 0..n_tensors {
        let name = r.string()?;
        let n_dims = r.u32()?;
        if n_dims == 0 || n_dims > MAX_DIMS {
            return Err(r.err(format!("tensor `{name}` has {n_dims} dimensions")));
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            dims.push(r.u64()?);
        }
        let ty_id = r.u32()?;
        let offset = r.u64()?;
        raw.push((name, dims, ty_id, offset, r.pos));
    }
    let alignment = match metadata.get("general.alignment") {
        None => 32,
        Some(v) => v.as_u64().filter(|a| a.is_power_of_two()).ok_or_else(|| ModelError::Metadata {
            key: "general.alignment".into(),
            message: "must be a power of two".into(),
        })?,
    };
    let data_start = (r.pos as u64).div_ceil(alignment) * alignment;
    let mut tensors = BTreeMap::new();
    for (name, dims, ty_id, offset, pos) in raw {
        let terr = |message: String| ModelError::Tensor { name: name.clone(), message };
        let ty = TensorType::from_id(ty_id)
            .ok_or_else(|| terr(format!("GGML type {ty_id} is not supported (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K are)")))?;
        let n = dims
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| terr("element count overflows".into()))?;
        let (block_elems, block_bytes) = ty.block();
        let (block_elems, block_bytes) = (block_elems as u64, block_bytes as u64);
        if dims[0] % block_elems != 0 {
            return Err(terr(format!("row length {} is not a multiple of the block size {block_elems}", dims[0])));
        }
        let len = (n / block_elems).checked_mul(block_bytes);
        let start = data_start.checked_add(offset);
        let end = start.zip(len).and_then(|(s, l)| s.checked_add(l));
        let (Some(start), Some(len), Some(end)) = (start, len, end) else {
            return Err(ModelError::Gguf { offset: pos as u64, message: format!("tensor `{name}` range overflows") });
        };
        let past_end = end > file_len.map_or(usize::MAX as u64, |l| l as u64);
        if past_end || offset % alignment != 0 {
            let size = file_len.map_or("unknown".into(), |l| format!("{l} bytes"));
            return Err(ModelError::Gguf {
                offset: pos as u64,
                message: format!("tensor `{name}` data [{start}, {end}) is misaligned or past the end ({size})"),
            });
        }
        let shape = dims.iter().rev().map(|&d| d as usize).collect();
        let info = TensorInfo { name: name.clone(), shape, ty, start: start as usize, len: len as usize };
        if tensors.insert(name.clone(), info).is_some() {
            return Err(terr("duplicate tensor name".into()));
        }
    }
    Ok((metadata, tensors))
}

impl<'a> Gguf<'a> {
    /// Parses the header, metadata and tensor table of a GGUF file, validating every tensor's
    /// byte range against `bytes`.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, ModelError> {
        // A whole file's header is read or refused, never left waiting for more.
        let (metadata, tensors) = parse_header(bytes, Some(bytes.len()))?
            .ok_or_else(|| ModelError::Gguf { offset: bytes.len() as u64, message: "file ends first".into() })?;
        Ok(Self { data: Data::File(bytes), metadata, tensors })
    }

    /// A metadata value, or an error naming the missing key.
    pub fn get(&self, key: &str) -> Result<&Value, ModelError> {
        self.metadata
            .get(key)
            .ok_or_else(|| ModelError::Metadata { key: key.into(), message: "missing".into() })
    }

    /// An integer metadata value.
    pub fn get_u64(&self, key: &str) -> Result<u64, ModelError> {
        self.get(key)?
            .as_u64()
            .ok_or_else(|| ModelError::Metadata { key: key.into(), message: "not a non-negative integer".into() })
    }

    /// A float metadata value.
    pub fn get_f64(&self, key: &str) -> Result<f64, ModelError> {
        self.get(key)?
            .as_f64()
            .ok_or_else(|| ModelError::Metadata { key: key.into(), message: "not a number".into() })
    }

    /// A string metadata value.
    pub fn get_str(&self, key: &str) -> Result<&str, ModelError> {
        match self.get(key)? {
            Value::String(s) => Ok(s),
            _ => Err(ModelError::Metadata { key: key.into(), message: "not a string".into() }),
        }
    }

    /// An array metadata value.
    pub fn get_array(&self, key: &str) -> Result<&[Value], ModelError> {
        match self.get(key)? {
            Value::Array(v) => Ok(v),
            _ => Err(ModelError::Metadata { key: key.into(), message: "not an array".into() }),
        }
    }

    /// A tensor's descriptor, checked to have `shape` (outermost first).
    pub fn tensor(&self, name: &str, shape: &[usize]) -> Result<&TensorInfo, ModelError> {
        let info = self
            .tensors
            .get(name)
            .ok_or_else(|| ModelError::Tensor { name: name.into(), message: "missing".into() })?;
        if info.shape != shape {
            return Err(ModelError::Tensor {
                name: name.into(),
                message: format!("shape {:?}, expected {shape:?}", info.shape),
            });
        }
        Ok(info)
    }

    /// A tensor dequantized to f32 in row-major order, checked to have `shape`.
    pub fn tensor_f32(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let (ty, bytes) = self.tensor_bytes(name, shape)?;
        Ok(dequantize(ty, bytes))
    }

    /// Drops the bytes of tensor `name` where they were kept from a stream ([`GgufStream`]).
    pub fn forget(&mut self, name: &str) {
        if let Data::Arrived(arrived) = &mut self.data {
            arrived.remove(name);
        }
    }

    /// The bytes of tensor `name` where they arrived from a stream, shared rather than copied.
    pub(crate) fn arrived_bytes(&self, name: &str) -> Option<Arc<Vec<u8>>> {
        match &self.data {
            Data::File(_) => None,
            Data::Arrived(arrived) => arrived.get(name).cloned(),
        }
    }

    /// Whether the bytes of tensor `name` can be read: always in a whole file, once they have
    /// arrived (and until forgotten) in a stream.
    pub fn has_bytes(&self, name: &str) -> bool {
        match &self.data {
            Data::File(_) => self.tensors.contains_key(name),
            Data::Arrived(arrived) => arrived.contains_key(name),
        }
    }

    /// A tensor's type and encoded bytes (row-major, rows of whole blocks), checked to have
    /// `shape`.
    pub fn tensor_bytes(&self, name: &str, shape: &[usize]) -> Result<(TensorType, &[u8]), ModelError> {
        let info = self.tensor(name, shape)?;
        let bytes = match &self.data {
            Data::File(bytes) => &bytes[info.start..info.start + info.len],
            Data::Arrived(arrived) => arrived
                .get(name)
                .map(|bytes| bytes.as_slice())
                .ok_or_else(|| ModelError::Tensor { name: name.into(), message: "its bytes have not arrived".into() })?,
        };
        Ok((info.ty, bytes))
    }
}

/// A GGUF file read as its bytes arrive, in order (a download): the header once it is whole,
/// then each wanted tensor's bytes once they are, kept (in [`GgufStream::gguf`]) until
/// [`Gguf::forget`] drops them. What it holds is the header and the tensors that have arrived
/// and are not yet forgotten, never the whole file.
pub struct GgufStream {
    /// The file's length, where known (a download's `Content-Length`).
    file_len: Option<usize>,
    /// Which tensors to keep, by name; the others' bytes pass by.
    wanted: fn(&str) -> bool,
    /// The bytes so far, while the header is not yet whole.
    head: Vec<u8>,
    /// The length `head` reaches before the header is read again: doubling it keeps the rereads
    /// linear in the header's size.
    reread_at: usize,
    gguf: Option<Gguf<'static>>,
    /// Bytes of the file seen so far.
    offset: usize,
    /// Wanted tensors not yet begun, `(start, len, name)`, the last in the file first.
    waiting: Vec<(usize, usize, String)>,
    /// Wanted tensors begun: `(len, name, bytes so far)`.
    filling: Vec<(usize, String, Vec<u8>)>,
}

impl GgufStream {
    /// A stream of a file of `file_len` bytes (unknown: `None`), keeping the tensors `wanted`
    /// names.
    pub fn new(file_len: Option<usize>, wanted: fn(&str) -> bool) -> Self {
        let (head, gguf, waiting, filling) = (Vec::new(), None, Vec::new(), Vec::new());
        Self { file_len, wanted, head, reread_at: 1 << 10, gguf, offset: 0, waiting, filling }
    }

    /// Reads `chunk`, the file's next bytes. Returns how many wanted tensors became whole; an
    /// error where the header is malformed (as soon as the bytes show it) or too large.
    pub fn push(&mut self, chunk: &[u8]) -> Result<usize, ModelError> {
        if self.gguf.is_some() {
            return self.feed(chunk);
        }
        self.head.extend_from_slice(chunk);
        if self.head.len() < self.reread_at && self.file_len.is_none_or(|len| self.head.len() < len) {
            return Ok(0);
        }
        let Some((metadata, tensors)) = parse_header(&self.head, self.file_len)? else {
            if self.head.len() > MAX_HEADER_BYTES {
                return Err(ModelError::Gguf { offset: self.head.len() as u64, message: format!("the header is larger than {MAX_HEADER_BYTES} bytes") });
            }
            self.reread_at = 2 * self.head.len();
            return Ok(0);
        };
        let mut waiting: Vec<_> = tensors.values().filter(|t| (self.wanted)(&t.name)).map(|t| (t.start, t.len, t.name.clone())).collect();
        waiting.sort_unstable_by(|a, b| b.cmp(a));
        self.waiting = waiting;
        self.gguf = Some(Gguf { data: Data::Arrived(BTreeMap::new()), metadata, tensors });
        let head = std::mem::take(&mut self.head);
        self.feed(&head)
    }

    /// Reads the bytes at `offset` on, after the header.
    fn feed(&mut self, chunk: &[u8]) -> Result<usize, ModelError> {
        let start = self.offset;
        let end = start.checked_add(chunk.len()).ok_or_else(|| ModelError::Gguf { offset: start as u64, message: "the file is larger than this machine addresses".into() })?;
        self.offset = end;
        // A tensor begins in this chunk (an empty one where it starts within or right after it).
        while let Some((at, len, _)) = self.waiting.last()
            && at + (*len).min(1) <= end
        {
            let (_, len, name) = self.waiting.pop().expect("the last waiting tensor");
            let mut bytes = Vec::new();
            bytes.try_reserve_exact(len).map_err(|_| ModelError::Tensor { name: name.clone(), message: format!("{len} bytes do not fit in memory") })?;
            self.filling.push((len, name, bytes));
        }
        let Some(Gguf { data: Data::Arrived(arrived), tensors, .. }) = &mut self.gguf else {
            return Ok(0);
        };
        let mut whole = 0;
        self.filling.retain_mut(|(len, name, bytes)| {
            // Tensors begin at or after `start`, as each waited for the chunk it begins in.
            let from = tensors[name.as_str()].start + bytes.len();
            let to = end.min(from + (*len - bytes.len()));
            if from < to {
                bytes.extend_from_slice(&chunk[from - start..to - start]);
            }
            if bytes.len() < *len {
                return true;
            }
            arrived.insert(std::mem::take(name), Arc::new(std::mem::take(bytes)));
            whole += 1;
            false
        });
        Ok(whole)
    }

    /// Stops keeping tensor `name`: what arrived of it is dropped and the rest passes by.
    pub fn skip(&mut self, name: &str) {
        self.waiting.retain(|(_, _, n)| n != name);
        self.filling.retain(|(_, n, _)| n != name);
        if let Some(gguf) = &mut self.gguf {
            gguf.forget(name);
        }
    }

    /// The file as read so far: its header, and the wanted tensors that are whole and not
    /// forgotten; `None` until the header has arrived.
    pub fn gguf(&self) -> Option<&Gguf<'static>> {
        self.gguf.as_ref()
    }

    /// [`GgufStream::gguf`], to forget tensors.
    pub fn gguf_mut(&mut self) -> Option<&mut Gguf<'static>> {
        self.gguf.as_mut()
    }

    /// Bytes read so far.
    pub fn bytes_read(&self) -> usize {
        self.offset.max(self.head.len())
    }

    /// Bytes of tensors held: those begun, and those whole and not forgotten.
    pub fn held_bytes(&self) -> usize {
        let arrived = match &self.gguf {
            Some(Gguf { data: Data::Arrived(arrived), .. }) => arrived.values().map(|bytes| bytes.len()).sum(),
            _ => 0,
        };
        arrived + self.filling.iter().map(|(_, _, bytes)| bytes.len()).sum::<usize>()
    }

    /// Ends the file: a header not yet read is read now (a short file's error is the one its
    /// bytes show), and it is an error unless the header and every wanted tensor have arrived.
    /// Returns how many wanted tensors became whole.
    pub fn end(&mut self) -> Result<usize, ModelError> {
        let offset = self.bytes_read() as u64;
        let mut whole = 0;
        if self.gguf.is_none() {
            if parse_header(&self.head, None)?.is_none() {
                return Err(ModelError::Gguf { offset, message: "the file ended inside its header".into() });
            }
            self.reread_at = 0;
            whole = self.push(&[])?;
        }
        match self.filling.first().map(|(_, name, _)| name).or(self.waiting.last().map(|(_, _, name)| name)) {
            Some(name) => Err(ModelError::Gguf { offset, message: format!("the file ended before tensor `{name}` was whole") }),
            None => Ok(whole),
        }
    }
}

/// Dequantizes whole blocks of `ty` to f32. `data.len()` must be a multiple of the block size
/// (trailing bytes of a partial block are ignored).
pub fn dequantize(ty: TensorType, data: &[u8]) -> Vec<f32> {
    let (elems, bytes) = ty.block();
    let mut out = vec![0.0; data.len() / bytes * elems];
    dequantize_into(ty, data, &mut out);
    out
}

/// An f16's value as f32, exactly as `half` converts it, but cheaper for finite values
/// (WebAssembly has no conversion instruction, and `half`'s branches cost more than a block's
/// products): the bits move into f32's places with the exponent's bias moved from 15 to 127. A
/// subnormal (as a block's scale often is: Q6_K's for weights under about 0.25) is read as the
/// normal number 2^-14 larger and 2^-14 taken off, so that no operand is subnormal: a
/// subnormal operand costs an x86 processor a microcode assist of a hundred cycles or more.
#[inline(always)]
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    if h & 0x7c00 == 0x7c00 {
        return f16::from_bits(h).to_f32(); // infinities and NaNs
    }
    let h = u32::from(h);
    let bits = ((h & 0x7fff) << 13) + ((127 - 15) << 23);
    let magnitude = match h & 0x7c00 {
        0 => f32::from_bits(bits + (1 << 23)) - f32::from_bits(113 << 23),
        _ => f32::from_bits(bits),
    };
    f32::from_bits(magnitude.to_bits() | (h & 0x8000) << 16)
}

/// The f16 at `at` in `bytes`, as f32.
#[inline(always)]
pub(crate) fn f16_at(bytes: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([bytes[at], bytes[at + 1]]))
}

/// [`dequantize`] into `out`, which takes as many values as `data` holds whole blocks of.
pub fn dequantize_into(ty: TensorType, data: &[u8], out: &mut [f32]) {
    match ty {
        TensorType::F32 => {
            for (o, c) in out.iter_mut().zip(data.chunks_exact(4)) {
                *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
        }
        TensorType::F16 => {
            for (o, c) in out.iter_mut().zip(data.chunks_exact(2)) {
                *o = f16_at(c, 0);
            }
        }
        TensorType::Q4_1 => {
            for (o, block) in out.chunks_exact_mut(32).zip(data.chunks_exact(20)) {
                let (d, m) = (f16_at(block, 0), f16_at(block, 2));
                // Low nibbles hold elements 0..16, high nibbles 16..32.
                for (i, &q) in block[4..20].iter().enumerate() {
                    o[i] = d * f32::from(q & 0x0f) + m;
                    o[i + 16] = d * f32::from(q >> 4) + m;
                }
            }
        }
        TensorType::Q8_0 => {
            for (o, block) in out.chunks_exact_mut(32).zip(data.chunks_exact(34)) {
                let d = f16_at(block, 0);
                for (o, &q) in o.iter_mut().zip(&block[2..34]) {
                    *o = d * f32::from(q as i8);
                }
            }
        }
        TensorType::BF16 => {
            for (o, c) in out.iter_mut().zip(data.chunks_exact(2)) {
                *o = f32::from_bits(u32::from(u16::from_le_bytes([c[0], c[1]])) << 16);
            }
        }
        _ => {
            let mut at = 0;
            int8_blocks(ty, data, |scale, min, q| {
                for (o, &q) in out[at..at + 16].iter_mut().zip(q) {
                    *o = scale * f32::from(q) + min;
                }
                at += 16;
            });
        }
    }
}

/// Whole blocks of a quantized type as runs of 16 values `scale * q + min` with `q` an `i8`,
/// in order; `emit` is called with each run's scale, minimum and values. This is every block
/// type's formula with the arithmetic of ggml's (Q4_0's `d * (q - 8)`: `q - 8` is the `i8`;
/// Q4_K's `d * sc * q - dmin * m`: the scale `d * sc` and the minimum `-(dmin * m)`). Float
/// types emit nothing and return false.
pub fn int8_blocks(ty: TensorType, data: &[u8], mut emit: impl FnMut(f32, f32, &[i8; 16])) -> bool {
    let (_, size) = ty.block();
    let mut q = [0i8; 32];
    // A block of 32 with one scale and minimum: its two runs.
    let mut emit32 = |scale: f32, min: f32, q: &[i8; 32]| {
        let (first, second) = q.split_at(16);
        emit(scale, min, first.try_into().unwrap());
        emit(scale, min, second.try_into().unwrap());
    };
    match ty {
        TensorType::F32 | TensorType::F16 | TensorType::BF16 => return false,
        TensorType::Q8_0 => {
            for block in data.chunks_exact(size) {
                q.iter_mut().zip(&block[2..34]).for_each(|(q, &b)| *q = b as i8);
                emit32(f16_at(block, 0), 0.0, &q);
            }
        }
        TensorType::Q4_0 | TensorType::Q4_1 => {
            // Q4_0 centres its nibbles on 8; Q4_1 adds a minimum instead.
            let centred = ty == TensorType::Q4_0;
            for block in data.chunks_exact(size) {
                let (min, qs) = if centred { (0.0, &block[2..18]) } else { (f16_at(block, 2), &block[4..20]) };
                let offset = if centred { 8 } else { 0 };
                // Low nibbles hold elements 0..16, high nibbles 16..32.
                for (j, &b) in qs.iter().enumerate() {
                    q[j] = (b & 0x0f) as i8 - offset;
                    q[j + 16] = (b >> 4) as i8 - offset;
                }
                emit32(f16_at(block, 0), min, &q);
            }
        }
        TensorType::Q5_0 | TensorType::Q5_1 => {
            let centred = ty == TensorType::Q5_0;
            for block in data.chunks_exact(size) {
                let (min, rest) = if centred { (0.0, &block[2..]) } else { (f16_at(block, 2), &block[4..]) };
                let offset = if centred { 16 } else { 0 };
                let high = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
                // Element j's fifth bit is bit j of `high`.
                for (j, &b) in rest[4..20].iter().enumerate() {
                    let lo = (b & 0x0f) | (((high >> j) & 1) << 4) as u8;
                    let hi = (b >> 4) | (((high >> (j + 16)) & 1) << 4) as u8;
                    q[j] = lo as i8 - offset;
                    q[j + 16] = hi as i8 - offset;
                }
                emit32(f16_at(block, 0), min, &q);
            }
        }
        TensorType::Q4_K | TensorType::Q5_K => {
            let five = ty == TensorType::Q5_K;
            for block in data.chunks_exact(size) {
                let (d, dmin) = (f16_at(block, 0), f16_at(block, 2));
                let scales = &block[4..16];
                let (high, qs) = if five { (&block[16..48], &block[48..176]) } else { (&block[..0], &block[16..144]) };
                // Each 32 bytes of `qs` hold two sub-blocks: low nibbles, then high nibbles.
                for (pair, qs) in qs.chunks_exact(32).enumerate() {
                    for half in 0..2 {
                        let (sc, m) = k_scale_min(scales, 2 * pair + half);
                        let bit = 1u8 << (2 * pair + half);
                        for (l, &b) in qs.iter().enumerate() {
                            let low = if half == 0 { b & 0x0f } else { b >> 4 };
                            let top = if five && high[l] & bit != 0 { 16 } else { 0 };
                            q[l] = (low + top) as i8;
                        }
                        emit32(d * f32::from(sc), -(dmin * f32::from(m)), &q);
                    }
                }
            }
        }
        TensorType::Q6_K => {
            for block in data.chunks_exact(size) {
                let (ql, qh, scales) = (&block[..128], &block[128..192], &block[192..208]);
                let d = f16_at(block, 208);
                // Each half of 128 values: 64 bytes of low nibbles, 32 of high bit pairs, 8 scales
                // (one per 16 values).
                for h in 0..2 {
                    let (ql, qh, sc) = (&ql[64 * h..][..64], &qh[32 * h..][..32], &scales[8 * h..][..8]);
                    let mut values = [0i8; 128];
                    for l in 0..32 {
                        let q = [
                            (ql[l] & 0x0f) | ((qh[l] & 3) << 4),
                            (ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4),
                            (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4),
                            (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4),
                        ];
                        for (k, q) in q.into_iter().enumerate() {
                            values[32 * k + l] = q as i8 - 32;
                        }
                    }
                    for (run, q) in values.chunks_exact(16).enumerate() {
                        emit(d * f32::from(sc[run] as i8), 0.0, q.try_into().unwrap());
                    }
                }
            }
        }
    }
    true
}

/// Sub-block `j`'s 6-bit scale and minimum in a Q4_K or Q5_K super-block's 12 packed bytes:
/// for `j < 4` the low six bits of bytes `j` and `j + 4`; after, a nibble of byte `j + 4` and the
/// top two bits of bytes `j - 4` and `j`.
pub(crate) fn k_scale_min(packed: &[u8], j: usize) -> (u8, u8) {
    match j < 4 {
        true => (packed[j] & 63, packed[j + 4] & 63),
        false => ((packed[j + 4] & 0x0f) | ((packed[j - 4] >> 6) << 4), (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4)),
    }
}

#[cfg(test)]
mod tests {
    use half::f16;

    /// Every f16 converts as `half` converts it.
    #[test]
    fn f16_conversion_is_exact() {
        for h in 0..=u16::MAX {
            let (fast, reference) = (super::f16_to_f32(h), f16::from_bits(h).to_f32());
            assert!(fast.to_bits() == reference.to_bits() || (fast.is_nan() && reference.is_nan()), "{h:#06x}: {fast} != {reference}");
        }
    }
}
