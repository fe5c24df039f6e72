"""A short DDP job for the GPU check (tests/gpu/run.sh): one process per GPU,
NCCL backend, a few optimizer steps on a 4096x4096 linear layer, then an
all_reduce whose result every rank can check: the sum of (rank + 1) over the
world is world_size * (world_size + 1) / 2.  Prints one line per rank:
"rank R/W backend=nccl device=cuda:L gpu=<name> allreduce=<v> ok".
Needs only torch (no data set, no network)."""
import os
import sys

import torch
import torch.distributed as dist


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ["LOCAL_RANK"])
    if not torch.cuda.is_available():
        print(f"rank {rank}/{world}: CUDA is not available", flush=True)
        return 2
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    dev = torch.device("cuda", local)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Linear(4096, 4096).to(dev), device_ids=[local])
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for _ in range(20):
        x = torch.randn(256, 4096, device=dev)
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    t = torch.tensor([float(rank + 1)], device=dev)
    dist.all_reduce(t)
    want = world * (world + 1) / 2
    ok = abs(t.item() - want) < 1e-6
    print(f"rank {rank}/{world} backend={dist.get_backend()} device=cuda:{local} "
          f"gpu={torch.cuda.get_device_name(local)} allreduce={t.item():g} "
          f"{'ok' if ok else 'WRONG'}", flush=True)
    ckpt = os.environ.get("GPUCTL_CHECKPOINT_DIR")
    if ckpt and rank == 0:
        torch.save(model.module.state_dict(), os.path.join(ckpt, "linear.pt"))
    dist.barrier()
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
