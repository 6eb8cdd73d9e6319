//! The kernels a step has priced, looked up by their fields' bits: a step prices the same few
//! kernels millions of times, layer after layer, micro-batch after micro-batch.

use super::priced::Map;
use crate::hw::{ComputeModel, Dtype, ElementwiseOp, Kernel, KernelCost};

/// A kernel's fields, sizes as their bits: equal keys are the same kernel.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Gemm([u64; 4], Dtype),
    Attention([u64; 4], bool, bool, Dtype),
    Memory(u64, u64),
    Elementwise(ElementwiseOp, bool, u64, u64),
}

impl Key {
    fn of(kernel: &Kernel) -> Key {
        match *kernel {
            Kernel::Gemm {
                m,
                n,
                k,
                batch,
                dtype,
            } => Key::Gemm([m, n, k, batch], dtype),
            Kernel::Attention {
                batch_heads,
                q_len,
                kv_len,
                head_dim,
                causal,
                backward,
                dtype,
            } => Key::Attention(
                [batch_heads, q_len, kv_len, head_dim],
                causal,
                backward,
                dtype,
            ),
            Kernel::Memory { bytes, flops } => Key::Memory(bytes.to_bits(), flops.to_bits()),
            Kernel::Elementwise {
                op,
                backward,
                bytes,
                flops,
            } => Key::Elementwise(op, backward, bytes.to_bits(), flops.to_bits()),
        }
    }
}

#[derive(Default)]
pub(super) struct KernelPrices(Map<Key, KernelCost>);

impl KernelPrices {
    /// `kernel`'s price on `compute`, priced once (a step has one compute model).
    pub(super) fn get(&mut self, compute: &ComputeModel, kernel: &Kernel) -> KernelCost {
        *self.0.entry(Key::of(kernel)).or_insert_with(|| {
            compute
                .cost(kernel)
                .expect("the set-up checked that the GPU computes in the model's format")
        })
    }
}
