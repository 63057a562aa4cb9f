# SPDX-License-Identifier: MIT
# plugins/slurm: the slurm backend (see man/hs-slurm.7).
plugin_LTLIBRARIES += plugins/slurm/slurm.la
plugins_slurm_slurm_la_SOURCES = plugins/slurm/slurm.c plugins/slurm/job.c plugins/slurm/sl_cmd.c \
	plugins/slurm/slurm.h plugins/slurm/job.h
plugins_slurm_slurm_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
plugins_slurm_slurm_la_LDFLAGS = -module -avoid-version -shared -export-symbols-regex '^hs_backend_v1$$'
plugins_slurm_slurm_la_LIBADD = plugins/common/libhsb.a
dist_man_MANS += man/hs-slurm.7
dist_confd_DATA += conf/conf.d/slurm.conf
TESTS += tests/slurm/session.test
EXTRA_DIST += tests/slurm/cluster.sh tests/slurm/lib.sh tests/slurm/session.test
TESTS += tests/slurm/pending.test
EXTRA_DIST += tests/slurm/pending.test
TESTS += tests/slurm/errors.test
EXTRA_DIST += tests/slurm/errors.test
# Per-command cost vs one srun step per command (root; starts a private cluster).
EXTRA_DIST += bench/slurm-bench.sh
BENCH_EXTRA += bench-slurm
bench-slurm: core/hs$(EXEEXT) runner/hs-runner$(EXEEXT) plugins/slurm/slurm.la
	top_builddir=$(abs_top_builddir) top_srcdir=$(abs_top_srcdir) bash $(top_srcdir)/bench/slurm-bench.sh
.PHONY: bench-slurm
