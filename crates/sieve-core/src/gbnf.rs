//! GBNF (llama.cpp's grammar format) parsed into expression trees, stored
//! flat: nodes, children, literal bytes and class ranges each in one array.
//!
//! Supported: `name ::= body` rules (names of letters, digits, `-`, `_`),
//! `|`, `( )`, `*` `+` `?` `{m}` `{m,}` `{m,n}`, string literals and
//! character classes with the escapes `\n \r \t \\ \" \' \[ \] \- \xHH \uHHHH
//! \UHHHHHHHH`, negated classes `[^...]`, `.` (any character), `#` comments,
//! and newlines anywhere inside parentheses or after `|`. Characters are
//! Unicode scalar values; the engine matches them as UTF-8 bytes.

use crate::error::{CompileError, CompileErrorKind};
use crate::hash::TextMap;

/// A grammar expression; what it holds lives in the [`Parsed`] arrays its
/// ranges index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Expr {
    /// Concatenation of the expressions `kids[first..end]` (none: the empty string).
    Seq { first: u32, end: u32 },
    /// Alternation of the expressions `kids[first..end]`.
    Alt { first: u32, end: u32 },
    /// Expression `expr` `{min,max}` times; `max = None` is unbounded.
    Repeat { expr: u32, min: u32, max: Option<u32> },
    /// A literal string, the UTF-8 bytes `text[first..end]`.
    Literal { first: u32, end: u32 },
    /// The Unicode scalar ranges `ranges[first..end]` (already negated if
    /// written `[^...]`).
    Class { first: u32, end: u32 },
    /// A reference to the `rule`-th rule.
    Ref { rule: u32 },
}

/// One `name ::= body` rule; `body` is an expression index.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    pub name: String,
    pub body: u32,
}

/// Parsed rules with their expressions in flat arrays (an allocation per
/// array, not per node).
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub rules: Vec<Rule>,
    exprs: Vec<Expr>,
    kids: Vec<u32>,
    text: Vec<u8>,
    ranges: Vec<(u32, u32)>,
}

impl Parsed {
    /// Expression `e`.
    pub fn expr(&self, e: u32) -> Expr {
        self.exprs[e as usize]
    }

    /// The expressions of a `Seq` or `Alt`.
    pub fn kids(&self, first: u32, end: u32) -> &[u32] {
        &self.kids[first as usize..end as usize]
    }

    /// The bytes of a `Literal`.
    pub fn text(&self, first: u32, end: u32) -> &[u8] {
        &self.text[first as usize..end as usize]
    }

    /// The ranges of a `Class`.
    pub fn ranges(&self, first: u32, end: u32) -> &[(u32, u32)] {
        &self.ranges[first as usize..end as usize]
    }

    fn push(&mut self, e: Expr) -> u32 {
        self.exprs.push(e);
        self.exprs.len() as u32 - 1
    }
}

/// Largest `{m,n}` bound accepted (repetition is expanded).
pub(crate) const MAX_REPEAT: u32 = 1000;

/// Parses GBNF text into rules, numbered in order of their name's first
/// mention (a reference or a definition), so a reference holds its rule's
/// index as soon as it is read.
pub(crate) fn parse(src: &str) -> Result<Parsed, CompileError> {
    let mut p = Parser { src, pos: 0, depth: 0, ids: TextMap::default(), names: Vec::new(), out: Parsed::default(), stack: Vec::new() };
    let mut bodies: Vec<Option<u32>> = Vec::new();
    p.space(true);
    while p.pos < src.len() {
        let (id, body) = p.rule()?;
        if bodies.len() <= id {
            bodies.resize_with(id + 1, || None);
        }
        bodies[id] = Some(body);
        p.space(true);
    }
    bodies.resize_with(p.names.len(), || None);
    let rules = p
        .names
        .iter()
        .zip(bodies)
        .map(|(&(name, _, first), body)| match body {
            Some(body) => Ok(Rule { name: name.to_string(), body }),
            // In order of first mention, so the first undefined name is the first written.
            None => Err(CompileError::at(CompileErrorKind::UndefinedRule, format!("rule {name:?} is not defined"), src, first)),
        })
        .collect::<Result<_, _>>()?;
    Ok(Parsed { rules, ..p.out })
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
    depth: usize,
    /// Id of each rule name met so far, defined or referenced.
    ids: TextMap<&'a str, u32>,
    /// Per name id: the name, whether a rule defines it yet, and the offset
    /// where it is first written.
    names: Vec<(&'a str, bool, usize)>,
    out: Parsed,
    /// Expressions of the sequences and alternations being read, innermost
    /// last (each takes its own off when it ends).
    stack: Vec<u32>,
}

const MAX_NESTING: usize = 200;

impl<'a> Parser<'a> {
    fn err<T>(&self, msg: impl Into<String>) -> Result<T, CompileError> {
        Err(CompileError::at(CompileErrorKind::Syntax, msg, self.src, self.pos))
    }

    fn peek(&self) -> Option<char> {
        let b = *self.src.as_bytes().get(self.pos)?;
        if b.is_ascii() {
            return Some(b as char);
        }
        self.src[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    /// Skips blanks and comments; newlines too when `newlines`.
    fn space(&mut self, newlines: bool) {
        let src = self.src.as_bytes();
        while let Some(&c) = src.get(self.pos) {
            match c {
                b' ' | b'\t' => self.pos += 1,
                b'\r' | b'\n' if newlines => self.pos += 1,
                b'#' => {
                    // To the line's end (a line break is one byte, never inside a character).
                    let rest = &src[self.pos..];
                    self.pos += rest.iter().position(|&b| b == b'\n' || b == b'\r').unwrap_or(rest.len());
                }
                _ => break,
            }
        }
    }

    fn name(&mut self) -> Result<&'a str, CompileError> {
        let start = self.pos;
        let src = self.src;
        let len = src.as_bytes()[start..].iter().take_while(|&&c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_').count();
        if len == 0 {
            return self.err("expected a rule name");
        }
        self.pos += len;
        Ok(&src[start..self.pos])
    }

    /// The id of rule name `name`, first written at `offset`.
    fn id(&mut self, name: &'a str, offset: usize) -> u32 {
        let next = self.names.len() as u32;
        let id = *self.ids.entry(name).or_insert(next);
        if id == next {
            self.names.push((name, false, offset));
        }
        id
    }

    /// Parses one rule: its name's id and its body.
    fn rule(&mut self) -> Result<(usize, u32), CompileError> {
        let offset = self.pos;
        let name = self.name()?;
        let id = self.id(name, offset) as usize;
        if self.names[id].1 {
            return Err(CompileError::at(
                CompileErrorKind::DuplicateRule,
                format!("rule {name:?} is defined twice"),
                self.src,
                offset,
            ));
        }
        self.names[id].1 = true;
        self.space(false);
        if !self.src[self.pos..].starts_with("::=") {
            return self.err(format!("expected '::=' after rule name {name:?}"));
        }
        self.pos += 3;
        self.space(true);
        let body = self.alternates(false)?;
        match self.peek() {
            None | Some('\n' | '\r') => Ok((id, body)),
            Some(c) => self.err(format!("unexpected {c:?}")),
        }
    }

    /// `seq ('|' seq)*`; inside parentheses newlines are blanks.
    /// The expressions on the stack from `base` as one: itself when alone,
    /// else `make(first, end)` over them.
    fn group(&mut self, base: usize, make: fn(u32, u32) -> Expr) -> u32 {
        if self.stack.len() == base + 1 {
            return self.stack.pop().unwrap_or_default();
        }
        let first = self.out.kids.len() as u32;
        self.out.kids.extend(self.stack.drain(base..));
        self.out.push(make(first, self.out.kids.len() as u32))
    }

    fn alternates(&mut self, nested: bool) -> Result<u32, CompileError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return self.err("grammar nested too deeply");
        }
        let base = self.stack.len();
        let first = self.sequence(nested)?;
        self.stack.push(first);
        loop {
            // A '|' may also start the next line of a top-level rule.
            let save = self.pos;
            self.space(true);
            if self.peek() == Some('|') {
                self.pos += 1;
                self.space(true);
                let alt = self.sequence(nested)?;
                self.stack.push(alt);
            } else {
                self.pos = save;
                break;
            }
        }
        self.depth -= 1;
        Ok(self.group(base, |first, end| Expr::Alt { first, end }))
    }

    fn sequence(&mut self, nested: bool) -> Result<u32, CompileError> {
        let base = self.stack.len();
        loop {
            let start = self.pos;
            let item = match self.peek() {
                Some('"') => {
                    self.pos += 1;
                    let first = self.out.text.len() as u32;
                    loop {
                        // Plain characters up to the next quote, escape or line end at once.
                        let rest = &self.src.as_bytes()[self.pos..];
                        let plain = rest.iter().position(|b| matches!(b, b'"' | b'\\' | b'\n' | b'\r')).unwrap_or(rest.len());
                        self.out.text.extend_from_slice(&rest[..plain]);
                        self.pos += plain;
                        match self.peek() {
                            None | Some('\n' | '\r') => return self.err("unterminated string literal"),
                            Some('"') => {
                                self.pos += 1;
                                break;
                            }
                            _ => {
                                let c = self.char_in_literal()?;
                                self.out.text.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                            }
                        }
                    }
                    self.out.push(Expr::Literal { first, end: self.out.text.len() as u32 })
                }
                Some('[') => self.class()?,
                Some('.') => {
                    self.pos += 1;
                    let first = self.out.ranges.len() as u32;
                    self.out.ranges.push((0, 0x10FFFF));
                    self.out.push(Expr::Class { first, end: first + 1 })
                }
                Some('(') => {
                    self.pos += 1;
                    self.space(true);
                    let e = self.alternates(true)?;
                    self.space(true);
                    if self.peek() != Some(')') {
                        return self.err("expected ')'");
                    }
                    self.pos += 1;
                    e
                }
                Some('<') => return self.err("token references (<...>) are not supported"),
                Some('!') => return self.err("token negation (!) is not supported"),
                Some(c) if c.is_ascii_alphanumeric() || c == '-' || c == '_' => {
                    let name = self.name()?;
                    if self.src[self.pos..].trim_start_matches([' ', '\t']).starts_with("::=") {
                        // The next rule starts here; this sequence ended at the newline.
                        self.pos = start;
                        break;
                    }
                    let rule = self.id(name, start);
                    self.out.push(Expr::Ref { rule })
                }
                _ => break,
            };
            self.space(nested);
            let item = self.postfix(item, nested)?;
            self.stack.push(item);
        }
        if self.stack.len() == base {
            // Nothing: the empty string.
            let end = self.out.kids.len() as u32;
            return Ok(self.out.push(Expr::Seq { first: end, end }));
        }
        Ok(self.group(base, |first, end| Expr::Seq { first, end }))
    }

    fn postfix(&mut self, mut item: u32, nested: bool) -> Result<u32, CompileError> {
        loop {
            let (min, max) = match self.peek() {
                Some('*') => (0, None),
                Some('+') => (1, None),
                Some('?') => (0, Some(1)),
                Some('{') => {
                    self.pos += 1;
                    self.space(nested);
                    let min = self.number()?;
                    self.space(nested);
                    let max = if self.peek() == Some(',') {
                        self.pos += 1;
                        self.space(nested);
                        if self.peek() == Some('}') { None } else { Some(self.number()?) }
                    } else {
                        Some(min)
                    };
                    self.space(nested);
                    if self.peek() != Some('}') {
                        return self.err("expected '}'");
                    }
                    if max.is_some_and(|m| m < min) {
                        return self.err("repetition {m,n} with n < m");
                    }
                    if min.max(max.unwrap_or(0)) > MAX_REPEAT {
                        return Err(CompileError::at(
                            CompileErrorKind::Limit,
                            format!("repetition bound over {MAX_REPEAT}"),
                            self.src,
                            self.pos,
                        ));
                    }
                    (min, max)
                }
                _ => return Ok(item),
            };
            self.pos += 1;
            self.space(nested);
            item = self.out.push(Expr::Repeat { expr: item, min, max });
        }
    }

    fn number(&mut self) -> Result<u32, CompileError> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        self.src[start..self.pos].parse().or_else(|_| self.err("expected a number"))
    }

    fn class(&mut self) -> Result<u32, CompileError> {
        self.pos += 1;
        let negated = self.peek() == Some('^');
        if negated {
            self.pos += 1;
        }
        let mut ranges = Vec::new();
        loop {
            match self.peek() {
                None => return self.err("unterminated character class"),
                Some(']') => {
                    self.pos += 1;
                    break;
                }
                _ => {}
            }
            let lo = self.char_in_class()? as u32;
            let hi = if self.peek() == Some('-') && !self.src[self.pos + 1..].starts_with(']') {
                self.pos += 1;
                self.char_in_class()? as u32
            } else {
                lo
            };
            if hi < lo {
                return self.err("character range out of order");
            }
            ranges.push((lo, hi));
        }
        let ranges = normalize(ranges);
        let first = self.out.ranges.len() as u32;
        self.out.ranges.extend(if negated { complement(&ranges) } else { ranges });
        Ok(self.out.push(Expr::Class { first, end: self.out.ranges.len() as u32 }))
    }

    fn char_in_class(&mut self) -> Result<char, CompileError> {
        match self.peek() {
            Some('\\') => self.escape(),
            Some(_) => self.bump().ok_or(()).or_else(|_| self.err("unexpected end")),
            None => self.err("unterminated character class"),
        }
    }

    fn char_in_literal(&mut self) -> Result<char, CompileError> {
        self.char_in_class()
    }

    fn escape(&mut self) -> Result<char, CompileError> {
        let at = self.pos;
        self.pos += 1;
        let c = match self.bump() {
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some(c @ ('\\' | '"' | '\'' | '[' | ']' | '-' | '^' | '.' | '/')) => c,
            Some(k @ ('x' | 'u' | 'U')) => {
                let n = match k {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let digits = self.src.get(self.pos..self.pos + n).unwrap_or("");
                let v = (digits.len() == n && digits.bytes().all(|b| b.is_ascii_hexdigit()))
                    .then(|| u32::from_str_radix(digits, 16).ok())
                    .flatten();
                let Some(v) = v else {
                    self.pos = at;
                    return self.err(format!("\\{k} needs {n} hex digits"));
                };
                self.pos += n;
                match char::from_u32(v) {
                    Some(c) => c,
                    None => {
                        self.pos = at;
                        return self.err(format!("\\{k}{digits} is not a Unicode scalar value"));
                    }
                }
            }
            _ => {
                self.pos = at;
                return self.err("unknown escape");
            }
        };
        Ok(c)
    }
}

/// Sorts and merges scalar ranges.
fn normalize(mut r: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    r.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(r.len());
    for (lo, hi) in r {
        match out.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// All scalar values (0..=0x10FFFF) not in the normalized `ranges`.
fn complement(ranges: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut next = 0u32;
    for &(lo, hi) in ranges {
        if lo > next {
            out.push((next, lo - 1));
        }
        next = hi + 1;
    }
    if next <= 0x10FFFF {
        out.push((next, 0x10FFFF));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_llama_cpp_shapes() {
        let g = "root ::= (\"a\" | b)* # c\nb ::= [^x-z\\n] .\n  | \"\\u00e9\"{2,3}\n";
        let p = parse(g).expect("parses");
        assert_eq!(p.rules.len(), 2);
        assert_eq!(p.rules[1].name, "b");
        assert!(matches!(p.expr(p.rules[1].body), Expr::Alt { first, end } if end - first == 2));
    }

    #[test]
    fn errors_have_positions() {
        let e = parse("root ::= \"abc").unwrap_err();
        assert_eq!(e.kind, CompileErrorKind::Syntax);
        assert_eq!(e.line_col, Some((1, 14)));
        let e = parse("root ::= [b-a]").unwrap_err();
        assert_eq!(e.line_col.map(|p| p.0), Some(1));
    }
}
