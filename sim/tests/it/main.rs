//! The integration tests of `clustersim`, one binary: a module per topic, the shared helpers in
//! `common` (scenarios built and run, the CLI run as a user would, data beside the repository,
//! statistics of comparisons with measurements).

mod common;

mod accelerator;
mod activation_plan;
mod async_pipeline;
mod capacity;
mod cli;
mod cluster;
mod collective_scenario;
mod collective_validation;
mod context;
mod degraded_links;
mod diffusion;
mod diffusion_offload;
mod eager_and_op_recompute;
mod federated;
mod fp8_training;
mod fuzz;
mod grad_dtype;
mod host;
mod kernels_scenario;
mod layout;
mod limits;
mod local_sgd;
mod malformed;
mod models;
mod moe;
mod network;
mod optimizers;
mod papers;
mod pipeline;
mod placement;
mod plan;
mod plan_diffusion;
mod plan_serving;
mod power_thermal;
mod profile;
mod properties;
mod ranks;
mod serving;
mod serving_engines;
mod skip_attention;
mod sweep;
mod tensor_parallel;
mod topology;
mod traffic;
mod training_compression;
mod training_frameworks;
mod training_links;
mod unfused_attention;
mod validate;
mod vidur_compute;
mod vidur_profile;
mod zero;
