# Every target works from a fresh clone: modules are discovered from their go.mod files.
MODULES := $(shell .github/scripts/modules.sh)
GOTEST_FLAGS ?= -race -count=1 -timeout 30m

STATICCHECK ?= $(shell command -v staticcheck || echo $(shell go env GOPATH)/bin/staticcheck)
GOLANGCI_LINT ?= $(shell command -v golangci-lint || echo $(shell go env GOPATH)/bin/golangci-lint)

.PHONY: test vet lint fmt-check bench demo install-check

## test: every test of every module, each module alone (GOWORK=off, as `go get` users build it), with -race;
## every module runs even after a failure, then every skipped test is listed with its reason. Before them: the
## module-discovery and release-script tests, the check that each adapter compiles only its Fiber version (a
## core none), the release tools' tests, the install check (every library module released into a throwaway
## clone and installed from a module proxy as users install it) and the compatibility gate
test: fmt-check vet
	.github/scripts/modules_test.sh
	.github/scripts/release_test.sh
	.github/scripts/fiber_versions.sh
	cd .github/tools && GOWORK=off go test -race -count=1 ./...
	.github/scripts/installcheck.sh
	.github/scripts/apicompat.sh --all
	.github/scripts/gotest.sh $(GOTEST_FLAGS)

## install-check: only the install check (see test)
install-check:
	.github/scripts/installcheck.sh

## vet: go vet over every module, in the workspace and alone
vet:
	go vet $$(go list -f '{{.Dir}}/...' -m)
	@set -e; for m in $(MODULES); do (cd $$m && GOWORK=off go vet ./...); done
	cd .github/scripts && GOWORK=off go vet testreport.go
	cd .github/tools && GOWORK=off go vet ./...

## lint: staticcheck over the workspace, then golangci-lint per module as the Lint workflow runs it
## (go install honnef.co/go/tools/cmd/staticcheck@v0.8.2 github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0)
lint:
	$(STATICCHECK) $$(go list -f '{{.Dir}}/...' -m)
	cd .github/scripts && GOWORK=off $(STATICCHECK) testreport.go
	cd .github/tools && GOWORK=off $(STATICCHECK) ./...
	@set -e; for m in $(MODULES); do \
		echo "=== golangci-lint $$m"; \
		(cd $$m && GOWORK=off $(GOLANGCI_LINT) run --allow-parallel-runners --config=$(CURDIR)/.golangci.yml ./...); \
	done

## fmt-check: fail when a file is not gofmt-clean
fmt-check:
	@out="$$(gofmt -l $(MODULES) .github/scripts .github/tools)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## bench: the side-by-side benchmarks (see BENCHMARKS.md)
bench:
	cd bench && GOWORK=off go test -run '^$$' -bench . -benchmem -count 5 ./...

## demo: the demo gateway on 127.0.0.1:8080
demo:
	go run ./examples/gateway
