//! Deciding before building: each rule's calls and the call graph's
//! components, what each rule and expression derives ([`Facts`]), and
//! which rules are compiled inline ([`plan`]).

use crate::gbnf::{self, Expr};
use crate::graph::components;

/// Largest estimated automaton size (in states) of a rule compiled inline
/// at each of its references. Inlining keeps lexical structure (strings,
/// numbers, whitespace, pattern automata) inside one rule
/// automaton, which is what lets the token cache decide most tokens without
/// context.
const INLINE_MAX: usize = 1000;

/// The same for a rule that calls no rule once inlined (an automaton, such
/// as a pattern): called, it would take the token cache's walks off its DFA
/// onto Earley steps at every trie node, so copying it is worth more.
const INLINE_MAX_AUTOMATON: usize = 4000;

/// Estimated automaton states of `e` (as [`Builder::expr`] compiles it),
/// with `r(rule, tail)` the cost of a reference; `tail` is true when the
/// reference continues where `e` does (it ends its rule's body).
///
/// [`Builder::expr`]: super::build::Builder::expr
fn cost(p: &gbnf::Rules, e: u32, tail: bool, r: &mut dyn FnMut(u32, bool) -> usize, count: &mut [usize]) -> usize {
    match p.expr(e) {
        Expr::Seq { first, end } => {
            let last = (end - first).saturating_sub(1) as usize;
            p.kids(first, end).iter().enumerate().fold(0, |s, (i, &e)| s.saturating_add(cost(p, e, tail && i == last, r, count)))
        }
        Expr::Alt { first, end } => p.kids(first, end).iter().fold(1, |s, &e| s.saturating_add(cost(p, e, tail, r, count))),
        Expr::Repeat { expr, min, max } => match max {
            // A loop state, the loop body and `min` copies before it.
            None => cost(p, expr, false, r, count).saturating_mul(min as usize + 1).saturating_add(1),
            Some(0) => 0,
            // One copy continues where the repetition does; the others do not.
            Some(max) => {
                // Each estimate is taken once: nested repetitions stay linear.
                let other = cost(p, expr, false, r, count);
                let last = if tail { cost(p, expr, true, r, count) } else { other };
                last.saturating_add(other.saturating_mul(max as usize - 1)).saturating_add((max - min.min(max)) as usize)
            }
        },
        Expr::Literal { first, end } => (end - first) as usize,
        Expr::Class { first, end } => 1 + 4 * (end - first) as usize,
        Expr::Ref { rule } => r(rule, tail),
        // A state each, and its edges.
        Expr::Automaton { first, end } => edge_exprs(p, first, end, count)
            .into_iter()
            .fold((end - first) as usize, |sum, (e, n)| sum.saturating_add(cost(p, e, false, r, count).saturating_mul(n))),
    }
}

/// The distinct expressions on the edges of automaton `states[first..end]`,
/// each with how many edges carry it, in the order met: the walks above
/// take each once (an automaton's edges mostly share a few expressions, a
/// character class or a member). `count` is zero per expression, and left so.
fn edge_exprs(p: &gbnf::Rules, first: u32, end: u32, count: &mut [usize]) -> Vec<(u32, usize)> {
    let mut out: Vec<(u32, usize)> = Vec::new();
    for e in p.states(first, end).iter().flat_map(|s| p.edges(s)) {
        let c = &mut count[e.expr as usize];
        if *c == 0 {
            out.push((e.expr, 0));
        }
        *c += 1;
    }
    for (e, n) in &mut out {
        *n = std::mem::take(&mut count[*e as usize]);
    }
    out
}

/// Calls `f(rule, n)` for each reference in `e`, compiled `n` times when
/// `e` is compiled `times` times (for the references on an automaton's
/// edges, once per distinct edge expression, `n` counting its edges).
fn copies(p: &gbnf::Rules, e: u32, times: usize, f: &mut dyn FnMut(u32, usize), count: &mut [usize]) {
    match p.expr(e) {
        Expr::Seq { first, end } | Expr::Alt { first, end } => p.kids(first, end).iter().for_each(|&e| copies(p, e, times, f, count)),
        Expr::Repeat { expr, min, max } => {
            let n = max.map_or(min as usize + 1, |m| m as usize);
            copies(p, expr, times.saturating_mul(n), f, count)
        }
        Expr::Ref { rule } => f(rule, times),
        Expr::Automaton { first, end } => {
            edge_exprs(p, first, end, count).into_iter().for_each(|(e, n)| copies(p, e, times.saturating_mul(n), f, count))
        }
        Expr::Literal { .. } | Expr::Class { .. } => {}
    }
}

/// Per source rule, the rules it references: `(rule, n)`, each rule once,
/// compiled `n` times per copy of the body (see [`copies`]); rule `q`'s are
/// `list[at[q]..at[q + 1]]`.
pub(super) struct Calls {
    at: Vec<usize>,
    list: Vec<(u32, usize)>,
}

impl Calls {
    pub(super) fn new(p: &gbnf::Rules) -> Calls {
        let mut c = Calls { at: vec![0], list: Vec::new() };
        // Where each rule's entry is in `list` (an entry of this rule's
        // when past its first): references to one rule are counted together.
        let mut slot = vec![usize::MAX; p.rules.len()];
        let mut count = vec![0; p.expr_count()];
        for r in &p.rules {
            let own = c.list.len();
            copies(p, r.body, 1, &mut |t, n| match slot[t as usize] {
                at if at != usize::MAX && at >= own => c.list[at].1 = c.list[at].1.saturating_add(n),
                _ => {
                    slot[t as usize] = c.list.len();
                    c.list.push((t, n));
                }
            }, &mut count);
            c.at.push(c.list.len());
        }
        c
    }

    fn of(&self, q: usize) -> &[(u32, usize)] {
        &self.list[self.at[q]..self.at[q + 1]]
    }
}

/// The strongly connected components of the rules' call graph, callees first.
pub(super) struct Components {
    /// Per rule, its component.
    of: Vec<usize>,
    /// Per component, its rules.
    members: Vec<Vec<u32>>,
}

impl Components {
    pub(super) fn new(rules: usize, calls: &Calls) -> Components {
        let (of, n) = components(rules, 0..rules, |q, i| calls.of(q).get(i).map(|c| c.0 as usize));
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (q, &c) in of.iter().enumerate() {
            members[c].push(q as u32);
        }
        Components { of, members }
    }
}

/// What each rule and expression derives: some finite string (productive),
/// the empty string (nullable). Decided on the rules, before any automaton
/// is built, so that the builder compiles only what can finish: a
/// productive expression compiled to continue at a state from which its
/// rule's end is reachable makes only such states.
pub(super) struct Facts {
    pub(super) productive: Vec<bool>,
    pub(super) nullable: Vec<bool>,
    /// Per expression: `(round, productive, nullable)` as last worked out
    /// (see [`Facts::expr`]).
    exprs: Vec<(u32, bool, bool)>,
    round: u32,
    /// Per round: whether it was a component's last, whose facts are final
    /// (so are the expressions worked out in it).
    last: Vec<bool>,
    /// Per automaton state: whether an accepting state is reachable from
    /// it over edges that derive something (as its automaton's expression
    /// was last worked out).
    pub(super) live: Vec<bool>,
    /// Scratch: automaton edges backwards (see [`Facts::automaton`]), and
    /// a work list.
    into: (Vec<u32>, Vec<u32>),
    todo: Vec<u32>,
}

impl Facts {
    /// The facts of every rule: components callees first, each until its
    /// rules' facts no longer change (once for a rule that does not
    /// recurse).
    pub(super) fn new(p: &gbnf::Rules, calls: &Calls, comps: &Components) -> Facts {
        let n = p.rules.len();
        let mut f = Facts {
            productive: vec![false; n],
            nullable: vec![false; n],
            exprs: vec![(u32::MAX, false, false); p.expr_count()],
            round: 0,
            last: Vec::new(),
            live: vec![false; p.state_count()],
            into: (Vec::new(), Vec::new()),
            todo: Vec::new(),
        };
        for members in &comps.members {
            loop {
                f.round += 1;
                f.last.push(false);
                let mut changed = false;
                for &q in members {
                    let (prod, null) = f.expr(p, p.rules[q as usize].body);
                    let q = q as usize;
                    changed |= prod != f.productive[q] || null != f.nullable[q];
                    (f.productive[q], f.nullable[q]) = (prod, null);
                }
                let recursive = members.len() > 1 || calls.of(members[0] as usize).iter().any(|c| c.0 == members[0]);
                if !changed || !recursive {
                    f.last[f.round as usize - 1] = true;
                    break;
                }
            }
        }
        f
    }

    /// Whether expression `e` is productive and nullable, with the rules'
    /// facts as they stand (worked out once per round, and once for good in
    /// a component's last round).
    fn expr(&mut self, p: &gbnf::Rules, e: u32) -> (bool, bool) {
        let (round, prod, null) = self.exprs[e as usize];
        if round == self.round || self.last.get(round.wrapping_sub(1) as usize) == Some(&true) {
            return (prod, null);
        }
        let out = match p.expr(e) {
            Expr::Literal { first, end } => (true, first == end),
            Expr::Class { first, end } => (p.ranges(first, end).iter().any(|&r| has_scalar(r)), false),
            Expr::Seq { first, end } => p.kids(first, end).iter().fold((true, true), |(a, b), &k| {
                let (x, y) = self.expr(p, k);
                (a && x, b && y)
            }),
            Expr::Alt { first, end } => p.kids(first, end).iter().fold((false, false), |(a, b), &k| {
                let (x, y) = self.expr(p, k);
                (a || x, b || y)
            }),
            Expr::Repeat { expr, min, .. } => {
                let (x, y) = self.expr(p, expr);
                (min == 0 || x, min == 0 || y)
            }
            Expr::Ref { rule } => (self.productive[rule as usize], self.nullable[rule as usize]),
            Expr::Automaton { first, end } => self.automaton(p, first, end),
        };
        self.exprs[e as usize] = (self.round, out.0, out.1);
        out
    }

    /// Whether `e` derives some finite string (its rules' facts final).
    pub(super) fn productive(&mut self, p: &gbnf::Rules, e: u32) -> bool {
        self.expr(p, e).0
    }

    /// Whether `e` derives the empty string (its rules' facts final).
    pub(super) fn nullable(&mut self, p: &gbnf::Rules, e: u32) -> bool {
        self.expr(p, e).1
    }

    /// At most as many bytes as the shortest string `e` derives (its
    /// rules' facts final): exact for literals, classes and what they
    /// make, one for a reference or an automaton that is not nullable.
    pub(super) fn fewest_bytes(&mut self, p: &gbnf::Rules, e: u32) -> u32 {
        match p.expr(e) {
            _ if self.nullable(p, e) => 0,
            Expr::Literal { first, end } => end - first,
            Expr::Class { first, end } => p.ranges(first, end).iter().filter(|&&r| has_scalar(r)).map(|&(lo, _)| utf8_len(lo)).min().unwrap_or(1),
            Expr::Seq { first, end } => p.kids(first, end).iter().fold(0u32, |n, &k| n.saturating_add(self.fewest_bytes(p, k))),
            Expr::Alt { first, end } => p.kids(first, end).iter().map(|&k| self.fewest_bytes(p, k)).min().unwrap_or(0),
            Expr::Repeat { expr, min, .. } => min.saturating_mul(self.fewest_bytes(p, expr)),
            Expr::Ref { .. } | Expr::Automaton { .. } => 1,
        }
    }

    /// Whether `e` holds a loop of its own (an unbounded repetition, or an
    /// automaton), not counting the rules it calls.
    pub(super) fn loops(p: &gbnf::Rules, e: u32) -> bool {
        match p.expr(e) {
            Expr::Seq { first, end } | Expr::Alt { first, end } => p.kids(first, end).iter().any(|&k| Facts::loops(p, k)),
            Expr::Repeat { max: None, .. } | Expr::Automaton { .. } => true,
            Expr::Repeat { expr, .. } => Facts::loops(p, expr),
            Expr::Literal { .. } | Expr::Class { .. } | Expr::Ref { .. } => false,
        }
    }

    /// Whether automaton `states[first..end]` is productive and nullable;
    /// its states' [`Facts::live`] flags on the way.
    fn automaton(&mut self, p: &gbnf::Rules, first: u32, end: u32) -> (bool, bool) {
        let states = p.states(first, end);
        // Live: backwards from the accepting states over productive edges
        // (`into`: per state, the states with such an edge into it, at
        // `into[at[t]..at[t + 1]]`).
        let mut into = std::mem::take(&mut self.into);
        let (at, from) = (&mut into.0, &mut into.1);
        at.clear();
        at.resize(states.len() + 2, 0);
        from.clear();
        for state in states {
            for edge in p.edges(state) {
                if self.expr(p, edge.expr).0 {
                    at[edge.to as usize + 2] += 1;
                }
            }
        }
        for t in 2..at.len() {
            at[t] += at[t - 1];
        }
        from.resize(at[states.len() + 1] as usize, 0);
        for (i, state) in states.iter().enumerate() {
            for edge in p.edges(state) {
                if self.expr(p, edge.expr).0 {
                    let slot = &mut at[edge.to as usize + 1];
                    from[*slot as usize] = i as u32;
                    *slot += 1;
                }
            }
        }
        let live = &mut self.live[first as usize..end as usize];
        live.fill(false);
        let mut todo = std::mem::take(&mut self.todo);
        todo.clear();
        todo.extend((0..states.len() as u32).filter(|&i| states[i as usize].accept));
        while let Some(i) = todo.pop() {
            if !std::mem::replace(&mut live[i as usize], true) {
                todo.extend_from_slice(&from[at[i as usize] as usize..at[i as usize + 1] as usize]);
            }
        }
        let productive = live[0];
        // Nullable: an accepting state reached from the first over nullable
        // edges.
        let mut seen = vec![false; states.len()];
        let mut nullable = false;
        todo.push(0);
        while let Some(i) = todo.pop() {
            if std::mem::replace(&mut seen[i as usize], true) {
                continue;
            }
            let state = &states[i as usize];
            nullable |= state.accept;
            for edge in p.edges(state) {
                if !seen[edge.to as usize] && self.expr(p, edge.expr).1 {
                    todo.push(edge.to);
                }
            }
        }
        (self.into, self.todo) = (into, todo);
        (productive, nullable)
    }
}

/// The UTF-8 length of the first character from scalar `c` on (past the
/// surrogates).
fn utf8_len(c: u32) -> u32 {
    match c {
        0..0x80 => 1,
        0x80..0x800 => 2,
        0x800..0x10000 => 3,
        _ => 4,
    }
}

/// Whether scalar range `r` holds a character (not only surrogates).
fn has_scalar(r: (u32, u32)) -> bool {
    r.0 <= r.1 && (r.0 < 0xD800 || r.1 > 0xDFFF)
}

/// Rules a copy of a component holds, `(rule, cost)`, continued by those of
/// the component named (see [`plan`]).
type Held = (Vec<(u32, usize)>, Option<usize>);

/// Decides which source rules are compiled inline at their references:
/// those whose recursion, if any, is right-linear (inside their strongly
/// connected component every reference ends its rule's body, so the inlined
/// copies close into loops through [`Builder::memo`]) and whose inlined copy
/// is estimated at most [`INLINE_MAX`] states ([`INLINE_MAX_AUTOMATON`] when
/// the copy calls nothing), or that are referenced once (inlining them
/// copies nothing). A copy holds, once each, the
/// rules reached through tail references (they share one continuation) and
/// a copy of each rule referenced elsewhere.
///
/// [`Builder::memo`]: super::build::Builder::memo
pub(super) fn plan(p: &gbnf::Rules, calls: &Calls, comps: &Components) -> Vec<bool> {
    let rules = &p.rules;
    let (comp, members) = (&comps.of, &comps.members);
    let ncomp = members.len();
    // Per component: how many copies of references from outside it compile.
    let mut outside = vec![0usize; ncomp];
    for q in 0..rules.len() {
        for &(t, n) in calls.of(q) {
            let t = t as usize;
            if comp[t] != comp[q] {
                outside[comp[t]] = outside[comp[t]].saturating_add(n);
            }
        }
    }
    let mut inline = vec![false; rules.len()];
    // Per inlined component: the rules one copy holds once, with their own
    // cost (a list, continued by the list of the component it names: a
    // chain of rules each ending in the next shares one list), and whether
    // a copy calls nothing (an automaton). A copy above
    // [`INLINE_MAX_AUTOMATON`] keeps no list: any copy holding it is too
    // large to inline at every reference as well.
    let mut shared: Vec<Held> = vec![(Vec::new(), None); ncomp];
    let mut shared_cost = vec![0usize; ncomp];
    let mut regular = vec![false; ncomp];
    let mut mark = vec![usize::MAX; rules.len()];
    let mut count = vec![0; p.expr_count()];
    for c in 0..ncomp {
        let cyclic = members[c].len() > 1 || members[c].iter().any(|&q| calls.of(q as usize).iter().any(|c| c.0 == q));
        let (mut linear, mut tails, mut calls) = (true, Vec::new(), false);
        let mut held: Vec<(u32, usize)> = Vec::new();
        for &q in &members[c] {
            let own = cost(p, rules[q as usize].body, true, &mut |r, tail| {
                let r = r as usize;
                if comp[r] == c {
                    linear &= tail;
                    0
                } else if !inline[r] {
                    calls = true;
                    1
                } else if tail {
                    calls |= !regular[comp[r]];
                    tails.push(comp[r]);
                    0
                } else {
                    calls |= !regular[comp[r]];
                    shared_cost[comp[r]]
                }
            }, &mut count);
            held.push((q, own));
        }
        tails.sort_unstable();
        tails.dedup();
        let own = held.iter().fold(0usize, |s, x| s.saturating_add(x.1));
        let mut rest = None;
        let size = if tails.iter().any(|&t| shared_cost[t] > INLINE_MAX_AUTOMATON) {
            usize::MAX
        } else if let [t] = tails[..] {
            // One tail (whose rules are not this component's): its list continues this one.
            rest = Some(t);
            own.saturating_add(shared_cost[t])
        } else {
            // The union of the tails' lists (`mark` says which list last took a rule).
            for &(q, _) in &held {
                mark[q as usize] = c;
            }
            for t in tails {
                let mut list = Some(t);
                while let Some(k) = list {
                    for &(q, cost) in &shared[k].0 {
                        if std::mem::replace(&mut mark[q as usize], c) != c {
                            held.push((q, cost));
                        }
                    }
                    list = shared[k].1;
                }
            }
            held.iter().fold(0usize, |s, x| s.saturating_add(x.1))
        };
        // Referenced once, a component is never copied: inline it at any size.
        let max = if calls { INLINE_MAX } else { INLINE_MAX_AUTOMATON };
        if (!cyclic || linear) && (size <= max || outside[c] == 1) {
            members[c].iter().for_each(|&q| inline[q as usize] = true);
            if size <= INLINE_MAX_AUTOMATON {
                shared[c] = (held, rest);
            }
            shared_cost[c] = size;
            regular[c] = !calls;
        }
    }
    inline
}
