# SPDX-License-Identifier: Apache-2.0
# mk/install.mk — `make install` and `make uninstall` (included by Makefile).
#
#   make install   [PREFIX=/usr/local] [DESTDIR=] [SYSCONFDIR=/etc] ...
#   make uninstall (same variables)
#
# Installs the programs, scripts/chirp-plot, libchirpring (.so.3, .so, .a)
# with chirp/ring.h, chirp/detect.h (a det ring's slot) and chirpring.pc,
# the systemd units (ExecStart rewritten to BINDIR), the sysusers.d entry
# for the chirpd user, the man pages, chirpctl's bash completion, the chirpring Python package (into PYTHONDIR,
# with LIBDIR recorded in chirpring/_config.py so it finds this
# libchirpring) and /etc/chirpd/chirpd.conf. An existing chirpd.conf is never overwritten:
# when it differs from the shipped one, the new file goes next to it as
# chirpd.conf.new. Uninstall removes what install put there, except a
# chirpd.conf (or .new) that differs from the shipped one, the chirpd user,
# and /var/lib/chirpd. With an empty DESTDIR, as root, on a host running
# systemd, install also runs ldconfig, systemd-sysusers and daemon-reload.
#
# SYSCONFDIR is /etc whatever PREFIX is: chirpd's units and documentation
# name /etc/chirpd/chirpd.conf.

# The programs' version (src/version.c CHIRP_VERSION).
VERSION     ?= $(or $(shell sed -n 's/^[[:punct:]]define CHIRP_VERSION "\(.*\)"/\1/p' src/version.c 2>/dev/null),0.1)
BINDIR      ?= $(PREFIX)/bin
LIBDIR      ?= $(PREFIX)/lib
INCLUDEDIR  ?= $(PREFIX)/include
DATADIR     ?= $(PREFIX)/share
MANDIR      ?= $(DATADIR)/man
DOCDIR      ?= $(DATADIR)/doc/chirpd
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
SYSCONFDIR  ?= /etc
# systemd searches /usr/local/lib/systemd/system as well as /usr/lib/...
UNITDIR     ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
# bash-completion looks in $XDG_DATA_DIRS/bash-completion/completions, which
# covers /usr/share and /usr/local/share.
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
# Where the system's python3 finds packages: Debian's dist-packages for
# /usr (what the .deb uses) and /usr/local; any other PREFIX needs
# PYTHONPATH (install says so).
PYTHON3     ?= $(firstword $(wildcard /usr/bin/python3) python3)
PY_VERSION  := $(shell $(PYTHON3) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
PYTHONDIR   ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/python$(or $(PY_VERSION),3)/dist-packages)
INSTALL     ?= install
PC_IN       ?= src/ring/chirpring.pc.in

INST_MANS   := $(wildcard doc/man/*.1 doc/man/*.5 doc/man/*.8)
INST_UNITS  := systemd/chirpd.service systemd/chirpd@.service systemd/chirp-recv@.service
INST_SCRIPTS := $(wildcard scripts/chirp-plot)
INST_DOCS   := $(wildcard doc/example_producer.c)
INST_PY     := $(wildcard src/ring/python/chirpring/*.py)
D := $(DESTDIR)

install: bins libs
	@set -e; \
	for b in $(BIN_NAMES); do \
	  [ -x $(BUILD)/bin/$$b ] || { echo "install: $(BUILD)/bin/$$b was not built" >&2; exit 1; }; \
	done
	$(INSTALL) -d -m 0755 $(D)$(BINDIR) $(D)$(LIBDIR) $(D)$(PKGCONFIGDIR) \
	  $(D)$(INCLUDEDIR)/chirp $(D)$(UNITDIR) $(D)$(SYSUSERSDIR) \
	  $(D)$(MANDIR)/man1 $(D)$(MANDIR)/man5 $(D)$(MANDIR)/man8 $(D)$(SYSCONFDIR)/chirpd
	$(INSTALL) -m 0755 $(BINS) $(INST_SCRIPTS) $(D)$(BINDIR)/
	$(INSTALL) -m 0755 $(RING_SO) $(D)$(LIBDIR)/libchirpring.so.3
	ln -sf libchirpring.so.3 $(D)$(LIBDIR)/libchirpring.so
	$(INSTALL) -m 0644 $(RING_LIB) $(D)$(LIBDIR)/libchirpring.a
	$(INSTALL) -m 0644 include/chirp/ring.h $(D)$(INCLUDEDIR)/chirp/ring.h
	$(INSTALL) -m 0644 include/chirp/detect.h $(D)$(INCLUDEDIR)/chirp/detect.h
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    $(PC_IN) > $(D)$(PKGCONFIGDIR)/chirpring.pc.tmp
	mv -f $(D)$(PKGCONFIGDIR)/chirpring.pc.tmp $(D)$(PKGCONFIGDIR)/chirpring.pc
	chmod 0644 $(D)$(PKGCONFIGDIR)/chirpring.pc
	@set -e; for u in $(INST_UNITS); do \
	  echo "sed 's|/usr/local/bin/|$(BINDIR)/|g' $$u > $(D)$(UNITDIR)/$${u#systemd/}"; \
	  sed 's|/usr/local/bin/|$(BINDIR)/|g' $$u > $(D)$(UNITDIR)/$${u#systemd/}.tmp; \
	  chmod 0644 $(D)$(UNITDIR)/$${u#systemd/}.tmp; \
	  mv -f $(D)$(UNITDIR)/$${u#systemd/}.tmp $(D)$(UNITDIR)/$${u#systemd/}; \
	done
	$(INSTALL) -m 0644 systemd/chirpd.sysusers $(D)$(SYSUSERSDIR)/chirpd.conf
	@set -e; for m in $(INST_MANS); do \
	  s=$${m##*.}; echo "$(INSTALL) -m 0644 $$m $(D)$(MANDIR)/man$$s/"; \
	  $(INSTALL) -m 0644 $$m $(D)$(MANDIR)/man$$s/; \
	done
ifneq ($(INST_DOCS),)
	$(INSTALL) -d -m 0755 $(D)$(DOCDIR)
	$(INSTALL) -m 0644 $(INST_DOCS) $(D)$(DOCDIR)/
endif
	$(INSTALL) -d -m 0755 $(D)$(BASHCOMPDIR)
	$(INSTALL) -m 0644 completion/chirpctl $(D)$(BASHCOMPDIR)/chirpctl
ifneq ($(INST_PY),)
	$(INSTALL) -d -m 0755 $(D)$(PYTHONDIR)/chirpring
	$(INSTALL) -m 0644 $(filter-out %/_config.py,$(INST_PY)) $(D)$(PYTHONDIR)/chirpring/
	printf '# Written by make install: where libchirpring.so.3 was installed.\nLIBDIR = "%s"\n' \
	  '$(LIBDIR)' > $(D)$(PYTHONDIR)/chirpring/_config.py
	chmod 0644 $(D)$(PYTHONDIR)/chirpring/_config.py
	@case "$(PYTHONDIR)" in /usr/lib/python3/dist-packages|/usr/local/lib/python3*/dist-packages) ;; \
	 *) echo "install: python3 does not look in $(PYTHONDIR): use PYTHONPATH=$(PYTHONDIR)";; esac
endif
	@set -e; c=$(D)$(SYSCONFDIR)/chirpd/chirpd.conf; \
	if [ ! -e $$c ]; then \
	  echo "$(INSTALL) -m 0644 conf/chirpd.conf $$c"; $(INSTALL) -m 0644 conf/chirpd.conf $$c; \
	elif cmp -s conf/chirpd.conf $$c; then \
	  echo "install: $$c is up to date"; \
	else \
	  $(INSTALL) -m 0644 conf/chirpd.conf $$c.new; \
	  echo "install: kept your edited $$c; the shipped one is $$c.new"; \
	fi
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then \
	  ldconfig 2>/dev/null || true; \
	  if [ -d /run/systemd/system ]; then \
	    systemd-sysusers $(SYSUSERSDIR)/chirpd.conf && systemctl daemon-reload; \
	  else \
	    echo "install: systemd is not running; later run: systemd-sysusers $(SYSUSERSDIR)/chirpd.conf"; \
	  fi; \
	fi

uninstall:
	rm -f $(addprefix $(D)$(BINDIR)/,$(BIN_NAMES) chirp-plot)
	rm -f $(D)$(LIBDIR)/libchirpring.so.3 $(D)$(LIBDIR)/libchirpring.so $(D)$(LIBDIR)/libchirpring.a
	rm -f $(D)$(INCLUDEDIR)/chirp/ring.h $(D)$(INCLUDEDIR)/chirp/detect.h $(D)$(PKGCONFIGDIR)/chirpring.pc
	rm -f $(D)$(UNITDIR)/chirpd.service $(D)$(UNITDIR)/chirpd@.service $(D)$(UNITDIR)/chirp-recv@.service \
	      $(D)$(SYSUSERSDIR)/chirpd.conf
	rm -f $(foreach m,$(INST_MANS),$(D)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)))
	rm -f $(D)$(DOCDIR)/example_producer.c
	rm -f $(D)$(BASHCOMPDIR)/chirpctl
	rm -f $(addprefix $(D)$(PYTHONDIR)/chirpring/,$(notdir $(INST_PY)) _config.py)
	rm -rf $(D)$(PYTHONDIR)/chirpring/__pycache__
	@set -e; for c in $(D)$(SYSCONFDIR)/chirpd/chirpd.conf $(D)$(SYSCONFDIR)/chirpd/chirpd.conf.new; do \
	  [ -e $$c ] || continue; \
	  if cmp -s conf/chirpd.conf $$c; then echo "rm -f $$c"; rm -f $$c; \
	  else echo "uninstall: kept $$c (edited)"; fi; \
	done
	rmdir $(D)$(INCLUDEDIR)/chirp $(D)$(DOCDIR) $(D)$(SYSCONFDIR)/chirpd $(D)$(PYTHONDIR)/chirpring 2>/dev/null || true
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && [ -d /run/systemd/system ]; then \
	  systemctl daemon-reload; ldconfig 2>/dev/null || true; fi
	@echo "uninstall: the chirpd user, /var/lib/chirpd and any rings in /dev/shm are left in place"
