//! The hand-written PTX module: an empty kernel, a spin kernel that waits on `%globaltimer`,
//! and `c = a + b` over fp32 with one float4 per thread. The driver compiles it when the module
//! loads (no NVRTC).

/// The kernels, in PTX that the driver compiles at load time (see the module docs).
pub const PTX: &str = r#".version 7.0
.target sm_50
.address_size 64

// An empty kernel: what a launch costs when the kernel does nothing.
.visible .entry clustersim_empty()
{
	ret;
}

// Spins until `ns` nanoseconds of %globaltimer have passed: queued ahead of a timed batch so
// that the host has enqueued the whole batch before the GPU reaches it.
.visible .entry clustersim_spin(
	.param .u64 clustersim_spin_ns
)
{
	.reg .pred 	%p<2>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [clustersim_spin_ns];
	mov.u64 	%rd2, %globaltimer;
$L__spin:
	mov.u64 	%rd3, %globaltimer;
	sub.s64 	%rd4, %rd3, %rd2;
	setp.lt.u64 	%p1, %rd4, %rd1;
	@%p1 bra 	$L__spin;
	ret;
}

// c[i] = a[i] + b[i] over `n4` float4 elements, one float4 per thread.
.visible .entry clustersim_add_f32x4(
	.param .u64 clustersim_add_a,
	.param .u64 clustersim_add_b,
	.param .u64 clustersim_add_c,
	.param .u64 clustersim_add_n4
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<4>;
	.reg .f32 	%f<13>;
	.reg .b64 	%rd<14>;

	ld.param.u64 	%rd1, [clustersim_add_a];
	ld.param.u64 	%rd2, [clustersim_add_b];
	ld.param.u64 	%rd3, [clustersim_add_c];
	ld.param.u64 	%rd4, [clustersim_add_n4];
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %ntid.x;
	mov.u32 	%r3, %tid.x;
	mul.wide.u32 	%rd5, %r1, %r2;
	cvt.u64.u32 	%rd6, %r3;
	add.s64 	%rd7, %rd5, %rd6;
	setp.ge.u64 	%p1, %rd7, %rd4;
	@%p1 bra 	$L__add_done;
	shl.b64 	%rd8, %rd7, 4;
	cvta.to.global.u64 	%rd9, %rd1;
	cvta.to.global.u64 	%rd10, %rd2;
	cvta.to.global.u64 	%rd11, %rd3;
	add.s64 	%rd12, %rd9, %rd8;
	ld.global.v4.f32 	{%f1, %f2, %f3, %f4}, [%rd12];
	add.s64 	%rd12, %rd10, %rd8;
	ld.global.v4.f32 	{%f5, %f6, %f7, %f8}, [%rd12];
	add.f32 	%f9, %f1, %f5;
	add.f32 	%f10, %f2, %f6;
	add.f32 	%f11, %f3, %f7;
	add.f32 	%f12, %f4, %f8;
	add.s64 	%rd13, %rd11, %rd8;
	st.global.v4.f32 	[%rd13], {%f9, %f10, %f11, %f12};
$L__add_done:
	ret;
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ptx_module_names_its_kernels() {
        for name in [
            "clustersim_empty",
            "clustersim_spin",
            "clustersim_add_f32x4",
        ] {
            assert!(PTX.contains(&format!(".visible .entry {name}(")), "{name}");
        }
        assert!(PTX.starts_with(".version 7.0\n.target sm_50\n.address_size 64\n"));
    }

    /// Assembles the PTX module with `ptxas` for Ampere, Hopper and Blackwell where `ptxas` is
    /// available (`CLUSTERSIM_PTXAS` or the PATH); says so and passes where it is not.
    #[test]
    fn ptx_assembles() {
        let ptxas = std::env::var("CLUSTERSIM_PTXAS").unwrap_or_else(|_| "ptxas".into());
        let dir = std::env::temp_dir().join(format!("calibrate-ptx-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("kernels.ptx");
        std::fs::write(&src, PTX).unwrap();
        for arch in ["sm_80", "sm_90", "sm_100"] {
            let out = std::process::Command::new(&ptxas)
                .args(["--gpu-name", arch, "-o"])
                .arg(dir.join(format!("{arch}.cubin")))
                .arg(&src)
                .output();
            match out {
                Err(_) => {
                    println!("ptxas not found ({ptxas}); the PTX module was not assembled here");
                    break;
                }
                Ok(o) => assert!(
                    o.status.success(),
                    "ptxas {arch}: {}",
                    String::from_utf8_lossy(&o.stderr)
                ),
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
