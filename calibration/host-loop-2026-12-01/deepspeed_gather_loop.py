"""Host time per rank of the loop DeepSpeed v0.3's stage 3 runs before every parameter gather.

DeepSpeed's `_allgather_param` (deepspeed/runtime/zero/partition_parameters.py, v0.3.x) builds
the all-gather's output list in Python after `torch.cuda.synchronize()`:

    partitions = []
    for i in range(self.world_size):
        partitions.append(flat_tensor.narrow(0, partition_size * i, partition_size))
        if i == torch.distributed.get_rank(group=self.ds_process_group):
            partitions[i].data.copy_(param.ds_tensor.data, non_blocking=True)

This script times that loop (the copy happens once, on the rank's own index, and is left out)
for 1,536 ranks, with a one-process gloo group standing in for the data-parallel group, and the
two halves of it apart. Printed per rank, median and minimum of 31 repetitions.
"""

import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29518")
dist.init_process_group("gloo", rank=0, world_size=1)
group = dist.new_group([0])
WORLD, PARTITION = 1536, 64
flat = torch.empty(WORLD * PARTITION, dtype=torch.float16)


def loop():
    partitions = []
    for i in range(WORLD):
        partitions.append(flat.narrow(0, PARTITION * i, PARTITION))
        if i == dist.get_rank(group=group):
            pass


def narrow_only():
    partitions = []
    for i in range(WORLD):
        partitions.append(flat.narrow(0, PARTITION * i, PARTITION))


def get_rank_only():
    for i in range(WORLD):
        if i == dist.get_rank(group=group):
            pass


for f in (loop, narrow_only, get_rank_only):
    times = []
    for _ in range(31):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) / WORLD)
    print(f"{f.__name__}: median {statistics.median(times) * 1e6:.2f} us, "
          f"min {min(times) * 1e6:.2f} us per rank")
print(f"python {sys.version.split()[0]}, torch {torch.__version__}")
