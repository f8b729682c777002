# rtdb: build, test, install and uninstall.
#
#   make build                      release build (swift build -c release)
#   make test                       install missing test tools (scripts/install-test-tools) and the
#                                   Python test environment (scripts/python-test-env), swift test,
#                                   then the conformance suite (Tests/Conformance) against the debug build
#   make install PREFIX=/usr/local  build, then install the binary, man page and completions
#   make uninstall PREFIX=/usr/local
#
# DESTDIR stages an install (packaging). RTDB_BIN installs an already-built binary instead of
# building one; SWIFT_BUILD_FLAGS are passed to `swift build` (default --static-swift-stdlib:
# no Swift libraries to load at start-up, so every command starts faster).

PREFIX ?= /usr/local
DESTDIR ?=
SWIFT ?= swift
SWIFT_BUILD_FLAGS ?= --static-swift-stdlib
RTDB_BIN ?=
INSTALL ?= install

BINDIR := $(PREFIX)/bin
MAN1DIR := $(PREFIX)/share/man/man1
BASHDIR := $(PREFIX)/share/bash-completion/completions
ZSHDIR := $(PREFIX)/share/zsh/site-functions
FISHDIR := $(PREFIX)/share/fish/vendor_completions.d

.PHONY: all build test install uninstall

all: build

build:
	$(SWIFT) build -c release $(SWIFT_BUILD_FLAGS)

# Every test is a Swift Testing test: --disable-xctest skips XCTest's empty "Executed 0 tests" runs.
# The conformance suite drives the debug binary that `swift test` builds with real clients
# (firebase-admin, curl, raw sockets); pytest's summary is the last line of the run.
test:
	scripts/install-test-tools
	scripts/python-test-env
	$(SWIFT) test --disable-xctest
	RTDB_BIN='$(CURDIR)/.build/debug/rtdb' PYTHONDONTWRITEBYTECODE=1 .build/venv/bin/python -m pytest Tests/Conformance -q

install: $(if $(RTDB_BIN),,build)
	@bin='$(RTDB_BIN)'; \
	if [ -z "$$bin" ]; then bin="$$($(SWIFT) build -c release $(SWIFT_BUILD_FLAGS) --show-bin-path)/rtdb"; fi; \
	set -x; \
	$(INSTALL) -d '$(DESTDIR)$(BINDIR)' '$(DESTDIR)$(MAN1DIR)' '$(DESTDIR)$(BASHDIR)' '$(DESTDIR)$(ZSHDIR)' '$(DESTDIR)$(FISHDIR)' && \
	$(INSTALL) -m 755 "$$bin" '$(DESTDIR)$(BINDIR)/rtdb' && \
	$(INSTALL) -m 644 man/rtdb.1 '$(DESTDIR)$(MAN1DIR)/rtdb.1' && \
	$(INSTALL) -m 644 completions/rtdb.bash '$(DESTDIR)$(BASHDIR)/rtdb' && \
	$(INSTALL) -m 644 completions/_rtdb '$(DESTDIR)$(ZSHDIR)/_rtdb' && \
	$(INSTALL) -m 644 completions/rtdb.fish '$(DESTDIR)$(FISHDIR)/rtdb.fish'

uninstall:
	rm -f '$(DESTDIR)$(BINDIR)/rtdb' \
	      '$(DESTDIR)$(MAN1DIR)/rtdb.1' \
	      '$(DESTDIR)$(BASHDIR)/rtdb' \
	      '$(DESTDIR)$(ZSHDIR)/_rtdb' \
	      '$(DESTDIR)$(FISHDIR)/rtdb.fish'
