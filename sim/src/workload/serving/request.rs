//! A request of a serving workload, as the traffic it receives is made of (the lowering layer's
//! `scenario/lower/traffic/` generates them from `[workload]`).

use crate::engine::SimTime;

/// One request: it arrives, brings `prompt_tokens` to prefill, and wants `output_tokens` decoded.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// 0, 1, 2, ... in order of arrival.
    pub id: u32,
    pub arrival: SimTime,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
}

/// The most requests a workload sends: each is simulated, with its own state (about 4 KB of it
/// and 60 us of simulation a request on the development machine, 70B on four H100).
pub const MAX_REQUESTS: u32 = 1_000_000;
