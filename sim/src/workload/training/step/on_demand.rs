//! ZeRO-3 with parameters gathered on demand (`parallel.param_gather = "on-demand"`), as
//! DeepSpeed's first stage 3 ran it. Per layer and pass, each weight matrix is gathered by an
//! all-gather of its own over the data-parallel group, after the GPU has drained, so nothing
//! overlaps it; before its launch the host loops over the ranks building the output list
//! ([`HOST_LOOP_PER_RANK_S`] a rank, GPU idle), and after it one device copy per rank (bytes / n
//! each) fills the per-rank list. Gradients are reduce-scattered the same way, one collective per
//! matrix after n copies into one buffer, and the compute stream waits for them.
//!
//! Under full recomputation a matrix gathered for the recomputed forward is kept for its backward
//! only while the parameters running in between stay below [`MAX_REUSE_DISTANCE`]; otherwise, and
//! always without recomputation, it is gathered again. Memory: [`most_gathered_params`]. Ignored:
//! norms and biases (never gathered), the host's per-call overheads, its issue of the per-rank
//! copies and its gradient-list loop (hidden behind GPU work). Local experts of one kind count as
//! one matrix.
//! Details and measurements: docs/TRAINING.md#zero-3-with-parameters-gathered-on-demand

use super::StepBuilder;
use crate::collective::CollectiveOp;
use crate::engine::SimTime;
use crate::exec::{LaneId, Op, OpId, OpKind};
use crate::hw::Kernel;
use crate::workload::training::comm::Comm;
use crate::workload::training::optimizer::{Matrix, matrices_of_layer};
use crate::workload::training::setup::TrainingConfig;
use std::borrow::Cow;

/// DeepSpeed's default `stage3_max_reuse_distance`, in parameters
/// (`ZERO_OPTIMIZATION_MAX_REUSE_DISTANCE_DEFAULT` in deepspeed/runtime/zero/constants.py, and
/// the DeepSpeed configuration documentation): a module's parameters are released after it runs
/// unless the parameters of the modules that run before its next use add up to less than this.
pub const MAX_REUSE_DISTANCE: f64 = 1e9;

/// Host seconds per data-parallel rank of the loop DeepSpeed v0.3 runs before each parameter's
/// all-gather (`_allgather_param` in deepspeed/runtime/zero/partition_parameters.py): for every
/// rank a `flat_tensor.narrow(...)` appended to the output list and a
/// `torch.distributed.get_rank(group=...)` compared with the index. Measured on 2021's software
/// (Python 3.8, PyTorch 1.8.1) on the development machine's Zen 3 core, a one-process gloo group,
/// 1,536 ranks: 5.74 us, the median of ten runs (calibration/host-loop-2026-12-02; PyTorch 2.15
/// takes half as long again), scaled to Selene's Zen 2 hosts by AMD's 19% instructions-per-clock
/// gain of Zen 3: 6.83 us. 10 ms a gather at 1,536 ranks.
pub const HOST_LOOP_PER_RANK_S: f64 = 6.83e-6;

/// Of a layer's weight matrices (parameters each, in forward order), those released between the
/// recomputed forward and the backward, in the order the backward gathers them again (last
/// first): matrix `i` is next used after the later matrices' recomputed forwards and their
/// backwards, a reuse distance of twice their parameters.
fn released_for_backward(matrices: &[f64]) -> Vec<f64> {
    let mut later = 0.0;
    let mut released = Vec::new();
    for &params in matrices.iter().rev() {
        if 2.0 * later >= MAX_REUSE_DISTANCE {
            released.push(params);
        }
        later += params;
    }
    released
}

/// Parameters of each weight matrix of `layer` one GPU holds (`optimizer::matrices_of_layer`;
/// a layer's local experts of one kind as one matrix, multi-head latent attention's projections
/// as one).
fn weight_matrices(s: &TrainingConfig, layer: u32) -> Vec<f64> {
    let m = &s.model;
    let mla = (m.mla.is_some() && m.has_attention(layer))
        .then(|| m.attention_params() as f64 / s.tp as f64);
    mla.into_iter()
        .chain(matrices_of_layer(s, layer).iter().map(Matrix::params))
        .collect()
}

/// The most parameters of `layer` gathered at once (whole, on one GPU) when its matrices are
/// gathered on demand. With full recomputation: the matrices kept from the recomputed forward
/// for the backward (see [`released_for_backward`]), which stay until their backward, plus the
/// largest of those gathered again; otherwise each matrix is released after its module runs, so
/// the largest alone.
pub fn most_gathered_params(s: &TrainingConfig, layer: u32, recompute_full: bool) -> f64 {
    let matrices = weight_matrices(s, layer);
    let largest = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    if !recompute_full {
        return largest(&matrices);
    }
    let released = released_for_backward(&matrices);
    let kept = matrices.iter().sum::<f64>() - released.iter().sum::<f64>();
    kept + largest(&released)
}

impl StepBuilder<'_> {
    /// The `ranks` device copies between a list of per-rank tensors and the one buffer a
    /// collective of `bytes` works on, on `lane` after `after`.
    fn list_copies(
        &mut self,
        name: &'static str,
        bytes: f64,
        lane: LaneId,
        after: &[OpId],
    ) -> OpId {
        let ranks = self.setup.gradient_ranks();
        let copy = Kernel::Memory {
            bytes: 2.0 * bytes / ranks as f64,
            flops: 0.0,
        };
        let cost = self
            .compute
            .cost(&copy)
            .expect("a copy is priced on every GPU");
        self.graph.add(
            Op {
                name: Cow::Borrowed(name),
                lane,
                kind: OpKind::Memory,
                duration: SimTime::from_secs_f64(cost.seconds * ranks as f64),
                flops: 0.0,
                bytes: 2.0 * bytes,
                tier: cost.tier.name(),
                layer: None,
                micro_batch: None,
                model_flops: true,
                chain: None,
            },
            after,
        )
    }

    /// Gathers `layer`'s weight matrices one by one in the compute stream's path, unless this
    /// pass has gathered them already.
    pub(super) fn gather_on_demand(&mut self, layer: u32) {
        let Some(lane) = self.stage().gather else {
            return;
        };
        if self.gathers.contains_key(&layer) {
            return;
        }
        for params in weight_matrices(self.setup, layer) {
            let copies = self.gather_matrix(params, lane);
            self.gathers.insert(layer, copies);
        }
    }

    /// After `layer`'s recomputed forward: gathers again the weight matrices DeepSpeed released
    /// before the backward reaches them, those whose reuse distance (twice the parameters of the
    /// layer's later matrices) is at least [`MAX_REUSE_DISTANCE`].
    pub(super) fn regather_for_backward(&mut self, layer: u32) {
        let Some(lane) = self.stage().gather else {
            return;
        };
        for params in released_for_backward(&weight_matrices(self.setup, layer)) {
            self.gather_matrix(params, lane);
        }
    }

    /// One weight matrix of `params` parameters gathered on `lane` in the compute stream's path:
    /// the host's loop over the ranks, the all-gather, then the copies out of its per-rank list;
    /// returns the copies.
    fn gather_matrix(&mut self, params: f64, lane: LaneId) -> OpId {
        let bytes = params * self.setup.model.dtype.bytes();
        let secs = self.collective_seconds(Comm::Data, CollectiveOp::AllGather, bytes);
        let after = self.compute_deps();
        let ranks = self.setup.gradient_ranks() as f64;
        let host = self.comm_op(
            lane,
            "param_gather_host_loop",
            ranks * HOST_LOOP_PER_RANK_S,
            0.0,
            &after,
            None,
        );
        let gather = self.comm_op(
            lane,
            "param_all_gather",
            secs,
            bytes,
            &[host],
            Some(Comm::Data),
        );
        let copies = self.list_copies("param_gather_copies", bytes, lane, &[gather]);
        self.set_last(copies);
        copies
    }

    /// Reduce-scatters `layer`'s gradients one weight matrix at a time, each after its list is
    /// copied into one buffer, the compute stream waiting for the last.
    pub(super) fn reduce_on_demand(&mut self, layer: u32) {
        if self.setup.gradient_ranks() < 2 {
            return;
        }
        let lane = self.stage().data;
        for params in weight_matrices(self.setup, layer) {
            let bytes = params * self.setup.grad_bytes;
            let after = self.compute_deps();
            let copies = self.list_copies("grad_list_copies", bytes, lane, &after);
            let secs = self.collective_seconds(Comm::Data, CollectiveOp::ReduceScatter, bytes);
            let reduce = self.comm_op(
                lane,
                "grad_reduce",
                secs,
                bytes,
                &[copies],
                Some(Comm::Data),
            );
            self.stage().buckets.push(reduce);
            self.set_last(reduce);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuse_distance_releases_all_but_the_last_matrices() {
        // GPT-3 175B without tensor parallelism: QKV 453 M, projection 151 M, MLP 604 M twice.
        // The down projection's backward follows its recomputed forward at once (distance 0);
        // the up projection waits for the down projection twice (1.21 B), the others longer.
        let h = 12288.0_f64;
        let gpt3 = [3.0 * h * h, h * h, 4.0 * h * h, 4.0 * h * h];
        assert_eq!(
            released_for_backward(&gpt3),
            vec![4.0 * h * h, h * h, 3.0 * h * h]
        );
        // Hidden 8192 (a 70B-class layer): the up projection waits for 2 x 4h^2 = 0.54 B and is
        // kept; the projection waits for twice both MLP matrices, 1.07 B, and is released.
        let h = 8192.0_f64;
        let mid = [3.0 * h * h, h * h, 4.0 * h * h, 4.0 * h * h];
        assert_eq!(released_for_backward(&mid), vec![h * h, 3.0 * h * h]);
        // Hidden 4096 (a 7B-class layer): the QKV matrix, the farthest, waits for 2 x 9h^2 =
        // 0.30 B, so every matrix is kept.
        let h = 4096.0_f64;
        let small = [3.0 * h * h, h * h, 4.0 * h * h, 4.0 * h * h];
        assert!(released_for_backward(&small).is_empty());
    }
}
