# SPDX-License-Identifier: MIT
# Distribution packaging (debian/) and its clean-root test; see docs/packaging.md.
# Not part of `make check`: the test needs the built .deb files.
#     make deb               # dpkg-buildpackage -us -uc -b in a copy under $(DEB_BUILD_DIR)
#     make check-packages    # tests/packaging/clean-root.sh on those packages (root)
EXTRA_DIST += docs/packaging.md tests/packaging/clean-root.sh tests/packaging/local.mk \
	debian/changelog \
	debian/control \
	debian/copyright \
	debian/hermes-sandbox-daytona.install \
	debian/hermes-sandbox-dev.examples \
	debian/hermes-sandbox-dev.install \
	debian/hermes-sandbox-docker.install \
	debian/hermes-sandbox-modal.install \
	debian/hermes-sandbox-runner.install \
	debian/hermes-sandbox-runner.lintian-overrides \
	debian/hermes-sandbox-singularity.install \
	debian/hermes-sandbox-slurm.install \
	debian/hermes-sandbox-ssh.install \
	debian/hermes-sandbox.dirs \
	debian/hermes-sandbox.install \
	debian/python3-hermes-sandbox.docs \
	debian/python3-hermes-sandbox.install \
	debian/python3-hermes-sandbox.postinst \
	debian/python3-hermes-sandbox.prerm \
	debian/rules \
	debian/source/format

DEB_BUILD_DIR = $(abs_top_builddir)/deb-build

deb: distdir
	rm -rf $(DEB_BUILD_DIR) && mkdir -p $(DEB_BUILD_DIR)
	mv $(distdir) $(DEB_BUILD_DIR)/src
	cd $(DEB_BUILD_DIR)/src && dpkg-buildpackage -us -uc -b $(DEB_BUILD_FLAGS)
	lintian --fail-on error,warning $(DEB_BUILD_DIR)/*.changes

check-packages:
	$(top_srcdir)/tests/packaging/clean-root.sh $(DEB_BUILD_DIR)

clean-local: clean-deb
clean-deb:
	rm -rf $(DEB_BUILD_DIR)

.PHONY: deb check-packages clean-deb
