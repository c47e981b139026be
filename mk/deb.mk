# SPDX-License-Identifier: Apache-2.0
# mk/deb.mk — `make deb` (included by Makefile): chirpd's Debian binary
# packages (chirpd, libchirpring3, libchirpring-dev, python3-chirpring)
# from debian/, built by scripts/build-deb.sh into DEB_DIR.
#
#   make deb                CPU backend only: installs on any Debian 12
#   make deb DEB_CUDA=1     with the cuFFT backend (debian/README.Debian)

DEB_DIR  ?= $(BUILD)/deb$(if $(filter 1,$(DEB_CUDA)),-cuda)
DEB_CUDA ?= 0

.PHONY: deb
deb:
	@scripts/build-deb.sh $(DEB_DIR) $(DEB_CUDA)
