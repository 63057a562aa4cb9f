# plugins/daytona: the daytona backend (see man/hs-daytona.7).
