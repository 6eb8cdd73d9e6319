//! The communicators of a stage's GPU, and the price of a collective on one of them.
//!
//! Ranks follow the layout's strides (`Strides`), so a communicator is the same set of GPUs
//! whichever rank order the scenario chose; the price comes from the collective layer on the
//! cluster's topology, with NCCL's algorithm and protocol choice.

use super::setup::TrainingConfig;
use crate::collective::cost::{Collective, CollectiveCost, Compression, Options, cost_beside};
use crate::collective::{Algorithm, CollectiveOp, Group};
use crate::net::tier::Tier;
use crate::net::topology::spec::IntraKind;

/// Which communicator a collective runs on, relative to a stage's GPU.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Comm {
    /// Its tensor-parallel group: `rank .. rank + tp`.
    Tensor,
    /// Its data-parallel group: `rank, rank + tp, rank + 2 tp, ...`.
    Data,
    /// From it to the GPU of the same tensor and data index in another stage.
    Pipe(u32),
    /// Its context-parallel group: `rank, rank + tp, ..., rank + (cp - 1) tp`.
    Context,
    /// Its next context-parallel rank (ring attention's neighbour).
    ContextPeer,
    /// Its expert-parallel group: `ep` consecutive data-parallel replicas.
    Expert,
    /// The replicas that hold the same experts: `rank, rank + ep tp, rank + 2 ep tp, ...`.
    ExpertData,
    /// Local SGD: the same GPU of one replica in every site (the outer synchronisation).
    Outer,
}

/// Compression of each kind of communicator's collectives (`[compression]`); None sends raw
/// bytes.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Compressions {
    pub data: Option<Compression>,
    pub tensor: Option<Compression>,
    pub pipeline: Option<Compression>,
    pub expert: Option<Compression>,
    pub context: Option<Compression>,
    pub outer: Option<Compression>,
    /// Pipeline messages carry error feedback (Clapping): each stage keeps a buffer per message
    /// it sends (`memory.rs`).
    pub pipeline_error_feedback: bool,
}

impl Compressions {
    /// The report's view: each compressed dimension with its settings.
    pub fn report(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        for (name, z) in [
            ("data", self.data),
            ("tensor", self.tensor),
            ("pipeline", self.pipeline),
            ("expert", self.expert),
            ("context", self.context),
            ("outer", self.outer),
        ] {
            if let Some(z) = z {
                out.insert(name.into(), crate::workload::compression::report(&z));
            }
        }
        if let Some(pipeline) = out.get_mut("pipeline") {
            pipeline["error_feedback"] = serde_json::json!(self.pipeline_error_feedback);
        }
        serde_json::Value::Object(out)
    }

    /// The compression of `comm`'s collectives.
    pub fn of(&self, comm: Comm) -> Option<Compression> {
        match comm {
            Comm::Tensor => self.tensor,
            Comm::Data | Comm::ExpertData => self.data,
            Comm::Pipe(_) => self.pipeline,
            Comm::Expert => self.expert,
            Comm::Context | Comm::ContextPeer => self.context,
            Comm::Outer => self.outer,
        }
    }
}

impl TrainingConfig {
    /// The ranks of communicator `comm` of the GPU of global rank `base`.
    pub fn comm_ranks(&self, base: u32, comm: Comm) -> Vec<u32> {
        let st = self.stride;
        match comm {
            Comm::Tensor => (0..self.tp).map(|i| base + i * st.tp).collect(),
            // Context-parallel ranks hold the same weights: gradients reduce over dp x cp (over
            // the replicas of the GPU's own site under local SGD).
            Comm::Data => (0..self.site_replicas())
                .flat_map(|d| (0..self.cp).map(move |c| base + d * st.dp + c * st.cp))
                .collect(),
            // The same GPU of the first replica of every site.
            Comm::Outer => (0..self.sites)
                .map(|k| base + k * self.site_replicas() * st.dp)
                .collect(),
            Comm::Context => (0..self.cp).map(|c| base + c * st.cp).collect(),
            Comm::ContextPeer => vec![base, base + st.cp],
            Comm::Pipe(to) => vec![base, to],
            Comm::Expert => (0..self.ep).map(|j| base + j * st.dp).collect(),
            Comm::ExpertData => (0..self.dp / (self.ep * self.sites))
                .flat_map(|i| (0..self.cp).map(move |c| base + i * self.ep * st.dp + c * st.cp))
                .collect(),
        }
    }

    /// Whether every rank of `comm`'s group of `base` is in `base`'s server.
    pub fn in_one_server(&self, base: u32, comm: Comm) -> bool {
        let g = self.fabric.gpus_per_node;
        self.comm_ranks(base, comm)
            .iter()
            .all(|r| r / g == base / g)
    }

    /// The shifts of `comm`'s group of `base` whose copies run at the same moment and may share
    /// its links: the other groups of its stage (`links::offsets`), none when the group stays
    /// inside one server behind an NVSwitch (each GPU has its own port on the switch).
    pub fn concurrent_groups(&self, base: u32, comm: Comm) -> Vec<u32> {
        if self.in_one_server(base, comm) && self.topology.spec.intra == IntraKind::NvSwitch {
            return Vec::new();
        }
        super::links::offsets(self, base, comm)
    }

    /// Seconds of `op` on `bytes` over `comm` of the GPU of rank `base` with every group of its
    /// stage running the same collective at once on the shared links (`concurrent_groups`).
    pub fn shared_collective_seconds(
        &self,
        base: u32,
        comm: Comm,
        op: CollectiveOp,
        bytes: f64,
        tier: Tier,
    ) -> f64 {
        let offsets = self.concurrent_groups(base, comm);
        self.collective_cost(base, comm, op, bytes, tier, &offsets, false)
            .seconds
    }

    /// Seconds of `op` on `bytes` over communicator `comm` of the GPU of rank `base`, priced on
    /// the topology by network tier `tier`, alone on the network.
    pub fn collective_seconds(
        &self,
        base: u32,
        comm: Comm,
        op: CollectiveOp,
        bytes: f64,
        tier: Tier,
    ) -> f64 {
        self.collective_cost(base, comm, op, bytes, tier, &[], false)
            .seconds
    }

    /// The price of `op` on `bytes` over `comm` of the GPU of rank `base`, beside identical
    /// groups shifted by `offsets` ranks running at once and sharing the links
    /// (`collective::cost::cost_beside`), with every link's bytes when `record_links`
    /// (`links.rs`).
    #[allow(clippy::too_many_arguments)]
    pub fn collective_cost(
        &self,
        base: u32,
        comm: Comm,
        op: CollectiveOp,
        bytes: f64,
        tier: Tier,
        offsets: &[u32],
        record_links: bool,
    ) -> CollectiveCost {
        let c = Collective {
            op,
            algorithm: Algorithm::Auto,
            group: Group::new(
                self.comm_ranks(base, comm)
                    .into_iter()
                    .map(|r| r + self.first_gpu)
                    .collect(),
                self.fabric.gpus_per_node,
            ),
            bytes,
            compression: self.compression.of(comm),
        };
        let mut options = Options::new(tier);
        options.nvls_available = self.in_switch_reduction;
        options.record_links = record_links;
        cost_beside(&self.topology, &c, &options, offsets)
            .expect("ring, tree and direct serve any group of the cluster's ranks")
    }
}
