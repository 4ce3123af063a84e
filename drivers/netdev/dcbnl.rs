// SPDX-License-Identifier: GPL-2.0
//! Data center bridging (`struct dcbnl_rtnl_ops`, `include/net/dcbnl.h`): the IEEE 802.1Qaz
//! operations that iproute2's `dcb` tool uses — ETS (`dcb ets`), per traffic class maximum
//! rates (`dcb maxrate`), PFC (`dcb pfc`), the APP table (`dcb app`), port buffers
//! (`dcb buffer`) — and the DCBX mode (`dcb dcbx`), each with a safe argument type instead of
//! the C struct; and the core's APP table of a device ([`Device::dcb_ieee_setapp`] and the
//! other `dcb_ieee_*` methods).
//!
//! Every operation runs in process context with `rtnl_lock` held (it may sleep), except
//! [`DcbnlOps::getdcbx`], which may run under a spinlock: see there.
//!
//! The operations need `CONFIG_DCB`. Without it, the types exist (the driver compiles) but
//! [`crate::Registration::set_dcbnl_ops`] and the APP table methods fail with `EOPNOTSUPP`.

use core::marker::PhantomData;

use kernel::{
    build_error,
    error::{
        from_result,
        VTABLE_DEFAULT_ERROR, //
    },
    prelude::*,
    types::ForeignOwnable,
};

use ksys::op;

use crate::{
    registration::args,
    Device, //
};

/// The borrowed driver data the callbacks receive.
pub type DataRef<'a, T> = <<T as DcbnlOps>::Data as ForeignOwnable>::Borrowed<'a>;

/// `EOPNOTSUPP` (the kernel crate names no constant for it).
pub(crate) fn eopnotsupp() -> Error {
    Error::from_errno(-(ksys::EOPNOTSUPP as i32))
}

/// The number of traffic classes (and of priorities) of the IEEE objects
/// (`IEEE_8021QAZ_MAX_TCS`): the length of their per-TC and per-priority arrays.
pub const MAX_TCS: usize = ksys::IEEE_8021QAZ_MAX_TCS as usize;

/// The number of port buffers of [`Buffer`] (`DCBX_MAX_BUFFERS`).
pub const MAX_BUFFERS: usize = ksys::DCBX_MAX_BUFFERS as usize;

/// The number of DSCP values (the protocol of a [`Selector::Dscp`] APP entry is below it).
pub const DSCP_COUNT: usize = 64;

/// DCBX capability and mode bits (`DCB_CAP_DCBX_*`), as [`DcbnlOps::getdcbx`] returns them and
/// [`DcbnlOps::setdcbx`] receives them.
pub mod dcbx {
    /// `DCB_CAP_DCBX_HOST`: DCBX is negotiated by an LLDP agent on the host (e.g. lldpad),
    /// which configures the device through these operations.
    pub const HOST: u8 = ksys::DCB_CAP_DCBX_HOST as u8;
    /// `DCB_CAP_DCBX_LLD_MANAGED`: DCBX is negotiated by an agent outside the host (the
    /// device's firmware); the host only reads the result.
    pub const LLD_MANAGED: u8 = ksys::DCB_CAP_DCBX_LLD_MANAGED as u8;
    /// `DCB_CAP_DCBX_VER_CEE`: the CEE version of DCBX.
    pub const VER_CEE: u8 = ksys::DCB_CAP_DCBX_VER_CEE as u8;
    /// `DCB_CAP_DCBX_VER_IEEE`: the IEEE version of DCBX.
    pub const VER_IEEE: u8 = ksys::DCB_CAP_DCBX_VER_IEEE as u8;
    /// `DCB_CAP_DCBX_STATIC`: no negotiation, the configuration is static.
    pub const STATIC: u8 = ksys::DCB_CAP_DCBX_STATIC as u8;
}

/// A transmission selection algorithm (`IEEE_8021QAZ_TSA_*`) of a traffic class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tsa {
    /// `IEEE_8021QAZ_TSA_STRICT`: strict priority.
    #[default]
    Strict,
    /// `IEEE_8021QAZ_TSA_CB_SHAPER`: credit-based shaper.
    Cbs,
    /// `IEEE_8021QAZ_TSA_ETS`: enhanced transmission selection (a share of the bandwidth).
    Ets,
    /// `IEEE_8021QAZ_TSA_VENDOR`: vendor specific.
    Vendor,
}

impl Tsa {
    const fn raw(self) -> u8 {
        (match self {
            Self::Strict => ksys::IEEE_8021QAZ_TSA_STRICT,
            Self::Cbs => ksys::IEEE_8021QAZ_TSA_CB_SHAPER,
            Self::Ets => ksys::IEEE_8021QAZ_TSA_ETS,
            Self::Vendor => ksys::IEEE_8021QAZ_TSA_VENDOR,
        }) as u8
    }

    /// The algorithm of `raw`; `EINVAL` for the reserved values (3 to 254).
    fn from_raw(raw: u8) -> Result<Self> {
        [Self::Strict, Self::Cbs, Self::Ets, Self::Vendor]
            .into_iter()
            .find(|t| t.raw() == raw)
            .ok_or(EINVAL)
    }

    fn from_raw_array(raw: &[u8; MAX_TCS]) -> Result<[Self; MAX_TCS]> {
        let mut t = [Self::Strict; MAX_TCS];
        for (t, r) in t.iter_mut().zip(raw) {
            *t = Self::from_raw(*r)?;
        }
        Ok(t)
    }

    fn to_raw_array(t: &[Self; MAX_TCS]) -> [u8; MAX_TCS] {
        t.map(Self::raw)
    }
}

/// The IEEE 802.1Qaz ETS managed object (`struct ieee_ets`): how the priorities map to traffic
/// classes and how the classes share the link. Arrays are indexed by traffic class, but
/// `prio_tc` and `reco_prio_tc`, indexed by priority.
///
/// For [`DcbnlOps::ieee_getets`] it starts zeroed (every class strict, every priority in class
/// 0), as the core's struct does. A set request with a reserved algorithm (neither of [`Tsa`])
/// is refused with `EINVAL` before it reaches the driver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ets {
    /// The willing bit of the ETS configuration TLV.
    pub willing: bool,
    /// The number of traffic classes the device supports.
    pub ets_cap: u8,
    /// Whether the credit-based shaper algorithm is supported.
    pub cbs: bool,
    /// The share of the transmit bandwidth of each [`Tsa::Ets`] class, in percent.
    pub tc_tx_bw: [u8; MAX_TCS],
    /// The share of the receive bandwidth of each class, in percent.
    pub tc_rx_bw: [u8; MAX_TCS],
    /// The algorithm of each class.
    pub tc_tsa: [Tsa; MAX_TCS],
    /// The traffic class of each priority (802.1p).
    pub prio_tc: [u8; MAX_TCS],
    /// The recommended bandwidth of each class (the ETS recommendation TLV of an LLDP agent
    /// in the device).
    pub tc_reco_bw: [u8; MAX_TCS],
    /// The recommended algorithm of each class.
    pub tc_reco_tsa: [Tsa; MAX_TCS],
    /// The recommended traffic class of each priority.
    pub reco_prio_tc: [u8; MAX_TCS],
}

impl Ets {
    fn from_raw(r: &ksys::ieee_ets) -> Result<Self> {
        Ok(Self {
            willing: r.willing != 0,
            ets_cap: r.ets_cap,
            cbs: r.cbs != 0,
            tc_tx_bw: r.tc_tx_bw,
            tc_rx_bw: r.tc_rx_bw,
            tc_tsa: Tsa::from_raw_array(&r.tc_tsa)?,
            prio_tc: r.prio_tc,
            tc_reco_bw: r.tc_reco_bw,
            tc_reco_tsa: Tsa::from_raw_array(&r.tc_reco_tsa)?,
            reco_prio_tc: r.reco_prio_tc,
        })
    }

    fn to_raw(self) -> ksys::ieee_ets {
        ksys::ieee_ets {
            willing: u8::from(self.willing),
            ets_cap: self.ets_cap,
            cbs: u8::from(self.cbs),
            tc_tx_bw: self.tc_tx_bw,
            tc_rx_bw: self.tc_rx_bw,
            tc_tsa: Tsa::to_raw_array(&self.tc_tsa),
            prio_tc: self.prio_tc,
            tc_reco_bw: self.tc_reco_bw,
            tc_reco_tsa: Tsa::to_raw_array(&self.tc_reco_tsa),
            reco_prio_tc: self.reco_prio_tc,
        }
    }
}

/// The maximum transmit rate of each traffic class (`struct ieee_maxrate`), an extension of
/// the ETS object. Zero: not limited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaxRate {
    /// The maximum rate of each class, in kbit/s.
    pub tc_maxrate: [u64; MAX_TCS],
}

/// The IEEE 802.1Qbb PFC managed object (`struct ieee_pfc`): which priorities are paused by
/// priority flow control frames, and the frame counters. Zeroed for [`DcbnlOps::ieee_getpfc`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pfc {
    /// How many traffic classes may have PFC enabled at once.
    pub pfc_cap: u8,
    /// The priorities with PFC enabled, one bit each (bit `p`: priority `p`).
    pub pfc_en: u8,
    /// MACsec bypass capability.
    pub mbc: bool,
    /// The allowance for the round-trip propagation delay of the link, in bits.
    pub delay: u16,
    /// The PFC frames sent, per priority (get only; ignore them in a set request).
    pub requests: [u64; MAX_TCS],
    /// The PFC frames received, per priority (get only).
    pub indications: [u64; MAX_TCS],
}

impl Pfc {
    fn from_raw(r: &ksys::ieee_pfc) -> Self {
        Self {
            pfc_cap: r.pfc_cap,
            pfc_en: r.pfc_en,
            mbc: r.mbc != 0,
            delay: r.delay,
            requests: r.requests,
            indications: r.indications,
        }
    }

    fn to_raw(self) -> ksys::ieee_pfc {
        ksys::ieee_pfc {
            pfc_cap: self.pfc_cap,
            pfc_en: self.pfc_en,
            mbc: u8::from(self.mbc),
            delay: self.delay,
            requests: self.requests,
            indications: self.indications,
        }
    }
}

/// What the protocol of an [`App`] entry is (`IEEE_8021QAZ_APP_SEL_*`, `DCB_APP_SEL_PCP`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selector {
    /// `IEEE_8021QAZ_APP_SEL_ETHERTYPE`: an Ethertype (0: the default priority).
    Ethertype,
    /// `IEEE_8021QAZ_APP_SEL_STREAM`: a TCP or SCTP port.
    Stream,
    /// `IEEE_8021QAZ_APP_SEL_DGRAM`: a UDP or DCCP port.
    Dgram,
    /// `IEEE_8021QAZ_APP_SEL_ANY`: a TCP, SCTP, UDP or DCCP port.
    Any,
    /// `IEEE_8021QAZ_APP_SEL_DSCP`: a DSCP value (0 to 63).
    Dscp,
    /// `DCB_APP_SEL_PCP` (not in the standard): a PCP and DEI value, `(dei << 3) | pcp`.
    Pcp,
}

impl Selector {
    const ALL: [Self; 6] = [
        Self::Ethertype,
        Self::Stream,
        Self::Dgram,
        Self::Any,
        Self::Dscp,
        Self::Pcp,
    ];

    /// The C value.
    pub const fn raw(self) -> u8 {
        (match self {
            Self::Ethertype => ksys::IEEE_8021QAZ_APP_SEL_ETHERTYPE,
            Self::Stream => ksys::IEEE_8021QAZ_APP_SEL_STREAM,
            Self::Dgram => ksys::IEEE_8021QAZ_APP_SEL_DGRAM,
            Self::Any => ksys::IEEE_8021QAZ_APP_SEL_ANY,
            Self::Dscp => ksys::IEEE_8021QAZ_APP_SEL_DSCP,
            Self::Pcp => ksys::DCB_APP_SEL_PCP,
        }) as u8
    }

    /// The selector of a C value, if it is one.
    pub fn from_raw(raw: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.raw() == raw)
    }
}

/// An entry of the APP table (`struct dcb_app`): traffic matching `selector` and `protocol`
/// gets the 802.1p `priority`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct App {
    /// What `protocol` is.
    pub selector: Selector,
    /// The priority (0 to 7).
    pub priority: u8,
    /// The Ethertype, port, DSCP or PCP value (see [`Selector`]).
    pub protocol: u16,
}

impl App {
    /// The entry giving priority `priority` to DSCP value `dscp`.
    pub fn dscp(dscp: u8, priority: u8) -> Self {
        Self {
            selector: Selector::Dscp,
            priority,
            protocol: dscp.into(),
        }
    }

    fn from_raw(r: &ksys::dcb_app) -> Result<Self> {
        Ok(Self {
            selector: Selector::from_raw(r.selector).ok_or(EINVAL)?,
            priority: r.priority,
            protocol: r.protocol,
        })
    }

    #[cfg(CONFIG_DCB)]
    fn to_raw(self) -> ksys::dcb_app {
        ksys::dcb_app {
            selector: self.selector.raw(),
            priority: self.priority,
            protocol: self.protocol,
        }
    }
}

/// The port buffers (`struct dcbnl_buffer`): which receive buffer each priority uses and the
/// buffers' sizes. Zeroed for [`DcbnlOps::dcbnl_getbuffer`]; in a set request every
/// `prio2buffer` entry is below [`MAX_BUFFERS`] (checked by the core).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Buffer {
    /// The buffer of each priority.
    pub prio2buffer: [u8; MAX_TCS],
    /// The size of each buffer, in bytes.
    pub buffer_size: [u32; MAX_BUFFERS],
    /// The total buffer size of the port, in bytes (get only).
    pub total_size: u32,
}

impl Buffer {
    fn from_raw(r: &ksys::dcbnl_buffer) -> Self {
        Self {
            prio2buffer: r.prio2buffer,
            buffer_size: r.buffer_size,
            total_size: r.total_size,
        }
    }

    fn to_raw(self) -> ksys::dcbnl_buffer {
        ksys::dcbnl_buffer {
            prio2buffer: self.prio2buffer,
            buffer_size: self.buffer_size,
            total_size: self.total_size,
        }
    }
}

/// A driver's DCB operations (`struct dcbnl_rtnl_ops`, the IEEE ones); set with
/// [`crate::Registration::set_dcbnl_ops`]. Only the implemented ones are set in the C table;
/// the core answers `EOPNOTSUPP` for (or leaves out of a dump) the others, but for the APP
/// table (see [`DcbnlOps::ieee_setapp`]).
///
/// All run in process context with `rtnl_lock` held and may sleep, but
/// [`DcbnlOps::getdcbx`]. A set request carrying several objects (`dcb ets`, `dcb pfc`...
/// in one message) calls the setters in the order ETS, maxrate, PFC, buffer, APP and stops at
/// the first error, without undoing the earlier ones.
#[vtable]
pub trait DcbnlOps: Sized + 'static {
    /// The driver data: the [`crate::DeviceOps::Data`] of the device's registration.
    type Data: ForeignOwnable + Send + Sync;

    /// `ieee_getets` (`dcb ets show`): fills `ets` (zeroed). An error leaves ETS out of the
    /// reply.
    fn ieee_getets(_dev: &Device, _data: DataRef<'_, Self>, _ets: &mut Ets) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ieee_setets` (`dcb ets set`): applies `ets`. Nothing is validated but the algorithms
    /// (the bandwidth shares need not add up to 100, classes need not be below `ets_cap`).
    fn ieee_setets(_dev: &Device, _data: DataRef<'_, Self>, _ets: &Ets) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ieee_getmaxrate` (`dcb maxrate show`): fills `rate` (zeroed).
    fn ieee_getmaxrate(_dev: &Device, _data: DataRef<'_, Self>, _rate: &mut MaxRate) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ieee_setmaxrate` (`dcb maxrate set`): applies `rate`.
    fn ieee_setmaxrate(_dev: &Device, _data: DataRef<'_, Self>, _rate: &MaxRate) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ieee_getpfc` (`dcb pfc show`): fills `pfc` (zeroed), counters included.
    fn ieee_getpfc(_dev: &Device, _data: DataRef<'_, Self>, _pfc: &mut Pfc) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ieee_setpfc` (`dcb pfc set`): applies `pfc_en` (and `delay`, `mbc` if the device
    /// has them).
    fn ieee_setpfc(_dev: &Device, _data: DataRef<'_, Self>, _pfc: &Pfc) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ieee_setapp` (`dcb app add`): adds `app`, once per entry of the request (the core
    /// checked that the selector fits the attribute: an IEEE selector or [`Selector::Pcp`]).
    ///
    /// Not implemented: the core only records the entry in its APP table (which `dcb app
    /// show` reads; [`Device::dcb_ieee_getapp_mask`] and the maps read it too). Implemented:
    /// the core records nothing; the driver programs the device and then keeps the table in
    /// sync with [`Device::dcb_ieee_setapp`] (and [`Device::dcb_ieee_delapp`] for the entry
    /// the new one replaces), as mlx5e does for DSCP.
    fn ieee_setapp(_dev: &Device, _data: DataRef<'_, Self>, _app: &App) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ieee_delapp` (`dcb app del`): removes `app`. As for [`DcbnlOps::ieee_setapp`]: if
    /// implemented, the driver removes the entry from the core's table with
    /// [`Device::dcb_ieee_delapp`]; `ENOENT` if there is no such entry.
    fn ieee_delapp(_dev: &Device, _data: DataRef<'_, Self>, _app: &App) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `getdcbx` (`dcb dcbx show`): the DCBX capabilities and mode, [`dcbx`] bits (e.g.
    /// `dcbx::HOST | dcbx::VER_IEEE`).
    ///
    /// Unlike the other operations it must not sleep nor take a lock that a driver's
    /// [`DcbnlOps::ieee_setapp`] or [`DcbnlOps::ieee_delapp`] holds: the core calls it under
    /// its APP table spinlock (BH disabled) when it builds a reply, and from
    /// [`Device::dcb_ieee_setapp`]/[`Device::dcb_ieee_delapp`], wherever the driver calls
    /// those. Return a value the driver keeps (an atomic), as mlx5e does.
    fn getdcbx(_dev: &Device, _data: DataRef<'_, Self>) -> u8 {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `setdcbx` (`dcb dcbx set`): switches to `mode` ([`dcbx`] bits; 0 asks mlx5e for the
    /// firmware's own agent). Returns 0 if the mode was accepted, nonzero (1, by convention)
    /// if it was refused: the C API's convention, not an errno; the core sends the value back
    /// to user space, which reports nonzero as a failure.
    fn setdcbx(_dev: &Device, _data: DataRef<'_, Self>, _mode: u8) -> u8 {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `dcbnl_getbuffer` (`dcb buffer show`): fills `buf` (zeroed).
    fn dcbnl_getbuffer(_dev: &Device, _data: DataRef<'_, Self>, _buf: &mut Buffer) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `dcbnl_setbuffer` (`dcb buffer set`): applies `buf`.
    fn dcbnl_setbuffer(_dev: &Device, _data: DataRef<'_, Self>, _buf: &Buffer) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// The core's APP table of a device (`net/dcb/dcbnl.c`), keyed by its ifindex: what
/// `dcb app show` lists and what other subsystems (RDMA, the stack's priority mapping) read.
///
/// These take a spinlock with BH disabled (not from hard IRQ context) and do not need
/// `rtnl_lock`. They work only on a registered device with DCB operations
/// ([`crate::Registration::set_dcbnl_ops`]); else `EINVAL` (not registered: the table is keyed
/// by the ifindex, which the device gets when it is registered, and the core empties the
/// device's entries when it is unregistered) or `EOPNOTSUPP` (no DCB operations, or no
/// `CONFIG_DCB`); the getters find nothing.
impl Device {
    /// Whether the table functions may be called: the device is registered and has DCB
    /// operations (`dcb_ieee_setapp()` calls `dcbnl_ops->getdcbx` without checking).
    #[cfg(CONFIG_DCB)]
    fn dcb_check(&self) -> Result {
        // SAFETY: The `net_device` is allocated (type invariant); `dcbnl_ops` is set before
        // registration only.
        let ops = unsafe { core::ptr::read_volatile(&raw const (*self.as_raw()).dcbnl_ops) };
        if ops.is_null() {
            return Err(eopnotsupp());
        }
        // SAFETY: As above; `ifindex` is set when the device is registered (`READ_ONCE()`).
        let ifindex = unsafe { core::ptr::read_volatile(&raw const (*self.as_raw()).ifindex) };
        if ifindex <= 0 {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Adds `app` to the core's APP table (`dcb_ieee_setapp()`), for a driver implementing
    /// [`DcbnlOps::ieee_setapp`]; `EEXIST` if the same entry (selector, protocol and
    /// priority) is there. Entries differing in priority only are separate entries. Calls
    /// [`DcbnlOps::getdcbx`].
    pub fn dcb_ieee_setapp(&self, app: &App) -> Result {
        #[cfg(CONFIG_DCB)]
        {
            self.dcb_check()?;
            let mut raw = app.to_raw();
            // SAFETY: A registered device with DCB operations (checked); `raw` is read for
            // the call. The function calls the table's `getdcbx`, which borrows the driver
            // data: alive while the device is registered (a `DeviceRef` is not used past its
            // registration, the type's documented rule).
            kernel::error::to_result(unsafe { ksys::dcb_ieee_setapp(self.as_raw(), &mut raw) })
        }
        #[cfg(not(CONFIG_DCB))]
        {
            let _ = app;
            Err(eopnotsupp())
        }
    }

    /// Removes `app` (selector, protocol and priority) from the core's APP table
    /// (`dcb_ieee_delapp()`); `ENOENT` if it is not there. Calls [`DcbnlOps::getdcbx`].
    pub fn dcb_ieee_delapp(&self, app: &App) -> Result {
        #[cfg(CONFIG_DCB)]
        {
            self.dcb_check()?;
            let mut raw = app.to_raw();
            // SAFETY: As in `dcb_ieee_setapp`.
            kernel::error::to_result(unsafe { ksys::dcb_ieee_delapp(self.as_raw(), &mut raw) })
        }
        #[cfg(not(CONFIG_DCB))]
        {
            let _ = app;
            Err(eopnotsupp())
        }
    }

    /// The priority of the first entry matching `app`'s selector and protocol, as a one-bit
    /// mask (`dcb_ieee_getapp_mask()`; `app.priority` is ignored); 0 if there is none.
    pub fn dcb_ieee_getapp_mask(&self, app: &App) -> u8 {
        #[cfg(CONFIG_DCB)]
        {
            if self.dcb_check().is_err() {
                return 0;
            }
            let mut raw = app.to_raw();
            // SAFETY: As in `dcb_ieee_setapp`.
            unsafe { ksys::dcb_ieee_getapp_mask(self.as_raw(), &mut raw) }
        }
        #[cfg(not(CONFIG_DCB))]
        {
            let _ = app;
            0
        }
    }

    /// For each DSCP value, the priorities its entries give it, one bit each
    /// (`dcb_ieee_getapp_dscp_prio_mask_map()`).
    pub fn dcb_ieee_getapp_dscp_prio_mask_map(&self) -> [u8; DSCP_COUNT] {
        #[cfg(CONFIG_DCB)]
        {
            let mut map = ksys::dcb_ieee_app_dscp_map {
                map: [0; DSCP_COUNT],
            };
            if self.dcb_check().is_ok() {
                // SAFETY: As in `dcb_ieee_setapp`; `map` is written for the call.
                unsafe { ksys::dcb_ieee_getapp_dscp_prio_mask_map(self.as_raw(), &mut map) };
            }
            map.map
        }
        #[cfg(not(CONFIG_DCB))]
        {
            [0; DSCP_COUNT]
        }
    }

    /// For each priority, the DSCP values whose entries give it, one bit each (bit `d`: DSCP
    /// `d`; `dcb_ieee_getapp_prio_dscp_mask_map()`).
    pub fn dcb_ieee_getapp_prio_dscp_mask_map(&self) -> [u64; MAX_TCS] {
        #[cfg(CONFIG_DCB)]
        {
            let mut map = ksys::dcb_ieee_app_prio_map { map: [0; MAX_TCS] };
            if self.dcb_check().is_ok() {
                // SAFETY: As in `dcb_ieee_getapp_dscp_prio_mask_map`.
                unsafe { ksys::dcb_ieee_getapp_prio_dscp_mask_map(self.as_raw(), &mut map) };
            }
            map.map
        }
        #[cfg(not(CONFIG_DCB))]
        {
            [0; MAX_TCS]
        }
    }

    /// The priorities of the default entries (Ethertype 0), one bit each
    /// (`dcb_ieee_getapp_default_prio_mask()`).
    pub fn dcb_ieee_getapp_default_prio_mask(&self) -> u8 {
        #[cfg(CONFIG_DCB)]
        {
            if self.dcb_check().is_err() {
                return 0;
            }
            // SAFETY: As in `dcb_ieee_setapp`.
            unsafe { ksys::dcb_ieee_getapp_default_prio_mask(self.as_raw()) }
        }
        #[cfg(not(CONFIG_DCB))]
        {
            0
        }
    }
}

/// The table of `D`, for as long as the module is loaded.
pub(crate) const fn table<D: DcbnlOps>() -> &'static ksys::dcbnl_rtnl_ops {
    &Table::<D>::OPS
}

struct Table<D>(PhantomData<D>);

impl<D: DcbnlOps> Table<D> {
    const OPS: ksys::dcbnl_rtnl_ops = ksys::dcbnl_rtnl_ops {
        ieee_getets: op!(D::HAS_IEEE_GETETS, Self::ieee_getets),
        ieee_setets: op!(D::HAS_IEEE_SETETS, Self::ieee_setets),
        ieee_getmaxrate: op!(D::HAS_IEEE_GETMAXRATE, Self::ieee_getmaxrate),
        ieee_setmaxrate: op!(D::HAS_IEEE_SETMAXRATE, Self::ieee_setmaxrate),
        ieee_getpfc: op!(D::HAS_IEEE_GETPFC, Self::ieee_getpfc),
        ieee_setpfc: op!(D::HAS_IEEE_SETPFC, Self::ieee_setpfc),
        ieee_setapp: op!(D::HAS_IEEE_SETAPP, Self::ieee_setapp),
        ieee_delapp: op!(D::HAS_IEEE_DELAPP, Self::ieee_delapp),
        getdcbx: op!(D::HAS_GETDCBX, Self::getdcbx),
        setdcbx: op!(D::HAS_SETDCBX, Self::setdcbx),
        dcbnl_getbuffer: op!(D::HAS_DCBNL_GETBUFFER, Self::dcbnl_getbuffer),
        dcbnl_setbuffer: op!(D::HAS_DCBNL_SETBUFFER, Self::dcbnl_setbuffer),
        ..pin_init::zeroed()
    };

    /// # Safety
    ///
    /// The DCB core calls it (rtnl held) for a registered device with this table, with a
    /// struct it owns, zeroed, for the call.
    unsafe extern "C" fn ieee_getets(
        dev: *mut ksys::net_device,
        ets: *mut ksys::ieee_ets,
    ) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<D::Data>(dev) };
        from_result(|| {
            let mut e = Ets::default();
            D::ieee_getets(dev, data, &mut e)?;
            // SAFETY: Writable for the call (the function's contract).
            unsafe { ets.write_unaligned(e.to_raw()) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// The DCB core calls it (rtnl held) for a registered device with this table, with the
    /// payload of a netlink attribute of at least the struct's size (its policy), which may
    /// not be aligned for the struct.
    unsafe extern "C" fn ieee_setets(
        dev: *mut ksys::net_device,
        ets: *mut ksys::ieee_ets,
    ) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<D::Data>(dev) };
        // SAFETY: Readable for the call (the function's contract), unaligned.
        let raw = unsafe { ets.read_unaligned() };
        from_result(|| D::ieee_setets(dev, data, &Ets::from_raw(&raw)?).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `ieee_getets`.
    unsafe extern "C" fn ieee_getmaxrate(
        dev: *mut ksys::net_device,
        rate: *mut ksys::ieee_maxrate,
    ) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<D::Data>(dev) };
        from_result(|| {
            let mut r = MaxRate::default();
            D::ieee_getmaxrate(dev, data, &mut r)?;
            // SAFETY: As in `ieee_getets`.
            unsafe {
                rate.write_unaligned(ksys::ieee_maxrate {
                    tc_maxrate: r.tc_maxrate,
                })
            };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for `ieee_setets`.
    unsafe extern "C" fn ieee_setmaxrate(
        dev: *mut ksys::net_device,
        rate: *mut ksys::ieee_maxrate,
    ) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<D::Data>(dev) };
        // SAFETY: As in `ieee_setets`.
        let raw = unsafe { rate.read_unaligned() };
        let r = MaxRate {
            tc_maxrate: raw.tc_maxrate,
        };
        from_result(|| D::ieee_setmaxrate(dev, data, &r).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `ieee_getets`.
    unsafe extern "C" fn ieee_getpfc(
        dev: *mut ksys::net_device,
        pfc: *mut ksys::ieee_pfc,
    ) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<D::Data>(dev) };
        from_result(|| {
            let mut p = Pfc::default();
            D::ieee_getpfc(dev, data, &mut p)?;
            // SAFETY: As in `ieee_getets`.
            unsafe { pfc.write_unaligned(p.to_raw()) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for `ieee_setets`.
    unsafe extern "C" fn ieee_setpfc(
        dev: *mut ksys::net_device,
        pfc: *mut ksys::ieee_pfc,
    ) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<D::Data>(dev) };
        // SAFETY: As in `ieee_setets`.
        let raw = unsafe { pfc.read_unaligned() };
        from_result(|| D::ieee_setpfc(dev, data, &Pfc::from_raw(&raw)).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `ieee_setets` (an APP table entry's payload, checked to be at least a
    /// `struct dcb_app`).
    unsafe extern "C" fn ieee_setapp(dev: *mut ksys::net_device, app: *mut ksys::dcb_app) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<D::Data>(dev) };
        // SAFETY: As in `ieee_setets`.
        let raw = unsafe { app.read_unaligned() };
        from_result(|| D::ieee_setapp(dev, data, &App::from_raw(&raw)?).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `ieee_setapp`.
    unsafe extern "C" fn ieee_delapp(dev: *mut ksys::net_device, app: *mut ksys::dcb_app) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<D::Data>(dev) };
        // SAFETY: As in `ieee_setets`.
        let raw = unsafe { app.read_unaligned() };
        from_result(|| D::ieee_delapp(dev, data, &App::from_raw(&raw)?).map(|()| 0))
    }

    /// # Safety
    ///
    /// The DCB core calls it for a registered device with this table (possibly under its
    /// spinlock), or `dcb_ieee_setapp()`/`dcb_ieee_delapp()` do, for a device of this table
    /// with live data (the `Device` methods check it is registered).
    unsafe extern "C" fn getdcbx(dev: *mut ksys::net_device) -> u8 {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<D::Data>(dev) };
        D::getdcbx(dev, data)
    }

    /// # Safety
    ///
    /// The DCB core calls it (rtnl held) for a registered device with this table.
    unsafe extern "C" fn setdcbx(dev: *mut ksys::net_device, mode: u8) -> u8 {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<D::Data>(dev) };
        D::setdcbx(dev, data, mode)
    }

    /// # Safety
    ///
    /// As for `ieee_getets`.
    unsafe extern "C" fn dcbnl_getbuffer(
        dev: *mut ksys::net_device,
        buf: *mut ksys::dcbnl_buffer,
    ) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<D::Data>(dev) };
        from_result(|| {
            let mut b = Buffer::default();
            D::dcbnl_getbuffer(dev, data, &mut b)?;
            // SAFETY: As in `ieee_getets`.
            unsafe { buf.write_unaligned(b.to_raw()) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for `ieee_setets`.
    unsafe extern "C" fn dcbnl_setbuffer(
        dev: *mut ksys::net_device,
        buf: *mut ksys::dcbnl_buffer,
    ) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<D::Data>(dev) };
        // SAFETY: As in `ieee_setets`.
        let raw = unsafe { buf.read_unaligned() };
        from_result(|| D::dcbnl_setbuffer(dev, data, &Buffer::from_raw(&raw)).map(|()| 0))
    }
}
