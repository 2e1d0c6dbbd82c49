# ward: the two commands a newcomer runs, as root, on a fresh Debian/Ubuntu:
#   make demo   installs what is missing, builds bin/ward, runs an example
#   make test   the same set-up, then every test
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(HOME)/go/bin:$(PATH)
GO ?= go
# Debian packages the build and the tests need (checked, installed if missing).
# cmake, make and Python's own regression tests (for /usr/bin/python3's
# version; Debian 12's when python3 is not there yet) are the false-positive
# corpus's (docs/corpus.md). systemd and dbus-user-session give the rootless test
# of the D-Bus scope route a real user manager and user bus (docs/rootless.md).
# runc, containerd and podman (with conmon) drive bin/ward-oci in the OCI tests
# (docs/oci.md), runc's figures being its target.
PYTHON3_VERSION := $(shell /usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo 3.11)
APT_PACKAGES := gcc libc6-dev libseccomp-dev pkg-config python3 bash iproute2 util-linux busybox-static uidmap \
	systemd dbus-daemon dbus-user-session \
	cmake make libpython$(PYTHON3_VERSION)-testsuite \
	runc containerd podman conmon
# The corpus's C project: libuv, Debian's own source package, fetched once
# into CORPUS_SRC by integration/corpus-src.sh (integration/corpus_test.go).
CORPUS_SRC := /var/cache/ward-corpus
export CORPUS_SRC
STATICCHECK_VERSION := v0.8.2
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
COMMIT := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# One static file: CGO for libseccomp (issue 4), linked with -static.
BUILD_FLAGS := -trimpath -tags netgo,osusergo \
	-ldflags '-s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -linkmode external -extldflags "-static"'

.PHONY: all deps build demo test unit csan integration lint fmt clean man completions install uninstall bench soak fuzz
all: build

deps: .deps-stamp
.deps-stamp: Makefile
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing: $$missing"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing </dev/null; \
	fi
	@command -v $(GO) >/dev/null || { echo "Go is missing: install Go 1.24+ at /usr/local/go"; exit 1; }
	@command -v staticcheck >/dev/null && staticcheck -version | grep -q "$(STATICCHECK_VERSION:v%=%)" || \
		$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(GO) mod download
	bash integration/corpus-src.sh $(CORPUS_SRC)
	@touch $@

build: deps
	CGO_ENABLED=1 $(GO) build $(BUILD_FLAGS) -o bin/ward ./cmd/ward
	ln -sf ward bin/ward-oci

demo: build
	@echo "== examples/hello.py in the default sandbox (5 s limit) =="
	bin/ward run --time-limit=5s --report=bin/demo-report.json -- python3 - < examples/hello.py
	@echo "== the report (bin/demo-report.json) =="
	@cat bin/demo-report.json

# Side by side with bare exec, bubblewrap and runc, and ward-oci beside runc
# through containerd (bench/oci.sh); writes docs/benchmarks.md.
BENCH_PACKAGES := hyperfine runc bubblewrap busybox-static time containerd
bench: build
	@missing=$$(for p in $(BENCH_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing </dev/null; \
	fi
	bash bench/run.sh

# The soak (not part of make test): 1,000 runs with ward SIGKILLed at random
# points, 100 at once, hostile programs; then nothing may be left. Writes
# docs/soak.md. SOAK_RUNS and SOAK_PARALLEL size it.
SOAK_RUNS ?= 1000
SOAK_PARALLEL ?= 100
soak: build
	WARD_SOAK_RUNS=$(SOAK_RUNS) WARD_SOAK_PARALLEL=$(SOAK_PARALLEL) WARD_SOAK_REPORT=$(CURDIR)/docs/soak.md \
		$(GO) test -count=1 -tags soak -timeout 60m -run '^TestSoak$$' -v ./integration

# Man pages from the same definitions as --help, into bin/man (emptied
# first, so that a removed command's page is not installed).
man: build
	$(GO) build -tags wardman -ldflags '-X main.version=$(VERSION)' -o bin/ward-man ./cmd/ward
	rm -rf bin/man
	bin/ward-man man bin/man
	@ls bin/man

# Shell completions (cobra's), into bin/completions.
completions: build
	mkdir -p bin/completions
	bin/ward completion bash > bin/completions/ward.bash
	bin/ward completion zsh > bin/completions/_ward
	bin/ward completion fish > bin/completions/ward.fish

# make install [PREFIX=/usr/local] [DESTDIR=stage]: the binary (0755, never
# setuid: ward needs no privilege it does not already have), man pages,
# completions, and, where AppArmor is present, the profile that lets the
# installed binary create user namespaces under Ubuntu 24.04's restriction
# (packaging/apparmor/ward, docs/install.md). The profile is loaded only
# into this machine's kernel, so only when DESTDIR is empty.
# make uninstall removes exactly these files (and unloads the profile).
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
APPARMORDIR ?= /etc/apparmor.d
# yes where AppArmor is present on this machine (APPARMOR=no to skip it).
APPARMOR ?= $(shell if [ -d /sys/kernel/security/apparmor ] || [ -d /etc/apparmor.d ]; then echo yes; else echo no; fi)

install: build man completions
	install -d '$(DESTDIR)$(BINDIR)' '$(DESTDIR)$(MANDIR)/man1' \
		'$(DESTDIR)$(BASHCOMPDIR)' '$(DESTDIR)$(ZSHCOMPDIR)' '$(DESTDIR)$(FISHCOMPDIR)'
	install -m 0755 bin/ward '$(DESTDIR)$(BINDIR)/ward'
	ln -sf ward '$(DESTDIR)$(BINDIR)/ward-oci'
	install -m 0644 bin/man/*.1 '$(DESTDIR)$(MANDIR)/man1/'
	install -m 0644 bin/completions/ward.bash '$(DESTDIR)$(BASHCOMPDIR)/ward'
	install -m 0644 bin/completions/_ward '$(DESTDIR)$(ZSHCOMPDIR)/_ward'
	install -m 0644 bin/completions/ward.fish '$(DESTDIR)$(FISHCOMPDIR)/ward.fish'
ifeq ($(APPARMOR),yes)
	install -d '$(DESTDIR)$(APPARMORDIR)'
	sed 's|@BINDIR@|$(BINDIR)|g' packaging/apparmor/ward > '$(DESTDIR)$(APPARMORDIR)/ward'
	chmod 0644 '$(DESTDIR)$(APPARMORDIR)/ward'
	@f='$(APPARMORDIR)/ward'; \
	if [ -n '$(DESTDIR)' ]; then \
		echo "AppArmor: profile installed as $(DESTDIR)$$f, not loaded (DESTDIR is set: load it on the target with apparmor_parser -r $$f)"; \
	elif ! command -v apparmor_parser >/dev/null; then \
		echo "AppArmor: profile installed as $$f, not loaded (no apparmor_parser here: the apparmor package loads /etc/apparmor.d when it is installed)"; \
	elif [ ! -d /sys/kernel/security/apparmor ]; then \
		echo "AppArmor: profile installed as $$f, not loaded (AppArmor is not enabled in this kernel)"; \
	elif apparmor_parser -r "$$f"; then \
		echo "AppArmor: profile installed as $$f and loaded (apparmor_parser -r): $(BINDIR)/ward may create user namespaces"; \
	else \
		rm -f "$$f"; \
		echo "AppArmor: apparmor_parser could not load $$f, so it is removed again: AppArmor before 4.0 has no userns rule, and no user namespace restriction to lift"; \
	fi
else
	@echo "AppArmor: not present here (no /sys/kernel/security/apparmor, no /etc/apparmor.d): no profile installed"
endif

uninstall:
	@f='$(APPARMORDIR)/ward'; \
	if [ -z '$(DESTDIR)' ] && [ -f "$$f" ] && command -v apparmor_parser >/dev/null && \
		[ -d /sys/kernel/security/apparmor ] && grep -q '^ward (' /sys/kernel/security/apparmor/profiles 2>/dev/null; then \
		if apparmor_parser -R "$$f"; then echo "AppArmor: profile ward unloaded"; else echo "AppArmor: could not unload profile ward"; fi; \
	fi
	rm -f '$(DESTDIR)$(BINDIR)/ward' '$(DESTDIR)$(BINDIR)/ward-oci' \
		'$(DESTDIR)$(MANDIR)/man1/ward.1' '$(DESTDIR)$(MANDIR)/man1/'ward-*.1 \
		'$(DESTDIR)$(BASHCOMPDIR)/ward' '$(DESTDIR)$(ZSHCOMPDIR)/_ward' \
		'$(DESTDIR)$(FISHCOMPDIR)/ward.fish' '$(DESTDIR)$(APPARMORDIR)/ward'

lint: deps
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	staticcheck ./...

unit: deps csan
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /integration)

# nsexec's C (the program's process from fork to exec, the early child's
# config, the user namespace child, the init's wire formats, the root plan's
# parser and the root's steps), built with AddressSanitizer and UBSan, any
# finding fatal, and its unit tests run (nsexec/ctest/gate_test.c,
# init_test.c, root_test.c). The same warnings as the cgo build
# (spawn_linux.go's #cgo CFLAGS), as errors.
NSEXEC_C := $(filter-out %_test.c,$(wildcard nsexec/*_linux.c))
CSAN_CFLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all \
	-Wall -Wextra -Werror
csan:
	@mkdir -p bin
	$(CC) $(CSAN_CFLAGS) -Insexec -o bin/gate_test nsexec/ctest/gate_test.c $(NSEXEC_C)
	bin/gate_test
	$(CC) $(CSAN_CFLAGS) -Insexec -o bin/init_test nsexec/ctest/init_test.c $(NSEXEC_C)
	bin/init_test
	$(CC) $(CSAN_CFLAGS) -DWARD_CTEST -Insexec -o bin/root_test nsexec/ctest/root_test.c nsexec/root_linux.c nsexec/root_plan_linux.c \
		nsexec/root_user_linux.c nsexec/root_glob_linux.c nsexec/root_landlock_linux.c
	bin/root_test

# Every Fuzz target, one at a time (go test -fuzz takes one per run), each
# for FUZZTIME; not part of `make test` (their seed corpora, f.Add and
# testdata/fuzz/, run as ordinary tests in `make unit`). A crasher is
# written to the package's testdata/fuzz/FuzzX/: fix it, keep it, and add a
# test that names it.
FUZZTIME ?= 20s
fuzz: deps
	@set -e; for pkg in $$($(GO) list ./... | grep -v /integration); do \
		for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== $$pkg $$t ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

# Black-box tests of bin/ward as root (they skip, saying why, when not root).
integration: build
	$(GO) test -count=1 -timeout 30m ./integration

# Every CI run exercises both cgroup layouts: this host's (v1/hybrid here),
# then a qemu VM with cgroup v2 unified (integration/vm/).
test: build lint unit integration test-vm

include integration/vm/vm.mk

fmt:
	gofmt -w $$(git ls-files '*.go')

clean: vm-clean
	rm -rf bin .deps-stamp
