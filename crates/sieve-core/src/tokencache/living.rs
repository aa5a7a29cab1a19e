//! Whether every string of the slice's characters keeps a group alive,
//! decided on the rule's automaton a successor list at a time.

use super::characters::ByteSequence;
use crate::grammar::Grammar;
use crate::hash::FastMap;

/// What [`Living::lives`] learnt of a grammar's successor lists, for the
/// characters of the string slice (as the DFA's own facts are).
#[derive(Debug, Default)]
pub(super) struct Living {
    /// Per list (by its start in the grammar's successor lists): `UNSEEN`,
    /// `MET` (in the exploration under way), `LIVES` or `MAY_DIE`.
    known: Vec<u8>,
    /// Per list reached part-way through a character (by its start, the
    /// character's sequence and the place of the byte in it): the one list
    /// the character's remaining bytes lead it to, every byte taken; `None`
    /// where they lead to several. Characters of more than one byte mostly
    /// go where the others of their class go, through the same lists.
    tails: FastMap<(u32, u32, u8), Option<(u32, u32)>>,
}

/// What [`Living::known`] holds for a list.
const UNSEEN: u8 = 0;
const MET: u8 = 1;
const LIVES: u8 = 2;
const MAY_DIE: u8 = 3;

/// Most lists [`Living::lives`] explores.
const MAX_LIVING: usize = 2048;

/// Most lists in a row that [`Living::lives`] follows where each leads
/// to one other list only.
const MAX_CHAIN: usize = 8;

/// The lists characters lead to, as far as seen: none yet, one, several.
#[derive(Clone, Copy, PartialEq)]
enum Sole {
    Unknown,
    One((u32, u32)),
    Several,
}

impl Sole {
    fn add(&mut self, to: (u32, u32)) {
        *self = match *self {
            Sole::Unknown => Sole::One(to),
            Sole::One(t) if t == to => Sole::One(t),
            _ => Sole::Several,
        };
    }
}

impl Living {
    pub(super) fn memory(&self) -> usize {
        self.known.len() + self.tails.len() * 24
    }

    /// True when every string of the characters of `seqs` keeps the byte
    /// states `states` of one rule alive by themselves, each byte taken by
    /// one state: from `states` and from each successor list such a string
    /// reaches, every byte of the string leads through exactly one list (no
    /// union of several), and every character ends in a list holding a
    /// state that takes each next one. Then every such string keeps the
    /// group alive, as [`SetWalker::alive_depth`] would find set by set, but
    /// here on the rule's automaton, a list at a time, without Earley steps
    /// or DFA sets: cheaper where such strings reach many sets (a key past
    /// many declared names, whose automaton walks their trie).
    ///
    /// Gives up past [`MAX_LIVING`] lists, and on strings that count their
    /// characters (a bounded length), left to [`SetWalker::alive_depth`]'s
    /// links: where every character leads `states`, or [`MAX_CHAIN`] lists
    /// in a row, to one other list. Every list met on the way to a no is
    /// then known as one that may die.
    ///
    /// [`SetWalker::alive_depth`]: super::walker::SetWalker::alive_depth
    pub(super) fn lives(&mut self, g: &Grammar, states: &[u32], seqs: &[ByteSequence]) -> bool {
        self.known.resize(g.list_count(), UNSEEN);
        let mut met: Vec<(u32, u32)> = Vec::new();
        let (mut i, mut chain) = (0, 0);
        let (mut from, mut list) = (states, None);
        let yes = 'explore: loop {
            let mut sole = Sole::Unknown;
            for (k, seq) in seqs.iter().enumerate() {
                if !self.after_chars(g, from, (k as u32, 0), &seq.bytes, &mut met, &mut sole) {
                    break 'explore false;
                }
            }
            match sole {
                Sole::One(to) if Some(to) != list => chain += 1,
                _ => chain = 0,
            }
            if chain > 0 && (list.is_none() || chain > MAX_CHAIN) || met.len() > MAX_LIVING {
                break false;
            }
            let Some(&next) = met.get(i) else { break true };
            i += 1;
            list = Some(next);
            from = g.list(next);
        };
        let mark = if yes { LIVES } else { MAY_DIE };
        met.iter().for_each(|&(a, _)| self.known[a as usize] = mark);
        yes
    }

    /// Adds to `met` the lists that the characters of a UTF-8 sequence
    /// (`at`: its index and the place in it of `bytes`, the bytes left, a
    /// byte of each class) lead the states `from` to, unless known, and
    /// notes them in `sole`; false where a byte leads nowhere, or to several
    /// lists, or to a list known to die.
    fn after_chars(&mut self, g: &Grammar, from: &[u32], at: (u32, u8), bytes: &[Vec<u8>], met: &mut Vec<(u32, u32)>, sole: &mut Sole) -> bool {
        let Some((first, rest)) = bytes.split_first() else { return true };
        let mut past = None;
        for &b in first {
            if past.is_some_and(|p| b <= p) {
                continue;
            }
            let (to, alike) = g.sole_step(from, b);
            past = Some(*alike.end());
            let Some(to) = to else { return false };
            if rest.is_empty() {
                if !self.reach(to, met, sole) {
                    return false;
                }
                continue;
            }
            let key = (to.0, at.0, at.1 + 1);
            match self.tails.get(&key) {
                Some(&Some(end)) => {
                    if !self.reach(end, met, sole) {
                        return false;
                    }
                }
                known => {
                    let new = known.is_none();
                    let mut ends = Sole::Unknown;
                    if !self.after_chars(g, g.list(to), (at.0, at.1 + 1), rest, met, &mut ends) {
                        return false;
                    }
                    match ends {
                        Sole::One(end) => sole.add(end),
                        _ => *sole = Sole::Several,
                    }
                    if new {
                        self.tails.insert(key, if let Sole::One(end) = ends { Some(end) } else { None });
                    }
                }
            }
        }
        true
    }

    /// Notes list `to`, where a character ends, in `sole` and, unless
    /// known, in `met`; false when it is known to die.
    fn reach(&mut self, to: (u32, u32), met: &mut Vec<(u32, u32)>, sole: &mut Sole) -> bool {
        sole.add(to);
        match self.known[to.0 as usize] {
            UNSEEN => {
                self.known[to.0 as usize] = MET;
                met.push(to);
                true
            }
            MAY_DIE => false,
            _ => true,
        }
    }
}
