# plugins/docker: the docker backend (see man/hs-docker.7).
