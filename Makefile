# outbox — see README.md. Every target works from a clean clone with Go 1.26.
GO        ?= go
BIN       := bin
PKGS      := ./...
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/outboxhq/outbox/internal/version.Version=$(VERSION)
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck
FUZZTIME  ?= 10s

.PHONY: all build static package image test test-short test-damage fuzz fuzz-long lint bench run run-kafka clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/outbox ./cmd/outbox
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/e2e-cli ./cmd/e2e-cli

# static: the Linux binary the packages and the image carry: no cgo, so it runs on any
# distribution and on an empty image base.
STATIC := $(BIN)/static/outbox
static:
	CGO_ENABLED=0 GOOS=linux $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(STATIC) ./cmd/outbox

# package: dist/*.deb and dist/*.rpm (nfpm, in the packaging/ module); image: the OCI image
# tarball dist/outbox-image.tar (go-containerregistry, no Docker daemon). See README "Deploy".
package: static
	cd packaging && $(GO) run . deb,rpm -bin ../$(STATIC) -root .. -out ../dist

image: static
	cd packaging && $(GO) run . image -bin ../$(STATIC) -out ../dist

# test: vet, the race-enabled suite (unit, loopback HTTP, in-process Kafka, subprocess
# signal and crash tests), the packaging module's tests (the .deb, .rpm and image read back;
# on Debian as root the .deb installed and removed again) and short fuzz runs of the parsers.
# The fuzz runs are bounded by a count of executions, not a duration: Go 1.26's fuzz
# coordinator can report a spurious "context deadline exceeded" when a duration ends on a
# loaded machine (golang/go#75804).
test: build
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 -timeout 15m -skip '^TestPowerLoss' $(PKGS)
	@# Verbose on its own, so that where the machine cannot cut power the reason shows.
	$(GO) test -race -count=1 -timeout 5m -v -run '^TestPowerLoss' ./test/
	cd packaging && $(GO) vet ./... && $(GO) test -count=1 -timeout 10m ./...
	$(MAKE) fuzz FUZZTIME=100000x

test-short:
	$(GO) test -short -count=1 $(PKGS)

# test-damage: the damage campaign over every page of its queue file (random
# bytes, zeros, a flipped byte) and a truncation at every page; make test runs
# a fixed-seed sample of it.
test-damage: build
	OUTBOX_DAMAGE_ALL=1 $(GO) test -race -count=1 -timeout 30m -run '^TestDamage_' ./test

# fuzz: each fuzz target for FUZZTIME (make fuzz FUZZTIME=5m for a long run).
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzNormalize$$' -fuzztime $(FUZZTIME) ./pkg/event
	$(GO) test -run '^$$' -fuzz '^FuzzParseBatch$$' -fuzztime $(FUZZTIME) ./pkg/event
	$(GO) test -run '^$$' -fuzz '^FuzzIngest$$' -fuzztime $(FUZZTIME) ./pkg/agent
	$(GO) test -run '^$$' -fuzz '^FuzzNormalizeScrub$$' -fuzztime $(FUZZTIME) ./pkg/event
	$(GO) test -run '^$$' -fuzz '^FuzzParseRetryAfter$$' -fuzztime $(FUZZTIME) ./pkg/httpdest
	$(GO) test -run '^$$' -fuzz '^FuzzMemberKey$$' -fuzztime $(FUZZTIME) ./pkg/kafka
	$(GO) test -run '^$$' -fuzz '^FuzzScanBatch$$' -fuzztime $(FUZZTIME) ./pkg/sink
	$(GO) test -run '^$$' -fuzz '^FuzzScanBatchEvents$$' -fuzztime $(FUZZTIME) ./pkg/sink
	$(GO) test -run '^$$' -fuzz '^FuzzOpenSealed$$' -fuzztime $(FUZZTIME) ./pkg/store/internal/format

fuzz-long:
	$(MAKE) fuzz FUZZTIME=5m

$(STATICCHECK):
	$(GO) install honnef.co/go/tools/cmd/staticcheck@v0.7.0

lint: $(STATICCHECK)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(STATICCHECK) $(PKGS)
	cd packaging && $(GO) vet ./... && $(STATICCHECK) ./...

# bench: the benchmark suite; prints one table (see docs/BENCHMARKS.md).
bench: build
	$(GO) run ./cmd/outbox-bench

# run: the agent against a local sink started alongside, so events are seen
# flowing with no account (see README "Quick start").
run: build
	$(BIN)/outbox run --dev

# run-kafka: the agent delivering into a local 3-broker Kafka-protocol cluster (franz-go's
# kfake, in memory) with a consumer that prints each record; no Kafka, no Docker (README
# "Deliver to Kafka"). The cluster lives in cmd/kafka-dev: bin/outbox does not link it.
# It is built and run, not `go run`: go run exits 1 when a Ctrl-C reaches it, whatever the
# program's own exit; built, kafka-dev exits 0 on a Ctrl-C and make reports no error, as for run.
run-kafka: build
	$(GO) build -o $(BIN)/kafka-dev ./cmd/kafka-dev
	$(BIN)/kafka-dev -agent $(BIN)/outbox

clean:
	rm -rf $(BIN)
