"""One serving step of a Llama-3-8B-shaped decoder on one GPU, timed two ways.

Decode (each sequence of the batch adds one token, reading its KV cache of `kv` tokens) and
prefill (one prompt of `prompt` tokens), bf16, random weights, as an engine's forward pass runs
them: RMSNorm, fused QKV, rotary embedding, SDPA with grouped-query attention, output projection,
SwiGLU MLP, final norm, LM head and a greedy pick. Each step is timed

- eagerly (PyTorch launches every kernel from Python, as an engine without CUDA graphs does), and
- as a replayed CUDA graph (as vLLM and TensorRT-LLM run decode), which leaves the GPU's own time.

Their difference is the host's launch cost of one step; the replay against the step's bytes and
FLOPs is the GPU's efficiency at small batches. Not timed: an engine's scheduler, sampler and
detokenizer, which run on the host beside these kernels.

    python3 serving_step.py OUT.json [--tiny]

`--tiny` runs a two-layer model at small sizes (a smoke test; on a CPU too).
"""

import json
import math
import sys
import time

import torch
import torch.nn.functional as F


LLAMA3_8B = dict(hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336, layers=32, vocab=128256)
TINY = dict(hidden=256, heads=4, kv_heads=2, head_dim=64, ffn=512, layers=2, vocab=1000)


def rms_norm(x, w, eps=1e-5):
    # As Hugging Face's eager LlamaRMSNorm: in fp32, then back.
    x32 = x.float()
    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return w * x32.to(x.dtype)


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Model:
    def __init__(self, cfg, dev, dtype, max_batch, max_kv):
        self.cfg = cfg
        h, nh, nkv, d, f = cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"], cfg["ffn"]
        g = torch.Generator(device=dev).manual_seed(0)

        def w(*shape):
            return (torch.randn(*shape, device=dev, dtype=dtype, generator=g) * (1.0 / math.sqrt(shape[-1])))

        self.layers = []
        for _ in range(cfg["layers"]):
            self.layers.append(
                dict(
                    norm1=torch.ones(h, device=dev, dtype=dtype),
                    qkv=w((nh + 2 * nkv) * d, h),
                    o=w(h, nh * d),
                    norm2=torch.ones(h, device=dev, dtype=dtype),
                    gate_up=w(2 * f, h),
                    down=w(h, f),
                    k_cache=torch.zeros(max_batch, nkv, max_kv, d, device=dev, dtype=dtype),
                    v_cache=torch.zeros(max_batch, nkv, max_kv, d, device=dev, dtype=dtype),
                )
            )
        self.norm = torch.ones(h, device=dev, dtype=dtype)
        self.lm_head = w(cfg["vocab"], h)
        self.embed = w(cfg["vocab"], h)

    def weight_bytes(self):
        n = sum(t.numel() * t.element_size() for l in self.layers for k, t in l.items() if "cache" not in k)
        return n + self.lm_head.numel() * self.lm_head.element_size() + self.norm.numel() * 2

    def step(self, tokens, kv, cos, sin):
        """tokens: [b, s]; attends to the first `kv` cache slots (the new ones written at the end)."""
        cfg = self.cfg
        nh, nkv, d = cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
        b, s = tokens.shape
        x = F.embedding(tokens, self.embed)
        for l in self.layers:
            hdn = rms_norm(x, l["norm1"])
            qkv = F.linear(hdn, l["qkv"])
            q, k, v = qkv.split([nh * d, nkv * d, nkv * d], dim=-1)
            q = q.view(b, s, nh, d).transpose(1, 2)
            k = k.view(b, s, nkv, d).transpose(1, 2)
            v = v.view(b, s, nkv, d).transpose(1, 2)
            q = rotate(q, cos, sin)
            k = rotate(k, cos, sin)
            l["k_cache"][:b, :, kv - s : kv].copy_(k)
            l["v_cache"][:b, :, kv - s : kv].copy_(v)
            keys = l["k_cache"][:b, :, :kv]
            values = l["v_cache"][:b, :, :kv]
            attn = F.scaled_dot_product_attention(q, keys, values, is_causal=s > 1, enable_gqa=True)
            x = x + F.linear(attn.transpose(1, 2).reshape(b, s, nh * d), l["o"])
            hdn = rms_norm(x, l["norm2"])
            gate, up = F.linear(hdn, l["gate_up"]).chunk(2, dim=-1)
            x = x + F.linear(F.silu(gate) * up, l["down"])
        x = rms_norm(x[:, -1:], self.norm)
        return torch.argmax(F.linear(x, self.lm_head), dim=-1)


def kernels_per_step(fn):
    try:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as p:
            fn()
            torch.cuda.synchronize()
        return sum(1 for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    except Exception as e:  # the profiler is optional
        return f"not counted: {e}"


def measure(model, dev, b, s, kv, steps):
    cfg = model.cfg
    d = cfg["head_dim"]
    tokens = torch.randint(0, cfg["vocab"], (b, s), device=dev)
    pos = torch.arange(kv - s, kv, device=dev, dtype=torch.float32)
    inv = 1.0 / (500000.0 ** (torch.arange(0, d, 2, device=dev, dtype=torch.float32) / d))
    ang = torch.outer(pos, inv)
    cos = torch.cat((ang.cos(), ang.cos()), dim=-1).to(model.lm_head.dtype)
    sin = torch.cat((ang.sin(), ang.sin()), dim=-1).to(model.lm_head.dtype)

    def run():
        return model.step(tokens, kv, cos, sin)

    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    for _ in range(3):
        run()
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        run()
    sync()
    eager = (time.perf_counter() - t0) / steps
    rec = dict(batch=b, new_tokens=s, kv_tokens=kv, eager_s=eager, steps=steps)
    if cuda:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                run()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            run()
        for _ in range(3):
            graph.replay()
        sync()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(steps):
            graph.replay()
        end.record()
        sync()
        rec["graph_s"] = start.elapsed_time(end) / 1e3 / steps
        t0 = time.perf_counter()
        for _ in range(steps):
            graph.replay()
        sync()
        rec["graph_wall_s"] = (time.perf_counter() - t0) / steps
        rec["kernels"] = kernels_per_step(run)
        del graph
    nkv, layers = cfg["kv_heads"], cfg["layers"]
    rec["kv_read_bytes"] = 2 * layers * b * nkv * kv * d * 2
    return rec


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    tiny = "--tiny" in argv
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = TINY if tiny else LLAMA3_8B
    batches = [1, 2, 4] if tiny else [1, 2, 4, 8, 16, 32, 64]
    kvs = [64] if tiny else [512, 4096]
    prompts = [16] if tiny else [128, 512, 2048]
    max_kv = max(kvs + prompts)
    model = Model(cfg, dev, torch.bfloat16, max(batches), max_kv)
    started = time.perf_counter()
    records = []
    for kv in kvs:
        for b in batches:
            records.append(dict(phase="decode", **measure(model, dev, b, 1, kv, 5 if tiny else 30)))
            print(json.dumps(records[-1]), file=sys.stderr, flush=True)
    for p in prompts:
        records.append(dict(phase="prefill", **measure(model, dev, 1, p, p, 3 if tiny else 10)))
        print(json.dumps(records[-1]), file=sys.stderr, flush=True)
    env = dict(torch=torch.__version__, device=torch.cuda.get_device_name() if dev.type == "cuda" else "cpu")
    if dev.type == "cuda":
        env["cuda"] = torch.version.cuda
        env["sm_count"] = torch.cuda.get_device_properties(0).multi_processor_count
    result = dict(
        what="serving step of a decoder (serving_step.py)",
        model=cfg,
        dtype="bf16",
        weight_bytes=model.weight_bytes(),
        environment=env,
        wall_s=round(time.perf_counter() - started, 1),
        records=records,
    )
    with open(argv[1], "w") as f:
        json.dump(result, f, indent=1)
    print(f"serving_step: {len(records)} records in {result['wall_s']} s -> {argv[1]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
