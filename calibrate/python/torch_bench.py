"""PyTorch measurements for clustersim-calibrate: fused attention, elementwise kernels and whole
transformer layers on the first visible CUDA GPU.

    python3 torch_bench.py kernels OUT.json   # attention (flash) and elementwise kernels
    python3 torch_bench.py layers OUT.json    # one transformer layer, forward and backward
    python3 torch_bench.py gemms OUT.json     # the layers' GEMMs alone (a cross-check)
    python3 torch_bench.py layers OUT.json --shapes h=4096,heads=32,ffn=16384,seq=2048,batch=1,mlp=gelu

`clustersim-calibrate` embeds this file and runs it with the machine's python3 where PyTorch is
installed: attention and elementwise kernels come from PyTorch's own kernels (FlashAttention
through scaled_dot_product_attention, its layer norm, RMS norm and activations) rather than
kernels of our own, because those are the kernels frameworks actually run; the layer reference is
the plain PyTorch layer the simulator's training model describes (sim/src/workload/training/
layer.rs): norm, QKV projection, causal flash attention, output projection, residual add, norm,
up projection (doubled when gated), activation, down projection, residual add, all in bf16, no
dropout, no fused kernels beyond what PyTorch does by itself.

Timing: CUDA events after warm-up. A kernel is timed in batches of calls queued back to back (as
many as last about 1 ms, at most 50; per-call time = batch time / calls), so that the host's
dispatch of a call hides behind the GPU's work as it does inside a model. A layer is timed the way
training runs it: forward and backward iterations back to back with no host synchronisation,
after 2 s of the same work so that clocks and power settle, events around each pass, for about
2 s (`forward`, `backward`); also one call at a time with the GPU idle in between
(`forward_isolated`, `backward_isolated`: boost clocks, as a short benchmark sees them; an H200
drops from 1980 MHz towards 1400-1600 MHz under sustained matrix work). Each point is repeated
and the median, minimum and maximum are kept. Inputs are random normal (never zeros). Every record is one JSON
object in a list written to OUT.json together with the environment (torch, CUDA, device, driver).
Exit status: 0 on success, 2 without CUDA or PyTorch, 1 on any other failure.
"""

import json
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("torch_bench: PyTorch is not installed for this python3", file=sys.stderr)
    sys.exit(2)

DTYPE = torch.bfloat16
WARMUP = 3


def timed(fn, reps, setup=None, calls=1):
    """Median, min and max seconds of one fn() call over reps timed batches of `calls` calls
    queued back to back between two CUDA events (per-call time = batch time / calls; a batch of
    one call when `setup` must run before each call)."""
    for _ in range(WARMUP):
        if setup:
            setup()
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        if setup:
            setup()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3 / calls)
    return {
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
        "reps": reps,
        "calls": calls,
    }


def reps_for(estimate_s):
    """More repetitions for short kernels, at least 5, at most 50."""
    return max(5, min(50, int(0.05 / max(estimate_s, 1e-6))))


def calls_for(estimate_s):
    """Calls per timed batch of a kernel: enough to last about 1 ms, at most 50, so that the
    host's dispatch of one call overlaps the GPU's work on the previous one."""
    return max(1, min(50, int(1e-3 / max(estimate_s, 1e-6))))


def kernel_timing(fn):
    """Timing of a kernel call: batches of calls_for() calls, reps_for() batches."""
    est = probe(fn)
    calls = calls_for(est)
    return timed(fn, max(5, reps_for(est * calls) // 2), calls=calls)


def probe(fn, setup=None):
    """A rough time of one call (after one warm-up), to choose the repetitions."""
    if setup:
        setup()
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    if setup:
        setup()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t


def flash_attention():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.FLASH_ATTENTION])


# ---------------------------------------------------------------------------------------------
# Kernels


def attention_records(dev):
    records = []
    # Prefill: (head_dim, heads, batch x seq about 16k tokens), causal and not.
    cases = []
    for head_dim in (64, 128):
        heads = 4096 // head_dim
        for seq in (512, 1024, 2048, 4096, 8192, 16384):
            batch = max(1, 16384 // seq)
            for causal in (True, False):
                cases.append((batch, heads, seq, seq, head_dim, causal, True))
    # Decode: one query against a cache of kv_len keys, per sequence of the batch.
    for batch in (1, 16, 64):
        for kv in (512, 2048, 8192, 32768):
            cases.append((batch, 32, 1, kv, 128, False, False))
    for batch, heads, q_len, kv_len, head_dim, causal, backward_too in cases:
        q = torch.randn(batch, heads, q_len, head_dim, device=dev, dtype=DTYPE)
        k = torch.randn(batch, heads, kv_len, head_dim, device=dev, dtype=DTYPE)
        v = torch.randn(batch, heads, kv_len, head_dim, device=dev, dtype=DTYPE)
        common = {
            "kind": "attention",
            "batch": batch,
            "heads": heads,
            "q_len": q_len,
            "kv_len": kv_len,
            "head_dim": head_dim,
            "causal": causal,
            "dtype": "bf16",
        }
        with flash_attention():

            def fwd():
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

            records.append({**common, "pass": "forward", **kernel_timing(fwd)})
            if backward_too:
                qg, kg, vg = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
                out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
                grad = torch.randn_like(out)

                def bwd():
                    torch.autograd.grad(out, (qg, kg, vg), grad, retain_graph=True)

                records.append({**common, "pass": "backward", **kernel_timing(bwd)})
        del q, k, v
    return records


def elementwise_records(dev):
    """Norms, activations and residual adds over t tokens of width h, forward and backward.

    `bytes` counts what the simulator counts for the forward: each input read once and each
    output written once (weights of a norm are negligible); the backward's bytes are twice that.
    """
    records = []
    h = 4096
    for tokens in (256, 1024, 4096, 16384, 65536):
        x = torch.randn(tokens, h, device=dev, dtype=DTYPE)
        y = torch.randn(tokens, h, device=dev, dtype=DTYPE)
        gate = torch.randn(tokens, 2 * h, device=dev, dtype=DTYPE)
        w = torch.randn(h, device=dev, dtype=DTYPE)
        b = torch.randn(h, device=dev, dtype=DTYPE)
        act = tokens * h * 2
        ops = {
            "layernorm": (lambda t: F.layer_norm(t, (h,), w, b, 1e-5), (x,), 2 * act),
            "rmsnorm": (lambda t: F.rms_norm(t, (h,), w, 1e-5), (x,), 2 * act),
            "gelu": (lambda t: F.gelu(t, approximate="tanh"), (x,), 2 * act),
            "swiglu": (
                lambda t: F.silu(t[:, :h]) * t[:, h:],
                (gate,),
                3 * act,
            ),
            "add": (lambda a, c: a + c, (x, y), 3 * act),
        }
        for name, (fn, inputs, nbytes) in ops.items():
            common = {
                "kind": "elementwise",
                "op": name,
                "tokens": tokens,
                "width": h,
                "dtype": "bf16",
            }

            def fwd(fn=fn, inputs=inputs):
                return fn(*inputs)

            records.append({**common, "pass": "forward", "bytes": nbytes, **kernel_timing(fwd)})
            if name == "add":
                continue  # its backward hands the gradient on: no kernel to time
            leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
            out = fn(*leaves)
            grad = torch.randn_like(out)

            def bwd(out=out, leaves=leaves, grad=grad):
                torch.autograd.grad(out, leaves, grad, retain_graph=True)

            records.append(
                {**common, "pass": "backward", "bytes": 2 * nbytes, **kernel_timing(bwd)}
            )
        del x, y, gate
    return records


# ---------------------------------------------------------------------------------------------
# Layers


class Layer(torch.nn.Module):
    """A pre-norm transformer layer: GPT style (layer norm, GELU) or Llama style (RMS norm,
    gated SiLU). Multi-head attention (as many key/value heads as query heads)."""

    def __init__(self, h, heads, ffn, mlp):
        super().__init__()
        self.heads = heads
        self.gated = mlp == "swiglu"
        bias = not self.gated
        norm = torch.nn.LayerNorm if not self.gated else torch.nn.RMSNorm
        self.norm1 = norm(h)
        self.norm2 = norm(h)
        self.qkv = torch.nn.Linear(h, 3 * h, bias=bias)
        self.proj = torch.nn.Linear(h, h, bias=bias)
        self.up = torch.nn.Linear(h, (2 if self.gated else 1) * ffn, bias=bias)
        self.down = torch.nn.Linear(ffn, h, bias=bias)

    def forward(self, x):
        b, s, h = x.shape
        d = h // self.heads
        qkv = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, d)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        with flash_attention():
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, h))
        u = self.up(self.norm2(x))
        if self.gated:
            g, u = u.chunk(2, dim=-1)
            u = F.silu(g) * u
        else:
            u = F.gelu(u, approximate="tanh")
        return x + self.down(u)


DEFAULT_LAYERS = [
    # GPT style (layer norm, GELU, ffn = 4h)
    dict(h=2048, heads=16, ffn=8192, seq=2048, batch=4, mlp="gelu"),
    dict(h=4096, heads=32, ffn=16384, seq=2048, batch=2, mlp="gelu"),
    dict(h=4096, heads=32, ffn=16384, seq=8192, batch=1, mlp="gelu"),
    dict(h=8192, heads=64, ffn=32768, seq=2048, batch=1, mlp="gelu"),
    dict(h=12288, heads=96, ffn=49152, seq=2048, batch=1, mlp="gelu"),
    # Llama style (RMS norm, SwiGLU)
    dict(h=4096, heads=32, ffn=11008, seq=4096, batch=1, mlp="swiglu"),
    dict(h=5120, heads=40, ffn=13824, seq=4096, batch=1, mlp="swiglu"),
    dict(h=8192, heads=64, ffn=28672, seq=4096, batch=1, mlp="swiglu"),
]


SUSTAIN_WARMUP_S = 2.0
SUSTAIN_MEASURE_S = 2.0


def summary(times):
    return {
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
        "reps": len(times),
    }


def sustained(fwd, bwd):
    """Forward and backward timed as training runs them: iterations back to back with no host
    synchronisation, after SUSTAIN_WARMUP_S of the same work (so that clocks and power settle as
    they do in a training step), CUDA events around each pass, for about SUSTAIN_MEASURE_S."""
    start = time.perf_counter()
    while time.perf_counter() - start < SUSTAIN_WARMUP_S:
        fwd()
        bwd()
        torch.cuda.synchronize()
    events = []
    start = time.perf_counter()
    while time.perf_counter() - start < SUSTAIN_MEASURE_S or len(events) < 10:
        e = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        e[0].record()
        fwd()
        e[1].record()
        bwd()
        e[2].record()
        events.append(e)
        if len(events) % 8 == 0:
            e[2].synchronize()  # keep the host at most a few iterations ahead
    torch.cuda.synchronize()
    forward = [a.elapsed_time(b) * 1e-3 for a, b, _ in events]
    backward = [b.elapsed_time(c) * 1e-3 for _, b, c in events]
    return summary(forward), summary(backward)


def layer_records(dev, shapes):
    records = []
    for shape in shapes:
        layer = Layer(shape["h"], shape["heads"], shape["ffn"], shape["mlp"]).to(dev, DTYPE)
        params = list(layer.parameters())
        x = torch.randn(shape["batch"], shape["seq"], shape["h"], device=dev, dtype=DTYPE)
        x.requires_grad_(True)
        grad = torch.randn_like(x)
        state = {}

        def fwd():
            state["out"] = layer(x)

        def clear():
            for p in params:
                p.grad = None
            x.grad = None

        def fwd_for_bwd():
            clear()
            fwd()

        def bwd():
            state["out"].backward(grad)

        est = probe(fwd)
        reps = max(10, reps_for(3 * est))
        forward_isolated = timed(fwd, reps)
        backward_isolated = timed(bwd, reps, setup=fwd_for_bwd)
        forward, backward = sustained(fwd_for_bwd, bwd)
        records.append(
            {
                "kind": "layer",
                **shape,
                "dtype": "bf16",
                "forward": forward,
                "backward": backward,
                "forward_isolated": forward_isolated,
                "backward_isolated": backward_isolated,
            }
        )
        print(
            f"layer h={shape['h']} seq={shape['seq']} batch={shape['batch']} {shape['mlp']}: "
            f"forward {forward['median_s'] * 1e3:.3f} ms, backward {backward['median_s'] * 1e3:.3f} ms",
            file=sys.stderr,
        )
        del layer, params, x, grad, state
        torch.cuda.empty_cache()
    return records


def gemm_records(dev, shapes):
    """The layers' GEMMs alone, as PyTorch runs them: each forward linear (x W^T, with the
    layer's bias where it has one) and its two backward products (input gradient dY W, weight
    gradient dY^T X), bf16, timed like kernels (batches of back-to-back calls)."""
    records = []
    for shape in shapes:
        h, ffn, t = shape["h"], shape["ffn"], shape["seq"] * shape["batch"]
        gated = shape["mlp"] == "swiglu"
        bias = not gated
        for name, n, k in (
            ("qkv", 3 * h, h),
            ("proj", h, h),
            ("up", (2 if gated else 1) * ffn, h),
            ("down", h, ffn),
        ):
            x = torch.randn(t, k, device=dev, dtype=DTYPE)
            w = torch.randn(n, k, device=dev, dtype=DTYPE) * k**-0.5
            b = torch.randn(n, device=dev, dtype=DTYPE) if bias else None
            dy = torch.randn(t, n, device=dev, dtype=DTYPE)
            common = {"kind": "gemm", "layer_h": h, "op": name, "dtype": "bf16", "bias": bias}
            for product, m_, n_, k_, fn in (
                ("forward", t, n, k, lambda: F.linear(x, w, b)),
                ("input_grad", t, k, n, lambda: dy @ w),
                ("weight_grad", n, k, t, lambda: dy.t() @ x),
            ):
                timing = kernel_timing(fn)
                records.append({**common, "product": product, "m": m_, "n": n_, "k": k_, **timing})
            del x, w, b, dy
    return records


def parse_shape(text):
    shape = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        if key not in ("h", "heads", "ffn", "seq", "batch", "mlp"):
            raise SystemExit(f"torch_bench: unknown shape key {key!r} in {text!r}")
        shape[key] = value if key == "mlp" else int(value)
    missing = {"h", "heads", "ffn", "seq", "batch", "mlp"} - shape.keys()
    if missing:
        raise SystemExit(f"torch_bench: shape {text!r} lacks {sorted(missing)}")
    if shape["mlp"] not in ("gelu", "swiglu"):
        raise SystemExit(f"torch_bench: mlp must be gelu or swiglu, not {shape['mlp']!r}")
    return shape


def environment(dev):
    props = torch.cuda.get_device_properties(dev)
    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(dev),
        "multiprocessors": props.multi_processor_count,
        "memory_bytes": props.total_memory,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def main(argv):
    if len(argv) < 3 or argv[1] not in ("kernels", "layers", "gemms"):
        print("\n".join(__doc__.strip().splitlines()[2:6]), file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch_bench: PyTorch sees no CUDA GPU", file=sys.stderr)
        return 2
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    started = time.perf_counter()
    if argv[1] == "kernels":
        records = attention_records(dev) + elementwise_records(dev)
    else:
        shapes = [parse_shape(argv[i + 1]) for i, a in enumerate(argv) if a == "--shapes"]
        if argv[1] == "layers":
            records = layer_records(dev, shapes or DEFAULT_LAYERS)
        else:
            records = gemm_records(dev, shapes or DEFAULT_LAYERS)
    result = {
        "tool": "torch_bench.py",
        "what": argv[1],
        "environment": environment(dev),
        "wall_s": round(time.perf_counter() - started, 3),
        "records": records,
    }
    with open(argv[2], "w") as f:
        json.dump(result, f, indent=1)
    print(f"torch_bench: {len(records)} records in {result['wall_s']} s -> {argv[2]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
