//! The kernels a step has priced, looked up by their fields' bits: a step prices the same few
//! kernels millions of times, layer after layer, micro-batch after micro-batch, in the same
//! order; so the kernel that followed the last one the time before is tried first.

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
pub(super) struct KernelPrices {
    /// Each kernel priced, in the order first priced, and where it is by key.
    priced: Vec<(Key, KernelCost)>,
    index: Map<Key, u32>,
    /// The kernel asked for last, and the one asked for after each the last time.
    last: u32,
    next: Vec<u32>,
}

impl KernelPrices {
    /// `kernel`'s price on `compute`, priced once (a step has one compute model).
    pub(super) fn get(&mut self, compute: &ComputeModel, kernel: &Kernel) -> KernelCost {
        let key = Key::of(kernel);
        let guess = self.next.get(self.last as usize).copied();
        let i = match guess {
            Some(g) if self.priced[g as usize].0 == key => g,
            _ => {
                let i = match self.index.get(&key) {
                    Some(&i) => i,
                    None => {
                        let cost = compute.cost(kernel).expect(
                            "the set-up checked that the GPU computes in the model's format",
                        );
                        let i = self.priced.len() as u32;
                        self.priced.push((key, cost));
                        self.next.push(i);
                        self.index.insert(key, i);
                        i
                    }
                };
                if let Some(n) = self.next.get_mut(self.last as usize) {
                    *n = i;
                }
                i
            }
        };
        self.last = i;
        self.priced[i as usize].1
    }
}
