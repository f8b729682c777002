# rtdb: build, test, install and uninstall.
#
#   make build                      release build (swift build -c release)
#   make test                       install missing test tools (scripts/install-test-tools) and the
#                                   Python test environment (scripts/python-test-env), swift test,
#                                   then the conformance suite (Tests/Conformance) against the debug build;
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

.PHONY: all build test install uninstall

all: build

build:
	$(SWIFT) build -c release $(SWIFT_BUILD_FLAGS)

# Every test is a Swift Testing test: --disable-xctest skips XCTest's empty "Executed 0 tests" runs.
# The conformance suite drives the debug binary that `swift test` builds with real clients
# (firebase-admin, curl, raw sockets); pytest's summary is the last line of each run.
#
# The second pass runs what waits on descriptors and on other processes' commits (rtdb serve and
# its clients, watch, session, the offline cache, the in-process server tests, the conformance
# suite) on the portable back-end (poll(2), the stat check), which macOS and the BSDs fall back
# to: RTDB_IO_BACKEND=posix reaches every rtdb the tests start.
PORTABLE_SUITES := EndToEndTests\.(Serve|Watch|IndexedWatch|RemoteWatch|Session|Offline|Presence|RealtimeClient)|RTDBServerTests
CONFORMANCE = RTDB_BIN='$(CURDIR)/.build/debug/rtdb' PYTHONDONTWRITEBYTECODE=1 .build/venv/bin/python -m pytest Tests/Conformance -q

# The gate on threads: what runs on more than one thread (the event loop and the threads that
# hand it work: the sender, detached writes, streamed imports' row writer, group commit, serve
# end to end, committed answers, clients that vanish) is built and run again with the thread
# sanitizer, in a build folder of its own; its rtdb then serves a minute of clients that
# connect, listen, write small and large values, vanish and come back (Tests/Soak/soak.py),
# which fails on a crash, a sanitizer report or a lost acknowledged write. A report fails the
# run (TSan's exit status 66).
TSAN_BUILD := .build/tsan
TSAN_SUITES := RTDBNetTests|RTDBServerTests|RTDBEngineTests\.(StreamImport|FlatImport|StreamExport|Confinement|TransactionState|SharedReads)|EndToEndTests\.(ServeTests|ClosedClientsTests|LargeImportTests|CommittedOutputTests)
TSAN_ENV := TSAN_OPTIONS='halt_on_error=1 second_deadlock_stack=1'

test:
	scripts/install-test-tools
	scripts/python-test-env
	$(SWIFT) test --disable-xctest
	$(CONFORMANCE)
	$(SWIFT) build --build-tests --sanitize=thread --build-path $(TSAN_BUILD)
	$(TSAN_ENV) $(SWIFT) test --skip-build --sanitize=thread --build-path $(TSAN_BUILD) --disable-xctest --filter '$(TSAN_SUITES)'
	$(TSAN_ENV) PYTHONDONTWRITEBYTECODE=1 .build/venv/bin/python Tests/Soak/soak.py '$(CURDIR)/$(TSAN_BUILD)/debug/rtdb' --seconds 60
	RTDB_IO_BACKEND=posix $(SWIFT) test --skip-build --disable-xctest --filter '$(PORTABLE_SUITES)'
	RTDB_IO_BACKEND=posix $(CONFORMANCE)

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
