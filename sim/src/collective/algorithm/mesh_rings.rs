//! The rings of a group on one fully meshed server (AMD Infinity Fabric, NVLink meshes): one ring
//! per channel, the channels' rings together using every directed GPU-to-GPU link of the group
//! equally, as RCCL's channels spread a collective over all seven xGMI links of an MI300X.
//!
//! A set of n - 1 directed Hamiltonian cycles that use each of the n(n - 1) links once exists for
//! every n but 4 and 6 (Tillson, "A Hamiltonian decomposition of K*_2m, 2m >= 8", J. Combin.
//! Theory B 29, 1980); a depth-first search finds one in 150 steps for 8 ranks and at most
//! 131,000 up to 16. For 4 and 6 ranks every directed Hamiltonian cycle (6 and 120), which use
//! every link equally often. Should the search run out of steps, the most link-disjoint cycles it
//! found. Positions are 0..n, in the group's order; the first ring is always 0, 1, ..., n - 1.
//! Rings that cross servers walk each server by [`paths`] instead: one path per channel.

/// Groups larger than this keep one ring (a mesh server of more GPUs is not built).
pub const MAX_RANKS: usize = 16;

/// Search steps before settling for a partial cover.
const BUDGET: u64 = 200_000;

/// The rings of `n` positions on a full mesh, each a permutation of 0..n.
pub fn cover(n: usize) -> Vec<Vec<usize>> {
    match n {
        4 | 6 => every_cycle(n),
        3..=MAX_RANKS => search(n),
        _ => vec![(0..n).collect()],
    }
}

/// Every directed Hamiltonian cycle through position 0 first.
fn every_cycle(n: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut path = vec![0];
    fn extend(path: &mut Vec<usize>, n: usize, out: &mut Vec<Vec<usize>>) {
        if path.len() == n {
            out.push(path.clone());
            return;
        }
        for v in 1..n {
            if !path.contains(&v) {
                path.push(v);
                extend(path, n, out);
                path.pop();
            }
        }
    }
    extend(&mut path, n, &mut out);
    out
}

/// Link-disjoint Hamiltonian cycles, found depth first: all n - 1 when the budget allows, else
/// the most found at any point.
fn search(n: usize) -> Vec<Vec<usize>> {
    let s = Search::run(n, Shape::Cycles);
    if s.walks.len() == n - 1 {
        s.walks
    } else {
        s.best
    }
}

/// For rings that cross servers, which enter a server at local index e and leave it from e - 1
/// (`ring::rings`): walks[e] goes from e through every position to e - 1 (mod n), the n walks
/// together using every link once. None where there is no such set (3 to 5 positions) or the
/// search ran out of steps.
pub fn paths(n: usize) -> Option<Vec<Vec<usize>>> {
    if !(2..=MAX_RANKS).contains(&n) {
        return None;
    }
    let s = Search::run(n, Shape::Paths);
    (s.walks.len() == n).then_some(s.walks)
}

/// What the search looks for.
#[derive(Copy, Clone, PartialEq)]
enum Shape {
    /// n - 1 cycles through position 0.
    Cycles,
    /// n paths, the i-th from i to i - 1.
    Paths,
}

impl Shape {
    fn count(self, n: usize) -> usize {
        match self {
            Shape::Cycles => n - 1,
            Shape::Paths => n,
        }
    }

    fn start(self, walk: usize) -> usize {
        match self {
            Shape::Cycles => 0,
            Shape::Paths => walk,
        }
    }
}

/// A depth-first search for link-disjoint Hamiltonian walks.
struct Search {
    n: usize,
    shape: Shape,
    /// Links taken by the walks so far, `from * n + to`.
    used: Vec<bool>,
    walks: Vec<Vec<usize>>,
    best: Vec<Vec<usize>>,
    steps: u64,
}

impl Search {
    fn run(n: usize, shape: Shape) -> Search {
        let mut s = Search {
            n,
            shape,
            used: vec![false; n * n],
            walks: Vec::new(),
            best: Vec::new(),
            steps: 0,
        };
        s.next();
        s
    }

    /// Starts the next walk; true once all are found (or the budget is spent).
    fn next(&mut self) -> bool {
        let start = self.shape.start(self.walks.len());
        let mut seen = vec![false; self.n];
        seen[start] = true;
        self.extend(&mut vec![start], &mut seen)
    }

    /// Extends `path` with free links to a whole walk, then starts the next.
    fn extend(&mut self, path: &mut Vec<usize>, seen: &mut Vec<bool>) -> bool {
        self.steps += 1;
        if self.steps > BUDGET {
            return true;
        }
        let n = self.n;
        let (v, start) = (path[path.len() - 1], path[0]);
        let end = (start + n - 1) % n;
        if path.len() == n {
            // A cycle closes back to its start; a path must have reached its end.
            let closing = (self.shape == Shape::Cycles).then_some(v * n + start);
            if closing.is_some_and(|a| self.used[a]) || (closing.is_none() && v != end) {
                return false;
            }
            if let Some(a) = closing {
                self.used[a] = true;
            }
            self.walks.push(path.clone());
            if self.walks.len() > self.best.len() {
                self.best = self.walks.clone();
            }
            if self.walks.len() == self.shape.count(n) || self.next() {
                return true;
            }
            self.walks.pop();
            if let Some(a) = closing {
                self.used[a] = false;
            }
            return false;
        }
        for w in 0..n {
            let early_end = self.shape == Shape::Paths && w == end && path.len() < n - 1;
            if seen[w] || self.used[v * n + w] || early_end {
                continue;
            }
            self.used[v * n + w] = true;
            seen[w] = true;
            path.push(w);
            if self.extend(path, seen) {
                return true;
            }
            path.pop();
            seen[w] = false;
            self.used[v * n + w] = false;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How often each directed link is used by the rings.
    fn uses(n: usize, rings: &[Vec<usize>]) -> Vec<usize> {
        let mut u = vec![0; n * n];
        for r in rings {
            let mut sorted = r.clone();
            sorted.sort();
            assert_eq!(
                sorted,
                (0..n).collect::<Vec<_>>(),
                "a ring visits each once"
            );
            for i in 0..n {
                u[r[i] * n + r[(i + 1) % n]] += 1;
            }
        }
        u
    }

    #[test]
    fn every_link_is_used_once_where_a_decomposition_exists() {
        for n in [3, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16] {
            let rings = cover(n);
            assert_eq!(rings.len(), n - 1, "{n} ranks");
            let u = uses(n, &rings);
            for a in 0..n {
                for b in 0..n {
                    assert_eq!(u[a * n + b], usize::from(a != b), "{n} ranks, {a}->{b}");
                }
            }
            assert_eq!(rings[0], (0..n).collect::<Vec<_>>());
        }
    }

    #[test]
    fn four_and_six_ranks_use_every_link_equally() {
        for (n, rings, each) in [(4, 6, 2), (6, 120, 24)] {
            let cover = cover(n);
            assert_eq!(cover.len(), rings);
            let u = uses(n, &cover);
            for a in 0..n {
                for b in 0..n {
                    assert_eq!(u[a * n + b], if a == b { 0 } else { each }, "{n}: {a}->{b}");
                }
            }
        }
    }

    #[test]
    fn paths_across_servers_use_every_link_once_from_entry_to_exit() {
        for n in [2, 6, 7, 8, 9, 12, 16] {
            let paths = paths(n).unwrap();
            let mut u = vec![0; n * n];
            for (e, p) in paths.iter().enumerate() {
                assert_eq!((p[0], p[n - 1]), (e, (e + n - 1) % n), "{n}: walk {e}");
                let mut sorted = p.clone();
                sorted.sort();
                assert_eq!(sorted, (0..n).collect::<Vec<_>>());
                p.windows(2).for_each(|w| u[w[0] * n + w[1]] += 1);
            }
            assert!(
                (0..n * n).all(|i| u[i] == usize::from(i % (n + 1) != 0)),
                "{n}"
            );
        }
        assert!([3, 4, 5, 17].iter().all(|&n| paths(n).is_none()));
    }

    #[test]
    fn outside_the_searched_sizes_one_ring_in_order() {
        assert_eq!(cover(2), vec![vec![0, 1]]);
        assert_eq!(cover(17), vec![(0..17).collect::<Vec<_>>()]);
    }
}
