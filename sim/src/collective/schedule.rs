//! A collective lowered to point-to-point transfers, in phases.
//!
//! A phase is a set of transfers that run together; the next phase starts when the slowest has
//! finished. Phases that repeat identically (the 2(n-1) steps of a ring) are stored once with a
//! repeat count and priced once, which lets a 16,384-GPU all-reduce cost one phase rather than
//! 32,766.
//!
//! Latency: a bulk-synchronous phase pays its slowest transfer's latency at every repeat. A
//! pipelined one (NCCL's rings, chains and trees, which forward each slice as it arrives, with no
//! barrier between steps) names the hops one chunk travels over all its repeats (`path`) and pays
//! their latencies once, in sum, as NCCL's own tuning model does for a ring ((steps - inter-node
//! steps) x intra-node latency + inter-node steps x network latency); each repeat beyond the path
//! (a further chunk down a chain or a tree) pays its slowest hop's latency, and every repeat the
//! time its bytes take. On one server, where every hop has the same latency, both forms price
//! alike. Compressed collectives and phases that cross a WAN stay bulk-synchronous
//! (`cost::price_schedule` says why).

/// One end of a transfer: a GPU by global rank, or the switch of a node (in-switch reduction).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Endpoint {
    Gpu(u32),
    NodeSwitch(u32),
}

#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Transfer {
    pub src: Endpoint,
    pub dst: Endpoint,
    pub bytes: f64,
}

impl Transfer {
    pub fn gpus(src: u32, dst: u32, bytes: f64) -> Self {
        Transfer {
            src: Endpoint::Gpu(src),
            dst: Endpoint::Gpu(dst),
            bytes,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    pub label: &'static str,
    pub transfers: Vec<Transfer>,
    pub repeat: u64,
    /// The hops one chunk travels, in order, over all the repeats of a pipelined phase; empty
    /// for a bulk-synchronous one.
    pub path: Vec<(Endpoint, Endpoint)>,
}

/// The phases of one collective.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schedule {
    pub phases: Vec<Phase>,
}

impl Schedule {
    /// A bulk-synchronous phase: every repeat pays its slowest transfer's latency.
    pub fn push(&mut self, label: &'static str, transfers: Vec<Transfer>, repeat: u64) {
        self.push_pipelined(label, transfers, repeat, Vec::new());
    }

    /// A pipelined phase whose chunks travel `path` (pairs of GPU ranks), paying its hops'
    /// latencies once.
    pub fn push_pipelined(
        &mut self,
        label: &'static str,
        transfers: Vec<Transfer>,
        repeat: u64,
        path: Vec<(u32, u32)>,
    ) {
        if repeat > 0 && !transfers.is_empty() {
            self.phases.push(Phase {
                label,
                transfers,
                repeat,
                path: path
                    .into_iter()
                    .map(|(a, b)| (Endpoint::Gpu(a), Endpoint::Gpu(b)))
                    .collect(),
            });
        }
    }

    /// Steps in all, counting repeats.
    pub fn steps(&self) -> u64 {
        self.phases.iter().map(|p| p.repeat).sum()
    }

    /// Bytes moved in all, counting repeats.
    pub fn bytes(&self) -> f64 {
        self.phases
            .iter()
            .map(|p| p.repeat as f64 * p.transfers.iter().map(|t| t.bytes).sum::<f64>())
            .sum()
    }
}
