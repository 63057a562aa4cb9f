# SPDX-License-Identifier: MIT
# plugins/singularity: the singularity backend (see man/hs-singularity.7).
plugin_LTLIBRARIES += plugins/singularity/singularity.la
SG_SRCS = plugins/singularity/singularity.c plugins/singularity/sg-run.c \
	plugins/singularity/sg-instance.c plugins/singularity/sg.h \
	plugins/singularity/sifcache.c plugins/singularity/sifcache.h
plugins_singularity_singularity_la_SOURCES = $(SG_SRCS)
plugins_singularity_singularity_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(YAJL_CFLAGS)
plugins_singularity_singularity_la_LDFLAGS = -module -avoid-version -shared -export-symbols-regex '^hs_backend_v1$$'
plugins_singularity_singularity_la_LIBADD = plugins/common/libhsb.a $(YAJL_LIBS) $(PTHREAD_LIBS)
dist_man_MANS += man/hs-singularity.7
dist_confd_DATA += conf/conf.d/singularity.conf

check_PROGRAMS += tests/singularity/test-sifcache
tests_singularity_test_sifcache_SOURCES = tests/singularity/test-sifcache.c \
	plugins/singularity/sifcache.c plugins/singularity/sifcache.h
tests_singularity_test_sifcache_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/plugins/singularity
tests_singularity_test_sifcache_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_singularity_test_sifcache_LDADD = plugins/common/libhsb.a $(CMOCKA_LIBS)
TESTS += tests/singularity/test-sifcache tests/singularity/backend.test
EXTRA_DIST += tests/singularity/apptainer tests/singularity/backend.test docs/singularity.md

# Per-command cost: one hs serve session vs an apptainer exec per command (stand-in).
EXTRA_DIST += bench/singularity-bench.sh
BENCH_EXTRA += bench-singularity
bench-singularity: core/hs$(EXEEXT) plugins/singularity/singularity.la
	HS=$(abs_top_builddir)/core/hs$(EXEEXT) top_srcdir=$(abs_top_srcdir) bash $(top_srcdir)/bench/singularity-bench.sh
.PHONY: bench-singularity
