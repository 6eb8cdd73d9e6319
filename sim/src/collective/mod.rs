//! Collectives: how all-reduce and its relatives turn into time on the network.

pub mod ring;
