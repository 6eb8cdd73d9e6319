//! A communicator: which GPUs take part, in which order, and how they sit on nodes.

/// The ranks of a collective, in the order the algorithms use (ring order, tree numbering).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub ranks: Vec<u32>,
    pub gpus_per_node: u32,
}

impl Group {
    pub fn new(ranks: Vec<u32>, gpus_per_node: u32) -> Self {
        assert!(gpus_per_node > 0 && !ranks.is_empty());
        Group {
            ranks,
            gpus_per_node,
        }
    }

    /// Ranks 0..n.
    pub fn first(n: u32, gpus_per_node: u32) -> Self {
        Group::new((0..n).collect(), gpus_per_node)
    }

    pub fn size(&self) -> u32 {
        self.ranks.len() as u32
    }

    pub fn node_of(&self, rank: u32) -> u32 {
        rank / self.gpus_per_node
    }

    /// The group's ranks by node, nodes in order of first appearance, ranks in group order.
    pub fn by_node(&self) -> Vec<(u32, Vec<u32>)> {
        let mut nodes: Vec<(u32, Vec<u32>)> = Vec::new();
        let mut at: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
        for &r in &self.ranks {
            let node = self.node_of(r);
            let i = *at.entry(node).or_insert_with(|| {
                nodes.push((node, Vec::new()));
                nodes.len() - 1
            });
            nodes[i].1.push(r);
        }
        nodes
    }

    /// Ranks per node when every node holds the same number, else None.
    pub fn regular(&self) -> Option<u32> {
        let nodes = self.by_node();
        let per = nodes[0].1.len();
        nodes
            .iter()
            .all(|(_, l)| l.len() == per)
            .then_some(per as u32)
    }
}
