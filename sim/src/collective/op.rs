//! What a collective does and how big it is, with nccl-tests' definitions of size and bandwidth.

use std::fmt;

/// The collective operations.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CollectiveOp {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    AllToAll,
    /// One rank sends to another (the first two ranks of the group).
    SendRecv,
}

impl CollectiveOp {
    pub const ALL: [CollectiveOp; 7] = [
        CollectiveOp::AllReduce,
        CollectiveOp::AllGather,
        CollectiveOp::ReduceScatter,
        CollectiveOp::Broadcast,
        CollectiveOp::Reduce,
        CollectiveOp::AllToAll,
        CollectiveOp::SendRecv,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CollectiveOp::AllReduce => "all-reduce",
            CollectiveOp::AllGather => "all-gather",
            CollectiveOp::ReduceScatter => "reduce-scatter",
            CollectiveOp::Broadcast => "broadcast",
            CollectiveOp::Reduce => "reduce",
            CollectiveOp::AllToAll => "all-to-all",
            CollectiveOp::SendRecv => "send-recv",
        }
    }

    /// Parses the names users type: "all-reduce", "allreduce", "all_reduce", "AllReduce".
    pub fn parse(text: &str) -> Option<CollectiveOp> {
        let key: String = text
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .map(|c| c.to_ascii_lowercase())
            .collect();
        Self::ALL.into_iter().find(|op| {
            op.name().replace('-', "") == key
                || (key == "sendrecv" && *op == CollectiveOp::SendRecv)
        })
    }

    /// nccl-tests' bus-bandwidth factor: busbw = algbw x factor, so that busbw compares with the
    /// bandwidth of the links whatever the operation and the number of ranks.
    pub fn bus_factor(self, ranks: u32) -> f64 {
        let n = ranks as f64;
        match self {
            CollectiveOp::AllReduce => 2.0 * (n - 1.0) / n,
            CollectiveOp::AllGather | CollectiveOp::ReduceScatter | CollectiveOp::AllToAll => {
                (n - 1.0) / n
            }
            CollectiveOp::Broadcast | CollectiveOp::Reduce | CollectiveOp::SendRecv => 1.0,
        }
    }
}

impl fmt::Display for CollectiveOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_loosely() {
        assert_eq!(
            CollectiveOp::parse("allreduce"),
            Some(CollectiveOp::AllReduce)
        );
        assert_eq!(
            CollectiveOp::parse("All_Gather"),
            Some(CollectiveOp::AllGather)
        );
        assert_eq!(
            CollectiveOp::parse("send-recv"),
            Some(CollectiveOp::SendRecv)
        );
        assert_eq!(CollectiveOp::parse("gossip"), None);
    }

    #[test]
    fn bus_factors_follow_nccl_tests() {
        assert_eq!(CollectiveOp::AllReduce.bus_factor(8), 1.75);
        assert_eq!(CollectiveOp::AllGather.bus_factor(8), 0.875);
        assert_eq!(CollectiveOp::Broadcast.bus_factor(8), 1.0);
    }
}
