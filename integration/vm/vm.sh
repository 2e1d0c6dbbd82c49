#!/bin/bash
# vm.sh: run ward's integration tests inside a small qemu VM whose kernel has
# cgroup v2 unified (Debian's kernel, booted from an initramfs built here).
#
#   vm.sh deps   install what is missing (qemu, busybox-static, cpio) and
#                unpack Debian's kernel into $VM_CACHE (not into /boot)
#   vm.sh run    build the test binary and the initramfs, boot, stream the
#                console, exit with the code the VM reports
#
# Called by integration/vm/vm.mk (make vm-deps, make test-vm); see README.md.
# Environment (all optional):
#   GO             go command (default: go)
#   VM_TEST_ARGS   extra arguments for the test binary, shell-quoted,
#                  e.g. "-test.run 'TestRun|TestReport'"
#   VM_SMOKE=1     instead of the tests, run one `ward run` and print the cgroup set-up
#   VM_TIMEOUT     host-side limit for the whole VM run (default 32m; a hung guest is tried again, VM_TRIES times in all, default 2)
#   VM_TEST_TIMEOUT  -test.timeout inside the VM (default 28m)
#   VM_MEM, VM_CPUS  qemu -m and -smp (default 2048, 2)
#   VM_CACHE       where the unpacked kernel lives (default /var/cache/ward-vm)
#   VM_OUT         build products and logs (default integration/vm/out)
#   VM_KERNEL_PKG  a concrete kernel package (default: what linux-image-amd64 depends on)
#   VM_MODULES     extra kernel modules to load in the VM (dependencies are resolved)
#   VM_DMESG=1     print the kernel log before the exit marker
#   VM_ACCEL       qemu accelerator (default tcg; kvm where /dev/kvm works:
#                  on this CI host /dev/kvm exists but a KVM guest never boots)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
GO=${GO:-go}
VM_CACHE=${VM_CACHE:-/var/cache/ward-vm}
VM_OUT=${VM_OUT:-$HERE/out}
case $VM_OUT in /*) ;; *) VM_OUT=$ROOT/$VM_OUT ;; esac
VM_TIMEOUT=${VM_TIMEOUT:-32m}
VM_TEST_TIMEOUT=${VM_TEST_TIMEOUT:-28m}
# A boot that prints no exit marker before VM_TIMEOUT (a guest that hung:
# seen once under TCG, mid-output) is tried again, this many times in all.
VM_TRIES=${VM_TRIES:-2}
VM_MEM=${VM_MEM:-2048}
VM_CPUS=${VM_CPUS:-2}
VM_SMOKE=${VM_SMOKE:-}
VM_TEST_ARGS=${VM_TEST_ARGS:-}
VM_DMESG=${VM_DMESG:-}
APT_PACKAGES=(qemu-system-x86 busybox-static cpio)
# The false-positive corpus (docs/corpus.md), built here on the host: under
# TCG a compiler runs ten to fifty times slower. These Go packages' test
# binaries, and libuv's test runner (Debian's source, which make deps puts
# in CORPUS_SRC with integration/corpus-src.sh).
CORPUS_GO_PKGS=${CORPUS_GO_PKGS:-syscall os/signal os/exec}
CORPUS_SRC=${CORPUS_SRC:-/var/cache/ward-corpus}
# Loaded in the VM in dependency order (resolved from each module's modinfo).
# virtio_pci + 9p share /usr; overlay, veth, bridge, tun for the sandboxes and
# the netns test hosts; virtio_rng so getrandom never waits.
BASE_MODULES="virtio_pci 9pnet_virtio 9p virtio_rng overlay veth bridge tun dummy loop"

log() { echo "vm: $*" >&2; }
die() { echo "vm: error: $*" >&2; exit 1; }

export DEBIAN_FRONTEND=noninteractive
APT_UPDATED=
apt_update_once() {
	[ -n "$APT_UPDATED" ] && return 1
	APT_UPDATED=1
	log "apt-get update"
	apt-get update -qq </dev/null
}
# apt_retry CMD...: run an apt command; if it fails, update the lists once and retry.
apt_retry() {
	"$@" </dev/null && return 0
	apt_update_once && "$@" </dev/null
}

deps_packages() {
	local missing=() p
	for p in "${APT_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$(id -u)" = 0 ] || die "missing packages ${missing[*]}: run as root"
	log "installing: ${missing[*]}"
	apt_retry apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# kernel_pkg prints the concrete kernel package, e.g. linux-image-6.1.0-56-amd64.
kernel_pkg() {
	if [ -n "${VM_KERNEL_PKG:-}" ]; then echo "$VM_KERNEL_PKG"; return; fi
	local p
	p=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
	if [ -z "$p" ] && apt_update_once; then
		p=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
	fi
	echo "$p"
}

# deps_kernel unpacks the kernel package into $VM_CACHE/<pkg>/ (once) and
# points $VM_CACHE/current at it.
deps_kernel() {
	local pkg dir tmp deb
	pkg=$(kernel_pkg)
	if [ -z "$pkg" ]; then
		[ -e "$VM_CACHE/current/ok" ] || die "cannot resolve linux-image-amd64 (apt lists?) and no kernel cached in $VM_CACHE"
		log "cannot resolve linux-image-amd64; using cached $(readlink "$VM_CACHE/current")"
		return 0
	fi
	dir=$VM_CACHE/$pkg
	if [ ! -e "$dir/ok" ]; then
		log "downloading $pkg into $dir"
		mkdir -p "$VM_CACHE"
		tmp=$(mktemp -d "$VM_CACHE/.dl.XXXXXX") && chmod 755 "$tmp"
		(cd "$tmp" && apt_retry apt-get download -qq "$pkg") || { rm -rf "$tmp"; die "apt-get download $pkg failed"; }
		deb=$(ls "$tmp"/*.deb)
		rm -rf "$dir" && mkdir -p "$dir/root"
		dpkg-deb -x "$deb" "$dir/root"
		rm -rf "$tmp"
		ls "$dir"/root/boot/vmlinuz-* >/dev/null 2>&1 || die "$pkg has no /boot/vmlinuz-*"
		touch "$dir/ok"
	fi
	ln -sfn "$pkg" "$VM_CACHE/current"
}

cmd_deps() {
	deps_packages
	deps_kernel
}

# ---------------------------------------------------------------- initramfs

# add_module NAME: copy NAME.ko (decompressed) and, first, its dependencies
# into the staging dir; append it to the load order. Built-in modules are skipped.
declare -A MOD_PATH=() MOD_DONE=()
MOD_ORDER=()
add_module() {
	local name=${1//-/_} src dst deps d
	[ -n "${MOD_DONE[$name]:-}" ] && return 0
	MOD_DONE[$name]=1
	src=${MOD_PATH[$name]:-}
	if [ -z "$src" ]; then
		grep -q "/${name//_/[-_]}\.ko" "$KMOD_DIR/modules.builtin" 2>/dev/null && return 0
		log "warning: kernel module $name not found, skipped"
		return 0
	fi
	dst=$STAGE/ward/modules/$name.ko
	case $src in
	*.ko.xz) xz -dc "$src" >"$dst" ;;
	*.ko.zst) zstd -qdc "$src" >"$dst" ;;
	*.ko.gz) gzip -dc "$src" >"$dst" ;;
	*) cp "$src" "$dst" ;;
	esac
	# The .modinfo section holds NUL-separated key=value strings.
	deps=$(tr '\0' '\n' <"$dst" | sed -n 's/^depends=//p' | head -1)
	for d in ${deps//,/ }; do add_module "$d"; done
	MOD_ORDER+=("$name")
}

build_initramfs() {
	local kroot=$VM_CACHE/current/root f a
	KVER=$(ls "$kroot/lib/modules" | head -1)
	KMOD_DIR=$kroot/lib/modules/$KVER
	VMLINUZ=$kroot/boot/vmlinuz-$KVER
	[ -f "$VMLINUZ" ] || die "no kernel at $VMLINUZ: run make vm-deps"

	STAGE=$VM_OUT/initramfs
	mkdir -p "$VM_OUT"
	rm -rf "$STAGE"
	mkdir -p "$STAGE"/{bb,etc,ward/bin,ward/integration,ward/modules,dev,proc,sys,usr,tmp,run,root,mnt,newroot,var/tmp}
	chmod 1777 "$STAGE/tmp" "$STAGE/var/tmp"
	chmod 700 "$STAGE/root"
	# Merged /usr like the host: /bin, /lib, ... are links into the shared /usr.
	for f in bin sbin lib lib32 lib64 libx32; do
		[ -L "/$f" ] && ln -s "$(readlink "/$f")" "$STAGE/$f"
	done
	# busybox: the shell and tools until /usr is mounted (then only a fallback).
	cp /bin/busybox "$STAGE/bb/busybox"
	for a in $(busybox --list); do
		[ "$a" = busybox ] || ln -s busybox "$STAGE/bb/$a"
	done
	install -m 755 "$HERE/init" "$STAGE/init"
	mknod -m 600 "$STAGE/dev/console" c 5 1 2>/dev/null || true

	# A minimal /etc; dynamic linking and /etc/alternatives links as on the host.
	cat >"$STAGE/etc/passwd" <<-'EOF'
	root:x:0:0:root:/root:/bin/sh
	nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
	user:x:1000:1000:the corpus's bare side:/nonexistent:/bin/sh
	EOF
	cat >"$STAGE/etc/group" <<-'EOF'
	root:x:0:
	nogroup:x:65534:
	user:x:1000:
	EOF
	# What useradd and userdel need (the rootless tests make throwaway users).
	printf 'root:*:19000:0:99999:7:::\nnobody:*:19000:0:99999:7:::\n' >"$STAGE/etc/shadow"
	printf 'root:*::\nnogroup:*::\n' >"$STAGE/etc/gshadow"
	chmod 640 "$STAGE/etc/shadow" "$STAGE/etc/gshadow"
	: >"$STAGE/etc/subuid"
	: >"$STAGE/etc/subgid"
	mkdir -p "$STAGE/etc/default" "$STAGE/etc/skel"
	[ -e /etc/login.defs ] && cp /etc/login.defs "$STAGE/etc/"
	[ -e /etc/default/useradd ] && cp /etc/default/useradd "$STAGE/etc/default/"
	echo ward-vm >"$STAGE/etc/hostname"
	printf '127.0.0.1\tlocalhost ward-vm\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$STAGE/etc/hosts"
	printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files\nnetworks: files\nprotocols: files\nservices: files\n' >"$STAGE/etc/nsswitch.conf"
	echo '# no network in the test VM' >"$STAGE/etc/resolv.conf"
	ln -s ../proc/self/mounts "$STAGE/etc/mtab"
	# containers/: podman's policy.json (integration/oci_podman_test.go).
	for f in ld.so.cache ld.so.conf ld.so.conf.d alternatives os-release protocols services containers; do
		[ -e "/etc/$f" ] && cp -a "/etc/$f" "$STAGE/etc/"
	done
	[ -L "$STAGE/etc/os-release" ] && cp --remove-destination /etc/os-release "$STAGE/etc/os-release"
	# A machine id of its own, as systemd's user manager and dbus-daemon expect
	# (integration/rootless_dbus_test.go starts them).
	od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$STAGE/etc/machine-id" && echo >>"$STAGE/etc/machine-id"

	# Kernel modules, in load order.
	MOD_PATH=() MOD_DONE=() MOD_ORDER=()
	while IFS= read -r f; do
		a=${f##*/}; a=${a%%.ko*}
		MOD_PATH[${a//-/_}]=$f
	done < <(find "$KMOD_DIR" -name '*.ko*')
	for a in $BASE_MODULES ${VM_MODULES:-}; do add_module "$a"; done
	printf '%s\n' "${MOD_ORDER[@]}" >"$STAGE/ward/modules/order"

	# The binaries under test; cwd in the VM is /ward/integration, so ../bin/ward works too.
	cp "$ROOT/bin/ward" "$STAGE/ward/bin/ward"
	ln -s ward "$STAGE/ward/bin/ward-oci" # the same binary by its OCI name
	if [ -z "$VM_SMOKE" ]; then
		cp "$VM_OUT/integration.test" "$STAGE/ward/integration/integration.test"
		[ -d "$ROOT/integration/testdata" ] && cp -a "$ROOT/integration/testdata" "$STAGE/ward/integration/"
		# The schemas the tests validate against (docs/audit.schema.json), at ../docs.
		mkdir -p "$STAGE/ward/docs" && cp "$ROOT"/docs/*.json "$STAGE/ward/docs/"
		cp -a "$VM_OUT/corpus" "$STAGE/ward/corpus"
	fi
	[ -d "$ROOT/examples" ] && cp -a "$ROOT/examples" "$STAGE/ward/"

	# What to run: read by /init (shell-quoted, parsed there with eval).
	{
		printf 'VM_MODE=%q\n' "$([ -n "$VM_SMOKE" ] && echo smoke || echo test)"
		printf 'VM_TEST_TIMEOUT=%q\n' "$VM_TEST_TIMEOUT"
		printf 'VM_TEST_ARGS=%q\n' "$VM_TEST_ARGS"
		printf 'VM_DMESG=%q\n' "$VM_DMESG"
	} >"$STAGE/ward/vm.conf"

	(cd "$STAGE" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -1 >"$VM_OUT/initrd.gz.tmp"
	mv "$VM_OUT/initrd.gz.tmp" "$VM_OUT/initrd.gz"
	log "initramfs $(du -h "$VM_OUT/initrd.gz" | cut -f1), kernel $KVER, modules: ${MOD_ORDER[*]}"
}

# ---------------------------------------------------------------- corpus

# build_corpus puts the corpus's binaries into $VM_OUT/corpus: go/PKG.test
# (go test -c), and libuv/ with build/uv_run_tests_a and test/fixtures
# (built once, kept).
build_corpus() {
	local out=$VM_OUT/corpus p src tmp
	rm -rf "$out/go" && mkdir -p "$out/go"
	for p in $CORPUS_GO_PKGS; do
		(cd "$ROOT" && GOFLAGS= "$GO" test -c -o "$out/go/${p//\//_}.test" "$p") || die "go test -c $p failed"
	done
	[ -x "$out/libuv/build/uv_run_tests_a" ] && return 0
	bash "$ROOT/integration/corpus-src.sh" "$CORPUS_SRC" || die "fetching libuv's source failed"
	src=$CORPUS_SRC/libuv
	tmp=$out/libuv.tmp
	rm -rf "$tmp" "$out/libuv" && cp -r "$src" "$tmp" && chmod -R u+w "$tmp"
	(cd "$tmp" && cmake -S . -B build -DLIBUV_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Debug >build.log &&
		make -C build -j2 uv_run_tests_a >>build.log) || { tail -30 "$tmp/build.log"; die "building libuv's tests failed"; }
	mkdir -p "$out/libuv/build" "$out/libuv/test"
	cp "$tmp/build/uv_run_tests_a" "$out/libuv/build/"
	cp -r "$tmp/test/fixtures" "$out/libuv/test/"
	rm -rf "$tmp"
}

# ---------------------------------------------------------------- run

QPID=
cleanup() {
	if [ -n "$QPID" ] && kill -0 "$QPID" 2>/dev/null; then
		log "stopping qemu (timeout pid $QPID)"
		kill "$QPID" 2>/dev/null || true
		wait "$QPID" 2>/dev/null || true
	fi
}

cmd_run() {
	local t0 t1 rc qrc marker raw
	t0=$(date +%s)
	[ -x "$ROOT/bin/ward" ] || die "$ROOT/bin/ward missing: run make build"
	[ -e "$VM_CACHE/current/ok" ] || die "no kernel in $VM_CACHE: run make vm-deps"
	command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing: run make vm-deps"
	mkdir -p "$VM_OUT"
	if [ -z "$VM_SMOKE" ]; then
		log "building the integration test binary (static)"
		(cd "$ROOT" && CGO_ENABLED=0 "$GO" test -c -o "$VM_OUT/integration.test" ./integration) \
			|| die "go test -c ./integration failed"
		log "building the corpus (go test -c $CORPUS_GO_PKGS; libuv's tests once)"
		build_corpus
	fi
	build_initramfs

	local accel=tcg
	[ -n "${VM_ACCEL:-}" ] && accel=$VM_ACCEL
	local qemu=(
		qemu-system-x86_64
		-accel "$accel" -cpu max -m "$VM_MEM" -smp "$VM_CPUS"
		-nodefaults -no-user-config -display none -no-reboot
		-serial stdio -nic none
		-kernel "$VMLINUZ" -initrd "$VM_OUT/initrd.gz"
		-append "console=ttyS0 quiet loglevel=3 panic=-1 cgroup_no_v1=all mitigations=off"
		-virtfs local,path=/usr,mount_tag=hostusr,security_model=none,readonly=on
		-device virtio-rng-pci
	)
	raw=$VM_OUT/console.raw
	LOG=$VM_OUT/console.log
	trap cleanup EXIT
	trap 'exit 130' INT TERM
	local try
	for try in $(seq 1 "$VM_TRIES"); do
		: >"$raw"
		log "booting ($accel, ${VM_MEM}M, $VM_CPUS cpus, timeout $VM_TIMEOUT, try $try of $VM_TRIES); console log: $LOG"
		timeout -k 10s "$VM_TIMEOUT" "${qemu[@]}" </dev/null >"$raw" 2>&1 &
		QPID=$!
		# Stream the console; in the background so that a signal's trap runs at once.
		tail -n +1 -s 0.2 -f --pid="$QPID" "$raw" | tr -d '\r' &
		wait $! || true
		qrc=0; wait "$QPID" || qrc=$?
		QPID=
		tr -d '\r' <"$raw" >"$LOG"
		rm -f "$raw"
		t1=$(date +%s)
		marker=$(grep -a '^WARD-VM-EXIT=[0-9]*$' "$LOG" | tail -1 || true)
		[ -n "$marker" ] && break
		[ "$qrc" = 124 ] && log "timed out after $VM_TIMEOUT"
		log "no WARD-VM-EXIT marker in the console (qemu exit $qrc) after $((t1 - t0))s"
		# Only a hung guest is tried again; a test failure prints a marker.
		[ "$qrc" = 124 ] && [ "$try" -lt "$VM_TRIES" ] && { log "the guest hung: booting again"; continue; }
		exit 1
	done
	rc=${marker#WARD-VM-EXIT=}
	log "VM exit code $rc after $((t1 - t0))s (log: $LOG)"
	exit "$rc"
}

case ${1:-} in
deps) cmd_deps ;;
run) cmd_run ;;
*) echo "usage: $0 deps|run" >&2; exit 2 ;;
esac
