# make test  — every check: vet, formatting, the race-enabled test suite, a
#              benchmark smoke run, 32-bit builds and the bench module's tests.
# make bench — the comparison against other Go limiters (see README).

GO ?= go
PKGS := ./...

.PHONY: test vet fmt race smoke test386 benchmod bench

test: vet fmt race smoke test386 benchmod

vet:
	$(GO) vet $(PKGS)

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

race:
	$(GO) test -race -count=1 $(PKGS)

smoke:
	$(GO) test -run '^$$' -bench . -benchtime 1x $(PKGS)

# 64-bit atomics on a 32-bit target: vet and compile everything, tests
# included. The binaries are not run: not every machine can execute them.
test386:
	GOARCH=386 $(GO) vet $(PKGS)
	GOARCH=386 $(GO) test -count=1 -run '^$$' -exec /bin/true $(PKGS)

# The bench module (its own go.mod, with the peers): vet, tests, and every
# benchmark once.
benchmod:
	cd bench && $(GO) vet ./...
	cd bench && $(GO) test -race -short -count=1 ./...
	cd bench && $(GO) test -run '^$$' -bench . -benchtime 1x ./...

# The comparison with other Go limiters: tables in bench/results/latest.txt,
# chart in bench/results/scaling.svg (see bench/README.md).
bench:
	cd bench && GO=$(GO) ./run.sh
