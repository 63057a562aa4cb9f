# plugins/singularity: the singularity backend (see man/hs-singularity.7).
