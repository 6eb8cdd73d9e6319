//! The step's collectives and sends beside the compute stream: tensor-parallel syncs (blocking or
//! overlapped), expert all-to-alls, pipeline sends and ZeRO-3 layer gathers, each priced once
//! per communicator, operation and size.

use super::PIPELINE_SEND;
use super::StepBuilder;
use crate::collective::CollectiveOp;
use crate::engine::SimTime;
use crate::exec::{OpId, OpKind, Part};
use crate::workload::training::comm::Comm;
use crate::workload::training::layer::Sync;
use crate::workload::training::policy::ParamGather;
use std::borrow::Cow;

impl StepBuilder<'_> {
    /// A tensor-parallel collective of `bytes` in the compute stream's path: it starts after the
    /// last kernel and the next kernel waits for it. Between kernels waiting on nothing else it
    /// is a part of their chain (`Stage::fold`).
    pub(super) fn tensor_sync(&mut self, name: &'static str, op: CollectiveOp, bytes: f64) {
        let Some(lane) = self.stage().tensor else {
            return;
        };
        let secs = self.collective_seconds(Comm::Tensor, op, bytes);
        let stage = &mut self.stages[self.at];
        if stage.fold && stage.first.is_some() && self.waiting_on.is_empty() {
            stage.run.push(Part {
                name: Cow::Borrowed(name),
                kind: OpKind::Communication,
                duration: SimTime::from_secs_f64(secs),
                flops: 0.0,
                bytes,
                tier: self.setup.tier.name(),
                value: None,
            });
            stage.trailing = Some((name, secs));
            return;
        }
        let after = self.compute_deps();
        let id = self.comm_op(lane, name, secs, bytes, &after, Some(Comm::Tensor));
        self.set_last(id);
    }

    /// A tensor-parallel collective overlapped with its GEMM (TransformerEngine's communication
    /// overlap): after a row-split GEMM it runs beside that GEMM (starting with it), before a
    /// column-split GEMM beside the next one; the kernel after the pair waits for both.
    fn overlapped_sync(&mut self, sync: Sync, name: &'static str, op: CollectiveOp, bytes: f64) {
        let Some(lane) = self.stage().tensor else {
            return;
        };
        let secs = self.collective_seconds(Comm::Tensor, op, bytes);
        let gemm = if sync == Sync::G {
            self.last_alone()
        } else {
            None
        };
        let after: Vec<OpId> = match gemm {
            Some(gemm) => self.graph.deps(gemm).to_vec(),
            None => self.compute_deps_peek(),
        };
        let id = self.comm_op(lane, name, secs, bytes, &after, Some(Comm::Tensor));
        match sync {
            Sync::G => self.waiting_on.push(id),
            Sync::F => self.deferred = Some(id),
        }
    }

    /// The collective a conjugate operator runs in the forward or the backward pass, if any.
    pub(super) fn sync(&mut self, sync: Sync, forward: bool, bytes: f64) {
        let Some(op) = sync.collective(forward, self.setup.sequence_parallel) else {
            return;
        };
        let name = match op {
            CollectiveOp::AllGather => "tp_all_gather",
            CollectiveOp::ReduceScatter => "tp_reduce_scatter",
            _ => "tp_all_reduce",
        };
        if self.setup.tp_comm_overlap {
            // Forward, F precedes and G follows a GEMM; backward, the order flips.
            let next_to = if forward {
                sync
            } else if sync == Sync::F {
                Sync::G
            } else {
                Sync::F
            };
            self.overlapped_sync(next_to, name, op, bytes);
        } else if self.setup.tp_dgrad_overlap && !forward && sync == Sync::F {
            // Beside the weight-gradient GEMM that follows the input gradient it carries.
            self.overlapped_sync(Sync::G, name, op, bytes);
        } else {
            self.tensor_sync(name, op, bytes);
        }
    }

    /// An expert-parallel all-to-all of one micro-batch's routed tokens, in the compute stream's
    /// path.
    pub(super) fn exchange(&mut self, name: &'static str, bytes: f64) {
        let Some(lane) = self.stage().expert else {
            return;
        };
        let secs = self.collective_seconds(Comm::Expert, CollectiveOp::AllToAll, bytes);
        let after = self.compute_deps();
        let id = self.comm_op(lane, name, secs, bytes, &after, Some(Comm::Expert));
        self.set_last(id);
    }

    /// Sends an activation (or its gradient) to the stage that runs model chunk `to_chunk`, after
    /// the last kernel; the send runs beside the compute stream.
    pub(super) fn send(&mut self, to_chunk: u32, bytes: f64) -> OpId {
        let to_stage = to_chunk % self.setup.pp;
        let to = self.setup.stage_rank(to_stage);
        let secs = self.collective_seconds(Comm::Pipe(to), CollectiveOp::SendRecv, bytes);
        let after = self.last();
        let lane = self
            .stage()
            .send
            .expect("stages have a send lane when pp > 1");
        self.comm_op(
            lane,
            PIPELINE_SEND,
            secs,
            bytes,
            after.as_slice(),
            Some(Comm::Pipe(to)),
        )
    }

    /// ZeRO-3: the next kernels need `layer`'s parameters gathered from the data-parallel group;
    /// the gather of `next` is issued right behind it, so that it overlaps this layer's compute
    /// (FSDP's one-layer prefetch).
    pub(super) fn gather_params(&mut self, layer: u32, next: Option<u32>) {
        if self.setup.param_gather == ParamGather::OnDemand {
            return self.gather_on_demand(layer);
        }
        let Some(lane) = self.stage().gather else {
            return;
        };
        let m = &self.setup.model;
        for l in std::iter::once(layer).chain(next) {
            if !self.gathers.contains_key(&l) {
                let params = if m.has_attention(l) {
                    m.layer_params()
                } else {
                    m.layer_params() - m.attention_params()
                };
                let bytes = params as f64 / self.setup.tp as f64 * m.dtype.bytes();
                let secs = self.collective_seconds(Comm::Data, CollectiveOp::AllGather, bytes);
                let after = self.last();
                let id = self.comm_op(
                    lane,
                    "param_all_gather",
                    secs,
                    bytes,
                    after.as_slice(),
                    Some(Comm::Data),
                );
                self.gathers.insert(l, id);
            }
        }
        let id = self.gathers[&layer];
        self.waiting_on.push(id);
    }
}
