//! The Earley chart: items, one set per byte consumed, prediction and
//! completion, and a trie walker over it.

use super::{Grammar, Kind};
use crate::error::MatchError;
use crate::trie::Walker;
use crate::hash::FastSet;

/// An Earley item: an automaton state and the set where its rule started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Item {
    state: u32,
    origin: u32,
}

/// Origin of items whose rule's caller is outside the chart (see
/// [`Chart::local`]).
const OUTER: u32 = u32::MAX;

/// Where an item of a set described apart from the chart started (see
/// [`Chart::relative_set`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Origin {
    /// Outside the chart.
    Outer,
    /// In the set itself.
    Own,
    /// In the set it is opened on.
    Below,
}

/// The Earley chart: one item set per byte consumed (plus the initial set).
#[derive(Debug, Clone, Default)]
pub(crate) struct Chart {
    items: Vec<Item>,
    starts: Vec<u32>,
    /// Per set: an item with origin `OUTER` reached its rule's end there.
    outer_end: Vec<bool>,
    /// Sets opened so far (names the newest set for `marks` and `index`).
    opened: u64,
    marks: Marks,
    /// The newest set's items as a hash set, once a state gets a second
    /// origin in a set of `INDEXED` items or more (a linear scan per added
    /// item would make large sets quadratic): the value of `opened` it was
    /// built for, the set, and how many of the set's items it holds.
    index: (u64, FastSet<Item>, usize),
}

/// Per automaton state: the newest set (by `Chart::opened`) that got an
/// item of the state, and that item's origin. Most items are the only one of
/// their state in a set, so this decides most additions at once. A clone
/// starts empty (so forking a matcher copies nothing): marks are only ever
/// a shortcut. Kept in pages, each allocated when a state of it is first
/// met: a chart over a large grammar (strings of bounded length are
/// automata of a hundred thousand states) meets few of its states, and a
/// mark per state of the grammar, zeroed at once, cost milliseconds.
#[derive(Debug, Default)]
struct Marks(Vec<Option<MarksPage>>);

/// States per page of [`Marks`].
const MARKS_PAGE: usize = 1024;

/// The marks of [`MARKS_PAGE`] states.
type MarksPage = Box<[(u64, u32)]>;

impl Marks {
    #[inline]
    fn get_mut(&mut self, s: usize) -> &mut (u64, u32) {
        let (page, i) = (s / MARKS_PAGE, s % MARKS_PAGE);
        if page >= self.0.len() {
            self.0.resize_with(page + 1, || None);
        }
        &mut self.0[page].get_or_insert_with(|| vec![(u64::MAX, 0); MARKS_PAGE].into_boxed_slice())[i]
    }

    /// Approximate heap bytes held.
    fn memory(&self) -> usize {
        self.0.capacity() * 8 + self.0.iter().flatten().count() * MARKS_PAGE * std::mem::size_of::<(u64, u32)>()
    }
}

impl Clone for Marks {
    fn clone(&self) -> Marks {
        Marks::default()
    }
}

/// Size of a set from which `Chart::add` looks items up in a hash set.
const INDEXED: usize = 32;

impl Chart {
    /// The chart before any byte.
    pub fn new(g: &Grammar) -> Chart {
        let mut c = Chart::local();
        for &s in g.list(g.rules[g.root as usize].start) {
            c.add(Item { state: s, origin: 0 });
        }
        // An unbounded budget cannot run out, so this cannot fail.
        let _ = c.process(g, usize::MAX);
        c
    }

    /// An empty chart for local walks (see `tokencache`): sets are opened
    /// with [`Chart::push_relative`], their items' rules called from
    /// outside the chart (origin `OUTER`). When such a rule ends the set is
    /// flagged (see `outer_end`) instead of advancing a caller.
    pub fn local() -> Chart {
        Chart {
            items: Vec::new(),
            starts: vec![0],
            outer_end: vec![false],
            opened: 0,
            marks: Marks::default(),
            index: (0, FastSet::default(), 0),
        }
    }

    /// Approximate heap bytes held.
    pub fn memory(&self) -> usize {
        self.items.capacity() * std::mem::size_of::<Item>()
            + (self.starts.capacity() + self.outer_end.capacity()) * 4
            + self.marks.memory()
            + self.index.1.capacity() * std::mem::size_of::<Item>()
    }

    /// True when a rule called from outside the chart ended in the newest set.
    pub fn outer_end(&self) -> bool {
        self.outer_end.last().copied().unwrap_or(false)
    }

    /// Byte items of the newest set as `(rule, origin, state)`.
    pub fn byte_items<'a>(&'a self, g: &'a Grammar) -> impl Iterator<Item = (u32, u32, u32)> + 'a {
        self.items[self.current()..].iter().filter_map(|it| {
            let c = &g.core[it.state as usize];
            matches!(c.kind, Kind::Byte { .. } | Kind::Ranges { .. }).then_some((c.rule, it.origin, it.state))
        })
    }

    /// Opens a set in which `rule`, started at set `origin`, has just ended:
    /// its callers advance past it. Returns false (chart unchanged) when
    /// nothing follows.
    pub fn push_end_of(&mut self, g: &Grammar, rule: u32, origin: u32, fuel: &mut usize) -> Result<bool, MatchError> {
        let b = self.items.len();
        self.open(b, false);
        self.advance_callers(g, rule, origin);
        self.finish_push(g, b, fuel)
    }

    /// The newest set's states, sorted, when every item's origin is `OUTER`
    /// (a set whose successors depend on nothing else).
    pub fn outer_states(&self) -> Option<Vec<u32>> {
        let items = &self.items[self.current()..];
        items.iter().all(|it| it.origin == OUTER).then(|| {
            let mut v: Vec<u32> = items.iter().map(|it| it.state).collect();
            v.sort_unstable();
            v
        })
    }

    /// The newest set as `(state, origin)` with origins that are `OUTER`,
    /// the set itself, or set `anchor` (`None` when another origin occurs).
    pub fn relative_set(&self, anchor: Option<usize>) -> Option<(Vec<(u32, Origin)>, bool)> {
        let me = (self.starts.len() - 1) as u32;
        let anchor = anchor.map_or(OUTER, |a| a as u32);
        let items = &self.items[self.current()..];
        let mut out = Vec::with_capacity(items.len());
        for it in items {
            match it.origin {
                OUTER => out.push((it.state, Origin::Outer)),
                o if o == me => out.push((it.state, Origin::Own)),
                o if o == anchor => out.push((it.state, Origin::Below)),
                _ => return None,
            }
        }
        Some((out, self.outer_end()))
    }

    /// Opens a set with known content (see [`Chart::relative_set`]); items
    /// of origin [`Origin::Below`] started in the set under it.
    pub fn push_relative(&mut self, items: impl IntoIterator<Item = (u32, Origin)>, outer_end: bool) {
        let me = self.starts.len() as u32;
        self.open(self.items.len(), outer_end);
        for (state, origin) in items {
            let origin = match origin {
                Origin::Outer => OUTER,
                Origin::Own => me,
                Origin::Below => me.saturating_sub(1),
            };
            self.add(Item { state, origin });
        }
    }

    /// Number of bytes consumed.
    pub fn bytes(&self) -> usize {
        self.starts.len() - 1
    }

    fn current(&self) -> usize {
        *self.starts.last().unwrap_or(&0) as usize
    }

    /// Opens a set whose items start at `b`.
    fn open(&mut self, b: usize, outer_end: bool) {
        self.starts.push(b as u32);
        self.outer_end.push(outer_end);
        self.opened += 1;
    }

    /// Adds, to the newest set, the items of set `origin` that called
    /// `rule`, each past the call: `rule` ended here.
    #[inline]
    fn advance_callers(&mut self, g: &Grammar, rule: u32, origin: u32) {
        let (a, b) = (self.starts[origin as usize] as usize, self.starts[origin as usize + 1] as usize);
        for j in a..b {
            let parent = self.items[j];
            let pc = g.core[parent.state as usize];
            if pc.kind == (Kind::Call { rule }) {
                for &s in g.list(pc.next) {
                    self.add(Item { state: s, origin: parent.origin });
                }
            }
        }
    }

    #[inline]
    fn add(&mut self, it: Item) {
        let mark = self.marks.get_mut(it.state as usize);
        if mark.0 != self.opened {
            *mark = (self.opened, it.origin);
            self.items.push(it);
            return;
        }
        if mark.1 == it.origin {
            return;
        }
        mark.1 = it.origin;
        let from = self.current();
        if self.items.len() - from < INDEXED {
            if !self.items[from..].contains(&it) {
                self.items.push(it);
            }
            return;
        }
        if self.index.0 != self.opened {
            // A new set, not a cleared one: clearing costs the largest set's capacity.
            self.index = (self.opened, FastSet::default(), from);
        }
        let (_, set, done) = &mut self.index;
        set.extend(self.items[*done..].iter().copied());
        *done = self.items.len();
        if set.insert(it) {
            self.items.push(it);
            *done += 1;
        }
    }

    /// Predicts and completes the newest set until nothing changes.
    /// Fails when the chart would grow past `max_items` items.
    fn process(&mut self, g: &Grammar, max_items: usize) -> Result<(), MatchError> {
        let set = (self.starts.len() - 1) as u32;
        let mut i = self.current();
        while i < self.items.len() {
            let it = self.items[i];
            i += 1;
            let c = g.core[it.state as usize];
            match c.kind {
                Kind::Byte { .. } | Kind::Ranges { .. } => {}
                Kind::Call { rule } => {
                    let info = &g.rules[rule as usize];
                    for &s in g.list(info.start) {
                        self.add(Item { state: s, origin: set });
                    }
                    if info.nullable {
                        for &s in g.list(c.next) {
                            self.add(Item { state: s, origin: it.origin });
                        }
                    }
                }
                Kind::Accept { .. } if it.origin == OUTER => {
                    if let Some(f) = self.outer_end.last_mut() {
                        *f = true;
                    }
                }
                Kind::Accept { rule } if it.origin != set => self.advance_callers(g, rule, it.origin),
                Kind::Accept { .. } => {}
            }
            if self.items.len() > max_items {
                return Err(MatchError::Limit { what: "Earley items", limit: max_items });
            }
        }
        Ok(())
    }

    /// Consumes `byte`; returns false (chart unchanged) when no item takes it.
    pub fn push(&mut self, g: &Grammar, byte: u8, fuel: &mut usize) -> Result<bool, MatchError> {
        let (a, b) = (self.current(), self.items.len());
        self.open(b, false);
        for i in a..b {
            let it = self.items[i];
            let c = g.core[it.state as usize];
            match c.kind {
                Kind::Byte { lo, hi } if lo <= byte && byte <= hi => {
                    for &s in g.list(c.next) {
                        self.add(Item { state: s, origin: it.origin });
                    }
                }
                Kind::Ranges { first, end, .. } => {
                    for r in &g.ranges[first as usize..end as usize] {
                        if r.lo <= byte && byte <= r.hi {
                            for &s in g.list(r.next) {
                                self.add(Item { state: s, origin: it.origin });
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        self.finish_push(g, b, fuel)
    }

    /// Closes the set opened at item `b`, or drops it when it is empty.
    fn finish_push(&mut self, g: &Grammar, b: usize, fuel: &mut usize) -> Result<bool, MatchError> {
        if self.items.len() == b {
            self.starts.pop();
            self.outer_end.pop();
            return Ok(false);
        }
        if let Err(e) = self.process(g, b.saturating_add(*fuel)) {
            self.pop();
            return Err(e);
        }
        *fuel = fuel.saturating_sub(self.items.len() - b);
        Ok(true)
    }

    /// Drops the newest set (undoes one `push`).
    pub fn pop(&mut self) {
        if self.starts.len() > 1
            && let Some(s) = self.starts.pop()
        {
            self.items.truncate(s as usize);
            self.outer_end.pop();
        }
    }

    /// Drops sets until `bytes` bytes remain consumed.
    pub fn truncate(&mut self, bytes: usize) {
        while self.bytes() > bytes {
            self.pop();
        }
    }

    /// True when the bytes consumed form a complete sentence.
    pub fn is_accepting(&self, g: &Grammar) -> bool {
        let root = g.root;
        self.items[self.current()..]
            .iter()
            .any(|it| it.origin == 0 && g.core[it.state as usize].kind == (Kind::Accept { rule: root }))
    }

    /// The bytes some item of the newest set can consume, as a 256-bit set.
    pub fn next_bytes(&self, g: &Grammar) -> [u64; 4] {
        g.byte_set(self.items[self.current()..].iter().map(|it| it.state))
    }
}

/// A trie walker over an Earley chart, with a budget of item additions.
pub(crate) struct ChartWalker<'a> {
    pub g: &'a Grammar,
    pub chart: &'a mut Chart,
    pub fuel: usize,
    pub limit: usize,
}

impl Walker for ChartWalker<'_> {
    #[inline]
    fn push(&mut self, byte: u8) -> Result<bool, MatchError> {
        let limit = self.limit;
        self.chart
            .push(self.g, byte, &mut self.fuel)
            .map_err(|_| MatchError::Limit { what: "Earley items per mask (Limits::mask_fuel)", limit })
    }

    #[inline]
    fn pop(&mut self) {
        self.chart.pop();
    }
}
