//! The profiles compiled into the binary from `sim/profiles/*.toml`: `*-vidur` built by
//! `files::import_vidur_dir` from Vidur's published operator timings (a test checks that the
//! shipped files equal a fresh import); `*-measured` written by `clustersim-calibrate measure` on
//! a real GPU, byte for byte as the tool wrote it, its raw numbers kept under `calibration/`.

use super::Profile;
use crate::hw::gpu::GpuSpec;

/// Profiles compiled into the binary: (name, catalog GPU, TOML text). The GPU is repeated here so
/// that listing the profiles of a GPU needs no parsing; a unit test checks it against the file.
pub(super) const SHIPPED: &[(&str, &str, &str)] = &[
    (
        "a100-sxm4-80gb-vidur",
        "A100-SXM4-80GB",
        include_str!("../../../profiles/a100-sxm4-80gb-vidur.toml"),
    ),
    (
        "h100-sxm5-80gb-vidur",
        "H100-SXM5-80GB",
        include_str!("../../../profiles/h100-sxm5-80gb-vidur.toml"),
    ),
    (
        "h200-sxm-141gb-measured",
        "H200-SXM-141GB",
        include_str!("../../../profiles/h200-sxm-141gb-measured.toml"),
    ),
];

/// Names of the shipped profiles, as a scenario's `cluster.profile` names them.
pub fn shipped_names() -> Vec<&'static str> {
    SHIPPED.iter().map(|(name, _, _)| *name).collect()
}

/// Names of the shipped profiles measured on `gpu`.
pub fn shipped_for(gpu: &GpuSpec) -> Vec<&'static str> {
    SHIPPED
        .iter()
        .filter(|(_, g, _)| *g == gpu.name)
        .map(|(name, _, _)| *name)
        .collect()
}

/// The TOML text of a shipped profile.
pub fn shipped_text(name: &str) -> Option<&'static str> {
    SHIPPED
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, _, t)| *t)
}

/// A shipped profile by name, parsed.
pub fn shipped_profile(name: &str) -> Option<Profile> {
    let text = shipped_text(name)?;
    Some(
        Profile::parse(text, &format!("shipped profile {name}"))
            .expect("shipped profiles are valid (checked by the test suite)"),
    )
}

/// Every shipped profile, parsed.
pub fn shipped() -> Vec<(&'static str, Profile)> {
    SHIPPED
        .iter()
        .map(|(name, _, _)| (*name, shipped_profile(name).expect("listed")))
        .collect()
}
