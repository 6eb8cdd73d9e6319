//! The distinct collectives of a step: each (stage GPU, communicator, operation, bytes) priced
//! once, how many operations it became, and which one each collective operation's duration came
//! from. Looked up by key, not searched: a step runs a few hundred distinct collectives a
//! million times.

use crate::collective::CollectiveOp;
use crate::workload::training::comm::Comm;
use crate::workload::training::links::CommUse;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FxHash's multiply-rotate hash: the keys are a few small integers from the step itself, so
/// SipHash's guard against chosen keys buys nothing and costs a tenth of the build.
#[derive(Default)]
pub(super) struct Fx(u64);

impl Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    // (enum tags, flags and small integers each as one word, not through `write`)
    fn write_u8(&mut self, x: u8) {
        self.write_u64(x as u64);
    }

    fn write_u32(&mut self, x: u32) {
        self.write_u64(x as u64);
    }

    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}

/// A hash map on [`Fx`].
pub(super) type Map<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

/// Bits of a size or price for a key (`-0.0` as `0.0`, so equal values are one key).
fn bits(x: f64) -> u64 {
    (x + 0.0).to_bits()
}

#[derive(Default)]
pub(super) struct Priced {
    /// In the order they were first priced.
    uses: Vec<CommUse>,
    index: Map<(u32, Comm, CollectiveOp, u64), u32>,
    /// The latest priced on each GPU and communicator at each price, and at any price.
    at_price: Map<(u32, Comm, u64), u32>,
    latest: Map<(u32, Comm), u32>,
}

impl Priced {
    /// The seconds of a collective priced before, counting one more use of it.
    pub(super) fn reuse(
        &mut self,
        base: u32,
        comm: Comm,
        op: CollectiveOp,
        bytes: f64,
    ) -> Option<f64> {
        let &i = self.index.get(&(base, comm, op, bits(bytes)))?;
        let u = &mut self.uses[i as usize];
        u.count += 1;
        Some(u.seconds)
    }

    /// A collective priced for the first time, used once.
    pub(super) fn insert(
        &mut self,
        base: u32,
        comm: Comm,
        op: CollectiveOp,
        bytes: f64,
        seconds: f64,
    ) {
        let i = self.uses.len() as u32;
        self.uses.push(CommUse {
            base,
            comm,
            op,
            bytes,
            count: 1,
            seconds,
        });
        self.index.insert((base, comm, op, bits(bytes)), i);
        self.at_price.insert((base, comm, bits(seconds)), i);
        self.latest.insert((base, comm), i);
    }

    /// Which collective an operation of `seconds` on `base`'s `comm` took its duration from:
    /// the latest on that GPU and communicator at that price, else the latest on them.
    pub(super) fn source(&self, base: u32, comm: Comm, seconds: f64) -> Option<u32> {
        let at = self.at_price.get(&(base, comm, bits(seconds)));
        at.or_else(|| self.latest.get(&(base, comm))).copied()
    }

    /// Every distinct collective with its count.
    pub(super) fn into_uses(self) -> Vec<CommUse> {
        self.uses
    }
}
