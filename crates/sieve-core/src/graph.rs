//! Strongly connected components of a directed graph (Tarjan's algorithm,
//! without recursion): the grammar compiler's call graph, and the automata
//! the JSON Schema compiler writes as rules.

/// The strongly connected components of the nodes (`0..n`) reachable from
/// `roots`, where `next(v, i)` is node `v`'s `i`-th successor (`None` past
/// the last; asked once per `i`, in order from 0, when `v` is entered).
/// Per node, its component, numbered in the order they complete (a
/// component only reaches components numbered before it, or itself), or
/// `usize::MAX` when not reached; and the number of components.
pub(crate) fn components(
    n: usize,
    roots: impl IntoIterator<Item = usize>,
    mut next: impl FnMut(usize, usize) -> Option<usize>,
) -> (Vec<usize>, usize) {
    let (mut index, mut low, mut on) = (vec![u32::MAX; n], vec![0u32; n], vec![false; n]);
    let (mut stack, mut comp, mut count, mut ncomp) = (Vec::new(), vec![usize::MAX; n], 0u32, 0usize);
    for root in roots {
        if index[root] != u32::MAX {
            continue;
        }
        // The depth-first search's calls: a node and its next edge's index.
        let mut work: Vec<(usize, usize)> = vec![(root, 0)];
        while let Some(&mut (v, ref mut ei)) = work.last_mut() {
            if *ei == 0 && index[v] == u32::MAX {
                (index[v], low[v], on[v]) = (count, count, true);
                count += 1;
                stack.push(v);
            }
            if let Some(w) = next(v, *ei) {
                *ei += 1;
                if index[w] == u32::MAX {
                    work.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(u, _)) = work.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on[w] = false;
                    comp[w] = ncomp;
                    if w == v {
                        break;
                    }
                }
                ncomp += 1;
            }
        }
    }
    (comp, ncomp)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two cycles, a self-loop and a node out of reach: components complete
    /// successors first.
    #[test]
    fn components_complete_successors_first() {
        // 0 -> 1 -> 2 -> 1, 2 -> 3 -> 3, 4 -> 0 (4 is not reached from 0).
        let edges: [&[usize]; 5] = [&[1], &[2], &[1, 3], &[3], &[0]];
        let (comp, n) = components(5, [0], |v, i| edges[v].get(i).copied());
        assert_eq!(n, 3);
        assert_eq!(comp[1], comp[2]);
        assert!(comp[3] < comp[1] && comp[1] < comp[0]);
        assert_eq!(comp[4], usize::MAX);
    }
}
