# Koord. `make demo` runs the main job on an embedded control plane;
# `make test` runs every test CI runs. Everything a fresh machine needs
# (Go modules, code generators) is fetched by these targets themselves.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

GO ?= go
KUBE_VERSION := v1.37.2
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
LDFLAGS := -X github.com/koord-project/koord/pkg/version.Version=$(VERSION) \
	-X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=37
BIN := $(CURDIR)/bin
IMAGES := $(CURDIR)/_output/images
IMAGE_TAG ?= $(VERSION)
FUZZTIME ?= 3s
# One build configuration for everything (binaries, images, vet, tests,
# fuzzing): static, cgo-free binaries, and each package compiled once per cold
# machine instead of once with cgo and again without it for the images. Only
# the race detector needs cgo; its instrumented build is separate anyway.
export CGO_ENABLED := 0

.PHONY: all build test unit race fuzz integration generate generate-bpf images helm chart-test cluster-up cluster-down e2e e2e-kind verify demo bench bench-doc clean

all: build

## build: compile every command into bin/ (one go build, so shared packages compile once)
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

## test: everything CI runs: unit tests, the race detector, fuzzing of every parser, the Helm chart's tests, integration tests, e2e on a local cluster (root)
test: unit race fuzz chart-test integration e2e

## unit: fast tests with no control plane (test/perf's tests are its sizing; its benchmark runs in make bench)
unit:
	./hack/gotest.sh -count=1 $$($(GO) list ./... | grep -v /test/) ./test/perf

## race: the scheduler plugins, koordlet and koord-manager under the race detector (events, cycles and loops run concurrently)
race:
	CGO_ENABLED=1 ./hack/gotest.sh -race -count=1 ./pkg/plugins/... ./pkg/scheduler/... ./pkg/koordlet/... ./pkg/slo/... ./pkg/descheduler/...

## fuzz: run each fuzz target for $(FUZZTIME)
fuzz:
	FUZZTIME=$(FUZZTIME) ./hack/fuzz.sh

## integration: tests against an in-process etcd + kube-apiserver, and bin/koord-scheduler; test/security attacks the trust boundaries there; test/compat applies Koordinator's published examples
integration: build
	KOORD_SCHEDULER_BIN=$(BIN)/koord-scheduler KOORDLET_BIN=$(BIN)/koordlet KOORD_MANAGER_BIN=$(BIN)/koord-manager KOORD_DESCHEDULER_BIN=$(BIN)/koord-descheduler ./hack/gotest.sh -count=1 -timeout 30m ./test/integration/... ./test/security/... ./test/compat/...

HELM := $(CURDIR)/_output/bin/helm

## helm: build helm (pinned in hack/helm/go.mod) into _output/bin
helm:
	$(GO) build -modfile=hack/helm/go.mod -o $(HELM) helm.sh/helm/v3/cmd/helm

## chart-test: helm lint and template tests of deploy/charts/koord
chart-test: helm
	HELM=$(HELM) $(GO) test -count=1 ./test/chart/...

## generate: regenerate deepcopy, conversion, defaults, clients and CRDs
generate:
	./hack/update-codegen.sh

## generate-bpf: recompile koordlet's eBPF programs with bpf2go (installs clang and libbpf headers from Debian when missing); the outputs are committed
generate-bpf:
	command -v clang >/dev/null && test -f /usr/include/bpf/bpf_helpers.h || \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang libbpf-dev)
	$(GO) generate ./pkg/koordlet/ebpf/...

## images: container image tarballs of the components (the very binaries `make build` wrote), a pause image and the e2e workloads, written without Docker (hack/ociimage) into _output/images; import with `ctr -n k8s.io images import`
images: build
	$(GO) build -o $(IMAGES)/bin/ ./hack/images/... ./hack/ociimage
	# koord-scheduler, koord-manager and koord-descheduler run as an unprivileged user; koordlet
	# as root, which owns the cgroup files it writes (the chart drops every
	# capability but BPF and PERFMON).
	for c in koord-scheduler:65532 koordlet:0 koord-manager:65532 koord-descheduler:65532; do \
		$(IMAGES)/bin/ociimage --out $(IMAGES)/$${c%%:*}.tar --tag koord/$${c%%:*}:$(IMAGE_TAG) --user $${c##*:} \
			--file $(BIN)/$${c%%:*}=/usr/local/bin/$${c%%:*} --entrypoint /usr/local/bin/$${c%%:*}; \
	done
	for c in burner sleeper ticker; do \
		$(IMAGES)/bin/ociimage --out $(IMAGES)/$$c.tar --tag koord/$$c:$(IMAGE_TAG) \
			--file $(IMAGES)/bin/$$c=/usr/local/bin/$$c --entrypoint /usr/local/bin/$$c; \
	done
	# The sandbox image the local cluster's containerd is configured with: a fixed tag.
	$(IMAGES)/bin/ociimage --out $(IMAGES)/pause.tar --tag koord/pause:1 \
		--file $(IMAGES)/bin/pause=/usr/local/bin/pause --entrypoint /usr/local/bin/pause
	ls -l $(IMAGES)/*.tar

CLUSTER := hack/cluster/cluster.sh

## cluster-up: a real one-node cluster on this machine (etcd, containerd, kube-apiserver, kube-controller-manager, kube-proxy, kubelet, kwok nodes); components are built into _output/cluster on first use; needs root
cluster-up: images
	$(CLUSTER) up

## cluster-down: stop what cluster-up started and undo its changes to the host
cluster-down:
	$(CLUSTER) down

## e2e: cluster-up, import the images, helm install, run test/e2e, helm uninstall, cluster-down (teardown also on failure)
e2e: images helm
	HELM=$(HELM) IMAGE_TAG=$(IMAGE_TAG) ./hack/e2e.sh

## e2e-kind: the same suite on a kind cluster (needs Docker; not run in CI here)
e2e-kind: images helm
	HELM=$(HELM) IMAGE_TAG=$(IMAGE_TAG) ./hack/e2e-kind.sh

## verify: fail on stale generated code, unformatted files, vet findings or an untidy go.mod (read-only: what it regenerates is put back)
verify:
	./hack/verify.sh

BENCH := $(CURDIR)/_output/bench
BENCH_COUNT ?= 3
# BENCH_BASE is the commit make bench compares the paired cycle ratios with (hack/bench-compare.sh).
BENCH_BASE ?= d984624

## bench: the plugins' micro-benchmarks, the whole-scheduler comparison with stock kube-scheduler (test/perf: separate cases, paired profiles, cluster sizes) and the paired runs of BENCH_BASE against this tree, $(BENCH_COUNT) repetitions, into _output/bench, then docs/benchmarks.md and docs/bench (not part of make test: see docs/benchmarks.md for how long)
bench:
	mkdir -p $(BENCH)
	$(GO) test -p 1 -run XXX -bench . -count $(BENCH_COUNT) ./pkg/plugins/... ./apis/extension | tee $(BENCH)/micro.txt
	$(GO) test -c -o $(BENCH)/perf.test ./test/perf
	rm -f $(BENCH)/perf.md
	cd test/perf && KOORD_PERF_REPORT=$(BENCH)/perf.md KOORD_PERF_REPETITIONS=$(BENCH_COUNT) $(BENCH)/perf.test -test.run XXX \
		-test.bench 'BenchmarkScheduler|BenchmarkPaired|BenchmarkScale' -test.benchtime 1x -test.timeout 4h | tee $(BENCH)/perf.txt
	hack/bench-compare.sh $(BENCH_BASE) $(BENCH_COUNT) $(BENCH)
	$(MAKE) bench-doc

BENCHSTAT := golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

## bench-doc: docs/benchmarks.md's measured section and docs/bench from the last make bench (_output/bench)
bench-doc:
	$(GO) run $(BENCHSTAT) $(BENCH)/micro.txt > $(BENCH)/micro.benchstat.txt
	$(GO) run $(BENCHSTAT) -ignore /rep $(BENCH)/perf.txt > $(BENCH)/perf.benchstat.txt
	mkdir -p docs/bench
	cp -p $(BENCH)/micro.txt $(BENCH)/perf.txt $(BENCH)/perf.md $(BENCH)/micro.benchstat.txt $(BENCH)/perf.benchstat.txt $(BENCH)/compare.txt docs/bench/
	$(GO) run ./hack/benchdoc -doc docs/benchmarks.md -perf docs/bench/perf.txt -micro docs/bench/micro.txt \
		-perf-benchstat docs/bench/perf.benchstat.txt -micro-benchstat docs/bench/micro.benchstat.txt -repetitions docs/bench/perf.md \
		-compare docs/bench/compare.txt \
		-command "make bench BENCH_COUNT=$(BENCH_COUNT) BENCH_BASE=$(BENCH_BASE)"

## demo: start a control plane and koord-scheduler, schedule a sample workload, print the placements
demo: build
	$(BIN)/koord-demo

clean:
	rm -rf $(BIN) _output
