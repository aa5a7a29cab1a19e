//! Context-free constraints: grammar rules (see [`crate::gbnf`]) compiled to
//! per-rule automata over bytes with rule-call edges, parsed by an Earley
//! parser one byte at a time.
//!
//! Each rule body becomes a Thompson automaton (byte ranges, calls, epsilon
//! moves); epsilon moves are closed at compile time, so an Earley item is a
//! `(state, origin)` pair on a byte, call or accept state. Left recursion,
//! ambiguity and empty rules are all handled (nullable calls use the
//! Aycock–Horspool shortcut). Which rules and expressions derive some finite
//! string is decided before building, and only those are compiled, so every
//! state can reach its rule's end and a non-empty Earley set always has a
//! valid continuation: a token is allowed exactly when its bytes leave a
//! non-empty set.
//!
//! The grammar's types are here; each job has a file of its own: `plan`
//! (what derives what, and which rules are inlined), `build` (rules to
//! automata, and their epsilon closure), `steps` (sets of states stepped
//! without the chart, for the token cache), `follow` (FOLLOW sets) and
//! `chart` (the Earley chart).

mod build;
mod chart;
mod follow;
mod plan;
mod steps;

use crate::hash::FastMap;
pub(crate) use chart::{Chart, ChartWalker, Origin};
pub(crate) use follow::FollowSets;
pub(crate) use steps::ShapeScratch;

/// What an automaton state does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Consumes one byte in `lo..=hi`.
    Byte { lo: u8, hi: u8 },
    /// Consumes one byte of any of the ranges `ranges[first..end]` (the first
    /// bytes of a character class's UTF-8 sequences), each with its own
    /// successors: one item instead of one per sequence. With `search`, the
    /// ranges are many (more than [`SHORT_RANGES`]), in order, and any two
    /// the same or apart (as a class's sequences are): those holding a byte
    /// are found by a binary search.
    Ranges { first: u32, end: u32, search: bool },
    /// Parses rule `rule`, then continues.
    Call { rule: u32 },
    /// End of rule `rule`.
    Accept { rule: u32 },
}

/// A state with its epsilon-closed successors (`next` indexes `succ`; a
/// `Ranges` state has none of its own: each range has its own).
#[derive(Debug, Clone, Copy)]
struct Core {
    kind: Kind,
    rule: u32,
    next: (u32, u32),
}

/// One alternative of a [`Kind::Ranges`] state.
#[derive(Debug, Clone, Copy)]
struct ByteRange {
    lo: u8,
    hi: u8,
    next: (u32, u32),
}

#[derive(Debug, Clone)]
struct RuleInfo {
    start: (u32, u32),
    nullable: bool,
}

/// A compiled grammar.
#[derive(Debug)]
pub(crate) struct Grammar {
    core: Vec<Core>,
    succ: Vec<u32>,
    ranges: Vec<ByteRange>,
    rules: Vec<RuleInfo>,
    names: Vec<String>,
    root: u32,
    /// Byte classes: bytes with the same class are taken by the same
    /// states, and each class is a run of consecutive bytes.
    classes: [u8; 256],
    /// States that another state of their rule stands in for, with the
    /// most bytes for which the two take every string alike (see
    /// [`Grammar::stand_in`]).
    stand_ins: FastMap<u32, (u32, u32)>,
    /// Each rule's call states (for its FOLLOW set, without a look at
    /// every state).
    calls: Callers,
}

/// The call states of each rule `r`: `states[at[r]..at[r + 1]]`.
#[derive(Debug, Default)]
struct Callers {
    at: Box<[u32]>,
    states: Box<[u32]>,
}

impl Grammar {
    /// True when the start rule derives no string at all.
    pub fn is_empty(&self) -> bool {
        let (a, b) = self.rules[self.root as usize].start;
        a == b
    }

    /// Approximate heap bytes held.
    pub fn memory(&self) -> usize {
        self.core.len() * std::mem::size_of::<Core>()
            + self.succ.len() * 4
            + self.ranges.len() * std::mem::size_of::<ByteRange>()
            + self.rules.len() * std::mem::size_of::<RuleInfo>()
            + self.names.iter().map(|n| n.len() + 24).sum::<usize>()
            + self.stand_ins.len() * 16
            + (self.calls.at.len() + self.calls.states.len()) * 4
    }

    /// Successor lists are told apart by their start, below this.
    pub fn list_count(&self) -> usize {
        self.succ.len()
    }

    /// How many states another stands in for.
    #[cfg(test)]
    pub fn stand_in_count(&self) -> usize {
        self.stand_ins.len()
    }

    /// The number of byte classes.
    pub fn class_count(&self) -> usize {
        self.classes[255] as usize + 1
    }

    /// The class of `byte` (see `classes`).
    #[inline]
    pub fn class(&self, byte: u8) -> u8 {
        self.classes[byte as usize]
    }

    /// The states of successor list `r`.
    #[inline]
    pub fn list(&self, r: (u32, u32)) -> &[u32] {
        &self.succ[r.0 as usize..r.1 as usize]
    }
}

/// Most ranges of a `Ranges` state taken one by one rather than by a
/// binary search.
const SHORT_RANGES: usize = 8;

/// Adds bytes `lo..=hi` to a 256-bit set.
fn mark(set: &mut [u64; 4], lo: u8, hi: u8) {
    // A word at a time: the part of each word's 64 bytes in the range.
    for (w, word) in set.iter_mut().enumerate() {
        let first = w as u32 * 64;
        let (a, b) = (u32::from(lo).max(first), u32::from(hi).min(first + 63));
        if a <= b {
            *word |= (u64::MAX >> (63 - (b - a))) << (a - first);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gbnf;
    use proptest::prelude::*;

    #[test]
    fn tail_recursion_becomes_a_loop() {
        // `items` and `chars` call themselves last: both become loops, so
        // nothing is called and everything is inlined into `root`.
        let src = "root ::= \"[\" items \"]\"\nitems ::= item \",\" items | item\nitem ::= \"'\" chars \"'\"\nchars ::= [a-z] chars | \"\"\n";
        let g = Grammar::new(src, 1000).unwrap();
        assert_eq!(g.names, ["root"]);
        // So do rules that call each other last (`even` and `odd`).
        let src = "root ::= \"<\" even \">\"\neven ::= \"\" | \"a\" odd\nodd ::= \"a\" even\n";
        let g = Grammar::new(src, 1000).unwrap();
        assert_eq!(g.names, ["root"]);
        // A rule too large to copy is inlined where it is referenced once,
        // and called where it is referenced twice; an automaton (calling
        // nothing once inlined) is copied up to a larger size than a rule
        // that calls.
        let words = |n: usize| (0..n).map(|i| format!("\"w{i}\"")).collect::<Vec<_>>().join(" | ");
        let names = |body: &str| {
            let src = format!("root ::= \"<\" r \">\" r\nr ::= {body}\nrec ::= \"(\" rec \")\" | \"x\"\n");
            Grammar::new(&src, 1_000_000).unwrap().names
        };
        let g = Grammar::new(&format!("root ::= \"<\" r \">\"\nr ::= {}\n", words(1500)), 1_000_000).unwrap();
        assert_eq!(g.names, ["root"]);
        assert_eq!(names(&words(1500)), ["root", "r"]);
        assert_eq!(names(&words(300)), ["root"]);
        assert_eq!(names(&format!("{} | rec", words(300))), ["root", "r", "rec"]);
        // A self-reference elsewhere than at the end stays a call.
        let g = Grammar::new("root ::= \"(\" root \")\" | \"x\"", 1000).unwrap();
        assert!(g.core.iter().any(|c| c.kind == Kind::Call { rule: 0 }));
    }

    #[test]
    fn each_class_keeps_its_own_characters() {
        // An empty class read right before another starts at the same place
        // in the parsed ranges; expansions are kept per class, not per place.
        assert!(Grammar::new("root ::= [^\\u0000-\\U0010FFFF] [b]", 100).unwrap().is_empty());
        let g = Grammar::new("root ::= [^\\u0000-\\U0010FFFF] \"a\" | [b]", 100).unwrap();
        assert!(chart_accepts(&g, b"b") && !chart_accepts(&g, b"a"));
    }

    /// Every state of a compiled grammar can reach its rule's end: the
    /// builder compiles only what derives something, so dead alternatives,
    /// rules that derive nothing, empty and surrogate-only classes and
    /// repetitions of them leave no state behind.
    #[test]
    fn every_state_can_finish() {
        let grammars = [
            "root ::= \"a\" dead | \"b\" [^\\u0000-\\U0010FFFF] | \"c\" x\ndead ::= \"d\" dead\nx ::= \"x\" | x \"y\" | dead",
            "root ::= (\"a\" never)* \"b\" (never \"c\")? \"d\" never{0,3}\nnever ::= [^\\u0000-\\U0010FFFF]",
            "root ::= e\ne ::= e \"+\" t | t\nt ::= \"(\" e \")\" | [0-9]+ | u\nu ::= \"-\" u",
            "root ::= a\na ::= \"\" | \"x\" a | b a\nb ::= \"y\" b",
        ];
        // Classes of surrogates only (no GBNF text writes them): `s` and
        // `e` around none of them, or one that cannot be.
        let mut surrogates = gbnf::Rules::default();
        let root = surrogates.add_rule("root".into());
        let (s, e, none) = (surrogates.literal(b"s"), surrogates.literal(b"e"), surrogates.class(&[(0xD800, 0xDFFF)]));
        let many = surrogates.repeat(none, 0, None);
        let (around, one) = (surrogates.seq(&[s, many, e]), surrogates.seq(&[s, none, e]));
        surrogates.rules[0].body = surrogates.alt(&[around, one]);
        let built = [Grammar::from_rules(&surrogates, root, 100).unwrap()];
        assert!(chart_accepts(&built[0], b"se") && !chart_accepts(&built[0], b"s"));
        let read = grammars.iter().map(|src| Grammar::new(src, 10_000).unwrap());
        for (src, g) in grammars.iter().chain(["(surrogates)"].iter()).zip(read.chain(built)) {
            // Backwards from each rule's end over successor lists; a call
            // continues (every compiled rule derives something).
            let mut preds: Vec<Vec<usize>> = vec![Vec::new(); g.core.len()];
            for (s, c) in g.core.iter().enumerate() {
                let lists: Vec<(u32, u32)> = match c.kind {
                    Kind::Ranges { first, end, .. } => g.ranges[first as usize..end as usize].iter().map(|r| r.next).collect(),
                    _ => vec![c.next],
                };
                for l in lists {
                    g.list(l).iter().for_each(|&t| preds[t as usize].push(s));
                }
            }
            let mut live = vec![false; g.core.len()];
            let mut todo: Vec<usize> = (0..g.core.len()).filter(|&s| matches!(g.core[s].kind, Kind::Accept { .. })).collect();
            while let Some(s) = todo.pop() {
                if !std::mem::replace(&mut live[s], true) {
                    todo.extend(&preds[s]);
                }
            }
            let dead: Vec<_> = (0..g.core.len()).filter(|&s| !live[s]).map(|s| g.core[s]).collect();
            assert!(dead.is_empty(), "{src}: {dead:?}");
            for r in &g.rules {
                assert!(r.start.0 < r.start.1, "{src}: a rule with no start");
            }
        }
        assert!(chart_accepts(&Grammar::new(grammars[0], 10_000).unwrap(), b"cxyy"));
        assert!(Grammar::new("root ::= \"a\" root", 100).unwrap().is_empty());
    }

    /// Automaton edges of several states that lead to one state on one
    /// expression compile one copy of it, which each of them enters.
    #[test]
    fn edges_alike_share_one_copy() {
        // 0 -"0"-> 1, and both 0 and 1 -[a-z]-> 2, which accepts.
        let mut p = gbnf::Rules::default();
        let root = p.add_rule("root".into());
        let (zero, letter) = (p.literal(b"0"), p.class(&[(u32::from(b'a'), u32::from(b'z'))]));
        let states = [(false, 0, 2), (false, 2, 3), (true, 3, 3)];
        let auto = p.automaton(&states, &[(zero, 1), (letter, 2), (letter, 2)], &[]);
        p.rules[root as usize].body = auto;
        let g = Grammar::from_rules(&p, root, 100).unwrap();
        let letters = g.core.iter().filter(|c| c.kind == Kind::Byte { lo: b'a', hi: b'z' }).count();
        assert_eq!(letters, 1);
        for (w, ok) in [(&b"a"[..], true), (b"0q", true), (b"0", false), (b"ab", false), (b"00a", false)] {
            assert_eq!(chart_accepts(&g, w), ok, "{:?}", std::str::from_utf8(w));
        }
    }

    #[test]
    fn mark_sets_the_bytes_of_a_range() {
        for (lo, hi) in [(0u8, 0u8), (0, 255), (63, 64), (5, 200), (128, 191), (255, 255), (64, 127)] {
            let mut set = [0u64; 4];
            mark(&mut set, lo, hi);
            let bytes: Vec<u8> = (0..=255u8).filter(|&b| set[(b / 64) as usize] >> (b % 64) & 1 == 1).collect();
            assert_eq!(bytes, (lo..=hi).collect::<Vec<u8>>(), "{lo}..={hi}");
        }
    }

    #[test]
    fn follow_sets() {
        // `e` is recursive (so called); `t` ends `e` and may be empty.
        let src = "root ::= e \";\" | \"[\" e t \"]\"\ne ::= \"(\" e \")\" | \"x\"\nt ::= \"!\"?\n";
        let g = Grammar::new(src, 1000).unwrap();
        let e = g.names.iter().position(|n| n == "e").unwrap();
        let mut follow = g.follow_sets();
        let of_e = follow.of(&g, e as u32);
        let bytes: Vec<u8> = (0..=255u8).filter(|&b| of_e[(b / 64) as usize] >> (b % 64) & 1 == 1).collect();
        assert_eq!(bytes, b"!);]");
        assert_eq!(follow.of(&g, 0), [0; 4]);
    }

    /// FOLLOW sets do not depend on the order rules are asked in: a known
    /// set stands for those of the rules that end its rule.
    #[test]
    fn follow_sets_in_any_order() {
        let src = "root ::= v\nv ::= o | a | s | \"1\"\no ::= \"{\" (m (\",\" m)*)? \"}\"\nm ::= s \":\" v\na ::= \"[\" (v (\",\" v)*)? \"]\" t\nt ::= \"!\"? | v \";\"\ns ::= \"\\\"\" [a-z]* \"\\\"\" | \"<\" s \">\"\n";
        let g = Grammar::new(src, 1000).unwrap();
        let n = g.names.len() as u32;
        assert!(n > 3, "{:?}", g.names);
        let alone: Vec<[u64; 4]> = (0..n).map(|r| g.follow_sets().of(&g, r)).collect();
        for order in [(0..n).collect::<Vec<_>>(), (0..n).rev().collect()] {
            let mut follow = g.follow_sets();
            for &r in &order {
                assert_eq!(follow.of(&g, r), alone[r as usize], "rule {}", g.names[r as usize]);
            }
        }
    }

    /// An automaton over `a b c` written as rules, one per state, each
    /// alternative ending in a reference to the next state (how the JSON
    /// Schema compiler writes pattern automata), plus `"d"` from every state.
    fn automaton_rules(edges: &[(u8, u8, u8)], accepting: &[bool]) -> String {
        let mut src = String::from("root ::= s0 | \"<\" s0 \">\" s0\n");
        for s in 0..accepting.len() as u8 {
            let mut alts = vec!["\"d\"".to_string()];
            alts.extend(edges.iter().filter(|e| e.0 == s).map(|e| format!("\"{}\" s{}", (b'a' + e.1) as char, e.2)));
            if accepting[s as usize] {
                alts.push("\"\"".into());
            }
            src += &format!("s{s} ::= {}\n", alts.join(" | "));
        }
        src
    }

    /// Whether the automaton accepts `w` from state 0 (simulated on state sets).
    fn automaton_accepts(edges: &[(u8, u8, u8)], accepting: &[bool], w: &[u8]) -> bool {
        let mut at = vec![0u8];
        for (i, &b) in w.iter().enumerate() {
            if b == b'd' {
                return i + 1 == w.len() && !at.is_empty();
            }
            at = edges.iter().filter(|e| at.contains(&e.0) && b'a' + e.1 == b).map(|e| e.2).collect();
        }
        at.iter().any(|&s| accepting[s as usize])
    }

    fn chart_accepts(g: &Grammar, w: &[u8]) -> bool {
        let mut chart = Chart::new(g);
        let mut fuel = usize::MAX;
        w.iter().all(|&b| chart.push(g, b, &mut fuel).unwrap()) && chart.is_accepting(g)
    }

    proptest! {
        /// Right-linear rules (tail references, mutual recursion included)
        /// are inlined into loops and keep their language, whether their
        /// reference ends the caller's body or not.
        #[test]
        fn right_linear_rules_keep_their_language(
            edges in prop::collection::vec((0..4u8, 0..3u8, 0..4u8), 0..10),
            accepting in prop::collection::vec(any::<bool>(), 4),
            words in prop::collection::vec(prop::collection::vec(prop::sample::select(b"abcd".to_vec()), 0..8), 1..8),
        ) {
            let g = Grammar::new(&automaton_rules(&edges, &accepting), 100_000).unwrap();
            prop_assert_eq!(&g.names, &["root"]);
            for (i, w) in words.iter().enumerate() {
                let ok = automaton_accepts(&edges, &accepting, w);
                prop_assert_eq!(chart_accepts(&g, w), ok);
                let v = &words[(i + 1) % words.len()];
                let wrapped = [&b"<"[..], w, b">", v].concat();
                prop_assert_eq!(chart_accepts(&g, &wrapped), ok && automaton_accepts(&edges, &accepting, v));
            }
        }

        /// Sets large enough to be indexed (`INDEXED` items and more) keep
        /// the language: many alternatives against the same regex.
        #[test]
        fn large_sets_keep_the_language(
            words in prop::collection::vec(prop::collection::vec(prop::sample::select(b"abc".to_vec()), 1..4), 40..90),
            texts in prop::collection::vec(prop::collection::vec(prop::sample::select(b"abc".to_vec()), 0..10), 1..20),
        ) {
            let words: Vec<String> = words.into_iter().map(|w| String::from_utf8(w).unwrap()).collect();
            let alts: Vec<String> = words.iter().enumerate().map(|(i, w)| format!("\"{w}\" w{i}")).collect();
            let mut src = format!("root ::= ({})+\n", alts.join(" | "));
            // Each word is followed by its own `c*` (a rule inlined as a loop).
            for i in 0..words.len() {
                src += &format!("w{i} ::= \"\" | \"c\" w{i}\n");
            }
            let g = Grammar::new(&src, 1_000_000).unwrap();
            let re = regex_automata::meta::Regex::new(&format!("^(?:(?:{})c*)+$", words.join("|"))).unwrap();
            for t in &texts {
                prop_assert_eq!(chart_accepts(&g, t), re.is_match(t.as_slice()));
            }
        }

        /// Bounded repetitions keep their language, whatever order the
        /// bounds come in: those of one expression with one continuation
        /// share their optional copies (see `Builder::chains`), and copies
        /// are replicated from one compiled (see `Builder::copies`), here
        /// with an inlined rule, a loop and a class of two-byte characters
        /// (whose last bytes' states classes share by continuation) inside.
        #[test]
        fn bounded_repetitions_keep_their_language(
            bounds in prop::collection::vec((0..4u32, 0..5u32), 3),
            words in prop::collection::vec((0..3usize, prop::collection::vec(0..4usize, 0..8)), 1..10),
            texts in prop::collection::vec(prop::collection::vec(prop::sample::select(b"abxyzw!\xc3\xa9".to_vec()), 0..12), 1..10),
        ) {
            let bounds: Vec<(u32, u32)> = bounds.into_iter().map(|(min, extra)| (min, min + extra)).collect();
            let [(a, b), (c, d), (e, f)] = bounds[..] else { unreachable!() };
            let t = "t ::= \"x\" | \"yz\" | \"w\" u | [\\u00e0-\\u00ef]\nu ::= \"w\" u | \"\"\n";
            let src = format!("root ::= (\"a\" t{{{a},{b}}} | \"b\" t{{{c},{d}}} | t{{{e},{f}}}) ([\\u00e9] | \"!\")\n{t}");
            let g = Grammar::new(&src, 1_000_000).unwrap();
            let t = "(?:x|yz|w+|[à-ï])";
            let re = format!("^(?:a{t}{{{a},{b}}}|b{t}{{{c},{d}}}|{t}{{{e},{f}}})(?:é|!)$");
            let re = regex_automata::meta::Regex::new(&re).unwrap();
            // Words of the grammar (some too long or too short) and random texts.
            let made = words.iter().map(|(alt, picks)| {
                let mut w = [&b"a"[..], b"b", b""][*alt].to_vec();
                picks.iter().for_each(|&p| w.extend_from_slice([&b"x"[..], b"yz", b"ww", "\u{e9}".as_bytes()][p]));
                w.push(b'!');
                w
            });
            for t in made.chain(texts) {
                prop_assert_eq!(chart_accepts(&g, &t), re.is_match(t.as_slice()), "{}", String::from_utf8_lossy(&t));
            }
        }

        /// Masks over inlined right-linear rules equal taking each token on
        /// the parser, along random walks.
        #[test]
        fn right_linear_masks_equal_the_parser(
            edges in prop::collection::vec((0..4u8, 0..3u8, 0..4u8), 0..10),
            accepting in prop::collection::vec(any::<bool>(), 4),
            picks in prop::collection::vec(any::<prop::sample::Index>(), 1..10),
        ) {
            use crate::{Constraint, Matcher};
            let vocab = crate::matcher::short_strings_vocab(b"abcd<>");
            let c = Constraint::gbnf(&automaton_rules(&edges, &accepting)).unwrap();
            let mut m = Matcher::new(&c, &vocab);
            let mut mask = vec![0u32; vocab.mask_words()];
            for pick in picks {
                let allowed = crate::matcher::mask_equals_parser(&mut m, &mut mask);
                prop_assert!(allowed.is_ok(), "the mask and the parser disagree on token {:?}", allowed);
                let allowed = allowed.unwrap();
                if allowed.is_empty() {
                    break;
                }
                m.accept_token(allowed[pick.index(allowed.len())]).unwrap();
            }
        }
    }
}
