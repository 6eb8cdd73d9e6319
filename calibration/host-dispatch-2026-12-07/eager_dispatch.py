"""Host time per dispatched operation of eager PyTorch training, forward and backward, for a
Llama-style layer (and one with 8 experts looped in Python) written as plain torch.nn modules, on
tiny CPU tensors: Python, the dispatcher and autograd run, the kernels do next to nothing. Ops that
return a view (reshape, transpose, split) launch no kernel on a GPU and are counted apart; the
figure printed is wall time over the other ops. Usage: python eager_dispatch.py cpu"""
import sys, time, statistics, torch, torch.nn as nn, torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

dev = sys.argv[1] if len(sys.argv) > 1 else "meta"
class Count(TorchDispatchMode):
    def __init__(s): super().__init__(); s.n = 0; s.k = 0; s.views = 0
    def __torch_dispatch__(s, func, types, args=(), kwargs=None):
        s.n += 1
        if any(a.alias_info is not None and not a.alias_info.is_write for a in func._schema.returns): s.views += 1
        else: s.k += 1
        return func(*args, **(kwargs or {}))

class RMS(nn.Module):
    def __init__(s, h): super().__init__(); s.w = nn.Parameter(torch.ones(h, device=dev))
    def forward(s, x): return F.rms_norm(x, x.shape[-1:], s.w)

class Layer(nn.Module):
    def __init__(s, h, heads, experts):
        super().__init__()
        s.h, s.heads, s.experts = h, heads, experts
        s.n1, s.n2 = RMS(h), RMS(h)
        s.qkv = nn.Linear(h, 3 * h, bias=False, device=dev)
        s.o = nn.Linear(h, h, bias=False, device=dev)
        if experts:
            s.router = nn.Linear(h, experts, bias=False, device=dev)
            s.up = nn.ModuleList(nn.Linear(h, 2 * h, bias=False, device=dev) for _ in range(experts))
            s.down = nn.ModuleList(nn.Linear(h, h, bias=False, device=dev) for _ in range(experts))
        else:
            s.up, s.down = nn.Linear(h, 2 * h, bias=False, device=dev), nn.Linear(h, h, bias=False, device=dev)
    def mlp(s, x, up, down):
        a, b = up(x).chunk(2, -1)
        return down(F.silu(a) * b)
    def forward(s, x):
        b, t, h = x.shape
        q, k, v = s.qkv(s.n1(x)).view(b, t, 3, s.heads, h // s.heads).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + s.o(a.transpose(1, 2).reshape(b, t, h))
        y = s.n2(x)
        if not s.experts:
            return x + s.mlp(y, s.up, s.down)
        flat = y.reshape(-1, h)
        p = torch.softmax(s.router(flat), -1)
        w, idx = torch.topk(p, 2, -1)
        out = torch.zeros_like(flat)
        per = flat.shape[0] * 2 // s.experts  # balanced, static split sizes (no host sync)
        order = torch.argsort(idx.reshape(-1))
        xs = flat.repeat_interleave(2, 0)[order]
        outs = [s.mlp(c, s.up[e], s.down[e]) for e, c in enumerate(xs.split(per))]
        ys = torch.cat(outs)[torch.argsort(order)] * w.reshape(-1, 1)
        out = ys.view(-1, 2, h).sum(1)
        return x + out.view(b, t, h)

def run(experts, layers=4, reps=30):
    torch.manual_seed(0)
    model = nn.Sequential(*[Layer(64, 4, experts) for _ in range(layers)])
    x = torch.randn(1, 32, 64, device=dev, requires_grad=True)
    def step():
        y = model(x); y.sum().backward()
    for _ in range(5): step()
    c = Count()
    with c: step()
    # forward alone, to split
    cf = Count()
    with cf: y = model(x)
    times, ftimes = [], []
    for _ in range(reps):
        t0 = time.perf_counter(); y = model(x); t1 = time.perf_counter(); y.sum().backward(); t2 = time.perf_counter()
        ftimes.append(t1 - t0); times.append(t2 - t1)
    f, bw = statistics.median(ftimes), statistics.median(times)
    nf, nb = cf.k, c.k - cf.k
    print("views", cf.views, c.views - cf.views)
    print(f"{dev} experts={experts} layers={layers}: forward {nf} ops {f*1e6/nf:.2f} us/op; backward {nb} ops {bw*1e6/nb:.2f} us/op; all {(f+bw)*1e6/(nf+nb):.2f} us/op")

for e in (0, 8):
    run(e)
