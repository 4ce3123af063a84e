# SPDX-License-Identifier: GPL-2.0
# The ksys crate: bindgen bindings for kernel C APIs the `kernel` crate lacks, generated with
# the kernel's own bindgen flags. Included by the top-level Kbuild.
#
# This follows rust/Makefile (`bindgen_c_flags`, `bindgen_c_flags_final`, `cmd_bindgen`) of
# the kernel we build against:
# - clang-built kernel (CONFIG_CC_IS_CLANG, the debug flavour): libclang takes the C flags
#   of the kernel build as they are;
# - gcc-built kernel (the default flavour): the gcc-only flags are filtered out with the
#   kernel's own `bindgen_skip_c_flags` (read from the kernel source's rust/Makefile, so it
#   follows the kernel version), `-w` silences gcc-only warning options, and libclang gets
#   the target triple;
# - the fixed bindgen arguments of `cmd_bindgen` and the kernel's rust/bindgen_parameters,
#   then ours (drivers/ksys/bindgen_parameters: allowlists).
# Not mirrored: rust/Makefile's extra flag for CONFIG_INIT_STACK_ALL_ZERO with libclang < 16
# (the test bed pins libclang 19).
# The C shims of static inlines (helpers.c) are compiled into the module like any C object;
# their prototypes (helpers.h) go through the same bindgen run, and `ksys_helper_NAME` is
# renamed to `NAME` like the kernel renames `rust_helper_NAME`.

ksys_dir := drivers/ksys
ksys_out := .build/ksys

ifdef CONFIG_CC_IS_CLANG
ksys_bindgen_c_flags = $(c_flags)
else
$(eval $(shell sed -n '/^bindgen_skip_c_flags :=/,/[^\\]$$/{s/\\$$//;p}' \
	$(srctree)/rust/Makefile | tr '\n\t' '  '))
ifeq ($(strip $(bindgen_skip_c_flags)),)
$(error ksys: no bindgen_skip_c_flags in $(srctree)/rust/Makefile; update ksys.mk)
endif
# rust/Makefile's BINDGEN_TARGET (from scripts/Makefile.clang).
ksys_bindgen_target_x86 := x86_64-linux-gnu
ksys_bindgen_target_arm64 := aarch64-linux-gnu
ksys_bindgen_target := $(ksys_bindgen_target_$(SRCARCH))
ksys_bindgen_c_flags = $(filter-out $(bindgen_skip_c_flags), $(c_flags)) \
	-w --target=$(ksys_bindgen_target)
endif

ifdef CONFIG_LTO
ksys_bindgen_c_flags_final = $(filter-out $(CC_FLAGS_LTO), $(ksys_bindgen_c_flags)) \
	-fno-builtin -D__BINDGEN__
else
ksys_bindgen_c_flags_final = $(ksys_bindgen_c_flags) -fno-builtin -D__BINDGEN__
endif

ksys_params = $(shell grep -Ehv '^#|^$$' $(srctree)/rust/bindgen_parameters \
	$(src)/$(ksys_dir)/bindgen_parameters)

quiet_cmd_ksys_bindgen = BINDGEN $@
      cmd_ksys_bindgen = \
	mkdir -p $(dir $@) && \
	$(BINDGEN) $< $(ksys_params) --rust-target 1.85 \
		--use-core --with-derive-default --ctypes-prefix ffi --no-layout-tests \
		--no-debug '.*' --enable-function-attribute-detection \
		-o $@ -- $(ksys_bindgen_c_flags_final) -DMODULE -I$(src)/$(ksys_dir) && \
	sed -Ei 's/pub fn ksys_helper_([a-zA-Z0-9_]*)/\#[link_name="ksys_helper_\1"]\n    pub fn \1/g' $@

targets += $(ksys_out)/bindings_generated.rs
$(obj)/$(ksys_out)/bindings_generated.rs: $(src)/$(ksys_dir)/bindings_helper.h \
		$(src)/$(ksys_dir)/helpers.h $(src)/$(ksys_dir)/bindgen_parameters \
		$(srctree)/rust/bindgen_parameters FORCE
	$(call if_changed_dep,ksys_bindgen)

RUSTFLAGS_$(ksys_dir)/ksys.o := --emit=metadata=$(obj)/$(ksys_dir)/libksys.rmeta
$(obj)/$(ksys_dir)/ksys.o: $(obj)/$(ksys_out)/bindings_generated.rs

# What a crate that uses ksys adds to its RUSTFLAGS.
ksys_extern := --extern ksys=$(obj)/$(ksys_dir)/libksys.rmeta
