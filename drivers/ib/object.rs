// SPDX-License-Identifier: GPL-2.0
//! The containers ib_core allocates for a driver's objects (`INIT_RDMA_OBJ_SIZE`): the core
//! kzallocs `ops.size_ib_<kind>` bytes, initialises the `ib_<kind>` struct at offset 0 and
//! hands it to the create op; the driver's object lives behind it. After the destroy op (or
//! a failed create) the core kfrees the memory.
//!
//! Each container here is `#[repr(C)]` with the `ib_*` struct first (offset 0, so the core's
//! pointer is the container's) and the driver's object second. The create trampoline writes
//! the object in place when the driver's create op succeeds (on failure nothing is written
//! and nothing needs dropping); the destroy trampoline drops it in place. `size_of` the
//! container is what the ops table announces ([`Ucontext::SIZE`], [`Pd::SIZE`]).

use core::ops::Deref;

use kernel::types::Opaque;

use crate::{
    device::Device,
    ops::IbDriver, //
};

macro_rules! container {
    ($(#[$doc:meta])* $name:ident, $raw:ident, $assoc:ident) => {
        $(#[$doc])*
        ///
        /// # Invariants
        ///
        /// A `&` reference exists only to a container whose object was written by the create
        /// trampoline and not yet dropped by the destroy trampoline.
        #[repr(C)]
        pub struct $name<T: IbDriver> {
            ib: Opaque<ksys::$raw>,
            data: T::$assoc,
        }

        impl<T: IbDriver> $name<T> {
            /// The size the core allocates (`ops.size_<raw>`).
            pub(crate) const SIZE: usize = size_of::<Self>();

            /// Writes the driver's object into the container the core allocated.
            ///
            /// # Safety
            ///
            /// `raw` must be the core's freshly allocated, not yet initialised container of
            /// [`Self::SIZE`] bytes (passed to the create op).
            pub(crate) unsafe fn init(raw: *mut ksys::$raw, data: T::$assoc) {
                let this = raw.cast::<Self>();
                // SAFETY: The container spans `SIZE` bytes (the caller's guarantee); the `ib`
                // field is at offset 0 (`repr(C)`, first field), so `raw` is the container.
                unsafe { core::ptr::addr_of_mut!((*this).data).write(data) };
            }

            /// Drops the driver's object in place (the destroy op).
            ///
            /// # Safety
            ///
            /// `raw` must be a container initialised by [`Self::init`], whose object is not
            /// used any more and is not dropped again (the core calls destroy once).
            pub(crate) unsafe fn destroy(raw: *mut ksys::$raw) {
                let this = raw.cast::<Self>();
                // SAFETY: The caller's guarantee: initialised, dropped once.
                unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*this).data)) };
            }

            /// # Safety
            ///
            /// `raw` must be a container initialised by [`Self::init`] and not destroyed
            /// during `'a`.
            // Not every kind's ops need it yet (a PD's ops only create and destroy).
            #[allow(dead_code)]
            pub(crate) unsafe fn from_raw<'a>(raw: *mut ksys::$raw) -> &'a Self {
                // SAFETY: The caller's guarantee; the container starts at `raw`.
                unsafe { &*raw.cast::<Self>() }
            }

            /// The C object.
            #[allow(dead_code)]
            pub(crate) fn as_raw(&self) -> *mut ksys::$raw {
                self.ib.get()
            }

            /// The device the object belongs to.
            pub fn device(&self) -> &Device<T> {
                // SAFETY: The core sets `device` before the create op; the device outlives
                // its objects (unregistration destroys them first).
                unsafe { Device::from_raw((*self.ib.get()).device) }
            }
        }

        impl<T: IbDriver> Deref for $name<T> {
            type Target = T::$assoc;

            fn deref(&self) -> &T::$assoc {
                &self.data
            }
        }
    };
}

container!(
    /// A user context (`struct ib_ucontext`): what one opened uverbs file owns on the device.
    Ucontext,
    ib_ucontext,
    Ucontext
);

container!(
    /// A protection domain (`struct ib_pd`).
    Pd,
    ib_pd,
    Pd
);
