#!/usr/bin/env python3
"""Example gpuctl training job: a small MLP trained with PyTorch DDP.

Data set: the 8x8 handwritten digits bundled with scikit-learn
(sklearn.datasets.load_digits, 1797 images, 10 classes).  It ships inside the
package (Debian: python3-sklearn), so the job works on nodes without network.

Launch with torchrun, which sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and
MASTER_PORT, e.g. on every node:

    torchrun --nnodes=2 --nproc_per_node=2 --rdzv_backend=c10d \
        --rdzv_endpoint=HOST:29500 --rdzv_id=JOB examples/train_ddp.py

Running it as a plain script (no RANK in the environment) starts a single
process job (world size 1) on 127.0.0.1.

Environment:
  GPUCTL_DIST_BACKEND    process group backend (default: nccl if CUDA is
                         available, else gloo)
  GPUCTL_CHECKPOINT_DIR  default for --checkpoint-dir (else ./checkpoints)
  GPUCTL_NODE_RANK       node index printed in the "ready" line (falls back to
                         torchrun's GROUP_RANK)

Output (stdout, every line flushed):
  every rank, once:   rank R/W ready on node NODE_RANK (local rank L, backend B)
  rank 0, on resume:  resumed from epoch N
  rank 0, per epoch:  epoch E/N loss L test_accuracy A      (L, A: 4 decimals)
  rank 0, at the end: final test_accuracy A
                      target accuracy reached       (exit status 0, all ranks)
                   or target accuracy NOT reached   (exit status 1, all ranks)

Checkpoints: after every epoch global rank 0 writes
CHECKPOINT_DIR/ckpt-epoch-EEEE.pt (EEEE = number of completed epochs) through a
temporary file in the same directory and os.replace(), then points the text
file CHECKPOINT_DIR/latest at it the same way.  At start the ranks agree on the
highest completed epoch that any of them can see on disk; the lowest rank that
has it loads it (map_location="cpu") and broadcasts it, so all ranks resume
from the same epoch even when the directory is not shared between nodes.

Interruption notices: gpuctl sends SIGUSR1 to the training processes of a
spot node that its provider is about to interrupt (docs/spot.md).  The
handler only raises a flag; at the end of the epoch the ranks learn of it
with the loss sum (no extra collective), rank 0 writes that epoch's
checkpoint as always and says "interruption notice: checkpoint of epoch E
written", which gpuctl then saves to the store.
"""

import argparse
import datetime
import gc
import glob
import os
import re
import signal
import sys
import tempfile

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

CKPT_RE = re.compile(r"^ckpt-epoch-(\d+)\.pt$")

# Every tensor handed to a collective is kept referenced from Python until the
# process group is gone.  Torch 1.13's gloo worker threads drop their reference
# to a tensor after the collective returns; if Python has already let go, the
# worker must take the GIL to free the Python object, and if the main thread
# is by then destroying the process group (joining those workers while holding
# the GIL) the process hangs at exit.  Seen with 2 nodes x 2 processes.
_COLLECTIVE_TENSORS = []


def held(t):
    _COLLECTIVE_TENSORS.append(t)
    return t


def log(*args):
    print(*args, flush=True)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=30,
                   help="number of epochs to train (default: %(default)s)")
    p.add_argument("--batch-size", type=int, default=32,
                   help="batch size per process (default: %(default)s)")
    p.add_argument("--lr", type=float, default=0.003,
                   help="Adam learning rate (default: %(default)s)")
    p.add_argument("--target-accuracy", type=float, default=0.95,
                   help="exit 1 if the final test accuracy is below this "
                        "(default: %(default)s)")
    p.add_argument("--checkpoint-dir",
                   default=os.environ.get("GPUCTL_CHECKPOINT_DIR") or "./checkpoints",
                   help="where checkpoints are written and resumed from "
                        "(default: $GPUCTL_CHECKPOINT_DIR, else ./checkpoints)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed for the split, the initial weights and the "
                        "shuffling (default: %(default)s)")
    p.add_argument("--hidden", type=int, default=128,
                   help="hidden layer width (default: %(default)s)")
    return p.parse_args()


# --------------------------------------------------------------------------
# data

def load_data(seed):
    """Deterministic stratified 80/20 split, features standardised with the
    training set's statistics.  Identical on every rank."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = digits.data.astype(np.float32)          # (1797, 64), values 0..16
    y = digits.target.astype(np.int64)

    rng = np.random.RandomState(seed)
    train_idx, test_idx = [], []
    for c in np.unique(y):                       # stratified: 80 % per class
        idx = np.flatnonzero(y == c)
        rng.shuffle(idx)
        n_train = int(round(0.8 * len(idx)))
        train_idx.append(idx[:n_train])
        test_idx.append(idx[n_train:])
    train_idx = np.sort(np.concatenate(train_idx))
    test_idx = np.sort(np.concatenate(test_idx))

    mean = x[train_idx].mean(axis=0)
    std = x[train_idx].std(axis=0)
    std[std < 1e-6] = 1.0                        # constant (always blank) pixels
    x = (x - mean) / std

    def tensors(idx):
        return torch.from_numpy(x[idx]), torch.from_numpy(y[idx])

    return tensors(train_idx), tensors(test_idx)


class MLP(nn.Module):
    def __init__(self, hidden, n_in=64, n_out=10):
        super().__init__()
        self.fc1 = nn.Linear(n_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, n_out)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


# --------------------------------------------------------------------------
# checkpoints

def ckpt_name(epoch):
    return "ckpt-epoch-%04d.pt" % epoch


def local_latest_epoch(ckpt_dir):
    """Highest completed epoch with a checkpoint file in ckpt_dir, 0 if none.
    Files appear only through os.replace(), so any file found is complete."""
    best = 0
    for path in glob.glob(os.path.join(glob.escape(ckpt_dir), "ckpt-epoch-*.pt")):
        m = CKPT_RE.match(os.path.basename(path))
        if m:
            best = max(best, int(m.group(1)))
    return best


def atomic_write(path, write_fn):
    """Write through a temporary file in the same directory, then rename."""
    d = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(path) + ".",
                               suffix=".tmp")
    try:
        umask = os.umask(0)                      # mkstemp makes 0600 files;
        os.umask(umask)                          # give the usual 0666 & ~umask
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            write_fn(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:                                         # make the rename durable
        dfd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def save_checkpoint(ckpt_dir, state):
    os.makedirs(ckpt_dir, exist_ok=True)
    name = ckpt_name(state["epoch"])
    atomic_write(os.path.join(ckpt_dir, name), lambda f: torch.save(state, f))
    atomic_write(os.path.join(ckpt_dir, "latest"),
                 lambda f: f.write((name + "\n").encode()))


def resume_state(ckpt_dir, rank, world_size, device):
    """All ranks agree on the newest epoch any of them sees; the lowest rank
    that has it loads it and broadcasts it.  Returns the state dict or None."""
    mine = local_latest_epoch(ckpt_dir)
    # the all_gather is also the barrier: nobody trains before all have looked
    seen = [held(torch.zeros(1, dtype=torch.long, device=device))
            for _ in range(world_size)]
    dist.all_gather(seen, held(torch.tensor([mine], dtype=torch.long, device=device)))
    seen = [int(t.item()) for t in seen]
    epoch = max(seen)
    if epoch == 0:
        return None
    src = seen.index(epoch)
    box = [None]
    if rank == src:
        box[0] = torch.load(os.path.join(ckpt_dir, ckpt_name(epoch)),
                            map_location="cpu")
    if world_size > 1:
        dist.broadcast_object_list(box, src=src,
                                   device=device if device.type == "cuda" else None)
    state = box[0]
    if state["epoch"] != epoch:
        raise RuntimeError("checkpoint %s holds epoch %s"
                           % (ckpt_name(epoch), state["epoch"]))
    return state


# --------------------------------------------------------------------------
# distributed helpers

def setup_env_for_single_process():
    """Allow `python3 train_ddp.py` without torchrun: a world of one."""
    if "RANK" in os.environ:
        return
    os.environ.update({"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0",
                       "LOCAL_WORLD_SIZE": "1", "GROUP_RANK": "0"})
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    if "MASTER_PORT" not in os.environ:
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])


@torch.no_grad()
def evaluate(model, x_test, y_test, rank, world_size, device):
    """Accuracy over the whole test set: each rank takes a disjoint strided
    shard (no padding, no duplicates) and the counts are summed."""
    model.eval()
    xs = x_test[rank::world_size].to(device)
    ys = y_test[rank::world_size].to(device)
    correct = (model(xs).argmax(dim=1) == ys).sum() if len(ys) else torch.zeros((), device=device)
    counts = held(torch.tensor([float(correct), float(len(ys))],
                               dtype=torch.float64, device=device))
    dist.all_reduce(counts, op=dist.ReduceOp.SUM)
    correct, total = counts.tolist()
    if int(total) != len(y_test):
        raise RuntimeError("evaluated %d of %d test samples" % (total, len(y_test)))
    return correct / total


# Set by SIGUSR1: an interruption notice reached this process (gpuctl).
_NOTICE = [0]


def on_notice(signum, frame):
    _NOTICE[0] = 1


def main():
    signal.signal(signal.SIGUSR1, on_notice)
    args = parse_args()
    torch.set_num_threads(1)
    setup_env_for_single_process()

    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    node_rank = os.environ.get("GPUCTL_NODE_RANK") or os.environ.get("GROUP_RANK") or "0"

    backend = os.environ.get("GPUCTL_DIST_BACKEND") or (
        "nccl" if torch.cuda.is_available() else "gloo")
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")

    dist.init_process_group(backend=backend, rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(minutes=10))
    log("rank %d/%d ready on node %s (local rank %d, backend %s)"
        % (rank, world_size, node_rank, local_rank, backend))

    (x_train, y_train), (x_test, y_test) = load_data(args.seed)
    if rank == 0:
        log("data: %d training and %d test samples, %d processes, device %s"
            % (len(y_train), len(y_test), world_size, device.type))

    torch.manual_seed(args.seed)                 # same initial weights everywhere
    model = MLP(args.hidden).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    start_epoch = 1
    history = []
    state = resume_state(args.checkpoint_dir, rank, world_size, device)
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        history = list(state.get("metrics", {}).get("history", []))
        start_epoch = state["epoch"] + 1
        if rank == 0:
            log("resumed from epoch %d" % state["epoch"])
    del state

    ddp = DDP(model, device_ids=[local_rank] if device.type == "cuda" else None)

    train_set = TensorDataset(x_train, y_train)
    sampler = DistributedSampler(train_set, num_replicas=world_size, rank=rank,
                                 shuffle=True, seed=args.seed, drop_last=False)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler,
                        num_workers=0)

    for epoch in range(start_epoch, args.epochs + 1):
        sampler.set_epoch(epoch)
        ddp.train()
        # loss, samples and, in [2], whether a rank had an interruption notice
        loss_sum = held(torch.zeros(3, dtype=torch.float64, device=device))
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(ddp(xb), yb)
            loss.backward()
            optimizer.step()
            loss_sum[0] += loss.detach().double() * len(yb)
            loss_sum[1] += len(yb)
        loss_sum[2] = float(_NOTICE[0])
        dist.all_reduce(loss_sum, op=dist.ReduceOp.SUM)
        noticed = loss_sum[2].item() > 0
        _NOTICE[0] = 0                           # said once per notice
        train_loss = (loss_sum[0] / loss_sum[1]).item()
        acc = evaluate(model, x_test, y_test, rank, world_size, device)
        history.append({"epoch": epoch, "loss": train_loss, "test_accuracy": acc})

        if rank == 0:
            log("epoch %d/%d loss %.4f test_accuracy %.4f"
                % (epoch, args.epochs, train_loss, acc))
            save_checkpoint(args.checkpoint_dir, {
                "epoch": epoch,
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "metrics": {"loss": train_loss, "test_accuracy": acc,
                            "history": history},
                "args": vars(args),
                "world_size": world_size,
            })
            if noticed:
                log("interruption notice: checkpoint of epoch %d written" % epoch)

    final_acc = evaluate(model, x_test, y_test, rank, world_size, device)
    decision = held(torch.tensor([1 if final_acc >= args.target_accuracy else 0],
                                 dtype=torch.long, device=device))
    dist.broadcast(decision, src=0)              # every rank exits the same way
    reached = bool(decision.item())
    if rank == 0:
        log("final test_accuracy %.4f" % final_acc)
        log("target accuracy reached" if reached else "target accuracy NOT reached")

    dist.barrier()                               # rank 0's checkpoint is on disk
    # Free DDP (its reducer holds the process group) while the collective
    # tensors are still held, so the group is destroyed right here, with idle
    # worker threads; only then let the tensors go.
    del ddp
    gc.collect()
    dist.destroy_process_group()
    _COLLECTIVE_TENSORS.clear()
    return 0 if reached else 1


if __name__ == "__main__":
    sys.exit(main())
