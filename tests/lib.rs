//! End-to-end tests of the whole workspace live in `tests/*.rs` beside this file.
