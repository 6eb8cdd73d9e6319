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
    let mut s = Search {
        n,
        used: vec![false; n * n],
        cycles: Vec::new(),
        best: Vec::new(),
        steps: 0,
    };
    s.cycle(&mut vec![0], &mut vec![false; n]);
    if s.cycles.len() == n - 1 {
        s.cycles
    } else {
        s.best
    }
}

struct Search {
    n: usize,
    /// Links taken by the cycles so far, `from * n + to`.
    used: Vec<bool>,
    cycles: Vec<Vec<usize>>,
    best: Vec<Vec<usize>>,
    steps: u64,
}

impl Search {
    /// Extends `path` to a cycle with free links, then starts the next; true once all are found
    /// (or the budget is spent).
    fn cycle(&mut self, path: &mut Vec<usize>, seen: &mut Vec<bool>) -> bool {
        self.steps += 1;
        if self.steps > BUDGET {
            return true;
        }
        let n = self.n;
        let v = path[path.len() - 1];
        if path.len() == n {
            if self.used[v * n] {
                return false;
            }
            self.used[v * n] = true;
            self.cycles.push(path.clone());
            if self.cycles.len() > self.best.len() {
                self.best = self.cycles.clone();
            }
            if self.cycles.len() == n - 1 || self.cycle(&mut vec![0], &mut vec![false; n]) {
                return true;
            }
            self.cycles.pop();
            self.used[v * n] = false;
            return false;
        }
        for w in 1..n {
            if seen[w] || self.used[v * n + w] {
                continue;
            }
            self.used[v * n + w] = true;
            seen[w] = true;
            path.push(w);
            if self.cycle(path, seen) {
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
    fn outside_the_searched_sizes_one_ring_in_order() {
        assert_eq!(cover(2), vec![vec![0, 1]]);
        assert_eq!(cover(17), vec![(0..17).collect::<Vec<_>>()]);
    }
}
