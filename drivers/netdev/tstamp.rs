// SPDX-License-Identifier: GPL-2.0
//! Hardware timestamping (`include/linux/net_tstamp.h`, `Documentation/networking/
//! timestamping.rst`): the configuration `SIOCSHWTSTAMP` and the netlink `tsconfig` set
//! through [`crate::DeviceOps::hwtstamp_set`] ([`HwTstampConfig`]), and what a device
//! reports to `ethtool -T` ([`TsInfo`], [`crate::ethtool::EthtoolOps::get_ts_info`]).
//!
//! The timestamps themselves go on the packets: [`crate::skb::SkBuff::set_hwtstamp`] on a
//! received one, [`crate::skb::SkBuff::hw_tstamp_requested`],
//! [`crate::skb::SkBuff::set_tstamp_in_progress`] and [`crate::skb::SkBuff::tstamp_tx`] on
//! one sent.

/// `enum hwtstamp_tx_types`: which outgoing packets are timestamped.
pub mod tx_type {
    /// No outgoing packet (`HWTSTAMP_TX_OFF`).
    pub const OFF: i32 = ksys::hwtstamp_tx_types_HWTSTAMP_TX_OFF as i32;
    /// Every packet whose socket asked for it (`HWTSTAMP_TX_ON`).
    pub const ON: i32 = ksys::hwtstamp_tx_types_HWTSTAMP_TX_ON as i32;
}

/// `enum hwtstamp_rx_filters`: which incoming packets are timestamped.
pub mod rx_filter {
    /// None (`HWTSTAMP_FILTER_NONE`).
    pub const NONE: i32 = ksys::hwtstamp_rx_filters_HWTSTAMP_FILTER_NONE as i32;
    /// All (`HWTSTAMP_FILTER_ALL`).
    pub const ALL: i32 = ksys::hwtstamp_rx_filters_HWTSTAMP_FILTER_ALL as i32;
    /// The last filter a device may be asked for (`HWTSTAMP_FILTER_NTP_ALL`): every filter
    /// up to it is a subset of [`ALL`].
    pub const NTP_ALL: i32 = ksys::hwtstamp_rx_filters_HWTSTAMP_FILTER_NTP_ALL as i32;
}

/// `SOF_TIMESTAMPING_*` capability flags of [`TsInfo::so_timestamping`].
pub mod sof {
    /// Hardware timestamps of sent packets (`SOF_TIMESTAMPING_TX_HARDWARE`).
    pub const TX_HARDWARE: u32 = ksys::KSYS_CONST_SOF_TIMESTAMPING_TX_HARDWARE;
    /// Software timestamps of sent packets, taken by the driver at the doorbell
    /// (`SOF_TIMESTAMPING_TX_SOFTWARE`, `skb_tx_timestamp()`).
    pub const TX_SOFTWARE: u32 = ksys::KSYS_CONST_SOF_TIMESTAMPING_TX_SOFTWARE;
    /// Hardware timestamps of received packets (`SOF_TIMESTAMPING_RX_HARDWARE`).
    pub const RX_HARDWARE: u32 = ksys::KSYS_CONST_SOF_TIMESTAMPING_RX_HARDWARE;
    /// The hardware timestamps are reported raw, in the PHC's time
    /// (`SOF_TIMESTAMPING_RAW_HARDWARE`).
    pub const RAW_HARDWARE: u32 = ksys::KSYS_CONST_SOF_TIMESTAMPING_RAW_HARDWARE;
}

/// The hardware timestamping configuration of a device (`struct kernel_hwtstamp_config`):
/// what `hwstamp_ctl`, `ptp4l` and the netlink `tsconfig` set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HwTstampConfig {
    /// `HWTSTAMP_FLAG_*` (no flag is defined for drivers to act on but the bonding one).
    pub flags: i32,
    /// Which sent packets get timestamps ([`tx_type`]).
    pub tx_type: i32,
    /// Which received packets get timestamps ([`rx_filter`]). A driver may widen the filter
    /// it was asked for (e.g. to [`rx_filter::ALL`]) and says so by changing it here.
    pub rx_filter: i32,
}

impl HwTstampConfig {
    /// The configuration of the C structure.
    pub(crate) fn from_raw(c: &ksys::kernel_hwtstamp_config) -> Self {
        Self {
            flags: c.flags,
            tx_type: c.tx_type,
            rx_filter: c.rx_filter,
        }
    }

    /// Writes the configuration into the C structure (the rest of it unchanged).
    pub(crate) fn write_to(&self, c: &mut ksys::kernel_hwtstamp_config) {
        c.flags = self.flags;
        c.tx_type = self.tx_type;
        c.rx_filter = self.rx_filter;
    }
}

/// What a device can timestamp and with which clock (`struct kernel_ethtool_ts_info`, as
/// `ethtool -T` shows it). The ethtool core adds the software capabilities every device has
/// (`SOF_TIMESTAMPING_RX_SOFTWARE`, `SOF_TIMESTAMPING_SOFTWARE`).
pub struct TsInfo<'a>(pub(crate) &'a mut ksys::kernel_ethtool_ts_info);

impl TsInfo<'_> {
    /// Adds capabilities ([`sof`] flags).
    pub fn add_so_timestamping(&mut self, flags: u32) {
        self.0.so_timestamping |= flags;
    }

    /// Sets the index of the device's PTP hardware clock (`/dev/ptpN`), -1 for none.
    pub fn set_phc_index(&mut self, index: i32) {
        self.0.phc_index = index;
    }

    /// Sets the TX types [`crate::DeviceOps::hwtstamp_set`] accepts (bits of [`tx_type`]).
    pub fn set_tx_types(&mut self, types: &[i32]) {
        self.0.tx_types = types.iter().fold(0, |m, &t| m | bit(t));
    }

    /// Sets the RX filters [`crate::DeviceOps::hwtstamp_set`] applies as they are (bits of
    /// [`rx_filter`]).
    pub fn set_rx_filters(&mut self, filters: &[i32]) {
        self.0.rx_filters = filters.iter().fold(0, |m, &f| m | bit(f));
    }
}

/// `BIT(v)` of an enum value (0 for one out of range).
fn bit(v: i32) -> u32 {
    u32::try_from(v)
        .ok()
        .and_then(|v| 1u32.checked_shl(v))
        .unwrap_or(0)
}
