# Loader, SDK and end-to-end tests.
TESTS += tests/abi/loader.test tests/abi/example.test
EXTRA_DIST += tests/abi/fixture.c tests/abi/loader.test tests/abi/example.test
TESTS_ENVIRONMENT = CC='$(CC)';export CC;
