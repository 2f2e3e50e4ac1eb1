# make test  — every check: vet, formatting, tidy go.mod files, the race-enabled test suite, the
#              tests without -race (as a user's go test runs them), a
#              benchmark smoke run, 32-bit builds, the bench module's tests
#              and the redislimit module's tests against real Redis servers
#              and clusters (redis-server and redis-cli are installed with
#              apt-get when missing and run as root), the grpclimit,
#              envoyrls and metrics modules' tests, and the root module's
#              vet and tests (-short) on the newest Go release too.
# make bench — the comparison against other Go limiters: prints a summary and
#              writes every table to bench/out/ (PUBLISH=1: bench/results/).

GO ?= go
PKGS := ./...

.PHONY: test vet fmt tidy race unit smoke test386 newgo benchmod redis redismod metricsmods grpcmod envoymod bench envoybench envoybench-run

# redis first: without redis-server and redis-cli, and not root, make test
# stops at once with the command to run, not after the root module's suite.
test: redis vet fmt tidy race unit smoke test386 newgo redismod metricsmods grpcmod envoymod benchmod

vet:
	$(GO) vet $(PKGS)

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# Every module's go.mod and go.sum say exactly what its code imports.
tidy:
	@for mod in $$(git ls-files '*go.mod' 2>/dev/null || find . -name go.mod); do \
		dir=$$(dirname $$mod); \
		(cd $$dir && $(GO) mod tidy -diff) || { echo "go mod tidy would change $$dir"; exit 1; }; \
	done

# -timeout 30m, here and in every race-enabled run below: on a loaded machine
# the race-enabled tests of one package (slidinglog's differential tests at
# limit 65536) have run past go test's default of 10 minutes.
race:
	$(GO) test -race -count=1 -timeout 30m $(PKGS)

# Every module's tests without the race detector, short, as a user's
# `go test ./...` runs them: the allocation counts (testing.AllocsPerRun)
# must hold in that build too. redislimit's are all about Redis, which its
# race-enabled run covers.
UNIT_MODS := . grpclimit hotlimitprom hotlimitotel envoyrls bench
unit:
	@for d in $(UNIT_MODS); do \
		echo "== $$d, without -race"; \
		(cd $$d && $(GO) test -short -count=1 ./...) || exit 1; \
	done

smoke:
	$(GO) test -run '^$$' -bench . -benchtime 1x $(PKGS)

# RUNS386 is "yes" when this machine executes 386 binaries (an x86-64 Linux
# kernel with 32-bit support does), else empty: a probe test binary is built
# and run, where a target uses the variable.
RUNS386 = $(shell tmp=$$(mktemp -d) && GOARCH=386 $(GO) test -c -o $$tmp/probe.test ./internal/packed >/dev/null 2>&1 && $$tmp/probe.test -test.run '^$$' >/dev/null 2>&1 && echo yes; rm -rf $$tmp)

# 64-bit atomics on a 32-bit target: vet and compile everything, tests
# included (the sibling modules vetted too: hotlimitd runs on 32-bit ARM), and run the tests (-short) where the machine can execute 386
# binaries; elsewhere they are compiled only. The keyed map's node tests run
# again with checkptr (which -race turns on, but 386 has no -race): there a
# node's alignment differs, and reading one through a larger form than it
# was allocated as reaches past its allocation.
test386:
	GOARCH=386 $(GO) vet $(PKGS)
	for m in redislimit grpclimit hotlimitprom hotlimitotel envoyrls; do \
		(cd $$m && GOARCH=386 $(GO) vet ./...) || exit 1; \
	done
	@if [ -n "$(RUNS386)" ]; then \
		echo "== 32-bit (GOARCH=386): the tests, -short"; \
		GOARCH=386 $(GO) test -short -count=1 $(PKGS) && \
		GOARCH=386 $(GO) test -short -count=1 -gcflags=all=-d=checkptr -run Node ./internal/keyed; \
	else \
		echo "== 32-bit (GOARCH=386): this machine cannot run 386 binaries: compiling the tests only"; \
		GOARCH=386 $(GO) test -count=1 -run '^$$' -exec /bin/true $(PKGS); \
	fi

# The modules declare the older of the two Go releases supported, and a
# user may build with the newer, whose standard library can answer
# differently (Go 1.27's encoding/json words and places its syntax errors
# otherwise, which the rules loader reads): the root module's vet and tests
# (-short) run again on it. The go command fetches that toolchain from the
# module proxy (some 76 MB, once).
NEWGO ?= go1.27.3
newgo:
	@echo "== the root module on $(NEWGO): vet and the tests, -short"
	GOTOOLCHAIN=$(NEWGO) $(GO) vet $(PKGS)
	GOTOOLCHAIN=$(NEWGO) $(GO) test -short -count=1 $(PKGS)

# The bench module (its own go.mod, with the peers): vet, the race-enabled
# tests in full (the cross-check at 32 goroutines; redisbench's on a real
# redis-server, which without -short they require), and every benchmark once.
benchmod: redis
	cd bench && $(GO) vet ./...
	cd bench && $(GO) test -race -count=1 -timeout 30m ./...
	cd bench && $(GO) test -run '^$$' -bench . -benchtime 1x ./...

# redis-server and redis-cli, which the redislimit tests start on loopback
# ports: installed with the system package manager when missing and running
# as root, else the one command to run.
redis:
	@if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then exit 0; fi; \
	cmd="apt-get install -y redis-server redis-tools"; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "== $$cmd"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$cmd -qq; \
	else \
		echo "redis-server and redis-cli are needed by the redislimit tests: run  sudo $$cmd"; exit 1; \
	fi

# The redislimit module (its own go.mod, with go-redis): vet, the race-enabled
# tests against real servers, every benchmark once, and a 32-bit build.
redismod:
	cd redislimit && $(GO) vet ./...
	cd redislimit && $(GO) test -race -count=1 -timeout 30m ./...
	cd redislimit && $(GO) test -run '^$$' -bench . -benchtime 1x ./...
	cd redislimit && GOARCH=386 $(GO) vet ./...

# The metrics modules (their own go.mod each, with client_golang and the
# OpenTelemetry metric API): vet, race-enabled tests, every benchmark once.
METRICS_MODS := hotlimitprom hotlimitotel
metricsmods:
	@for d in $(METRICS_MODS); do \
		echo "== $$d"; \
		(cd $$d && $(GO) vet ./... && $(GO) test -race -count=1 -timeout 30m ./... && \
			$(GO) test -run '^$$' -bench . -benchtime 1x ./...) || exit 1; \
	done

# The grpclimit module (its own go.mod, with grpc-go): vet, the race-enabled
# tests over loopback TCP and bufconn, every benchmark once, and a 32-bit
# build.
grpcmod:
	cd grpclimit && $(GO) vet ./...
	cd grpclimit && $(GO) test -race -count=1 -timeout 30m ./...
	cd grpclimit && $(GO) test -run '^$$' -bench . -benchtime 1x ./...
	cd grpclimit && GOARCH=386 $(GO) vet ./...

# The envoyrls module (its own go.mod, with go-control-plane and grpc): vet,
# the race-enabled tests (the conformance suite in memory and on a real
# redis-server, which CI=1 makes mandatory), every benchmark once.
envoymod: redis
	cd envoyrls && $(GO) vet ./...
	cd envoyrls && CI=$${CI:-1} $(GO) test -race -count=1 -timeout 30m ./...
	cd envoyrls && $(GO) test -run '^$$' -bench . -benchtime 1x ./...
	@if [ -n "$(RUNS386)" ]; then \
		echo "== envoyrls, 32-bit (GOARCH=386), -short: limits and addends past a 32-bit int"; \
		cd envoyrls && GOARCH=386 $(GO) test -short -count=1 ./...; \
	else \
		echo "== envoyrls, 32-bit: this machine cannot run 386 binaries: vet only"; \
		cd envoyrls && GOARCH=386 $(GO) vet ./...; \
	fi

# The comparison with other Go limiters: a summary on stdout (bench/out/summary.txt),
# every table in bench/out/latest.txt, the chart in bench/out/scaling.svg;
# bench/out/ is not tracked. `make bench PUBLISH=1` writes bench/results/
# instead, which the README quotes (see bench/README.md for the knobs).
# Then the gRPC interceptor's cost per call, and hotlimitd's ShouldRateLimit
# throughput over loopback gRPC (see README), whose Redis rows, like the
# bench module's, are skipped when redis-server is missing (make bench
# installs nothing); last, where the summary is.
bench:
	cd bench && GO=$(GO) PUBLISH=$(PUBLISH) ./run.sh
	@echo "== grpclimit: interceptor overhead per allowed unary call"
	cd grpclimit && $(GO) test -run '^$$' -bench BenchmarkUnary -benchmem -count 3 .
	@$(MAKE) --no-print-directory envoybench-run
	@echo "== the comparison with other Go limiters: bench/$(if $(filter 1,$(PUBLISH)),results,out)/summary.txt (printed first, above)"

# hotlimitd's ShouldRateLimit per second over loopback gRPC, in rounds,
# against a handler that answers OK and, when HOTLIMITD_BENCH_REFERENCE (its
# binary) or ENVOY_RATELIMIT_SRC (a clone) is set, the reference server on
# the same Redis: summary in envoyrls/out/envoy-summary.txt (see
# envoyrls/bench.sh for the knobs).
envoybench: redis envoybench-run

# envoybench without installing redis-server: its Redis rows are skipped
# when it is missing.
envoybench-run:
	@echo "== hotlimitd: ShouldRateLimit per second over loopback gRPC"
	cd envoyrls && GO=$(GO) ./bench.sh
