# Loader, SDK and end-to-end tests.
TESTS += tests/abi/loader.test tests/abi/example.test tests/core/run.test tests/core/serve.test tests/core/exec-mode.test
EXTRA_DIST += tests/abi/fixture.c tests/abi/loader.test tests/abi/example.test \
	tests/core/run.test tests/core/serve.test tests/core/exec-mode.test
TESTS_ENVIRONMENT = CC='$(CC)' SAN_CFLAGS='$(SAN_CFLAGS)'; export CC SAN_CFLAGS;
