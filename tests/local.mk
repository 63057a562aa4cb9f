# Loader, SDK and end-to-end tests.
TESTS += tests/abi/loader.test tests/abi/example.test tests/core/run.test tests/core/serve.test tests/core/exec-mode.test
EXTRA_DIST += tests/abi/fixture.c tests/abi/loader.test tests/abi/example.test \
	tests/core/run.test tests/core/serve.test tests/core/exec-mode.test
TESTS_ENVIRONMENT = CC='$(CC)' SAN_CFLAGS='$(SAN_CFLAGS)'; export CC SAN_CFLAGS;

# Fault injection: garbage input, vanishing clients, hanging and stream-cutting
# backends (tests/faults/faulty.c, built at test time), SIGKILL, full disks.
TESTS += tests/faults/serve-faults.test tests/faults/disk-full.test
EXTRA_DIST += tests/faults/serve-faults.test tests/faults/disk-full.test tests/faults/faulty.c
