// SPDX-License-Identifier: GPL-2.0
//! ethtool operations (`struct ethtool_ops`, `include/linux/ethtool.h`): driver information,
//! link settings, rings, channels, RSS, statistics and pause frames, each with a safe
//! argument type instead of the C struct.
//!
//! Every callback runs in process context with `rtnl_lock` held (it may sleep).

use core::{
    marker::PhantomData,
    slice, //
};

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

mod rss;
mod rxnfc;

pub use rss::{
    rxh,
    FlowType,
    Rxfh,
    RSS_HASH_NO_CHANGE,
    RSS_HASH_TOP, //
};
pub use rxnfc::{
    flow,
    Ether,
    FlowExt,
    FlowSpec,
    Ip6,
    RxfhContext,
    RxfhRequest,
    TcpIp4,
    UsrIp4,
    RX_CLS_FLOW_DISC, //
};

use crate::{
    registration::{
        args,
        data_of, //
    },
    tstamp::TsInfo,
    Device, //
};

/// The borrowed driver data the callbacks receive.
pub type DataRef<'a, T> = <<T as EthtoolOps>::Data as ForeignOwnable>::Borrowed<'a>;

/// Copies `s` into a fixed C string field, truncating, always NUL-terminated.
fn copy_str(dst: &mut [c_char], s: &CStr) {
    let src = s.to_bytes();
    let n = src.len().min(dst.len().saturating_sub(1));
    for (d, b) in dst.iter_mut().zip(src[..n].iter()) {
        *d = *b as c_char;
    }
    if let Some(d) = dst.get_mut(n) {
        *d = 0;
    }
}

/// The driver information `ethtool -i` shows (`struct ethtool_drvinfo`).
pub struct DrvInfo<'a>(&'a mut kernel::bindings::ethtool_drvinfo);

impl DrvInfo<'_> {
    /// The driver's name.
    pub fn set_driver(&mut self, s: &CStr) {
        copy_str(&mut self.0.driver, s);
    }

    /// The driver's version.
    pub fn set_version(&mut self, s: &CStr) {
        copy_str(&mut self.0.version, s);
    }

    /// The firmware version.
    pub fn set_fw_version(&mut self, s: &CStr) {
        copy_str(&mut self.0.fw_version, s);
    }

    /// The bus address (e.g. the PCI device name).
    pub fn set_bus_info(&mut self, s: &CStr) {
        copy_str(&mut self.0.bus_info, s);
    }
}

/// Duplex (`DUPLEX_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Duplex {
    /// `DUPLEX_HALF`.
    Half,
    /// `DUPLEX_FULL`.
    Full,
    /// `DUPLEX_UNKNOWN` (link down).
    Unknown,
}

/// The connector (`PORT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Port {
    /// `PORT_TP`: twisted pair.
    Tp,
    /// `PORT_FIBRE`.
    Fibre,
    /// `PORT_DA`: direct attach copper.
    Da,
    /// `PORT_NONE`.
    None,
    /// `PORT_OTHER`.
    Other,
}

/// Link settings (`struct ethtool_link_ksettings`), as `ethtool DEV` shows them; zeroed by
/// the core before `get_link_ksettings`.
pub struct LinkKsettings<'a>(&'a mut kernel::bindings::ethtool_link_ksettings);

impl LinkKsettings<'_> {
    /// The speed in Mb/s (`SPEED_UNKNOWN`: `u32::MAX`).
    pub fn set_speed(&mut self, mbps: u32) {
        self.0.base.speed = mbps;
    }

    /// The duplex.
    pub fn set_duplex(&mut self, d: Duplex) {
        self.0.base.duplex = match d {
            Duplex::Half => kernel::bindings::DUPLEX_HALF,
            Duplex::Full => kernel::bindings::DUPLEX_FULL,
            Duplex::Unknown => kernel::bindings::DUPLEX_UNKNOWN,
        } as u8;
    }

    /// The connector.
    pub fn set_port(&mut self, p: Port) {
        self.0.base.port = match p {
            Port::Tp => kernel::bindings::PORT_TP,
            Port::Fibre => kernel::bindings::PORT_FIBRE,
            Port::Da => kernel::bindings::PORT_DA,
            Port::None => kernel::bindings::PORT_NONE,
            Port::Other => kernel::bindings::PORT_OTHER,
        } as u8;
    }

    /// Whether autonegotiation is on.
    pub fn set_autoneg(&mut self, on: bool) {
        self.0.base.autoneg = u8::from(on);
    }

    fn set_bit(mask: &mut [c_ulong], bit: u32) {
        let bits = c_ulong::BITS;
        if let Some(w) = mask.get_mut((bit / bits) as usize) {
            *w |= 1 << (bit % bits);
        }
    }

    /// Adds a supported link mode (`ETHTOOL_LINK_MODE_*_BIT`, see [`link_mode`]).
    pub fn add_supported(&mut self, mode: u32) {
        Self::set_bit(&mut self.0.link_modes.supported, mode);
    }

    /// Adds an advertised link mode (`ETHTOOL_LINK_MODE_*_BIT`, see [`link_mode`]).
    pub fn add_advertising(&mut self, mode: u32) {
        Self::set_bit(&mut self.0.link_modes.advertising, mode);
    }
}

/// Link modes for [`LinkKsettings::add_supported`] (`enum ethtool_link_mode_bit_indices`).
pub mod link_mode {
    macro_rules! modes {
        ($($name:ident = $c:ident;)*) => {
            $(
                #[doc = concat!("`", stringify!($c), "`.")]
                pub const $name: u32 = kernel::bindings::$c;
            )*
        };
    }
    modes! {
        AUTONEG = ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_Autoneg_BIT;
        FIBRE = ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_FIBRE_BIT;
        PAUSE = ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_Pause_BIT;
        ASYM_PAUSE = ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_Asym_Pause_BIT;
        M1000_BASE_KX_FULL = ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_1000baseKX_Full_BIT;
        M10000_BASE_KR_FULL = ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_10000baseKR_Full_BIT;
        M25000_BASE_CR_FULL = ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_25000baseCR_Full_BIT;
        M25000_BASE_SR_FULL = ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_25000baseSR_Full_BIT;
        M40000_BASE_CR4_FULL = ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_40000baseCR4_Full_BIT;
        M50000_BASE_CR2_FULL = ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_50000baseCR2_Full_BIT;
        M100000_BASE_CR4_FULL =
            ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_100000baseCR4_Full_BIT;
    }
}

/// Ring sizes (`struct ethtool_ringparam`): the maximums and current sizes, in descriptors.
#[derive(Clone, Copy, Debug, Default)]
pub struct RingParam {
    /// The largest RX ring.
    pub rx_max_pending: u32,
    /// The largest TX ring.
    pub tx_max_pending: u32,
    /// The RX ring size.
    pub rx_pending: u32,
    /// The TX ring size.
    pub tx_pending: u32,
}

/// Channel counts (`struct ethtool_channels`): maximums and current counts.
#[derive(Clone, Copy, Debug, Default)]
#[allow(missing_docs)]
pub struct Channels {
    pub max_rx: u32,
    pub max_tx: u32,
    pub max_other: u32,
    pub max_combined: u32,
    pub rx_count: u32,
    pub tx_count: u32,
    pub other_count: u32,
    pub combined_count: u32,
}

/// Pause frame settings (`struct ethtool_pauseparam`).
#[derive(Clone, Copy, Debug, Default)]
pub struct PauseParam {
    /// Pause autonegotiation.
    pub autoneg: bool,
    /// Honour received pause frames.
    pub rx_pause: bool,
    /// Send pause frames.
    pub tx_pause: bool,
}

/// Pause frame counters (`struct ethtool_pause_stats`, `ethtool -I -a`): the ones a driver
/// leaves `None` stay "not set" (the core does not report them).
#[derive(Clone, Copy, Debug, Default)]
pub struct PauseStats {
    /// 802.3x pause frames sent.
    pub tx_pause_frames: Option<u64>,
    /// 802.3x pause frames received.
    pub rx_pause_frames: Option<u64>,
    /// Times the device stopped sending pause frames (a pause storm).
    pub tx_pause_storm_events: Option<u64>,
}

/// Interrupt coalescing (`struct ethtool_coalesce`), the parameters this binding carries:
/// how long (µs) and for how many completions a queue may hold its interrupt back, and
/// whether an adaptive algorithm sets them. The core refuses a request that changes any other
/// parameter (`supported_coalesce_params` is `ETHTOOL_COALESCE_USECS |
/// ETHTOOL_COALESCE_MAX_FRAMES`, with `ETHTOOL_COALESCE_USE_ADAPTIVE` for a driver whose
/// [`EthtoolOps::ADAPTIVE_COALESCE`] is true).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Coalesce {
    /// RX: the driver adapts the moderation to the traffic (e.g. [`crate::dim::Dim`]).
    pub use_adaptive_rx: bool,
    /// TX: the driver adapts the moderation to the traffic.
    pub use_adaptive_tx: bool,
    /// RX: microseconds after a completion before the interrupt.
    pub rx_usecs: u32,
    /// RX: completions before the interrupt.
    pub rx_max_frames: u32,
    /// TX: microseconds after a completion before the interrupt.
    pub tx_usecs: u32,
    /// TX: completions before the interrupt.
    pub tx_max_frames: u32,
}

/// The string sets of [`EthtoolOps::get_sset_count`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StringSet {
    /// `ETH_SS_STATS`: the names of [`EthtoolOps::get_ethtool_stats`]' counters.
    Stats,
    /// `ETH_SS_PRIV_FLAGS`: private flag names.
    PrivFlags,
    /// `ETH_SS_TEST`: self-test names.
    Test,
}

impl StringSet {
    fn from_raw(s: u32) -> Option<Self> {
        match s {
            kernel::bindings::ethtool_stringset_ETH_SS_STATS => Some(Self::Stats),
            kernel::bindings::ethtool_stringset_ETH_SS_PRIV_FLAGS => Some(Self::PrivFlags),
            kernel::bindings::ethtool_stringset_ETH_SS_TEST => Some(Self::Test),
            _ => None,
        }
    }
}

/// The names of a string set, `ETH_GSTRING_LEN` bytes each, filled in order.
pub struct Strings<'a> {
    buf: &'a mut [u8],
    next: usize,
}

impl Strings<'_> {
    /// Appends `s` (truncated to `ETH_GSTRING_LEN - 1` bytes); ignored past the count the
    /// driver reported.
    pub fn push(&mut self, s: &CStr) {
        const LEN: usize = ksys::ETH_GSTRING_LEN as usize;
        let Some(slot) = self.buf.get_mut(self.next * LEN..(self.next + 1) * LEN) else {
            return;
        };
        let src = s.to_bytes();
        let n = src.len().min(LEN - 1);
        slot[..n].copy_from_slice(&src[..n]);
        slot[n..].fill(0);
        self.next += 1;
    }
}

/// A driver's ethtool operations; set with [`crate::Registration::set_ethtool_ops`]. Only
/// the implemented ones are set in the C table. All run with `rtnl_lock` held.
#[vtable]
pub trait EthtoolOps: Sized + 'static {
    /// The driver data: the [`crate::DeviceOps::Data`] of the device's registration.
    type Data: ForeignOwnable + Send + Sync;

    /// Whether [`EthtoolOps::set_coalesce`] takes `adaptive-rx`/`adaptive-tx`
    /// ([`Coalesce::use_adaptive_rx`], [`Coalesce::use_adaptive_tx`]).
    const ADAPTIVE_COALESCE: bool = false;

    /// `get_drvinfo` (`ethtool -i`).
    fn get_drvinfo(_dev: &Device, _data: DataRef<'_, Self>, _info: &mut DrvInfo<'_>) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_link`: whether the link is up. Not implemented: the carrier state
    /// (`ethtool_op_get_link()`).
    fn get_link(_dev: &Device, _data: DataRef<'_, Self>) -> bool {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_link_ksettings` (`ethtool DEV`).
    fn get_link_ksettings(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _ks: &mut LinkKsettings<'_>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_ringparam` (`ethtool -g`).
    fn get_ringparam(_dev: &Device, _data: DataRef<'_, Self>, _ring: &mut RingParam) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `set_ringparam` (`ethtool -G`); sizes within the maximums (checked by the core).
    fn set_ringparam(_dev: &Device, _data: DataRef<'_, Self>, _ring: &RingParam) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_channels` (`ethtool -l`).
    fn get_channels(_dev: &Device, _data: DataRef<'_, Self>, _ch: &mut Channels) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `set_channels` (`ethtool -L`); counts within the maximums (checked by the core).
    fn set_channels(_dev: &Device, _data: DataRef<'_, Self>, _ch: &Channels) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_rx_ring_count`: the number of RX rings RSS spreads over.
    fn get_rx_ring_count(_dev: &Device, _data: DataRef<'_, Self>) -> u32 {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_rxfh_indir_size`: the RSS indirection table's size (constant).
    fn get_rxfh_indir_size(_dev: &Device, _data: DataRef<'_, Self>) -> u32 {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_rxfh_key_size`: the RSS key's size in bytes (constant).
    fn get_rxfh_key_size(_dev: &Device, _data: DataRef<'_, Self>) -> u32 {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_rxfh` (`ethtool -x`): fills what [`Rxfh`] asks for.
    fn get_rxfh(_dev: &Device, _data: DataRef<'_, Self>, _rxfh: &mut Rxfh<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `set_rxfh` (`ethtool -X`): applies what [`Rxfh`] carries (default context only; other
    /// contexts are refused with `EOPNOTSUPP`).
    fn set_rxfh(_dev: &Device, _data: DataRef<'_, Self>, _rxfh: &mut Rxfh<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_rxfh_fields` (`ethtool -n IF rx-flow-hash FLOW [context N]`): the [`rxh`] fields
    /// RSS context `context` (0: the default one) hashes for `flow`. Other contexts than the
    /// default are refused with `EOPNOTSUPP` unless [`EthtoolOps::RXFH_PER_CTX_FIELDS`].
    fn get_rxfh_fields(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _context: u32,
        _flow: FlowType,
    ) -> Result<u32> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `set_rxfh_fields` (`ethtool -N IF rx-flow-hash FLOW FIELDS [context N]`): hash
    /// `fields` ([`rxh`] bits) for `flow` in RSS context `context` (as for `get_rxfh_fields`).
    fn set_rxfh_fields(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _context: u32,
        _flow: FlowType,
        _fields: u32,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// How many additional RSS contexts there may be: their ids are below this
    /// (`rxfh_max_num_contexts`; 0 with no [`EthtoolOps::create_rxfh_context`]).
    const RXFH_MAX_NUM_CONTEXTS: u32 = 0;

    /// Whether each RSS context has its own key and hash function (`rxfh_per_ctx_key`).
    const RXFH_PER_CTX_KEY: bool = false;

    /// Whether each RSS context hashes its own fields (`rxfh_per_ctx_fields`:
    /// `ethtool -N rx-flow-hash ... context N`).
    const RXFH_PER_CTX_FIELDS: bool = false;

    /// `get_rxnfc` `ETHTOOL_GRXCLSRLCNT` (`ethtool -n`): how many rules there are.
    fn get_rxnfc_rule_count(_dev: &Device, _data: DataRef<'_, Self>) -> Result<u32> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_rxnfc` `ETHTOOL_GRXCLSRULE`: the rule at `location` and its RSS context (0:
    /// none).
    fn get_rxnfc_rule(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _location: u32,
    ) -> Result<(FlowSpec, u32)> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_rxnfc` `ETHTOOL_GRXCLSRLALL`: fills `locs` with the rules' locations (as many as
    /// `get_rxnfc_rule_count` said); returns the size of the rule table.
    fn get_rxnfc_rule_locs(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _locs: &mut [u32],
    ) -> Result<u32> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `set_rxnfc` `ETHTOOL_SRXCLSRLINS` (`ethtool -N flow-type ...`): inserts or replaces the
    /// rule at `spec.location()`; `rss_context` with [`flow::RSS`] (the core checked that
    /// the context exists).
    fn insert_rxnfc_rule(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _spec: &FlowSpec,
        _rss_context: u32,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `set_rxnfc` `ETHTOOL_SRXCLSRLDEL` (`ethtool -N delete`): removes the rule at `location`.
    fn delete_rxnfc_rule(_dev: &Device, _data: DataRef<'_, Self>, _location: u32) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `create_rxfh_context` (`ethtool -X context new`): makes context `rxfh.context()` as
    /// `rxfh` asks and writes the table, key and hash function in use into `ctx`.
    fn create_rxfh_context(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _ctx: &mut RxfhContext<'_>,
        _rxfh: &RxfhRequest<'_>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `modify_rxfh_context` (`ethtool -X context N ...`): as `create_rxfh_context` for an
    /// existing context.
    fn modify_rxfh_context(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _ctx: &mut RxfhContext<'_>,
        _rxfh: &RxfhRequest<'_>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `remove_rxfh_context` (`ethtool -X context N delete`).
    fn remove_rxfh_context(_dev: &Device, _data: DataRef<'_, Self>, _context: u32) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_sset_count`: the number of strings in `set` (`EOPNOTSUPP` if the driver has none).
    /// Must not change between the core's calls under one `rtnl_lock` hold.
    fn get_sset_count(_dev: &Device, _data: DataRef<'_, Self>, _set: StringSet) -> Result<u32> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_strings`: pushes the [`EthtoolOps::get_sset_count`] names of `set`.
    fn get_strings(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _set: StringSet,
        _strings: &mut Strings<'_>,
    ) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_ethtool_stats` (`ethtool -S`): the counters, in the order of the
    /// [`StringSet::Stats`] names.
    fn get_ethtool_stats(_dev: &Device, _data: DataRef<'_, Self>, _stats: &mut [u64]) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_pauseparam` (`ethtool -a`).
    fn get_pauseparam(_dev: &Device, _data: DataRef<'_, Self>, _pause: &mut PauseParam) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `set_pauseparam` (`ethtool -A`).
    fn set_pauseparam(_dev: &Device, _data: DataRef<'_, Self>, _pause: &PauseParam) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_pause_stats` (`ethtool -I -a`): the pause frame counters the device keeps.
    fn get_pause_stats(_dev: &Device, _data: DataRef<'_, Self>, _stats: &mut PauseStats) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_coalesce` (`ethtool -c`).
    fn get_coalesce(_dev: &Device, _data: DataRef<'_, Self>, _c: &mut Coalesce) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `set_coalesce` (`ethtool -C`): the whole [`Coalesce`] as it should be (unchanged
    /// fields hold their [`EthtoolOps::get_coalesce`] values).
    fn set_coalesce(_dev: &Device, _data: DataRef<'_, Self>, _c: &Coalesce) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_ts_info` (`ethtool -T`): the device's timestamping capabilities and PTP clock.
    fn get_ts_info(_dev: &Device, _data: DataRef<'_, Self>, _info: &mut TsInfo<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// The table of `E`, for as long as the module is loaded.
pub(crate) const fn table<E: EthtoolOps>() -> &'static ksys::ethtool_ops {
    &Table::<E>::OPS
}

struct Table<E>(PhantomData<E>);

impl<E: EthtoolOps> Table<E> {
    const OPS: ksys::ethtool_ops = ksys::ethtool_ops {
        get_drvinfo: op!(E::HAS_GET_DRVINFO, Self::get_drvinfo),
        get_link: if E::HAS_GET_LINK {
            Some(Self::get_link)
        } else {
            Some(ksys::ethtool_op_get_link)
        },
        get_link_ksettings: op!(E::HAS_GET_LINK_KSETTINGS, Self::get_link_ksettings),
        get_ringparam: op!(E::HAS_GET_RINGPARAM, Self::get_ringparam),
        set_ringparam: op!(E::HAS_SET_RINGPARAM, Self::set_ringparam),
        get_channels: op!(E::HAS_GET_CHANNELS, Self::get_channels),
        set_channels: op!(E::HAS_SET_CHANNELS, Self::set_channels),
        get_rx_ring_count: op!(E::HAS_GET_RX_RING_COUNT, Self::get_rx_ring_count),
        get_rxfh_indir_size: op!(E::HAS_GET_RXFH_INDIR_SIZE, Self::get_rxfh_indir_size),
        get_rxfh_key_size: op!(E::HAS_GET_RXFH_KEY_SIZE, Self::get_rxfh_key_size),
        get_rxfh: op!(E::HAS_GET_RXFH, Self::get_rxfh),
        set_rxfh: op!(E::HAS_SET_RXFH, Self::set_rxfh),
        get_rxfh_fields: op!(E::HAS_GET_RXFH_FIELDS, Self::get_rxfh_fields),
        set_rxfh_fields: op!(E::HAS_SET_RXFH_FIELDS, Self::set_rxfh_fields),
        get_rxnfc: op!(E::HAS_GET_RXNFC_RULE_COUNT, Self::get_rxnfc),
        set_rxnfc: op!(E::HAS_INSERT_RXNFC_RULE, Self::set_rxnfc),
        create_rxfh_context: op!(E::HAS_CREATE_RXFH_CONTEXT, Self::create_rxfh_context),
        modify_rxfh_context: op!(E::HAS_MODIFY_RXFH_CONTEXT, Self::modify_rxfh_context),
        remove_rxfh_context: op!(E::HAS_REMOVE_RXFH_CONTEXT, Self::remove_rxfh_context),
        rxfh_max_num_contexts: E::RXFH_MAX_NUM_CONTEXTS,
        // Bits 9 and 10 of the bit-fields (after the 8-bit `supported_input_xfrm` and
        // `cap_link_lanes_supported`): `rxfh_per_ctx_fields`, `rxfh_per_ctx_key`.
        _bitfield_1: ksys::__BindgenBitfieldUnit::new([
            0,
            (E::RXFH_PER_CTX_FIELDS as u8) << 1 | (E::RXFH_PER_CTX_KEY as u8) << 2,
        ]),
        get_sset_count: op!(E::HAS_GET_SSET_COUNT, Self::get_sset_count),
        get_strings: op!(E::HAS_GET_STRINGS, Self::get_strings),
        get_ethtool_stats: op!(E::HAS_GET_ETHTOOL_STATS, Self::get_ethtool_stats),
        get_pauseparam: op!(E::HAS_GET_PAUSEPARAM, Self::get_pauseparam),
        set_pauseparam: op!(E::HAS_SET_PAUSEPARAM, Self::set_pauseparam),
        get_pause_stats: op!(E::HAS_GET_PAUSE_STATS, Self::get_pause_stats),
        get_coalesce: op!(E::HAS_GET_COALESCE, Self::get_coalesce),
        set_coalesce: op!(E::HAS_SET_COALESCE, Self::set_coalesce),
        get_ts_info: op!(E::HAS_GET_TS_INFO, Self::get_ts_info),
        supported_coalesce_params: if E::HAS_SET_COALESCE {
            ksys::KSYS_CONST_ETHTOOL_COALESCE_USECS_MAX_FRAMES
                | if E::ADAPTIVE_COALESCE {
                    ksys::KSYS_CONST_ETHTOOL_COALESCE_USE_ADAPTIVE
                } else {
                    0
                }
        } else {
            0
        },
        ..pin_init::zeroed()
    };

    /// # Safety
    ///
    /// The ethtool core calls it (rtnl held) for a registered device with this table, with
    /// a valid `info`.
    unsafe extern "C" fn get_drvinfo(
        dev: *mut ksys::net_device,
        info: *mut kernel::bindings::ethtool_drvinfo,
    ) {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        // SAFETY: A valid struct only this call writes.
        E::get_drvinfo(dev, data, &mut DrvInfo(unsafe { &mut *info }));
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn get_ts_info(
        dev: *mut ksys::net_device,
        info: *mut ksys::kernel_ethtool_ts_info,
    ) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        // SAFETY: A valid struct only this call writes.
        let mut info = TsInfo(unsafe { &mut *info });
        from_result(|| E::get_ts_info(dev, data, &mut info).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn get_link(dev: *mut ksys::net_device) -> u32 {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        u32::from(E::get_link(dev, data))
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn get_link_ksettings(
        dev: *mut ksys::net_device,
        ks: *mut kernel::bindings::ethtool_link_ksettings,
    ) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        // SAFETY: A valid struct only this call writes.
        let mut ks = LinkKsettings(unsafe { &mut *ks });
        from_result(|| E::get_link_ksettings(dev, data, &mut ks).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn get_ringparam(
        dev: *mut ksys::net_device,
        ring: *mut kernel::bindings::ethtool_ringparam,
        _kring: *mut kernel::bindings::kernel_ethtool_ringparam,
        _extack: *mut kernel::bindings::netlink_ext_ack,
    ) {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        let mut r = RingParam::default();
        E::get_ringparam(dev, data, &mut r);
        // SAFETY: A valid struct only this call writes.
        let ring = unsafe { &mut *ring };
        ring.rx_max_pending = r.rx_max_pending;
        ring.tx_max_pending = r.tx_max_pending;
        ring.rx_pending = r.rx_pending;
        ring.tx_pending = r.tx_pending;
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn set_ringparam(
        dev: *mut ksys::net_device,
        ring: *mut kernel::bindings::ethtool_ringparam,
        _kring: *mut kernel::bindings::kernel_ethtool_ringparam,
        _extack: *mut kernel::bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        // SAFETY: A valid struct for the call.
        let ring = unsafe { &*ring };
        let r = RingParam {
            rx_max_pending: ring.rx_max_pending,
            tx_max_pending: ring.tx_max_pending,
            rx_pending: ring.rx_pending,
            tx_pending: ring.tx_pending,
        };
        from_result(|| E::set_ringparam(dev, data, &r).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn get_coalesce(
        dev: *mut ksys::net_device,
        c: *mut ksys::ethtool_coalesce,
        _kc: *mut ksys::kernel_ethtool_coalesce,
        _extack: *mut ksys::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        let mut v = Coalesce::default();
        from_result(|| {
            E::get_coalesce(dev, data, &mut v)?;
            // SAFETY: A valid struct only this call writes.
            let c = unsafe { &mut *c };
            c.rx_coalesce_usecs = v.rx_usecs;
            c.rx_max_coalesced_frames = v.rx_max_frames;
            c.tx_coalesce_usecs = v.tx_usecs;
            c.tx_max_coalesced_frames = v.tx_max_frames;
            c.use_adaptive_rx_coalesce = u32::from(v.use_adaptive_rx);
            c.use_adaptive_tx_coalesce = u32::from(v.use_adaptive_tx);
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn set_coalesce(
        dev: *mut ksys::net_device,
        c: *mut ksys::ethtool_coalesce,
        _kc: *mut ksys::kernel_ethtool_coalesce,
        _extack: *mut ksys::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        // SAFETY: A valid struct for the call.
        let c = unsafe { &*c };
        let v = Coalesce {
            rx_usecs: c.rx_coalesce_usecs,
            rx_max_frames: c.rx_max_coalesced_frames,
            tx_usecs: c.tx_coalesce_usecs,
            tx_max_frames: c.tx_max_coalesced_frames,
            use_adaptive_rx: c.use_adaptive_rx_coalesce != 0,
            use_adaptive_tx: c.use_adaptive_tx_coalesce != 0,
        };
        from_result(|| E::set_coalesce(dev, data, &v).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn get_channels(
        dev: *mut ksys::net_device,
        ch: *mut kernel::bindings::ethtool_channels,
    ) {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        let mut c = Channels::default();
        E::get_channels(dev, data, &mut c);
        // SAFETY: A valid struct only this call writes.
        let ch = unsafe { &mut *ch };
        ch.max_rx = c.max_rx;
        ch.max_tx = c.max_tx;
        ch.max_other = c.max_other;
        ch.max_combined = c.max_combined;
        ch.rx_count = c.rx_count;
        ch.tx_count = c.tx_count;
        ch.other_count = c.other_count;
        ch.combined_count = c.combined_count;
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn set_channels(
        dev: *mut ksys::net_device,
        ch: *mut kernel::bindings::ethtool_channels,
    ) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        // SAFETY: A valid struct for the call.
        let ch = unsafe { &*ch };
        let c = Channels {
            max_rx: ch.max_rx,
            max_tx: ch.max_tx,
            max_other: ch.max_other,
            max_combined: ch.max_combined,
            rx_count: ch.rx_count,
            tx_count: ch.tx_count,
            other_count: ch.other_count,
            combined_count: ch.combined_count,
        };
        from_result(|| E::set_channels(dev, data, &c).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn get_rx_ring_count(dev: *mut ksys::net_device) -> u32 {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        E::get_rx_ring_count(dev, data)
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn get_rxfh_indir_size(dev: *mut ksys::net_device) -> u32 {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        E::get_rxfh_indir_size(dev, data)
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn get_rxfh_key_size(dev: *mut ksys::net_device) -> u32 {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        E::get_rxfh_key_size(dev, data)
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn get_sset_count(dev: *mut ksys::net_device, sset: c_int) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        let Some(set) = u32::try_from(sset).ok().and_then(StringSet::from_raw) else {
            return -(ksys::EOPNOTSUPP as c_int);
        };
        from_result(|| {
            let n = E::get_sset_count(dev, data, set)?;
            i32::try_from(n).map_err(|_| EINVAL)
        })
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`; `buf` holds `get_sset_count(set)` strings.
    unsafe extern "C" fn get_strings(dev: *mut ksys::net_device, sset: u32, buf: *mut u8) {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        let Some(set) = StringSet::from_raw(sset) else {
            return;
        };
        if !E::HAS_GET_SSET_COUNT {
            return;
        }
        // SAFETY: The function's contract.
        let data2 = unsafe { data_of::<E::Data>(dev) };
        let n = E::get_sset_count(dev, data2, set).unwrap_or(0) as usize;
        // SAFETY: The core allocated `get_sset_count(set)` strings, under the same rtnl
        // hold as this call (the count does not change: the trait's rule).
        let buf = unsafe { slice::from_raw_parts_mut(buf, n * ksys::ETH_GSTRING_LEN as usize) };
        E::get_strings(dev, data, set, &mut Strings { buf, next: 0 });
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`; `buf` holds `stats->n_stats` counters.
    unsafe extern "C" fn get_ethtool_stats(
        dev: *mut ksys::net_device,
        stats: *mut kernel::bindings::ethtool_stats,
        buf: *mut u64,
    ) {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        // SAFETY: `stats` is valid and `buf` has `n_stats` counters, for the call.
        let buf = unsafe { slice::from_raw_parts_mut(buf, (*stats).n_stats as usize) };
        E::get_ethtool_stats(dev, data, buf);
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn get_pauseparam(
        dev: *mut ksys::net_device,
        p: *mut kernel::bindings::ethtool_pauseparam,
    ) {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        let mut pp = PauseParam::default();
        E::get_pauseparam(dev, data, &mut pp);
        // SAFETY: A valid struct only this call writes.
        let p = unsafe { &mut *p };
        p.autoneg = u32::from(pp.autoneg);
        p.rx_pause = u32::from(pp.rx_pause);
        p.tx_pause = u32::from(pp.tx_pause);
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn get_pause_stats(
        dev: *mut ksys::net_device,
        p: *mut kernel::bindings::ethtool_pause_stats,
    ) {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        let mut ps = PauseStats::default();
        E::get_pause_stats(dev, data, &mut ps);
        // SAFETY: A valid struct only this call writes. The union holds the same three `u64`s
        // under two names (`struct_group`), so either member is a valid view of it.
        let st = unsafe { &mut (*p).__bindgen_anon_1.stats };
        for (field, v) in [
            (&mut st.tx_pause_frames, ps.tx_pause_frames),
            (&mut st.rx_pause_frames, ps.rx_pause_frames),
            (&mut st.tx_pause_storm_events, ps.tx_pause_storm_events),
        ] {
            if let Some(v) = v {
                *field = v;
            }
        }
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn set_pauseparam(
        dev: *mut ksys::net_device,
        p: *mut kernel::bindings::ethtool_pauseparam,
    ) -> c_int {
        // SAFETY: The function's contract.
        let (dev, data) = unsafe { args::<E::Data>(dev) };
        // SAFETY: A valid struct for the call.
        let p = unsafe { &*p };
        let pp = PauseParam {
            autoneg: p.autoneg != 0,
            rx_pause: p.rx_pause != 0,
            tx_pause: p.tx_pause != 0,
        };
        from_result(|| E::set_pauseparam(dev, data, &pp).map(|()| 0))
    }
}
