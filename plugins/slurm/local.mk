# plugins/slurm: the slurm backend (see man/hs-slurm.7).
