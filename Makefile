# SPDX-License-Identifier: GPL-2.0
# cx4 top-level targets. Kbuild (not this file) describes the module to the kernel build.
#
#   make demo      build what is missing, boot a VM with the modelled card, load cx4.ko
#   make test      every test: set-up checks, lints, host unit tests, VM tests (CI; < 30 min warm);
#                  ends "N passed, N failed". KERNEL=debug: the VM suites on the debug kernel
#                  (KASAN, lockdep, debug objects, kmemleak; its own cached build)
#   make soak      the long runs (hundreds of load/unload cycles), not part of make test
#   make shell     a shell in a VM next to the modelled card, Ethernet and RoCE on, its port on
#                  the run's segment (VMS=2: two VMs, their cards' ports on one segment)
#   make bench     benchmarks (cx4 vs upstream mlx5 and virtio-net/rxe; EC, RAID-6, MPI), not tests;
#                  writes target/bench/report.md and its plots
#   make module    cx4.ko against the cached test kernel (CLIPPY=1 to lint it; CX4_TEST_HOOKS=y
#                  adds the hooks tests use: the test bed's own builds set it)
#   make model     the device model (release build)
#   make cx4ec     the erasure-coding user library and CLI, tools/cx4ec (-> target/cx4ec)
#   make kernel    the pinned test kernel (cached under $(CX4_CACHE))
#   make guest     the guest tree (cached under $(CX4_CACHE))
#   make clean     remove module build outputs

TB := tools/testbed
export CX4_CACHE ?= /var/cache/cx4
# default or debug
KERNEL ?= default
export CX4_KERNEL_FLAVOUR := $(KERNEL)
VMS ?= 1

.PHONY: all demo test soak shell bench module model cx4ec kernel guest host-deps clean

all: module model cx4ec

host-deps:
	@bash $(TB)/host-deps.sh

kernel: host-deps
	@bash $(TB)/kernel.sh

guest: kernel
	@bash $(TB)/guest.sh "$$(bash $(TB)/kernel.sh)"

module: kernel
	@bash $(TB)/module.sh "$$(bash $(TB)/kernel.sh)" $(if $(CLIPPY),CLIPPY=1) \
		$(if $(CX4_TEST_HOOKS),CX4_TEST_HOOKS=$(CX4_TEST_HOOKS))

model:
	@cargo build --release --locked --quiet -p cx4-model

cx4ec:
	@$(MAKE) -s -C tools/cx4ec

demo:
	@bash $(TB)/demo.sh

test:
	@python3 tests/run.py $(TESTS)

soak:
	@python3 tests/run.py --soak $(TESTS)

shell: model guest
	@kdir=$$(bash $(TB)/kernel.sh) && bash $(TB)/module.sh "$$kdir" CX4_TEST_HOOKS=y >/dev/null && \
	tree=$$(bash $(TB)/guest.sh "$$kdir") && \
	python3 $(TB)/vmrun.py --shell --kdir "$$kdir" --tree "$$tree" \
		--model target/release/cx4-model --file cx4.ko --vms $(VMS) --timeout 86400

bench: model guest
	@bash tools/bench/deps.sh
	@bash $(TB)/module.sh "$$(bash $(TB)/kernel.sh)" CX4_TEST_HOOKS=y >/dev/null
	@mkdir -p target/bench && rm -f target/bench/*.json target/bench/*.log target/bench/*.png target/bench/report.md
	@fail=0; \
	for b in core_bench.py eth_bench.py "eth_bench.py --lro --wire-gso" roce_bench.py \
	         ec_bench.py raid6_bench.py ai_bench.py; do \
		python3 tools/bench/$$b || { echo "bench: $$b failed"; fail=1; }; \
	done; \
	python3 tools/bench/report.py && exit $$fail

clean:
	@if [ -e "$(CX4_CACHE)/kernel" ]; then \
		kdir=$$(ls -d $(CX4_CACHE)/kernel/build-* 2>/dev/null | head -1); \
		[ -n "$$kdir" ] && $(MAKE) -C "$$kdir" M=$(CURDIR) clean >/dev/null || true; fi
	rm -rf .build
	cd tests/kverbs && rm -f *.o *.ko *.mod *.mod.c .*.cmd Module.symvers modules.order
