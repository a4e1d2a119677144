# ancs-sim: one command from a fresh clone to green tests (`make test`), one for the demo.
SHELL := /bin/bash
SWIFT ?= swift
# Every build and test below: SwiftPM plans a build again whenever its environment changes
# (make's own MAKEFLAGS, NO_COLOR, another terminal), and passes -color-diagnostics to every
# compile only when its output is a terminal, so a change between a terminal and a pipe
# changed every module's flags and recompiled all of them (60-70 s in release). Pinned off,
# the flags are the same wherever the output goes.
SWIFTPM_FLAGS := --no-color-diagnostics
DEBIAN_PACKAGES := libncurses-dev libedit-dev libbluetooth-dev libssl-dev pkg-config tmux tshark python3-venv chromium fonts-liberation

.PHONY: test demo build release bench fleet deps lint clean fuzz fuzz-ci sanitize sanitize-thread sanitize-address package-check
# Release builds specialise generics across modules (the codecs and engines are used from
# other modules in hot loops): about 15 % more end-to-end throughput (BENCHMARKS.md). On the
# command line, not in Package.swift, where it would be an unsafe flag that SwiftPM refuses
# in a package depended on by version.
RELEASE_FLAGS := -c release -Xswiftc -cross-module-optimization
# Seconds per target for `make fuzz`; executions per target for `make fuzz-ci`.
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?= 200000

test: deps
	$(SWIFT) build $(SWIFTPM_FLAGS) --build-tests
	@# Bumble, in a venv of its own, for the interop tests (which skip without it).
	scripts/bumble-venv.sh > /dev/null || echo "warning: no Bumble venv; the interop tests will be skipped" >&2
	@# A backstop: a test that hangs fails the run in 30 minutes (the whole suite takes
	@# about three minutes on two cores) instead of holding CI until its own limit.
	timeout --kill-after=60 1800 $(SWIFT) test $(SWIFTPM_FLAGS)

demo: deps
	$(SWIFT) build $(SWIFTPM_FLAGS) $(RELEASE_FLAGS) --product ancs
	.build/release/ancs demo

build: deps
	$(SWIFT) build $(SWIFTPM_FLAGS)

release: deps
	$(SWIFT) build $(SWIFTPM_FLAGS) $(RELEASE_FLAGS) --product ancs

bench: deps
	$(SWIFT) build $(SWIFTPM_FLAGS) $(RELEASE_FLAGS) --product ancs
	.build/release/ancs bench

# The whole suite under ThreadSanitizer, then AddressSanitizer, each in its own build
# directory. The `ancs` processes the tests start are the instrumented build too
# (ANCS_BINARY), and the tests' own time bounds are SANITIZE_TIME_SCALE times longer
# (ANCS_TEST_TIME_SCALE), for the sanitizers' slowdown. Any report fails the run.
# LeakSanitizer is off: in Swift on Linux it takes weak references' side tables and
# pointers kept in enums' spare bits for leaks, and Foundation's Process and Pipe keep
# cycles alive at exit (README.md, "Sanitizers"). The leaks that matter, sockets and
# descriptors, are checked by the tests themselves.
SANITIZE_TIME_SCALE ?= 4
# ANCS_SANITIZER: the fault sweeps run half their faults under each (Tests/ConformanceTests/
# SanitizerShare.swift).
SANITIZE_ENV_thread := ANCS_SANITIZER=thread
SANITIZE_ENV_address := ANCS_SANITIZER=address ASAN_OPTIONS=detect_leaks=0
# ThreadSanitizer builds wait on checked continuations (see Sources/Runtime/Inbox.swift).
SANITIZE_FLAGS_thread := -Xswiftc -DANCS_THREAD_SANITIZER
# lld, not the default gold: the address sanitizer's runtime asks for every __asan_* symbol
# to be exported (a wildcard in its .syms dynamic list), and gold warns once per link for each
# of the 141 that are local to the runtime ("Cannot export local symbol"); lld skips those.
SANITIZE_FLAGS_address := -Xswiftc -use-ld=lld
sanitize: sanitize-thread sanitize-address

sanitize-thread sanitize-address: sanitize-%: deps
	$(SWIFT) build $(SWIFTPM_FLAGS) --build-tests --sanitize=$* --scratch-path .build/sanitize-$* $(SANITIZE_FLAGS_$*)
	ANCS_BINARY=$(CURDIR)/.build/sanitize-$*/debug/ancs ANCS_TEST_TIME_SCALE=$(SANITIZE_TIME_SCALE) $(SANITIZE_ENV_$*) \
	  timeout --kill-after=60 2400 $(SWIFT) test $(SWIFTPM_FLAGS) --skip-build --sanitize=$* --scratch-path .build/sanitize-$* $(SANITIZE_FLAGS_$*)

# One phone process serving FLEET_WATCHES watches over Unix sockets through a scenario of
# FLEET_NOTIFICATIONS posts and removals (BENCHMARKS.md, "A fleet of watches"); exits 1
# unless every watch ends with the phone's exact set and the open files come back. Its
# progress goes to stderr: one line rewritten on a terminal, a line every 15 s otherwise.
FLEET_WATCHES ?= 1000
FLEET_NOTIFICATIONS ?= 10000
fleet: deps
	$(SWIFT) build $(SWIFTPM_FLAGS) $(RELEASE_FLAGS) --product ancs
	.build/release/ancs bench --fleet $(FLEET_WATCHES) --notifications $(FLEET_NOTIFICATIONS)

# libFuzzer targets (Fuzz/), built with swiftc into .build-fuzz/ and run one at a time,
# their corpora seeded from Protocol/vectors (scripts/fuzz.sh; README.md, "Fuzzing"). Each
# target's progress goes to stderr (a line every FUZZ_PROGRESS_SECONDS=15 in a log), its
# row of the table to stdout when it ends.
fuzz:
	scripts/fuzz.sh run --seconds $(FUZZ_SECONDS)

fuzz-ci:
	scripts/fuzz.sh run --runs $(FUZZ_RUNS)

# Installs the Debian packages that are missing (apt-get as root, sudo otherwise).
deps:
	@scripts/install-deps.sh $(DEBIAN_PACKAGES)

lint:
	$(SWIFT) format lint --strict -r Sources Tests Fuzz Package.swift

clean:
	rm -rf .build .build-fuzz

# A package of another project that depends on a tagged version of this one, by URL, and
# uses its ANCS and GATT libraries: builds and runs (scripts/package-check.sh).
package-check:
	scripts/package-check.sh
