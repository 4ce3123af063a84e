// SPDX-License-Identifier: GPL-2.0
//! The RTNL lock (`rtnl_lock()`, <linux/rtnetlink.h>), which the networking core holds around
//! a netdev's configuration callbacks (`ndo_open`, `ndo_stop`, the ethtool operations).
//!
//! A driver's own work item that reconfigures its queues outside those callbacks (a recovery
//! that reopens channels, as mlx5e's `mlx5e_tx_timeout_work`) takes it too. It only tries:
//! `ndo_stop` holds the RTNL while it waits for the driver's work items, so a work item that
//! blocked on it would deadlock; mlx5e's work polls `rtnl_trylock()` and gives up once the
//! device is closing, and [`Rtnl::try_lock`] is the piece that makes that loop.

use core::marker::PhantomData;

/// The RTNL held (released when dropped). Not `Send`: a mutex is released by its holder.
pub struct Rtnl {
    _not_send: PhantomData<*mut ()>,
}

impl Rtnl {
    /// Takes the RTNL if it is free (`rtnl_trylock()`). Process context.
    pub fn try_lock() -> Option<Self> {
        // SAFETY: `rtnl_trylock()` (`mutex_trylock()` of the RTNL) takes no pointer and never
        // sleeps. From interrupt context it is a bug the kernel warns about, not a memory-safety
        // one, as for `kernel::sync::Mutex::try_lock`; this function is documented as process
        // context.
        if unsafe { ksys::rtnl_trylock() } != 0 {
            Some(Self {
                _not_send: PhantomData,
            })
        } else {
            None
        }
    }
}

impl Drop for Rtnl {
    fn drop(&mut self) {
        // SAFETY: This value exists only while the RTNL is held by this thread (taken by
        // `try_lock`, not `Send`), so this releases a lock the caller holds.
        unsafe { ksys::rtnl_unlock() };
    }
}
