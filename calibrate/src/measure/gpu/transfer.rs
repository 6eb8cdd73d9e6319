//! Copies between and within memories (device to device, host to device and back, over pinned
//! host memory) and the elementwise kernel over three device buffers: their buffers and a timed
//! batch of them.

use super::library::drv;
use super::{ADD_BLOCK, Gpu, update_host_estimate};
use crate::measure::{Bench, BenchError, Transfer};
use cudarc::driver::result as dres;
use cudarc::driver::{CudaSlice, LaunchConfig, PinnedHostSlice, PushKernelArg};

/// Pinned host memory or device memory behind a transfer's pointers: held to keep the memory
/// alive, never read.
#[allow(dead_code)]
pub(super) enum Buffer {
    Device(CudaSlice<u8>),
    Host(PinnedHostSlice<u8>),
}

pub(super) struct TransferState {
    kind: Transfer,
    size: u64,
    /// Device pointers, or host addresses of the pinned buffers, in the order the kind uses them.
    ptrs: Vec<u64>,
    _buffers: Vec<Buffer>,
}

impl Gpu {
    /// Allocates and clears the buffers of `kind` for copies of `size` bytes.
    pub(super) fn prepare_buffers(&mut self, kind: Transfer, size: u64) -> Result<(), BenchError> {
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

    /// Times `calls` copies (or elementwise kernels) of the prepared buffers.
    pub(super) fn time_copies(&mut self, calls: u32) -> Result<f64, BenchError> {
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
}
