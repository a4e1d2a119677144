# ancs-sim: one command from a fresh clone to green tests (`make test`), one for the demo.
SHELL := /bin/bash
SWIFT ?= swift
DEBIAN_PACKAGES := libncurses-dev libbluetooth-dev libssl-dev pkg-config tmux tshark

.PHONY: test demo build release bench deps lint clean fuzz fuzz-ci
# Seconds per target for `make fuzz`; executions per target for `make fuzz-ci`.
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?= 200000

test: deps
	$(SWIFT) build --build-tests
	@# A backstop: a test that hangs fails the run in 30 minutes (the whole suite takes
	@# about a minute) instead of holding CI until its own limit.
	timeout --kill-after=60 1800 $(SWIFT) test

demo: deps
	$(SWIFT) build -c release --product ancs
	.build/release/ancs demo

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release --product ancs

bench: deps
	$(SWIFT) build -c release --product ancs
	.build/release/ancs bench

# libFuzzer targets (Fuzz/), built with swiftc into .build-fuzz/ and run one at a time,
# their corpora seeded from Protocol/vectors (scripts/fuzz.sh; README.md, "Fuzzing").
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
