//! The transport that carries traffic between servers: how much of a NIC's line rate bulk
//! transfers achieve and how long a small message takes NIC to NIC through one leaf switch.
//!
//! Each transport is one link profile shared by every cluster that runs it; the figures and
//! their sources are in `docs/NETWORK.md`. Modelled: a fraction of line rate (headers, framing,
//! flow control, the host's share of the data path) and a one-way latency (NIC, cable, one
//! switch, the transport's software). Ignored: congestion control and packet loss (the flow tier
//! shares links fairly instead), message-size-dependent efficiency inside one transfer.

use crate::net::topology::spec::PathSelection;
use serde::Deserialize;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// InfiniBand (HDR, NDR, XDR) RDMA: the default.
    #[default]
    Infiniband,
    /// RDMA over Converged Ethernet (v2).
    Roce,
    /// AWS Elastic Fabric Adapter (the SRD protocol, through aws-ofi-nccl), as on p5 and later.
    Efa,
    /// First-generation EFA (p3dn, p4d, p4de): EFA without in-order 128-byte writes.
    EfaV1,
    /// Google GPUDirect-TCPX (A3 High): TCP with the payload landing in GPU memory, the
    /// headers and the flow's control on the host's cores.
    Tcpx,
    /// Google GPUDirect-TCPXO (A3 Mega): TCPX with the packet processing offloaded to the NIC.
    Tcpxo,
}

impl Transport {
    pub const ALL: [Transport; 6] = [
        Transport::Infiniband,
        Transport::Roce,
        Transport::Efa,
        Transport::EfaV1,
        Transport::Tcpx,
        Transport::Tcpxo,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Transport::Infiniband => "infiniband",
            Transport::Roce => "roce",
            Transport::Efa => "efa",
            Transport::EfaV1 => "efa-v1",
            Transport::Tcpx => "tcpx",
            Transport::Tcpxo => "tcpxo",
        }
    }

    /// The transport a source's words name ("InfiniBand NDR", "AWS EFA", "EFAv1", "GCP
    /// GPUDirect-TCPXO", "RoCE v2", "GPUDirect-RDMA (RoCE)"), if one.
    pub fn from_prose(text: &str) -> Option<Transport> {
        let t = text.to_ascii_lowercase();
        if t.contains("efav1") || t.contains("efa v1") || t.contains("efa-v1") {
            Some(Transport::EfaV1)
        } else if t.contains("tcpxo") {
            Some(Transport::Tcpxo)
        } else if t.contains("tcpx") {
            Some(Transport::Tcpx)
        } else if t.contains("efa") {
            Some(Transport::Efa)
        } else if t.contains("roce") {
            Some(Transport::Roce)
        } else if t.contains("infiniband") || t.split_whitespace().any(|w| w == "ib") {
            Some(Transport::Infiniband)
        } else {
            None
        }
    }

    /// How leaf and spine switches place its flows when a scenario does not say: by destination
    /// on InfiniBand (the subnet manager's forwarding tables), sprayed over every path on EFA
    /// (SRD sends each flow's packets over many paths), hashed per flow on Ethernet (ECMP).
    pub fn routing(self) -> PathSelection {
        match self {
            Transport::Infiniband => PathSelection::Destination,
            Transport::Efa | Transport::EfaV1 => PathSelection::Spray,
            Transport::Roce | Transport::Tcpx | Transport::Tcpxo => PathSelection::Ecmp,
        }
    }

    /// Fraction of line rate that NCCL's bulk transfers achieve: 0.92 on the RDMA transports
    /// (raw RDMA writes reach 0.95-0.97 of line rate on InfiniBand and EFA, NCCL's chunking and
    /// flags take a little more); RoCE's longer headers (58 bytes a 4,096-byte packet against
    /// InfiniBand's 28) take 0.7% of that; TCPX 0.75, the 150 of 200 Gb/s a NIC Google's
    /// documentation says to expect; TCPXO, whose NIC does the packet processing, as RDMA.
    pub fn efficiency(self) -> f64 {
        const RDMA: f64 = 0.92;
        match self {
            Transport::Infiniband | Transport::Efa | Transport::EfaV1 | Transport::Tcpxo => RDMA,
            Transport::Roce => RDMA * (1.0 - 58.0 / 4154.0) / (1.0 - 28.0 / 4124.0),
            Transport::Tcpx => 0.75,
        }
    }

    /// One-way latency of a small message between two servers on one leaf, seconds: 2.5 us on
    /// InfiniBand, RoCE 0.2 us more (UCX's model of the two), EFA 9.9 us (MPI's one-way latency
    /// over EFA), TCP's 20.7 us for TCPX and TCPXO (MPI over TCP on Google Cloud; nothing is
    /// published for the offloaded path).
    pub const fn latency_s(self) -> f64 {
        match self {
            Transport::Infiniband => 2.5e-6,
            Transport::Roce => 2.7e-6,
            Transport::Efa | Transport::EfaV1 => 9.9e-6,
            Transport::Tcpx | Transport::Tcpxo => 20.7e-6,
        }
    }

    /// Whether each 8- or 128-byte store a GPU writes lands whole and in order at the peer, which
    /// NCCL's LL and LL128 protocols rely on. First-generation EFA does not promise it, and
    /// aws-ofi-nccl sets `NCCL_PROTO=simple` there (its platform table: p3dn, p4d, p4de); EFA
    /// on p5 and later reports in-order aligned 128-byte writes and runs all three.
    pub fn in_order_stores(self) -> bool {
        self != Transport::EfaV1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_name_their_transports() {
        let read = |t: &str| Transport::from_prose(t);
        assert_eq!(read("InfiniBand NDR"), Some(Transport::Infiniband));
        assert_eq!(read("AWS EFA (EFAv2, 3200 Gb/s)"), Some(Transport::Efa));
        assert_eq!(
            read("AWS EFA (EFAv1, GPUDirect RDMA)"),
            Some(Transport::EfaV1)
        );
        assert_eq!(read("GCP GPUDirect-TCPXO"), Some(Transport::Tcpxo));
        assert_eq!(read("GPUDirect-TCPX"), Some(Transport::Tcpx));
        assert_eq!(read("RoCE v2"), Some(Transport::Roce));
        assert_eq!(read("not stated"), None);
    }

    #[test]
    fn only_first_generation_efa_lacks_in_order_stores() {
        for t in Transport::ALL {
            assert_eq!(t.in_order_stores(), t != Transport::EfaV1, "{}", t.name());
        }
    }
}
