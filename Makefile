# nacos-ai-bridge — see README.md.
#
#   make demo         a local Nacos, two sample backends with sidecars, a live config change, picks, a drain
#   make test         vet + gofmt, unit tests with -race, short fuzzing, then the
#                     integration tests against real Nacos servers
#   make unit         unit tests only (no Nacos needed)
#   make integration  integration tests only (NACOS_KINDS="java3 java2 rnacos")
#   make fuzz         every fuzz target for FUZZTIME (default 5s)
#   make bench        benchmarks with -benchmem
#   make sim          the balancer fleet simulation: every policy vs an oracle

GO       ?= go
# go-nvml's cgo wrappers call deprecated NVML functions; the warnings are noise.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
FUZZTIME ?= 5s

.PHONY: all test lint unit fuzz integration demo demo-thin bench sim servers

all: test

test: lint unit fuzz integration

lint:
	@echo "== go vet, gofmt"
	$(GO) vet ./...
	$(GO) vet -tags integration ./test/...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

unit:
	@echo "== unit tests (-race)"
	$(GO) test -race -count=1 ./...

fuzz:
	@echo "== fuzzing, $(FUZZTIME) per target"
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

integration:
	@echo "== integration tests against real Nacos servers"
	./test/run.sh

# Install (download/build) every server into the cache without starting one.
servers:
	for k in $${NACOS_KINDS:-java3 java2 rnacos}; do ./test/nacos/nacos.sh $$k install; done

demo:
	./scripts/demo.sh

# The foundation's thin path: register, subscribe, metadata change, config push.
demo-thin:
	./scripts/demo-thin.sh

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...

sim:
	$(GO) run ./cmd/balancer-sim
