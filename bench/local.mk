# SPDX-License-Identifier: MIT
# bench/: benchmarks, never part of `make check`.  `make bench` runs them all
# and prints ratios against what a user would do instead (bench/README.md).
EXTRA_DIST += bench/README.md bench/serve-bench.py bench/throughput.sh bench/ssh-throughput.sh \
	bench/docker-throughput.sh bench/plot.py bench/shell-bench.sh \
	bench/mcp-bench.mjs bench/egress-bench.sh bench/screen-bench.py

# hs serve session latency vs bash -c true and the Python-subprocess approach,
# 100 concurrent sessions, hs backends / hs run start-up.
bench-serve: core/hs$(EXEEXT) runner/hs-runner$(EXEEXT)
	HS=$(abs_top_builddir)/core/hs$(EXEEXT) HS_RUNNER=$(abs_top_builddir)/runner/hs-runner$(EXEEXT) \
	  python3 $(top_srcdir)/bench/serve-bench.py

# 1 GB through `hs run` vs a raw pipe, with hs's peak RSS.
bench-throughput: core/hs$(EXEEXT) runner/hs-runner$(EXEEXT)
	HS=$(abs_top_builddir)/core/hs$(EXEEXT) HS_RUNNER=$(abs_top_builddir)/runner/hs-runner$(EXEEXT) \
	  bash $(top_srcdir)/bench/throughput.sh
	@# The ssh and docker paths against their transport alone (issue 25); each
	@# starts a private sshd / dockerd, and is skipped (77) where it cannot.
	HS=$(abs_top_builddir)/core/hs$(EXEEXT) HS_RUNNER=$(abs_top_builddir)/runner/hs-runner$(EXEEXT) \
	  bash $(top_srcdir)/bench/ssh-throughput.sh || [ $$? = 77 ]
	HS=$(abs_top_builddir)/core/hs$(EXEEXT) top_builddir=$(abs_top_builddir) srcdir=$(abs_top_srcdir) \
	  bash $(top_srcdir)/bench/docker-throughput.sh || [ $$? = 77 ]

# A `true` in a session against one persistent bash fed through a pipe,
# `bash -c true` and the fork/exec floor, and with 2,000 (20,000) functions
# defined (issue 21 item 9).
bench-shell: core/hs$(EXEEXT) runner/hs-runner$(EXEEXT)
	HS=$(abs_top_builddir)/core/hs$(EXEEXT) HS_RUNNER=$(abs_top_builddir)/runner/hs-runner$(EXEEXT) \
	  bash $(top_srcdir)/bench/shell-bench.sh

# A `true` through `hs mcp` (the official SDK client, tests/mcp/node_modules)
# against the same through `hs serve` (issue 22 item 8).
bench-mcp: core/hs$(EXEEXT) runner/hs-runner$(EXEEXT)
	HS=$(abs_top_builddir)/core/hs$(EXEEXT) HS_RUNNER=$(abs_top_builddir)/runner/hs-runner$(EXEEXT) \
	  SDK=$(abs_top_srcdir)/tests/mcp/node_modules node $(top_srcdir)/bench/mcp-bench.mjs

# A 200 MB download through the egress endpoint (network "allowlist") against
# the same download with direct network (issue 26 item 7; root: --isolate).
bench-egress: core/hs$(EXEEXT) runner/hs-runner$(EXEEXT)
	HS=$(abs_top_builddir)/core/hs$(EXEEXT) HS_RUNNER=$(abs_top_builddir)/runner/hs-runner$(EXEEXT) \
	  bash $(top_srcdir)/bench/egress-bench.sh

# A job's rendered screen through hs serve (the contained render child); set
# HS_BASE to an older hs to compare.
bench-screen: core/hs$(EXEEXT) runner/hs-runner$(EXEEXT)
	HS=$(abs_top_builddir)/core/hs$(EXEEXT) python3 $(top_srcdir)/bench/screen-bench.py

# `make bench` runs every benchmark in one go; each writes its latency row to
# bench/latency.tsv, which bench/plot.py draws as bench/latency.svg.
HS_BENCH_TSV = $(abs_top_builddir)/bench/latency.tsv
export HS_BENCH_TSV
bench:
	@$(MKDIR_P) bench
	rm -f bench/latency.tsv
	$(MAKE) $(AM_MAKEFLAGS) bench-runner bench-analyse bench-serve bench-shell bench-mcp bench-throughput $(BENCH_EXTRA)
	python3 $(top_srcdir)/bench/plot.py bench/latency.tsv bench/latency.svg

.PHONY: bench bench-serve bench-shell bench-mcp bench-throughput bench-egress bench-screen
