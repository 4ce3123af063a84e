// SPDX-License-Identifier: GPL-2.0
//! The device's and its ports' trampolines of [`OpsTable`]: `query_device`, `query_port`,
//! `get_port_immutable`, `get_link_layer`, `query_pkey`, the GID table (`add_gid`,
//! `del_gid`) and the port's hardware counters (`alloc_hw_port_stats`, `get_hw_stats`).

use kernel::{
    error::from_result,
    ffi::{
        c_int,
        c_void, //
    },
    prelude::*,
};

use super::OpsTable;
use crate::{
    attr::{
        DeviceAttr,
        PortAttr, //
    },
    device::Device,
    driver::IbDriver,
    gid::GidAttr,
    stats::{
        StatDesc,
        LIFESPAN_MS, //
    },
};

impl<T: IbDriver> OpsTable<T> {
    /// # Safety
    ///
    /// The core calls it with a device registered by `Registration<T>` and a zeroed or
    /// cached attribute struct.
    pub(super) unsafe extern "C" fn query_device(
        dev: *mut ksys::ib_device,
        attr: *mut ksys::ib_device_attr,
        _udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: A device of `Registration<T>`, live for the op.
        let dev = unsafe { Device::<T>::from_raw(dev) };
        from_result(|| {
            let mut a = DeviceAttr::default();
            T::query_device(dev, &mut a)?;
            // SAFETY: The core passes a valid struct only this op writes.
            a.write_to(unsafe { &mut *attr });
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for `query_device`; `attr` is zeroed by the core.
    pub(super) unsafe extern "C" fn query_port(
        dev: *mut ksys::ib_device,
        port: u32,
        attr: *mut ksys::ib_port_attr,
    ) -> c_int {
        // SAFETY: As in `query_device`.
        let dev = unsafe { Device::<T>::from_raw(dev) };
        from_result(|| {
            let mut a = PortAttr::default();
            T::query_port(dev, port, &mut a)?;
            // SAFETY: As in `query_device`.
            a.write_to(unsafe { &mut *attr });
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for `query_device`.
    pub(super) unsafe extern "C" fn get_port_immutable(
        dev: *mut ksys::ib_device,
        port: u32,
        imm: *mut ksys::ib_port_immutable,
    ) -> c_int {
        // SAFETY: As in `query_device`.
        let dev = unsafe { Device::<T>::from_raw(dev) };
        from_result(|| {
            let p = T::port_immutable(dev, port)?;
            // SAFETY: As in `query_device`.
            p.write_to(unsafe { &mut *imm });
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for `query_device`.
    pub(super) unsafe extern "C" fn get_link_layer(
        dev: *mut ksys::ib_device,
        port: u32,
    ) -> ksys::rdma_link_layer {
        // SAFETY: As in `query_device`.
        let dev = unsafe { Device::<T>::from_raw(dev) };
        T::link_layer(dev, port) as ksys::rdma_link_layer
    }

    /// # Safety
    ///
    /// As for `query_device`; `pkey` is writable.
    pub(super) unsafe extern "C" fn query_pkey(
        dev: *mut ksys::ib_device,
        port: u32,
        index: u16,
        pkey: *mut u16,
    ) -> c_int {
        // SAFETY: As in `query_device`.
        let dev = unsafe { Device::<T>::from_raw(dev) };
        from_result(|| {
            let k = T::query_pkey(dev, port, index)?;
            // SAFETY: The core passes a writable `u16`.
            unsafe { *pkey = k };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// The GID cache calls it with an entry of a device registered by `Registration<T>`.
    pub(super) unsafe extern "C" fn add_gid(
        attr: *const ksys::ib_gid_attr,
        _ctx: *mut *mut c_void,
    ) -> c_int {
        // SAFETY: The caller's guarantee.
        unsafe { Self::gid(attr, T::add_gid) }
    }

    /// # Safety
    ///
    /// As for `add_gid`.
    pub(super) unsafe extern "C" fn del_gid(
        attr: *const ksys::ib_gid_attr,
        _ctx: *mut *mut c_void,
    ) -> c_int {
        // SAFETY: The caller's guarantee.
        unsafe { Self::gid(attr, T::del_gid) }
    }

    /// `add_gid` and `del_gid`: `op` on the entry's device and the entry.
    ///
    /// # Safety
    ///
    /// As for `add_gid`.
    unsafe fn gid(attr: *const ksys::ib_gid_attr, op: fn(&Device<T>, &GidAttr) -> Result) -> c_int {
        // SAFETY: The entry is valid for the op, its device is ours and live.
        let (dev, attr) = unsafe {
            (
                Device::<T>::from_raw((*attr).device),
                GidAttr::from_raw(attr),
            )
        };
        from_result(|| op(dev, attr).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `query_device`.
    pub(super) unsafe extern "C" fn alloc_hw_port_stats(
        _dev: *mut ksys::ib_device,
        _port: u32,
    ) -> *mut ksys::rdma_hw_stats {
        let table = T::PORT_COUNTERS;
        let Ok(n) = c_int::try_from(table.len()) else {
            return core::ptr::null_mut();
        };
        // SAFETY: `table` is `'static` (the core keeps pointing to it while the stats
        // exist) and holds `n` descriptors.
        unsafe {
            ksys::rdma_alloc_hw_stats_struct(
                StatDesc::as_raw(table),
                n,
                kernel::time::msecs_to_jiffies(LIFESPAN_MS),
            )
        }
    }

    /// # Safety
    ///
    /// As for `query_device`; `stats` is one `alloc_hw_port_stats` returned, its lock held
    /// by the core.
    pub(super) unsafe extern "C" fn get_hw_stats(
        dev: *mut ksys::ib_device,
        stats: *mut ksys::rdma_hw_stats,
        port: u32,
        _index: c_int,
    ) -> c_int {
        // SAFETY: As in `query_device`.
        let dev = unsafe { Device::<T>::from_raw(dev) };
        // SAFETY: The core passes the stats of this port under their lock: nothing else
        // touches them during the call.
        let stats = unsafe { &mut *stats };
        let n = usize::try_from(stats.num_counters)
            .unwrap_or(0)
            .min(T::PORT_COUNTERS.len());
        // SAFETY: `value` has `num_counters` elements (allocated by
        // `rdma_alloc_hw_stats_struct()` for that many), `n` is no more.
        let values = unsafe { stats.value.as_mut_slice(n) };
        // All counters are read at once, whichever `index` the core asked for.
        from_result(|| {
            T::port_counters(dev, port, values)?;
            Ok(n as c_int)
        })
    }
}
