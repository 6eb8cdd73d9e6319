//! The network: how bytes move between GPUs.

pub mod fabric;

pub use fabric::{Fabric, GroupShape};
