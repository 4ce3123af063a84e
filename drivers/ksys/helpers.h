/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prototypes of the C shims in helpers.c. bindgen reads them through bindings_helper.h and
 * ksys.mk renames each `ksys_helper_NAME` to `NAME` (with `#[link_name]`), as the kernel does
 * for its `rust_helper_*` functions, so Rust calls `ksys::NAME` whether NAME is a real
 * function or a static inline.
 */
#ifndef KSYS_HELPERS_H
#define KSYS_HELPERS_H

#include <net/devlink.h>

struct devlink *ksys_helper_devlink_alloc(const struct devlink_ops *ops, size_t priv_size,
					  struct device *dev);

#endif
