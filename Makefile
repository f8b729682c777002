# rtdb: build, test, install and uninstall.
#
#   make build                      release build (swift build -c release)
#   make test                       install missing test tools (scripts/install-test-tools) and the
#                                   Python test environment (scripts/python-test-env), swift test,
#                                   then the conformance suite (Tests/Conformance) against the debug build;
#                                   then the README's first command (the release build writes and
#                                   reads a value on a database of its own);
#                                   then the threaded suites built with the thread sanitizer and a
#                                   one-minute soak of serve built so (no data race, crash or lost
#                                   acknowledged write); then the suites of serve, watch, session and
#                                   the offline cache, and the conformance suite, again with
#                                   RTDB_IO_BACKEND=posix
#   make install PREFIX=/usr/local  build, then install the binary, man page and completions
#   make uninstall PREFIX=/usr/local
#
# DESTDIR stages an install (packaging). RTDB_BIN installs an already-built binary instead of
# building one; SWIFT_BUILD_FLAGS are passed to `swift build` (default on Linux
# --static-swift-stdlib: no Swift libraries to load at start-up, so every command starts faster;
# on Linux Package.swift links release builds so anyway, libstdc++ included, so a plain
# `swift build -c release` gives the same binary; macOS has the Swift libraries in the system and
# does not support the flag, and FreeBSD's toolchain does not ship static ones, so there the
# default is none).
#
# This is a GNU make file: on macOS `make` is GNU make; on FreeBSD run `gmake` (pkg install gmake).

UNAME_S := $(shell uname -s)
PREFIX ?= /usr/local
DESTDIR ?=
SWIFT ?= swift
ifeq ($(UNAME_S),Linux)
SWIFT_BUILD_FLAGS ?= --static-swift-stdlib
else
SWIFT_BUILD_FLAGS ?=
endif
RTDB_BIN ?=
INSTALL ?= install

BINDIR := $(PREFIX)/bin
MAN1DIR := $(PREFIX)/share/man/man1
BASHDIR := $(PREFIX)/share/bash-completion/completions
ZSHDIR := $(PREFIX)/share/zsh/site-functions
FISHDIR := $(PREFIX)/share/fish/vendor_completions.d

.PHONY: all build test check install uninstall

all: build

# The release binary, rebuilt only when a source, the manifest or a link input is newer, so
# `make install` after `make build` installs what was built without compiling again (swift
# build itself would only plan, but would still take seconds and print a build log).
RELEASE_BIN := .build/release/rtdb
SOURCES := Package.swift $(shell find Sources -type f 2>/dev/null)

build: $(RELEASE_BIN)

$(RELEASE_BIN): $(SOURCES)
	$(SWIFT) build -c release $(SWIFT_BUILD_FLAGS)
	@touch $@

# The stages, what each proves and how their output is condensed are in scripts/run-tests: one
# line per test suite, failures in full, one summary line at the end; every stage's whole output
# is kept in .build/test-logs/.
test:
	SWIFT='$(SWIFT)' scripts/run-tests

# A quick subset (about three minutes once built): unit suites, the command line's tests, the
# end-to-end reads and writes, two conformance files.
check:
	SWIFT='$(SWIFT)' scripts/run-tests --quick

install: $(if $(RTDB_BIN),,$(RELEASE_BIN))
	@bin='$(if $(RTDB_BIN),$(RTDB_BIN),$(RELEASE_BIN))'; \
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
