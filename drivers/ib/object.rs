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
//! container is what the ops table announces ([`Ucontext::SIZE`], [`Pd::SIZE`], ...).
//!
//! CQs, QPs and SRQs also hold their event sink ([`CqEvents`], [`QpEvents`],
//! [`SrqEvents`]), which the destroy
//! trampoline revokes before dropping the driver's object, so that an event interrupt racing
//! with the destruction never reaches the freed `ib_*` struct.
//!
//! Memory windows ([`Mw`], `size_ib_mw`) too: the alloc trampoline writes the rkey the driver
//! returns into the `ib_mw`. XRC domains ([`Xrcd`]) are containers like the others (`size_ib_xrcd`); an XRC SRQ's
//! number is written into its `ib_srq` by the create trampoline ([`Srq::set_xrc_srq_num`]).
//!
//! MRs, steering rules and WQs are the exception: the driver allocates `ib_mr`, `ib_flow` and
//! `ib_wq` itself, so [`Mr`], [`Flow`] and [`Wq`] are boxes the layer allocates, hands to the
//! core as the C pointer and frees in the destroy op.

use core::ops::Deref;

use kernel::{
    prelude::*,
    sync::Arc,
    types::Opaque, //
};

use crate::{
    device::Device,
    driver::IbDriver,
    events::{
        CqEvents,
        QpEvents,
        SrqEvents, //
    },
};

fn ucontext_device(p: *mut ksys::ib_ucontext) -> *mut ksys::ib_device {
    // SAFETY: Called on live containers only (see `device()`); `device` is set by the core.
    unsafe { (*p).device }
}

fn pd_device(p: *mut ksys::ib_pd) -> *mut ksys::ib_device {
    // SAFETY: As in `ucontext_device`.
    unsafe { (*p).device }
}

fn cq_device(p: *mut ksys::ib_cq) -> *mut ksys::ib_device {
    // SAFETY: As in `ucontext_device`.
    unsafe { ksys::ib_cq_device(p) }
}

fn qp_device(p: *mut ksys::ib_qp) -> *mut ksys::ib_device {
    // SAFETY: As in `ucontext_device`.
    unsafe { ksys::ib_qp_device(p) }
}

fn ah_device(p: *mut ksys::ib_ah) -> *mut ksys::ib_device {
    // SAFETY: As in `ucontext_device`.
    unsafe { ksys::ib_ah_device(p) }
}

fn srq_device(p: *mut ksys::ib_srq) -> *mut ksys::ib_device {
    // SAFETY: As in `ucontext_device`.
    unsafe { ksys::ib_srq_device(p) }
}

fn mw_device(p: *mut ksys::ib_mw) -> *mut ksys::ib_device {
    // SAFETY: As in `ucontext_device`.
    unsafe { ksys::ib_mw_device(p) }
}

fn xrcd_device(p: *mut ksys::ib_xrcd) -> *mut ksys::ib_device {
    // SAFETY: As in `ucontext_device`.
    unsafe { (*p).device }
}

fn rwq_ind_table_device(p: *mut ksys::ib_rwq_ind_table) -> *mut ksys::ib_device {
    // SAFETY: As in `ucontext_device` (the core sets `device` before the create op).
    unsafe { ksys::ib_rwq_ind_table_device(p) }
}

macro_rules! container {
    ($(#[$doc:meta])* $name:ident, $raw:ident, $assoc:ident, $dev:ident $(, $ev:ident)?) => {
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
            $(ev: Arc<$ev>,)?
        }

        impl<T: IbDriver> $name<T> {
            /// The size the core allocates (`ops.size_<raw>`).
            pub(crate) const SIZE: usize = size_of::<Self>();

            /// Writes the driver's object (and the event sink) into the container the core
            /// allocated.
            ///
            /// # Safety
            ///
            /// `raw` must be the core's freshly allocated, not yet initialised container of
            /// [`Self::SIZE`] bytes (passed to the create op).
            pub(crate) unsafe fn init(raw: *mut ksys::$raw, data: T::$assoc $(, ev: Arc<$ev>)?) {
                let this = raw.cast::<Self>();
                // SAFETY: The container spans `SIZE` bytes (the caller's guarantee); the `ib`
                // field is at offset 0 (`repr(C)`, first field), so `raw` is the container.
                unsafe { core::ptr::addr_of_mut!((*this).data).write(data) };
                $(
                    let _: Option<&$ev> = None;
                    // SAFETY: As above.
                    unsafe { core::ptr::addr_of_mut!((*this).ev).write(ev) };
                )?
            }

            /// Drops the driver's object in place (the destroy op), after revoking the event
            /// sink.
            ///
            /// # Safety
            ///
            /// `raw` must be a container initialised by [`Self::init`], whose object is not
            /// used any more and is not dropped again (the core calls destroy once).
            pub(crate) unsafe fn destroy(raw: *mut ksys::$raw) {
                let this = raw.cast::<Self>();
                $(
                    let _: Option<&$ev> = None;
                    // SAFETY: Initialised (the caller's guarantee).
                    unsafe { (*this).ev.revoke() };
                )?
                // SAFETY: The caller's guarantee: initialised, dropped once.
                unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*this).data)) };
                $(
                    let _: Option<&$ev> = None;
                    // SAFETY: As above.
                    unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*this).ev)) };
                )?
            }

            /// # Safety
            ///
            /// `raw` must be a container initialised by [`Self::init`] and not destroyed
            /// during `'a`.
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
                unsafe { Device::from_raw($dev(self.ib.get())) }
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
    Ucontext,
    ucontext_device
);

container!(
    /// A protection domain (`struct ib_pd`).
    Pd,
    ib_pd,
    Pd,
    pd_device
);

container!(
    /// A completion queue (`struct ib_cq`), with its event sink.
    Cq,
    ib_cq,
    Cq,
    cq_device,
    CqEvents
);

container!(
    /// A queue pair (`struct ib_qp`), with its event sink.
    Qp,
    ib_qp,
    Qp,
    qp_device,
    QpEvents
);

container!(
    /// An address handle (`struct ib_ah`).
    Ah,
    ib_ah,
    Ah,
    ah_device
);

container!(
    /// A shared receive queue (`struct ib_srq`), with its event sink.
    Srq,
    ib_srq,
    Srq,
    srq_device,
    SrqEvents
);

container!(
    /// A memory window (`struct ib_mw`): a range of an MR that the process binds with its
    /// own remote rights by work requests (libmlx5's UMR WQEs), without the kernel.
    Mw,
    ib_mw,
    Mw,
    mw_device
);

container!(
    /// An XRC domain (`struct ib_xrcd`): the XRC SRQs and target QPs that share receive
    /// resources.
    Xrcd,
    ib_xrcd,
    Xrcd,
    xrcd_device
);

container!(
    /// An indirection table of receive WQs (`struct ib_rwq_ind_table`): an RSS QP hashes
    /// each frame to one of its WQs.
    RwqIndTable,
    ib_rwq_ind_table,
    RwqIndTable,
    rwq_ind_table_device
);

impl<T: IbDriver> RwqIndTable<T> {
    /// The device of a table the core allocated for the create op, before the driver's
    /// object is written.
    ///
    /// # Safety
    ///
    /// `raw` must be the core's container passed to `create_rwq_ind_table`, during `'a`.
    pub(crate) unsafe fn raw_device<'a>(raw: *mut ksys::ib_rwq_ind_table) -> &'a Device<T> {
        // SAFETY: The core set `device` before the op; the device outlives its objects.
        unsafe { Device::from_raw(rwq_ind_table_device(raw)) }
    }
}

impl<T: IbDriver> Srq<T> {
    /// Sets the SRQ number the core reports for an XRC SRQ (`ext.xrc.srq_num`, what a
    /// sender's XRC segment names), before the SRQ is handed to the core.
    ///
    /// # Safety
    ///
    /// `raw` must be the container of an XRC SRQ (`srq_type` `IB_SRQT_XRC`) in its create op.
    pub(crate) unsafe fn set_xrc_srq_num(raw: *mut ksys::ib_srq, srqn: u32) {
        // SAFETY: The caller's guarantee: the `xrc` member of `ext`'s union is the one in
        // use for an XRC SRQ; the core does not read it before the create op returns.
        unsafe { (*raw).ext.__bindgen_anon_1.xrc.as_mut().srq_num = srqn };
    }

    /// The SRQ's PD, as the driver's object.
    pub fn pd(&self) -> &Pd<T> {
        // SAFETY: The core sets `pd` before the create op and holds a reference on the PD
        // while the SRQ exists.
        unsafe { Pd::from_raw(ksys::ib_srq_pd(self.ib.get())) }
    }
}

impl<T: IbDriver> Qp<T> {
    /// The QP's PD, as the driver's object; `None` for an XRC target QP (it has an XRC
    /// domain instead, and the core clears `pd` after creating it).
    pub fn pd(&self) -> Option<&Pd<T>> {
        // SAFETY: A live QP; its `pd` is set by the core before the create op (NULL for an
        // XRC target QP) and does not change while the QP exists.
        let p = unsafe { ksys::ib_qp_pd(self.ib.get()) };
        // SAFETY: The core holds a reference on the PD while the QP exists.
        (!p.is_null()).then(|| unsafe { Pd::from_raw(p) })
    }

    /// The QP number (set from the create op's answer).
    pub fn qpn(&self) -> u32 {
        // SAFETY: A live QP.
        unsafe { ksys::ib_qp_num(self.ib.get()) }
    }

    /// The QP's type.
    pub fn qp_type(&self) -> crate::QpType {
        // SAFETY: A live QP; its type is set by the core before the create op.
        crate::QpType::from_raw(unsafe { ksys::ib_qp_type(self.ib.get()) })
    }

    /// Whether its send requests carry a UD destination (UD and GSI QPs).
    pub fn is_datagram(&self) -> bool {
        matches!(self.qp_type(), crate::QpType::Ud | crate::QpType::Gsi)
    }

    /// Whether a process created it (through uverbs: it has a `uobject`), not a kernel user.
    pub fn is_user(&self) -> bool {
        // SAFETY: A live QP; the core sets `uobject` before the create op and keeps it.
        unsafe { ksys::ib_qp_is_user(self.ib.get()) }
    }
}

/// An object the layer allocates for the driver (ib_core's model for MRs, steering rules and
/// WQs): `#[repr(C)]` with the zeroed C struct first (so the core's pointer is the box's) and
/// the driver's object second; `boxed` hands the C struct to the core, `free` drops the box
/// (the destroy op), `from_raw` borrows it.
macro_rules! boxed {
    ($(#[$doc:meta])* $name:ident, $raw:ident, $assoc:ident) => {
        $(#[$doc])*
        #[repr(C)]
        pub struct $name<T: IbDriver> {
            ib: Opaque<ksys::$raw>,
            data: T::$assoc,
        }

        impl<T: IbDriver> $name<T> {
            /// Boxes the driver's object and returns the (zeroed) C struct for the core.
            pub(crate) fn boxed(data: T::$assoc) -> Result<*mut ksys::$raw> {
                let b = KBox::new(
                    Self {
                        ib: Opaque::zeroed(),
                        data,
                    },
                    GFP_KERNEL,
                )?;
                // `ib` is at offset 0 (`repr(C)`, first field).
                Ok(KBox::into_raw(b).cast())
            }

            /// Frees an object made by [`Self::boxed`] (dropping the driver's object).
            ///
            /// # Safety
            ///
            /// `raw` must come from [`Self::boxed`] and not be used after (the destroy op).
            pub(crate) unsafe fn free(raw: *mut ksys::$raw) {
                // SAFETY: The caller's guarantee; `ib` at offset 0 makes `raw` the box's
                // pointer.
                drop(unsafe { KBox::from_raw(raw.cast::<Self>()) });
            }

            /// The object of a live C struct made by [`Self::boxed`].
            ///
            /// # Safety
            ///
            /// `raw` must come from [`Self::boxed`] of this driver and stay live for `'a`.
            #[allow(dead_code)]
            pub(crate) unsafe fn from_raw<'a>(raw: *mut ksys::$raw) -> &'a Self {
                // SAFETY: The caller's guarantee; `ib` is at offset 0.
                unsafe { &*raw.cast::<Self>() }
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

boxed!(
    /// A memory region: the `ib_mr` (allocated by the layer, zeroed, since the driver owns MR
    /// memory in ib_core's model) and the driver's object.
    Mr,
    ib_mr,
    Mr
);

boxed!(
    /// A steering rule of a process (`ibv_create_flow`): the `ib_flow` (allocated by the
    /// layer, zeroed; the core fills it in) and the driver's object.
    Flow,
    ib_flow,
    Flow
);

boxed!(
    /// A receive WQ of a process (`ibv_create_wq`): the `ib_wq` (allocated by the layer,
    /// zeroed; the core fills in the rest after the create op, the layer sets its number) and
    /// the driver's object.
    Wq,
    ib_wq,
    Wq
);

impl<T: IbDriver> Mr<T> {
    /// Boxes the driver's MR with its keys and hands the `ib_mr` to the core.
    pub(crate) fn into_raw(data: T::Mr, lkey: u32, rkey: u32) -> Result<*mut ksys::ib_mr> {
        let ib = Self::boxed(data)?;
        // SAFETY: A valid, zeroed `ib_mr` the core does not use yet.
        unsafe { ksys::ib_mr_set_keys(ib, lkey, rkey) };
        Ok(ib)
    }

    /// The I/O virtual address of the registration (`map_mr_sg` set it).
    pub fn iova(&self) -> u64 {
        // SAFETY: A live `ib_mr`.
        unsafe { ksys::ib_mr_iova(self.ib.get()) }
    }

    /// The length of the registration (`map_mr_sg` set it).
    pub fn length(&self) -> u64 {
        // SAFETY: A live `ib_mr`.
        unsafe { ksys::ib_mr_length(self.ib.get()) }
    }

    /// The page size the user maps with (`ib_map_mr_sg`'s argument).
    pub fn page_size(&self) -> u32 {
        // SAFETY: A live `ib_mr`.
        unsafe { ksys::ib_mr_page_size(self.ib.get()) }
    }
}

impl<T: IbDriver> Wq<T> {
    /// Boxes the driver's WQ with its number and hands the `ib_wq` to the core.
    pub(crate) fn into_raw(data: T::Wq, wqn: u32) -> Result<*mut ksys::ib_wq> {
        let p = Self::boxed(data)?;
        // SAFETY: A valid, zeroed `ib_wq` the core does not use yet.
        unsafe { ksys::ib_wq_set_num(p, wqn) };
        Ok(p)
    }
}

impl<T: IbDriver> Pd<T> {
    /// The lkey kernel users' data segments carry in this PD (the core's DMA MR, set after
    /// `alloc_pd`).
    pub fn local_dma_lkey(&self) -> u32 {
        // SAFETY: A live PD; the core writes the field once, before the PD is used.
        unsafe { (*self.ib.get()).local_dma_lkey }
    }
}
