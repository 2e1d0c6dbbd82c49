# integration/vm/vm.mk: ward's integration tests in a cgroup-v2 VM (qemu,
# Debian's kernel, initramfs). Included from the Makefile; see integration/vm/README.md.
#   make test-vm                                  all integration tests in the VM
#   make test-vm VM_TEST_ARGS="-test.run 'TestX'"  a subset
#   make test-vm VM_SMOKE=1                       boot check: one `ward run`, the cgroup set-up
#   make vm-deps                                  install qemu etc., unpack the kernel (cached)
#   make vm-clean                                 remove build products (kernel cache: /var/cache/ward-vm)
VM_SCRIPT := bash integration/vm/vm.sh
VM_TEST_ARGS ?=
VM_SMOKE ?=
VM_TIMEOUT ?= 32m
VM_ACCEL ?=
export VM_TEST_ARGS VM_SMOKE VM_TIMEOUT VM_ACCEL

.PHONY: vm-deps test-vm vm-clean
vm-deps:
	$(VM_SCRIPT) deps

test-vm: build vm-deps
	GO='$(GO)' $(VM_SCRIPT) run

vm-clean:
	rm -rf integration/vm/out
