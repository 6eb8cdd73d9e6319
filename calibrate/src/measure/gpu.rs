//! The [`Bench`] of a real GPU, through cudarc 0.19 with runtime-loaded libraries.
//!
//! A thin layer: it allocates, fills and frees buffers, enqueues work and times it; the run, the
//! statistics and the files are elsewhere and tested without a GPU. **Nothing in this file has
//! run on a GPU yet**: the machine it was written on has none (docs/CALIBRATION.md says how the
//! device check runs it).
//!
//! # Timing
//!
//! One non-blocking stream, cudarc's event tracking off (nothing but the measured work goes on
//! the stream). A timed batch is: a spin kernel (waits on `%globaltimer` for 1.5 times the host
//! time the batch is expected to take to submit, at most 20 ms, so that the whole batch is queued
//! before the GPU reaches it), an event, `calls` back-to-back calls, an event; the time is
//! `cuEventElapsedTime` between the two events. A lone launch (`time_single_launch`) has no spin.
//!
//! # Kernels
//!
//! [`ptx::PTX`], written by hand (no NVRTC needed: the driver compiles PTX when the module loads):
//! an empty kernel, the spin kernel and `c = a + b` over fp32 with one float4 per thread. It was
//! checked with `ptxas` 13.5 for sm_80, sm_90 and sm_100 (the `ptx_assembles` test does it again
//! where `ptxas` is on the PATH or in `CLUSTERSIM_PTXAS`).
//!
//! # GEMMs
//!
//! As a linear layer computes `Y = X W^T` with row-major X (m x k), W (n x k) and Y (m x n): in
//! cuBLAS's column-major terms `Y^T (n x m) = op(W) X^T` with op = transpose (`TN`, the layout
//! fp8 requires), lda = ldb = k, ldc = n. bf16, fp16 and tf32 through `cublasGemmEx` with the
//! default algorithm; fp8 (e4m3 in, bf16 out) through `cublasLtMatmul` with the heuristic's first
//! algorithm and a 32 MiB workspace. Inputs are random (magnitudes 2^-8 to 1: zeros would run
//! faster than real data), copied from a 16 MiB random seed. The weight cycles through copies that
//! together span at least 4 times the L2 cache (at most 64 copies), so each call reads it from
//! device memory as a model's forward pass does.

use super::plan::output_dtype;
use super::{Bench, BenchError, Transfer};
use clustersim::hw::Dtype;
use cudarc::cublas::CudaBlas;
use cudarc::driver::result as dres;
use cudarc::driver::sys::{self as dsys, CUdevice_attribute, CUevent_flags};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, DriverError,
    LaunchConfig, PinnedHostSlice, PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Instant;

mod elements;
mod ptx;

use elements::element_bytes;
pub use elements::random_elements;
use ptx::PTX;

/// Threads per block of the elementwise kernel.
const ADD_BLOCK: u32 = 256;

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
fn driver_error_name(e: &DriverError) -> String {
    match e.error_name() {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => format!("{:?}", e.0),
    }
}

/// A driver error while doing `what`: running out of memory skips the point or shape, anything
/// else leaves the context unusable and stops the run.
fn drv(what: &'static str) -> impl Fn(DriverError) -> BenchError {
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

fn blas(what: &'static str, status: impl std::fmt::Debug) -> BenchError {
    let name = format!("{status:?}");
    let message = format!("{what}: {name}");
    if blas_status_skippable(&name) {
        BenchError::skip(message)
    } else {
        BenchError::fatal(message)
    }
}

/// Bytes of the random seed each buffer is filled from.
const SEED_BYTES: usize = 16 << 20;
/// The weight copies span at least this many times the L2 cache, and at least 256 MiB.
const COLD_L2_FACTOR: u64 = 4;
const MAX_WEIGHT_COPIES: u64 = 64;
/// cuBLASLt workspace (NVIDIA's recommendation for Hopper).
const LT_WORKSPACE_BYTES: usize = 32 << 20;
/// Longest spin queued ahead of a batch.
const MAX_SPIN_S: f64 = 0.02;

struct Kernels {
    empty: CudaFunction,
    spin: CudaFunction,
    add: CudaFunction,
}

/// A cuBLASLt handle and its workspace.
struct Lt {
    handle: cudarc::cublaslt::sys::cublasLtHandle_t,
    workspace: CudaSlice<u8>,
    version: String,
}

impl Drop for Lt {
    fn drop(&mut self) {
        // SAFETY: created by cublasLtCreate and destroyed once.
        let _ = unsafe { cudarc::cublaslt::result::destroy_handle(self.handle) };
    }
}

struct LtDesc(cudarc::cublaslt::sys::cublasLtMatmulDesc_t);
impl Drop for LtDesc {
    fn drop(&mut self) {
        // SAFETY: created once, destroyed once.
        let _ = unsafe { cudarc::cublaslt::result::destroy_matmul_desc(self.0) };
    }
}

struct LtLayout(cudarc::cublaslt::sys::cublasLtMatrixLayout_t);
impl Drop for LtLayout {
    fn drop(&mut self) {
        // SAFETY: created once, destroyed once.
        let _ = unsafe { cudarc::cublaslt::result::destroy_matrix_layout(self.0) };
    }
}

struct LtPref(cudarc::cublaslt::sys::cublasLtMatmulPreference_t);
impl Drop for LtPref {
    fn drop(&mut self) {
        // SAFETY: created once, destroyed once.
        let _ = unsafe { cudarc::cublaslt::result::destroy_matmul_pref(self.0) };
    }
}

/// What one fp8 GEMM shape at one m needs: descriptors and the chosen algorithm.
struct LtPlan {
    m: u64,
    desc: LtDesc,
    w: LtLayout,
    x: LtLayout,
    y: LtLayout,
    algo: cudarc::cublaslt::sys::cublasLtMatmulAlgo_t,
}

struct GemmState {
    dtype: Dtype,
    n: u64,
    k: u64,
    m_max: u64,
    x: u64,
    y: u64,
    w: Vec<u64>,
    next_w: Cell<usize>,
    lt_plans: Vec<LtPlan>,
    /// Owns the memory behind the pointers above.
    _buffers: Vec<CudaSlice<u8>>,
}

impl GemmState {
    fn weight(&self) -> u64 {
        let i = self.next_w.get();
        self.next_w.set((i + 1) % self.w.len());
        self.w[i]
    }
}

/// Pinned host memory or device memory behind a transfer's pointers: held to keep the memory
/// alive, never read.
#[allow(dead_code)]
enum Buffer {
    Device(CudaSlice<u8>),
    Host(PinnedHostSlice<u8>),
}

struct TransferState {
    kind: Transfer,
    size: u64,
    /// Device pointers, or host addresses of the pinned buffers, in the order the kind uses them.
    ptrs: Vec<u64>,
    _buffers: Vec<Buffer>,
}

/// One GPU, ready to measure. Field order is drop order: buffers and handles before the stream
/// and the context.
pub struct Gpu {
    gemm: Option<GemmState>,
    transfer: Option<TransferState>,
    seeds: Vec<(Dtype, CudaSlice<u8>)>,
    lt: Result<Lt, String>,
    blas: Result<(CudaBlas, String), String>,
    kernels: Result<Kernels, String>,
    start: CudaEvent,
    end: CudaEvent,
    stream: Arc<CudaStream>,
    ctx: Arc<CudaContext>,
    cc: (i32, i32),
    l2_bytes: Option<u64>,
    /// Host seconds to submit one call, last seen, per kind: sizes the spin.
    host_gemm: f64,
    host_transfer: f64,
    host_launch: f64,
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // cudarc's CudaBlas unwraps the result of cublasDestroy when dropped; after an error that
        // broke the context that could panic, so the handle is leaked instead. Everything else
        // records its errors quietly.
        if self.stream.synchronize().is_err()
            && let Ok((blas, _)) = std::mem::replace(&mut self.blas, Err(String::new()))
        {
            std::mem::forget(blas);
        }
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

impl Gpu {
    /// Opens device `ordinal`: context, stream, events, the PTX module, cuBLAS and (on GPUs with
    /// fp8 tensor cores) cuBLASLt. Only the driver part is required; a missing library or module
    /// makes the sections that need it skip, with the reason.
    pub fn open(ordinal: usize) -> Result<Gpu, BenchError> {
        check_library!(driver, "libcuda", "the CUDA driver", DRIVER_SYMBOLS)
            .map_err(BenchError::fatal)?;
        let ctx = CudaContext::new(ordinal).map_err(drv("creating the CUDA context"))?;
        // SAFETY: set before anything is allocated; this layer uses one stream and synchronizes
        // at the end of every timed batch and before freeing host memory.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(drv("creating a stream"))?;
        let cc = ctx
            .compute_capability()
            .map_err(drv("reading the compute capability"))?;
        let l2_bytes = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
            .ok()
            .and_then(|v| u64::try_from(v).ok())
            .filter(|&v| v > 0);
        let event = || {
            ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(drv("creating a timing event"))
        };
        let (start, end) = (event()?, event()?);
        let kernels = Self::load_kernels(&ctx);
        let blas = Self::open_blas(&stream);
        let lt = if cc >= (8, 9) {
            Self::open_lt(&stream)
        } else {
            Err(format!(
                "fp8 GEMMs need fp8 tensor cores (compute capability 8.9 or later); this GPU is {}.{}",
                cc.0, cc.1
            ))
        };
        Ok(Gpu {
            gemm: None,
            transfer: None,
            seeds: Vec::new(),
            lt,
            blas,
            kernels,
            start,
            end,
            stream,
            ctx,
            cc,
            l2_bytes,
            host_gemm: 10e-6,
            host_transfer: 10e-6,
            host_launch: 5e-6,
        })
    }

    fn load_kernels(ctx: &Arc<CudaContext>) -> Result<Kernels, String> {
        let module = ctx
            .load_module(Ptx::from_src(PTX))
            .map_err(|e| format!("loading the PTX module: {}", driver_error_name(&e)))?;
        let function = |name: &str| {
            module.load_function(name).map_err(|e| {
                format!(
                    "finding {name} in the PTX module: {}",
                    driver_error_name(&e)
                )
            })
        };
        Ok(Kernels {
            empty: function("clustersim_empty")?,
            spin: function("clustersim_spin")?,
            add: function("clustersim_add_f32x4")?,
        })
    }

    fn open_blas(stream: &Arc<CudaStream>) -> Result<(CudaBlas, String), String> {
        check_library!(cublas, "libcublas", "cuBLAS", CUBLAS_SYMBOLS)?;
        let blas = CudaBlas::new(stream.clone())
            .map_err(|e| format!("creating a cuBLAS handle: {:?}", e.0))?;
        let mut version: std::ffi::c_int = 0;
        // SAFETY: a valid handle; writes one int.
        let status =
            unsafe { cudarc::cublas::sys::cublasGetVersion_v2(*blas.handle(), &mut version) };
        let version = match status.result() {
            Ok(()) => super::machine::library_version(version as u64),
            Err(e) => format!("version not read ({:?})", e.0),
        };
        Ok((blas, version))
    }

    fn open_lt(stream: &Arc<CudaStream>) -> Result<Lt, String> {
        check_library!(cublaslt, "libcublasLt", "cuBLASLt", CUBLASLT_SYMBOLS)?;
        let handle = cudarc::cublaslt::result::create_handle()
            .map_err(|e| format!("creating a cuBLASLt handle: {:?}", e.0))?;
        // SAFETY: no arguments; returns a number.
        let version =
            super::machine::library_version(
                unsafe { cudarc::cublaslt::sys::cublasLtGetVersion() } as u64
            );
        // SAFETY: uninitialised bytes are fine for a workspace.
        let workspace = match unsafe { stream.alloc::<u8>(LT_WORKSPACE_BYTES) } {
            Ok(w) => w,
            Err(e) => {
                // SAFETY: created just above.
                let _ = unsafe { cudarc::cublaslt::result::destroy_handle(handle) };
                return Err(format!(
                    "allocating the cuBLASLt workspace: {}",
                    driver_error_name(&e)
                ));
            }
        };
        Ok(Lt {
            handle,
            workspace,
            version,
        })
    }

    /// L2 cache size, as the driver reports it.
    pub fn l2_bytes(&self) -> Option<u64> {
        self.l2_bytes
    }

    /// cuBLAS version as loaded, if it loaded.
    pub fn cublas_version(&self) -> Option<String> {
        self.blas.as_ref().ok().map(|(_, v)| v.clone())
    }

    /// cuBLASLt version as loaded, if it loaded.
    pub fn cublaslt_version(&self) -> Option<String> {
        self.lt.as_ref().ok().map(|lt| lt.version.clone())
    }

    fn ptr(&self, slice: &CudaSlice<u8>) -> u64 {
        // With event tracking off, the returned guard records nothing.
        let (ptr, _guard) = slice.device_ptr(&self.stream);
        ptr
    }

    fn alloc(&self, bytes: u64) -> Result<CudaSlice<u8>, BenchError> {
        // SAFETY: the contents are written before they are read (or do not matter).
        unsafe { self.stream.alloc::<u8>(bytes as usize) }.map_err(drv("allocating device memory"))
    }

    /// The device copy of the random seed for `dtype`, made on first use.
    fn seed(&mut self, dtype: Dtype) -> Result<u64, BenchError> {
        let key = match dtype {
            Dtype::Tf32 | Dtype::Fp32 => Dtype::Fp32,
            d => d,
        };
        if let Some((_, s)) = self.seeds.iter().find(|(d, _)| *d == key) {
            return Ok(self.ptr(s));
        }
        let host = random_elements(key, SEED_BYTES, 0x5eed ^ element_bytes(key));
        let seed = self.alloc(SEED_BYTES as u64)?;
        let ptr = self.ptr(&seed);
        // SAFETY: `host` outlives the copy: the stream is synchronized before it is dropped.
        unsafe { dres::memcpy_htod_async(ptr, &host, self.stream.cu_stream()) }
            .map_err(drv("copying the random seed to the GPU"))?;
        self.stream
            .synchronize()
            .map_err(drv("copying the random seed to the GPU"))?;
        self.seeds.push((key, seed));
        Ok(ptr)
    }

    /// Fills `bytes` at `dst` with copies of the seed of `dtype`.
    fn fill(&mut self, dtype: Dtype, dst: u64, bytes: u64) -> Result<(), BenchError> {
        let seed = self.seed(dtype)?;
        let mut offset = 0;
        while offset < bytes {
            let len = (bytes - offset).min(SEED_BYTES as u64);
            // SAFETY: both ranges lie inside live allocations of this context.
            unsafe {
                dres::memcpy_dtod_async(dst + offset, seed, len as usize, self.stream.cu_stream())
            }
            .map_err(drv("filling a buffer"))?;
            offset += len;
        }
        Ok(())
    }

    /// Enqueues the spin kernel for `seconds` (nothing if the module did not load).
    fn spin(&self, seconds: f64) -> Result<(), BenchError> {
        let Ok(k) = &self.kernels else {
            return Ok(());
        };
        let ns = (seconds.clamp(0.0, MAX_SPIN_S) * 1e9) as u64;
        let mut launch = self.stream.launch_builder(&k.spin);
        launch.arg(&ns);
        // SAFETY: the kernel takes one u64 and touches no memory.
        unsafe { launch.launch(one_thread()) }
            .map(|_| ())
            .map_err(drv("launching the spin kernel"))
    }

    /// Times one batch: spin for 1.5 times the expected host submission (`host_per_call` per
    /// call), event, `calls` enqueues, event. Returns (GPU seconds, host seconds submitting).
    fn timed(
        &self,
        host_per_call: f64,
        calls: u32,
        mut enqueue: impl FnMut() -> Result<(), BenchError>,
    ) -> Result<(f64, f64), BenchError> {
        self.spin(1.5 * host_per_call * f64::from(calls) + 20e-6)?;
        self.start
            .record(&self.stream)
            .map_err(drv("recording the start event"))?;
        let t0 = Instant::now();
        for _ in 0..calls {
            enqueue()?;
        }
        let host = t0.elapsed().as_secs_f64();
        self.end
            .record(&self.stream)
            .map_err(drv("recording the end event"))?;
        let ms = self
            .start
            .elapsed_ms(&self.end)
            .map_err(drv("waiting for the timed batch"))?;
        Ok((f64::from(ms) * 1e-3, host))
    }

    /// Builds (once per m) the cuBLASLt descriptors and algorithm of the prepared fp8 shape.
    fn lt_plan(&mut self, m: u64) -> Result<(), BenchError> {
        use cudarc::cublaslt::result as lt;
        use cudarc::cublaslt::sys as ltsys;
        let handle = match &self.lt {
            Ok(l) => l.handle,
            Err(why) => return Err(BenchError::skip(why.clone())),
        };
        let state = self.gemm.as_mut().expect("prepared");
        if state.lt_plans.iter().any(|p| p.m == m) {
            return Ok(());
        }
        let (n, k) = (state.n, state.k);
        let err = |what: &'static str| move |e: lt::CublasError| blas(what, e.0);
        let desc = LtDesc(
            lt::create_matmul_desc(
                ltsys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                ltsys::cudaDataType_t::CUDA_R_32F,
            )
            .map_err(err("cublasLtMatmulDescCreate"))?,
        );
        let transpose: i32 = 1; // CUBLAS_OP_T for the weight
        // SAFETY: a live descriptor; the attribute is an int32 cublasOperation_t.
        unsafe {
            lt::set_matmul_desc_attribute(
                desc.0,
                ltsys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA,
                (&transpose as *const i32).cast(),
                std::mem::size_of::<i32>(),
            )
        }
        .map_err(err("setting TRANSA"))?;
        let layout = |t: ltsys::cudaDataType, rows: u64, cols: u64, ld: u64| {
            lt::create_matrix_layout(t, rows, cols, ld as i64)
                .map(LtLayout)
                .map_err(err("cublasLtMatrixLayoutCreate"))
        };
        let e4m3 = ltsys::cudaDataType_t::CUDA_R_8F_E4M3;
        let w = layout(e4m3, k, n, k)?;
        let x = layout(e4m3, k, m, k)?;
        let y = layout(ltsys::cudaDataType_t::CUDA_R_16BF, n, m, n)?;
        let pref = LtPref(lt::create_matmul_pref().map_err(err("cublasLtMatmulPreferenceCreate"))?);
        let workspace = LT_WORKSPACE_BYTES as u64;
        // SAFETY: a live preference; the attribute is a uint64.
        unsafe {
            lt::set_matmul_pref_attribute(
                pref.0,
                ltsys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                (&workspace as *const u64).cast(),
                std::mem::size_of::<u64>(),
            )
        }
        .map_err(err("setting the workspace size"))?;
        // SAFETY: every descriptor is live.
        let heuristic =
            unsafe { lt::get_matmul_algo_heuristic(handle, desc.0, w.0, x.0, y.0, y.0, pref.0) }
                .map_err(err("cublasLtMatmulAlgoGetHeuristic"))?;
        state.lt_plans.push(LtPlan {
            m,
            desc,
            w,
            x,
            y,
            algo: heuristic.algo,
        });
        Ok(())
    }
}

/// Keeps the host's submission time per call for sizing the next spin, from batches of at least
/// 4 calls only: a lone call may include first-call set-up (kernel selection, module loading)
/// that would make every later spin needlessly long.
fn update_host_estimate(estimate: &mut f64, host_s: f64, calls: u32) {
    if calls >= 4 && host_s.is_finite() && host_s > 0.0 {
        *estimate = host_s / f64::from(calls);
    }
}

fn one_thread() -> LaunchConfig {
    LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1, 1, 1),
        shared_mem_bytes: 0,
    }
}

impl Bench for Gpu {
    fn gemm_support(&self, dtype: Dtype) -> Result<(), String> {
        let blas = || self.blas.as_ref().map(|_| ()).map_err(Clone::clone);
        match dtype {
            Dtype::Fp16 => blas(),
            Dtype::Bf16 | Dtype::Tf32 if self.cc < (8, 0) => Err(format!(
                "{dtype} GEMMs need compute capability 8.0 or later; this GPU is {}.{}",
                self.cc.0, self.cc.1
            )),
            Dtype::Bf16 | Dtype::Tf32 => blas(),
            Dtype::Fp8 => self.lt.as_ref().map(|_| ()).map_err(Clone::clone),
            other => Err(format!("{other} GEMMs are not measured by this tool")),
        }
    }

    fn transfer_support(&self, kind: Transfer) -> Result<(), String> {
        match kind {
            Transfer::Elementwise => self.kernels.as_ref().map(|_| ()).map_err(Clone::clone),
            _ => Ok(()),
        }
    }

    fn launch_support(&self) -> Result<(), String> {
        self.kernels.as_ref().map(|_| ()).map_err(Clone::clone)
    }

    fn prepare_gemm(&mut self, dtype: Dtype, n: u64, k: u64, m_max: u64) -> Result<(), BenchError> {
        self.release();
        let (input, output) = (element_bytes(dtype), element_bytes(output_dtype(dtype)));
        let weight_bytes = n * k * input;
        let cold = (COLD_L2_FACTOR * self.l2_bytes.unwrap_or(64 << 20)).max(256 << 20);
        let copies = cold.div_ceil(weight_bytes).clamp(1, MAX_WEIGHT_COPIES);
        let x = self.alloc(m_max * k * input)?;
        let y = self.alloc(m_max * n * output)?;
        let (xp, yp) = (self.ptr(&x), self.ptr(&y));
        self.fill(dtype, xp, m_max * k * input)?;
        let mut buffers = vec![x, y];
        let mut w = Vec::new();
        for _ in 0..copies {
            let b = self.alloc(weight_bytes)?;
            let p = self.ptr(&b);
            self.fill(dtype, p, weight_bytes)?;
            w.push(p);
            buffers.push(b);
        }
        self.stream
            .synchronize()
            .map_err(drv("filling the GEMM operands"))?;
        self.gemm = Some(GemmState {
            dtype,
            n,
            k,
            m_max,
            x: xp,
            y: yp,
            w,
            next_w: Cell::new(0),
            lt_plans: Vec::new(),
            _buffers: buffers,
        });
        Ok(())
    }

    fn time_gemm(&mut self, m: u64, calls: u32) -> Result<f64, BenchError> {
        use cudarc::cublas::sys as bsys;
        let Some(state) = self.gemm.as_ref() else {
            return Err(BenchError::skip("no GEMM prepared"));
        };
        if m > state.m_max {
            return Err(BenchError::skip(format!(
                "m {m} above the prepared {}",
                state.m_max
            )));
        }
        let dtype = state.dtype;
        if dtype == Dtype::Fp8 {
            self.lt_plan(m)?;
        }
        let state = self.gemm.as_ref().expect("prepared");
        let (n, k) = (state.n, state.k);
        let (alpha, beta) = (1.0f32, 0.0f32);
        let stream = self.stream.cu_stream();
        let (gpu, host) = match dtype {
            Dtype::Fp8 => {
                let lt = self.lt.as_ref().map_err(|w| BenchError::skip(w.clone()))?;
                let plan = state
                    .lt_plans
                    .iter()
                    .find(|p| p.m == m)
                    .expect("built above");
                let workspace = self.ptr(&lt.workspace);
                self.timed(self.host_gemm, calls, || {
                    // SAFETY: the descriptors match the buffers' sizes and formats (see
                    // `lt_plan`), every pointer is a live allocation of this context.
                    unsafe {
                        cudarc::cublaslt::result::matmul(
                            lt.handle,
                            plan.desc.0,
                            (&alpha as *const f32).cast(),
                            (&beta as *const f32).cast(),
                            state.weight() as *const c_void,
                            plan.w.0,
                            state.x as *const c_void,
                            plan.x.0,
                            state.y as *const c_void,
                            plan.y.0,
                            state.y as *mut c_void,
                            plan.y.0,
                            &plan.algo,
                            workspace as *mut c_void,
                            LT_WORKSPACE_BYTES,
                            stream as *mut _,
                        )
                    }
                    .map_err(|e| blas("cublasLtMatmul", e.0))
                })?
            }
            Dtype::Bf16 | Dtype::Fp16 | Dtype::Tf32 => {
                let (blas_handle, _) = self
                    .blas
                    .as_ref()
                    .map_err(|w| BenchError::skip(w.clone()))?;
                let handle = *blas_handle.handle();
                let (data, compute) = match dtype {
                    Dtype::Bf16 => (
                        bsys::cudaDataType_t::CUDA_R_16BF,
                        bsys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                    ),
                    Dtype::Fp16 => (
                        bsys::cudaDataType_t::CUDA_R_16F,
                        bsys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                    ),
                    _ => (
                        bsys::cudaDataType_t::CUDA_R_32F,
                        bsys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32,
                    ),
                };
                let (n32, m32, k32) = (n as i32, m as i32, k as i32);
                self.timed(self.host_gemm, calls, || {
                    // SAFETY: W is k x n (lda k), X is k x m (ldb k), Y is n x m (ldc n), all
                    // column-major within live allocations sized for m_max; alpha and beta are
                    // host floats, as CUBLAS_COMPUTE_32F expects.
                    unsafe {
                        cudarc::cublas::result::gemm_ex(
                            handle,
                            bsys::cublasOperation_t::CUBLAS_OP_T,
                            bsys::cublasOperation_t::CUBLAS_OP_N,
                            n32,
                            m32,
                            k32,
                            (&alpha as *const f32).cast(),
                            state.weight() as *const c_void,
                            data,
                            k32,
                            state.x as *const c_void,
                            data,
                            k32,
                            (&beta as *const f32).cast(),
                            state.y as *mut c_void,
                            data,
                            n32,
                            compute,
                            bsys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                        )
                    }
                    .map_err(|e| blas("cublasGemmEx", e.0))
                })?
            }
            other => return Err(BenchError::skip(format!("{other} GEMMs are not measured"))),
        };
        update_host_estimate(&mut self.host_gemm, host, calls);
        Ok(gpu)
    }

    fn prepare_transfer(&mut self, kind: Transfer, size: u64) -> Result<(), BenchError> {
        self.release();
        if kind == Transfer::Elementwise && !size.is_multiple_of(16) {
            return Err(BenchError::skip(format!(
                "{size} bytes is not a whole number of float4"
            )));
        }
        let device = |gpu: &Gpu| -> Result<(Buffer, u64), BenchError> {
            let b = gpu.alloc(size)?;
            let p = gpu.ptr(&b);
            // SAFETY: a live allocation of `size` bytes.
            unsafe { dres::memset_d8_async(p, 0, size as usize, gpu.stream.cu_stream()) }
                .map_err(drv("clearing a buffer"))?;
            Ok((Buffer::Device(b), p))
        };
        let host = |gpu: &Gpu| -> Result<(Buffer, u64), BenchError> {
            // SAFETY: plain page-locked memory (no write-combining: it is read back too); the
            // contents do not matter.
            let mut b = unsafe { gpu.ctx.alloc_pinned_with_flags::<u8>(size as usize, 0) }
                .map_err(drv("allocating pinned host memory"))?;
            let p = b
                .as_mut_ptr()
                .map_err(drv("allocating pinned host memory"))?;
            Ok((Buffer::Host(b), p as u64))
        };
        let parts = match kind {
            Transfer::DeviceCopy => vec![device(self)?, device(self)?],
            Transfer::Elementwise => vec![device(self)?, device(self)?, device(self)?],
            Transfer::HostToDevice => vec![host(self)?, device(self)?],
            Transfer::DeviceToHost => vec![device(self)?, host(self)?],
        };
        self.stream
            .synchronize()
            .map_err(drv("preparing the buffers"))?;
        let (buffers, ptrs) = parts.into_iter().unzip();
        self.transfer = Some(TransferState {
            kind,
            size,
            ptrs,
            _buffers: buffers,
        });
        Ok(())
    }

    fn time_transfer(&mut self, calls: u32) -> Result<f64, BenchError> {
        let Some(state) = self.transfer.as_ref() else {
            return Err(BenchError::skip("no transfer prepared"));
        };
        let (size, p) = (state.size as usize, &state.ptrs);
        let stream = self.stream.cu_stream();
        let (gpu, host) = match state.kind {
            Transfer::DeviceCopy => self.timed(self.host_transfer, calls, || {
                // SAFETY: two live device buffers of `size` bytes.
                unsafe { dres::memcpy_dtod_async(p[1], p[0], size, stream) }
                    .map_err(drv("cuMemcpyDtoDAsync"))
            })?,
            Transfer::HostToDevice => self.timed(self.host_transfer, calls, || {
                // SAFETY: p[0] is pinned host memory of `size` bytes that outlives the copy (the
                // batch is synchronized before it can be freed); p[1] a device buffer.
                unsafe {
                    let src = std::slice::from_raw_parts(p[0] as *const u8, size);
                    dres::memcpy_htod_async(p[1], src, stream)
                }
                .map_err(drv("cuMemcpyHtoDAsync"))
            })?,
            Transfer::DeviceToHost => self.timed(self.host_transfer, calls, || {
                // SAFETY: as above, the other way; nothing else touches the host buffer.
                unsafe {
                    let dst = std::slice::from_raw_parts_mut(p[1] as *mut u8, size);
                    dres::memcpy_dtoh_async(dst, p[0], stream)
                }
                .map_err(drv("cuMemcpyDtoHAsync"))
            })?,
            Transfer::Elementwise => {
                let k = self
                    .kernels
                    .as_ref()
                    .map_err(|w| BenchError::skip(w.clone()))?;
                let n4 = state.size / 16;
                let blocks = u32::try_from(n4.div_ceil(u64::from(ADD_BLOCK)))
                    .map_err(|_| BenchError::skip("too many blocks for one launch"))?;
                let cfg = LaunchConfig {
                    grid_dim: (blocks, 1, 1),
                    block_dim: (ADD_BLOCK, 1, 1),
                    shared_mem_bytes: 0,
                };
                self.timed(self.host_transfer, calls, || {
                    let mut launch = self.stream.launch_builder(&k.add);
                    launch.arg(&p[0]).arg(&p[1]).arg(&p[2]).arg(&n4);
                    // SAFETY: three live device buffers of n4 float4 each; the kernel checks
                    // the bound.
                    unsafe { launch.launch(cfg) }
                        .map(|_| ())
                        .map_err(drv("launching the elementwise kernel"))
                })?
            }
        };
        update_host_estimate(&mut self.host_transfer, host, calls);
        Ok(gpu)
    }

    fn time_launches(&mut self, calls: u32) -> Result<(f64, f64), BenchError> {
        let k = self
            .kernels
            .as_ref()
            .map_err(|w| BenchError::skip(w.clone()))?;
        let (gpu, host) = self.timed(self.host_launch, calls, || {
            let mut launch = self.stream.launch_builder(&k.empty);
            // SAFETY: the kernel takes nothing and does nothing.
            unsafe { launch.launch(one_thread()) }
                .map(|_| ())
                .map_err(drv("launching the empty kernel"))
        })?;
        update_host_estimate(&mut self.host_launch, host, calls);
        Ok((gpu, host))
    }

    fn time_single_launch(&mut self) -> Result<f64, BenchError> {
        let k = self
            .kernels
            .as_ref()
            .map_err(|w| BenchError::skip(w.clone()))?;
        self.start
            .record(&self.stream)
            .map_err(drv("recording the start event"))?;
        let mut launch = self.stream.launch_builder(&k.empty);
        // SAFETY: the kernel takes nothing and does nothing.
        unsafe { launch.launch(one_thread()) }.map_err(drv("launching the empty kernel"))?;
        self.end
            .record(&self.stream)
            .map_err(drv("recording the end event"))?;
        let ms = self
            .start
            .elapsed_ms(&self.end)
            .map_err(drv("waiting for the launch"))?;
        Ok(f64::from(ms) * 1e-3)
    }

    fn release(&mut self) {
        self.gemm = None;
        self.transfer = None;
        // Frees are stream-ordered; wait for them so the next allocation sees the memory.
        let _ = self.stream.synchronize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_estimates_ignore_lone_calls() {
        let mut e = 10e-6;
        update_host_estimate(&mut e, 5e-3, 1);
        assert_eq!(e, 10e-6);
        update_host_estimate(&mut e, 400e-6, 100);
        assert!((e - 4e-6).abs() < 1e-15);
        update_host_estimate(&mut e, f64::NAN, 100);
        assert!((e - 4e-6).abs() < 1e-15);
    }

    #[test]
    fn blas_statuses() {
        assert!(blas_status_skippable("CUBLAS_STATUS_NOT_SUPPORTED"));
        assert!(blas_status_skippable("CUBLAS_STATUS_ALLOC_FAILED"));
        assert!(!blas_status_skippable("CUBLAS_STATUS_EXECUTION_FAILED"));
        assert!(!blas_status_skippable("CUBLAS_STATUS_INTERNAL_ERROR"));
        let e = blas(
            "cublasGemmEx",
            cudarc::cublas::sys::cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED,
        );
        assert!(
            !e.fatal && e.message == "cublasGemmEx: CUBLAS_STATUS_NOT_SUPPORTED",
            "{e:?}"
        );
    }
}
