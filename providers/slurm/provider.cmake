# slurm: an existing Slurm cluster, one sbatch allocation per gpuctl
# cluster, reached on this machine or through ssh (docs/providers/slurm.md).
gpuctl_provider(slurm SOURCES slurm.c exec.c record.c job.c shell.c store.c NODE_SCRIPT node.sh)
