//! Structural tags: free text in which trigger strings open tagged sections
//! whose content is constrained, such as tool calls
//! (`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`).
//!
//! The whole output is one grammar. The text is an automaton over
//! characters (Aho–Corasick over the triggers): it goes on while no trigger
//! has appeared, and the first trigger to end stops it; from there the
//! output continues with the rest of a tag's `begin` that starts with that
//! trigger, the tag's content, and its `end`, then text again. A trigger
//! split across tokens is found like any other string, and text that holds
//! no trigger is never constrained (other than being UTF-8).

use crate::error::{CompileError, CompileErrorKind};
use crate::gbnf::{self, Rules};
use crate::json_schema::{JsonSchemaOptions, Warning};
use crate::limits::Limits;
use std::collections::{BTreeMap, BTreeSet};

/// Text with tagged sections (see the module docs): the source of a
/// [`crate::Constraint`] through [`crate::ConstraintSource::StructuralTag`].
///
/// ```
/// use sieve_core::{Constraint, ConstraintSource, Limits, StructuralTag, Tag, TagContent};
/// let call = Tag {
///     begin: "<call>".into(),
///     content: TagContent::Gbnf("root ::= [0-9]+".into()),
///     end: "</call>".into(),
/// };
/// let tags = StructuralTag { tags: vec![call], triggers: vec!["<call>".into()], ..Default::default() };
/// let c = Constraint::compile(&ConstraintSource::StructuralTag(tags), &Limits::default()).unwrap();
/// assert!(c.matches(b"Let me add. <call>42</call> Done.").unwrap());
/// assert!(!c.matches(b"<call>4x</call>").unwrap());
/// assert!(c.matches(b"no call at all").unwrap());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct StructuralTag {
    /// The sections the output may hold. With none, the output is text
    /// in which no trigger appears.
    pub tags: Vec<Tag>,
    /// Strings that, once they appear in the text, start a tag: each tag's
    /// `begin` starts with one of them.
    pub triggers: Vec<String>,
    /// The output starts with a tag, with no text before it.
    pub at_least_one: bool,
    /// The output ends with the first tag.
    pub stop_after_first: bool,
}

/// One tagged section: `begin`, content, `end`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Tag {
    pub begin: String,
    pub content: TagContent,
    pub end: String,
}

/// What a tag holds between its `begin` and its `end`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TagContent {
    /// A JSON value valid for this schema (JSON text), translated with these options.
    JsonSchema(String, JsonSchemaOptions),
    /// A string of this GBNF grammar (start rule `root`).
    Gbnf(String),
}

impl StructuralTag {
    /// A structural tag as JSON, in vLLM's shape: `{"type": "structural_tag", "structures":
    /// [{"begin", "schema" or "grammar", "end"}], "triggers": [...]}`, plus `at_least_one` and
    /// `stop_after_first` (false unless given); `type` may be left out. Schemas are translated
    /// with `options`.
    ///
    /// ```
    /// use sieve_core::StructuralTag;
    /// let json = serde_json::json!({"structures": [{"begin": "<n>", "grammar": "root ::= [0-9]+", "end": "</n>"}], "triggers": ["<n>"]});
    /// let tag = StructuralTag::from_json(&json, Default::default()).unwrap();
    /// assert_eq!((tag.tags.len(), tag.at_least_one), (1, false));
    /// assert!(StructuralTag::from_json(&serde_json::json!({"triggers": []}), Default::default()).is_err());
    /// ```
    pub fn from_json(json: &serde_json::Value, options: JsonSchemaOptions) -> Result<StructuralTag, CompileError> {
        use serde_json::Value;
        let bad = |message: String| CompileError::new(CompileErrorKind::StructuralTag, message);
        let Some(fields) = json.as_object() else { return Err(bad("a structural tag is a JSON object".into())) };
        for key in fields.keys() {
            if !["type", "structures", "triggers", "at_least_one", "stop_after_first"].contains(&key.as_str()) {
                return Err(bad(format!("unknown field {key:?} (structures, triggers, at_least_one, stop_after_first)")));
            }
        }
        if fields.get("type").is_some_and(|t| t != "structural_tag") {
            return Err(bad(format!("type {} is not \"structural_tag\"", fields["type"])));
        }
        let strings = |key: &str| -> Result<Vec<String>, CompileError> {
            match fields.get(key) {
                Some(Value::Array(items)) => {
                    items.iter().map(|t| t.as_str().map(str::to_string).ok_or_else(|| bad(format!("{key}: {t} is not a string")))).collect()
                }
                _ => Err(bad(format!("`{key}` is an array of strings"))),
            }
        };
        let flag = |key: &str| match fields.get(key) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(bad(format!("`{key}` is true or false, not {other}"))),
        };
        let Some(Value::Array(structures)) = fields.get("structures") else { return Err(bad("`structures` is an array".into())) };
        let tags = structures
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let text = |key: &str| s.get(key).and_then(Value::as_str).map(str::to_string);
                let (Some(begin), Some(end)) = (text("begin"), text("end")) else {
                    return Err(bad(format!("structures[{i}] needs `begin` and `end` strings")));
                };
                let content = match (s.get("schema"), text("grammar")) {
                    (Some(schema), None) => TagContent::JsonSchema(schema.to_string(), options),
                    (None, Some(grammar)) => TagContent::Gbnf(grammar),
                    _ => return Err(bad(format!("structures[{i}] needs one of `schema` and `grammar` (a string)"))),
                };
                Ok(Tag { begin, content, end })
            })
            .collect::<Result<_, _>>()?;
        Ok(StructuralTag { tags, triggers: strings("triggers")?, at_least_one: flag("at_least_one")?, stop_after_first: flag("stop_after_first")? })
    }

    /// The grammar rules of the whole output, the start rule, and the keywords lenient schemas
    /// left out.
    pub(crate) fn rules(&self, limits: &Limits) -> Result<(Rules, u32, Vec<Warning>), CompileError> {
        let bad = |message: String| CompileError::new(CompileErrorKind::StructuralTag, message);
        if self.triggers.iter().any(String::is_empty) {
            return Err(bad("a trigger is empty".into()));
        }
        if self.triggers.is_empty() && !self.at_least_one {
            return Err(bad("without triggers and without at_least_one no tag could ever start".into()));
        }
        let mut rules = Rules::default();
        let mut warnings = Vec::new();
        let root = rules.add_rule("root".into());
        // Per tag: its content's start rule, here.
        let mut contents = Vec::with_capacity(self.tags.len());
        for (i, tag) in self.tags.iter().enumerate() {
            if !self.triggers.is_empty() && !self.triggers.iter().any(|t| tag.begin.starts_with(t.as_str())) {
                return Err(bad(format!("tag {i}: its begin {:?} starts with none of the triggers", tag.begin)));
            }
            let in_tag = |e: CompileError| CompileError { message: format!("tag {i} ({:?}): {}", tag.begin, e.message), ..e };
            let prefix = format!("tag{i}-");
            let start = match &tag.content {
                TagContent::JsonSchema(text, options) => {
                    let schema: serde_json::Value = serde_json::from_str(text)
                        .map_err(|e| in_tag(CompileError::new(CompileErrorKind::Schema, format!("the schema is not JSON: {e}"))))?;
                    let g = crate::json_schema::to_grammar(&schema, options, limits).map_err(|e| in_tag(e.into()))?;
                    warnings.extend(g.warnings.iter().map(|w| Warning { message: format!("tag {i}: {}", w.message), ..w.clone() }));
                    let (from, start) = g.rules();
                    rules.import(from, start, &prefix)
                }
                TagContent::Gbnf(text) => {
                    let from = gbnf::parse(text).map_err(in_tag)?;
                    let start = from
                        .rules
                        .iter()
                        .position(|r| r.name == "root")
                        .ok_or_else(|| in_tag(CompileError::new(CompileErrorKind::NoRoot, "the grammar has no rule named \"root\"")))?;
                    rules.import(&from, start as u32, &prefix)
                }
            };
            contents.push(rules.reference(start));
        }
        // Tag `i` from `skip` bytes into its begin: the rest of the begin, content, end.
        let tag_from = |rules: &mut Rules, i: usize, skip: usize| {
            let tag = &self.tags[i];
            let (begin, end) = (rules.literal(&tag.begin.as_bytes()[skip..]), rules.literal(tag.end.as_bytes()));
            rules.seq(&[begin, contents[i], end])
        };
        let text = Text::new(&self.triggers);
        // Automaton states, the first first: [start if at_least_one], text states, fired
        // states, [done if stop_after_first].
        let mut states: Vec<(bool, u32, u32)> = Vec::new();
        let mut edges: Vec<(u32, u32)> = Vec::new();
        let first_text = u32::from(self.at_least_one);
        let first_fired = first_text + text.live.len() as u32;
        let done = first_fired + text.fired.len() as u32;
        let after_tag = if self.stop_after_first { done } else { first_text };
        if self.at_least_one {
            for i in 0..self.tags.len() {
                edges.push((tag_from(&mut rules, i, 0), after_tag));
            }
            states.push((false, 0, edges.len() as u32));
        }
        let state_of = |node: usize| match text.live.binary_search(&node) {
            Ok(k) => first_text + k as u32,
            Err(_) => first_fired + text.fired.binary_search(&node).unwrap_or_else(|_| unreachable!("a reached node")) as u32,
        };
        for &node in &text.live {
            let at = edges.len() as u32;
            for (to, ranges) in text.moves(node) {
                edges.push((rules.class(&ranges), state_of(to)));
            }
            states.push((true, at, edges.len() as u32));
        }
        for &node in &text.fired {
            let at = edges.len() as u32;
            let mut seen = BTreeSet::new();
            for &t in &text.ends[node] {
                let trigger = &self.triggers[t];
                for (i, tag) in self.tags.iter().enumerate() {
                    if tag.begin.starts_with(trigger.as_str()) && seen.insert((i, trigger.len())) {
                        edges.push((tag_from(&mut rules, i, trigger.len()), after_tag));
                    }
                }
            }
            states.push((false, at, edges.len() as u32));
        }
        if self.stop_after_first {
            states.push((true, edges.len() as u32, edges.len() as u32));
        }
        let body = rules.automaton(&states, &edges, &[]);
        rules.rules[root as usize].body = body;
        Ok((rules, root, warnings))
    }
}

/// The text's automaton: an Aho–Corasick trie of the triggers' characters,
/// each node a string no trigger ends inside of, except the fired ones,
/// where one just ended.
struct Text {
    /// Per node: its children by character.
    children: Vec<BTreeMap<char, usize>>,
    /// Per node: the longest proper suffix of its string that is a node.
    fail: Vec<usize>,
    /// Per node: the triggers its string ends with.
    ends: Vec<Vec<usize>>,
    /// Every character of every trigger, in order.
    alphabet: Vec<char>,
    /// Nodes the text reaches with no trigger in it, in order (the root first).
    live: Vec<usize>,
    /// Nodes the text reaches where a trigger has just ended, in order.
    fired: Vec<usize>,
}

impl Text {
    fn new(triggers: &[String]) -> Text {
        let mut t = Text {
            children: vec![BTreeMap::new()],
            fail: vec![0],
            ends: vec![Vec::new()],
            alphabet: Vec::new(),
            live: Vec::new(),
            fired: Vec::new(),
        };
        for (i, trigger) in triggers.iter().enumerate() {
            let mut node = 0;
            for c in trigger.chars() {
                node = match t.children[node].get(&c) {
                    Some(&n) => n,
                    None => {
                        t.children.push(BTreeMap::new());
                        t.fail.push(0);
                        t.ends.push(Vec::new());
                        let n = t.children.len() - 1;
                        t.children[node].insert(c, n);
                        n
                    }
                };
            }
            t.ends[node].push(i);
        }
        let alphabet: BTreeSet<char> = triggers.iter().flat_map(|s| s.chars()).collect();
        t.alphabet = alphabet.into_iter().collect();
        // Failure links breadth first; a node ends every trigger its fallback ends.
        let mut queue: std::collections::VecDeque<usize> = t.children[0].values().copied().collect();
        while let Some(node) = queue.pop_front() {
            let kids: Vec<(char, usize)> = t.children[node].iter().map(|(&c, &n)| (c, n)).collect();
            for (c, kid) in kids {
                let mut f = t.fail[node];
                t.fail[kid] = loop {
                    if let Some(&n) = t.children[f].get(&c) {
                        break n;
                    }
                    if f == 0 {
                        break 0;
                    }
                    f = t.fail[f];
                };
                let inherited = t.ends[t.fail[kid]].clone();
                t.ends[kid].extend(inherited);
                queue.push_back(kid);
            }
        }
        // The nodes reached from the root, stopping where a trigger ends.
        let mut seen = BTreeSet::from([0]);
        let mut stack = vec![0];
        while let Some(node) = stack.pop() {
            if !t.ends[node].is_empty() {
                t.fired.push(node);
                continue;
            }
            t.live.push(node);
            for i in 0..t.alphabet.len() {
                let next = t.step(node, t.alphabet[i]);
                if seen.insert(next) {
                    stack.push(next);
                }
            }
        }
        t.live.sort_unstable();
        t.fired.sort_unstable();
        t
    }

    /// The node after `node` reads `c`.
    fn step(&self, mut node: usize, c: char) -> usize {
        loop {
            if let Some(&n) = self.children[node].get(&c) {
                return n;
            }
            if node == 0 {
                return 0;
            }
            node = self.fail[node];
        }
    }

    /// The moves of live node `node`: per next node, the scalar ranges that go there.
    fn moves(&self, node: usize) -> BTreeMap<usize, Vec<(u32, u32)>> {
        let mut to: BTreeMap<usize, Vec<(u32, u32)>> = BTreeMap::new();
        let mut others: Vec<(u32, u32)> = Vec::new();
        for &c in &self.alphabet {
            let next = self.step(node, c);
            if next == 0 {
                others.push((c as u32, c as u32));
            } else {
                to.entry(next).or_default().push((c as u32, c as u32));
            }
        }
        let used: Vec<(u32, u32)> = self.alphabet.iter().map(|&c| (c as u32, c as u32)).collect();
        others.extend(gbnf::complement(&gbnf::normalize(used)));
        to.insert(0, gbnf::normalize(others));
        to.retain(|_, r| !r.is_empty());
        to
    }
}
