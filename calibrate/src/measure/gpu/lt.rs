//! cuBLASLt for fp8 GEMMs (e4m3 in, bf16 out): the handle and its workspace, the descriptors and
//! algorithm of one shape at one m (built once, reused), and a timed batch of `cublasLtMatmul`.

use super::library::{CUBLASLT_SYMBOLS, blas, check_library, driver_error_name};
use super::{Gpu, LT_WORKSPACE_BYTES};
use crate::measure::BenchError;
use cudarc::driver::{CudaSlice, CudaStream};
use std::ffi::c_void;
use std::sync::Arc;

/// A cuBLASLt handle and its workspace.
pub(super) struct Lt {
    pub(super) handle: cudarc::cublaslt::sys::cublasLtHandle_t,
    pub(super) workspace: CudaSlice<u8>,
    pub(super) version: String,
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
pub(super) struct LtPlan {
    pub(super) m: u64,
    desc: LtDesc,
    w: LtLayout,
    x: LtLayout,
    y: LtLayout,
    algo: cudarc::cublaslt::sys::cublasLtMatmulAlgo_t,
}

impl Gpu {
    pub(super) fn open_lt(stream: &Arc<CudaStream>) -> Result<Lt, String> {
        check_library!(cublaslt, "libcublasLt", "cuBLASLt", CUBLASLT_SYMBOLS)?;
        let handle = cudarc::cublaslt::result::create_handle()
            .map_err(|e| format!("creating a cuBLASLt handle: {:?}", e.0))?;
        // SAFETY: no arguments; returns a number.
        let version = crate::measure::machine::library_version(unsafe {
            cudarc::cublaslt::sys::cublasLtGetVersion()
        } as u64);
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

    /// Builds (once per m) the cuBLASLt descriptors and algorithm of the prepared fp8 shape.
    pub(super) fn lt_plan(&mut self, m: u64) -> Result<(), BenchError> {
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

    /// Times `calls` fp8 GEMMs of the prepared shape at `m` (its plan built): GPU and host
    /// seconds.
    pub(super) fn time_fp8_gemm(&self, m: u64, calls: u32) -> Result<(f64, f64), BenchError> {
        let state = self.gemm.as_ref().expect("prepared");
        let (alpha, beta) = (1.0f32, 0.0f32);
        let stream = self.stream.cu_stream();
        let lt = self.lt.as_ref().map_err(|w| BenchError::skip(w.clone()))?;
        let plan = state
            .lt_plans
            .iter()
            .find(|p| p.m == m)
            .expect("built by lt_plan");
        let workspace = self.ptr(&lt.workspace);
        self.timed(self.host_gemm, calls, || {
            // SAFETY: the descriptors match the buffers' sizes and formats (see `lt_plan`), every
            // pointer is a live allocation of this context.
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
        })
    }
}
