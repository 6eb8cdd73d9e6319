//! The [`Bench`] of a real GPU, through cudarc with runtime-loaded CUDA libraries.
//!
//! A thin layer: it allocates, fills and frees buffers, enqueues work and times it; the run, the
//! statistics and the files are elsewhere and tested without a GPU. Beside it: `library` (the
//! entry points each library must have, and what its errors mean), `lt` (fp8 GEMMs through
//! cuBLASLt), `transfer` (copies and the elementwise kernel), `ptx` and `elements`.
//!
//! Timing: one non-blocking stream carrying only the measured work. A timed batch is a spin kernel
//! (so the whole batch is queued before the GPU reaches it), an event, `calls` back-to-back calls,
//! an event; the time is `cuEventElapsedTime` between the events. A lone launch has no spin.
//! Kernels are [`ptx::PTX`], hand-written (the driver compiles it at load: no NVRTC). GEMMs
//! compute `Y = X W^T` as a linear layer does (cuBLAS `TN`, lda = ldb = k, ldc = n) on random data
//! from a seed, the weight cycling through copies spanning at least 4 times the L2 cache so that
//! each call reads it from device memory. Times in seconds, sizes in bytes.
//! Method, layouts and libraries: docs/CALIBRATION.md#measure-what-is-measured-and-how

use super::plan::output_dtype;
use super::{Bench, BenchError, Transfer};
use clustersim::hw::Dtype;
use cudarc::cublas::CudaBlas;
use cudarc::driver::result as dres;
use cudarc::driver::sys::{CUdevice_attribute, CUevent_flags};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig,
    PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Instant;

mod elements;
mod library;
mod lt;
mod ptx;
mod transfer;

use elements::element_bytes;
pub use elements::random_elements;
use library::{CUBLAS_SYMBOLS, DRIVER_SYMBOLS, blas, check_library, driver_error_name, drv};
use lt::{Lt, LtPlan};
use ptx::PTX;
use transfer::TransferState;

/// Threads per block of the elementwise kernel.
const ADD_BLOCK: u32 = 256;

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
        let (gpu, host) = match dtype {
            Dtype::Fp8 => self.time_fp8_gemm(m, calls)?,
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
        self.prepare_buffers(kind, size)
    }

    fn time_transfer(&mut self, calls: u32) -> Result<f64, BenchError> {
        self.time_copies(calls)
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
    use super::library::blas_status_skippable;
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
