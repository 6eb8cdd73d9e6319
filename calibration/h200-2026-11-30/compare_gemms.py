"""PyTorch's GEMMs (4-gemm-crosscheck/gemms.json) against the profiles' bf16 GEMM tables at the
same (m, n, k): run 3's full-plan profile and run 4's quick-plan profile.

    python3 compare_gemms.py

Prints one line per GEMM that a profile measured at exactly that m, then the median ratios
profile / PyTorch (below 1: the profile is faster than PyTorch was).
"""

import json
import re
import statistics


def tables(path):
    out = {}
    for block in open(path).read().split("[[gemm]]")[1:]:
        dtype = re.search(r'dtype = "(\w+)"', block).group(1)
        n = int(re.search(r"\nn = (\d+)", block).group(1))
        k = int(re.search(r"\nk = (\d+)", block).group(1))
        arrays = [
            [x.strip() for x in re.search(name + r" = \[(.*?)\]", block, re.S).group(1).split(",")]
            for name in ("m", "time_s")
        ]
        ms = [int(x) for x in arrays[0] if x]
        ts = [float(x) for x in arrays[1] if x]
        out[(dtype, n, k)] = dict(zip(ms, ts))
    return out


full = tables("3-device-check/profile.toml")
quick = tables("4-gemm-crosscheck/q/profile.toml")
ratios = {"full": [], "quick": []}
for r in json.load(open("4-gemm-crosscheck/gemms.json"))["records"]:
    m, n, k, t = r["m"], r["n"], r["k"], r["median_s"]
    cells = []
    for name, prof in (("full", full), ("quick", quick)):
        p = prof.get(("bf16", n, k), {}).get(m)
        if p:
            ratios[name].append(p / t)
            cells.append(f"{name}/torch {p / t:.3f}")
    if cells:
        tflops = 2 * m * n * k / t / 1e12
        print(f"h {r['layer_h']:5} {r['op']:4} {r['product']:11} m {m:5} n {n:5} k {k:5}: "
              f"torch {t * 1e6:7.1f} us ({tflops:.0f} TFLOP/s), " + ", ".join(cells))
for name, rs in ratios.items():
    print(f"{name} plan / PyTorch: median {statistics.median(rs):.3f} over {len(rs)} GEMMs "
          f"(range {min(rs):.3f} to {max(rs):.3f})")
