//! The CUDA libraries this layer loads at run time: the entry points it needs from each (checked
//! before the first call, so that an older library is reported instead of making cudarc panic),
//! and what their errors mean for a run (skip the point, or stop).

use crate::measure::BenchError;
use cudarc::driver::DriverError;
use cudarc::driver::sys as dsys;

/// Driver entry points this layer calls, directly or through the parts of cudarc it uses; checked
/// before the first call, so that an older driver is reported instead of making cudarc panic.
/// (`cuEventElapsedTime_v2` is what cudarc's CUDA 13 bindings call: drivers from CUDA 12.8 on.)
pub const DRIVER_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDeviceGet",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuMemGetInfo_v2",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuEventElapsedTime_v2",
    "cuMemAllocAsync",
    "cuMemFreeAsync",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuMemsetD8Async",
    "cuModuleLoadData",
    "cuModuleGetFunction",
    "cuModuleUnload",
    "cuLaunchKernel",
    "cuGetErrorName",
    "cuGetErrorString",
];

/// cuBLAS entry points used.
pub const CUBLAS_SYMBOLS: &[&str] = &[
    "cublasCreate_v2",
    "cublasDestroy_v2",
    "cublasSetStream_v2",
    "cublasGetVersion_v2",
    "cublasGemmEx",
];

/// cuBLASLt entry points used.
pub const CUBLASLT_SYMBOLS: &[&str] = &[
    "cublasLtCreate",
    "cublasLtDestroy",
    "cublasLtGetVersion",
    "cublasLtMatmulDescCreate",
    "cublasLtMatmulDescDestroy",
    "cublasLtMatmulDescSetAttribute",
    "cublasLtMatrixLayoutCreate",
    "cublasLtMatrixLayoutDestroy",
    "cublasLtMatmulPreferenceCreate",
    "cublasLtMatmulPreferenceDestroy",
    "cublasLtMatmulPreferenceSetAttribute",
    "cublasLtMatmulAlgoGetHeuristic",
    "cublasLtMatmul",
];

/// The driver's name for an error ("CUDA_ERROR_OUT_OF_MEMORY").
pub(super) fn driver_error_name(e: &DriverError) -> String {
    match e.error_name() {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => format!("{:?}", e.0),
    }
}

/// A driver error while doing `what`: running out of memory skips the point or shape, anything
/// else leaves the context unusable and stops the run.
pub(super) fn drv(what: &'static str) -> impl Fn(DriverError) -> BenchError {
    move |e| {
        let name = driver_error_name(&e);
        let message = format!("{what}: {name}");
        if e.0 == dsys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            BenchError::skip(message)
        } else {
            BenchError::fatal(message)
        }
    }
}

/// True for cuBLAS/cuBLASLt statuses that concern one call's arguments or resources (skip it),
/// false for those that may leave the GPU in a bad state (stop).
pub fn blas_status_skippable(status: &str) -> bool {
    matches!(
        status,
        "CUBLAS_STATUS_NOT_SUPPORTED"
            | "CUBLAS_STATUS_INVALID_VALUE"
            | "CUBLAS_STATUS_ARCH_MISMATCH"
            | "CUBLAS_STATUS_ALLOC_FAILED"
    )
}

pub(super) fn blas(what: &'static str, status: impl std::fmt::Debug) -> BenchError {
    let name = format!("{status:?}");
    let message = format!("{what}: {name}");
    if blas_status_skippable(&name) {
        BenchError::skip(message)
    } else {
        BenchError::fatal(message)
    }
}

/// Checks that a library loads and has every symbol in `symbols`.
macro_rules! check_library {
    ($module:ident, $file:literal, $name:expr, $symbols:expr) => {{
        // SAFETY: only tries to dlopen the library and drops the handle.
        if !unsafe { cudarc::$module::sys::is_culib_present() } {
            Err(format!(
                "{} could not be loaded (cudarc looks for {}.so and versioned names such as \
                 {}.so.13; put its directory on LD_LIBRARY_PATH)",
                $name, $file, $file
            ))
        } else {
            // SAFETY: the library is present, so culib() finds it instead of panicking; looking
            // a symbol up does not call it.
            let lib = unsafe { cudarc::$module::sys::culib() };
            match $symbols
                .iter()
                .copied()
                .find(|s: &&str| unsafe { lib.get::<unsafe extern "C" fn()>(*s) }.is_err())
            {
                Some(missing) => Err(format!("{} has no entry point {missing}", $name)),
                None => Ok(()),
            }
        }
    }};
}

pub(super) use check_library;
