//! How a video's GPUs split the work, as xDiT names it: `cfg` branches of classifier-free
//! guidance on groups of their own, `pipefusion` stages of layers, `ring` x `ulysses` sequence
//! parallelism (USP: Ulysses inside, Ring around it), and `tp` tensor parallelism innermost.
//!
//! DSP (`dsp`, for spatial-temporal models) and latent parallelism (`latent`) take Ulysses'
//! place when used.
//!
//! Ranks are numbered tp fastest, then ulysses, ring, pipefusion and cfg, so that the
//! communication-heaviest groups sit closest (a node's NVLink before the network). Rank 0
//! stands for every GPU: all do the same work on their share (the first PipeFusion stage is the
//! one simulated, its neighbours' hand-offs priced to the next stage).

/// The degrees of each kind of parallelism of one video.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub tp: u32,
    pub ulysses: u32,
    pub ring: u32,
    pub pipefusion: u32,
    /// Patches of the latent in the PipeFusion pipeline.
    pub patches: u32,
    pub cfg: u32,
    /// DSP degree (spatial-temporal models: frames split for spatial attention, positions for
    /// temporal; it takes Ulysses' place in the numbering and excludes Ulysses and Ring).
    pub dsp: u32,
    /// Latent parallelism: GPUs that each denoise their own region of the latent (the split
    /// dimension rotating every step), the regions gathered at the end of each step.
    pub latent: u32,
    /// Latent parallelism: tokens each region borrows from its neighbours on each side.
    pub latent_overlap: u32,
}

impl Layout {
    /// GPUs one video runs on.
    pub fn world(&self) -> u32 {
        self.tp * self.sp() * self.latent * self.pipefusion * self.cfg
    }

    /// Sequence-parallel degree.
    /// Branches each GPU runs as one batch, of a step's `branches`: split over the `cfg` groups
    /// (a group takes the larger share when they do not divide).
    pub fn branches_per_gpu(&self, branches: u64) -> u64 {
        branches.div_ceil(self.cfg as u64)
    }

    pub fn sp(&self) -> u32 {
        self.ulysses * self.ring * self.dsp
    }

    /// The ranks of rank 0's group of kind `dim`: tensor, ulysses or ring.
    pub fn group(&self, dim: Dim) -> Vec<u32> {
        let (stride, size) = match dim {
            Dim::Tensor => (1, self.tp),
            Dim::Ulysses => (self.tp, self.ulysses),
            Dim::Dsp => (self.tp, self.dsp),
            Dim::Latent => (self.tp, self.latent),
            Dim::Ring => (self.tp * self.ulysses, self.ring),
            Dim::Pipe => (self.tp * self.sp() * self.latent, self.pipefusion),
            Dim::Cfg => (
                self.tp * self.sp() * self.latent * self.pipefusion,
                self.cfg,
            ),
        };
        (0..size).map(|i| i * stride).collect()
    }
}

/// A parallel dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    Tensor,
    Ulysses,
    Dsp,
    Latent,
    Ring,
    Pipe,
    Cfg,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_strided_innermost_first() {
        let l = Layout {
            tp: 2,
            ulysses: 4,
            ring: 2,
            pipefusion: 1,
            patches: 1,
            cfg: 2,
            dsp: 1,
            latent: 1,
            latent_overlap: 0,
        };
        assert_eq!(l.world(), 32);
        assert_eq!(l.group(Dim::Tensor), vec![0, 1]);
        assert_eq!(l.group(Dim::Ulysses), vec![0, 2, 4, 6]);
        assert_eq!(l.group(Dim::Ring), vec![0, 8]);
        assert_eq!(l.group(Dim::Cfg), vec![0, 16]);
    }
}
