//! A collective lowered to point-to-point transfers, in phases.
//!
//! A phase is a set of transfers that run together; the next phase starts when the slowest has
//! finished (the algorithms here are bulk-synchronous at step granularity, as NCCL's ring and
//! tree steps are, up to pipelining). Phases that repeat identically (the 2(n-1) steps of a ring)
//! are stored once with a repeat count and priced once: exact under the bulk-synchronous model,
//! and what lets a 16,384-GPU all-reduce cost one phase rather than 32,766.

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
}

/// The phases of one collective.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schedule {
    pub phases: Vec<Phase>,
}

impl Schedule {
    pub fn push(&mut self, label: &'static str, transfers: Vec<Transfer>, repeat: u64) {
        if repeat > 0 && !transfers.is_empty() {
            self.phases.push(Phase {
                label,
                transfers,
                repeat,
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
