// SPDX-License-Identifier: GPL-2.0
/*
 * C shims for static inline functions and macros of the APIs in bindings_helper.h, which Rust
 * cannot call directly (the kernel's rust/helpers/ for the APIs the kernel crate lacks). One
 * line of C each, no logic: anything more belongs in Rust.
 *
 * Sorted by header, then alphabetically.
 */

#include "helpers.h"

/* <net/devlink.h> */

struct devlink *ksys_helper_devlink_alloc(const struct devlink_ops *ops, size_t priv_size,
					  struct device *dev)
{
	return devlink_alloc(ops, priv_size, dev);
}
