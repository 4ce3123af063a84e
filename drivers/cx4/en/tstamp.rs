// SPDX-License-Identifier: GPL-2.0
//! Hardware timestamps of the netdev's packets (en_main.c `mlx5e_hwtstamp_set`/`_get`,
//! en_ethtool.c `mlx5e_ethtool_get_ts_info`): the configuration the stack sets, what
//! `ethtool -T` shows, and the function's clock that turns the CQEs' timestamps (the card's
//! internal timer) into the PHC's time for the receive path (rx.rs) and the send completions
//! (tx.rs).

use core::sync::atomic::{
    AtomicBool,
    AtomicI32,
    Ordering, //
};

use kernel::{
    prelude::*,
    sync::Arc, //
};
use netdev::tstamp::{
    rx_filter,
    sof,
    tx_type,
    HwTstampConfig,
    TsInfo, //
};

use crate::{
    clock::{
        Clock,
        Timer, //
    },
    en::ethtool::eopnotsupp, //
};

/// The netdev's timestamping state. The configuration changes under rtnl; the data path reads
/// its flags.
pub(crate) struct Tstamp {
    /// The function's clock and its index, if it has one.
    clock: Option<(Arc<Timer>, i32)>,
    flags: AtomicI32,
    /// `HWTSTAMP_TX_ON`.
    tx_on: AtomicBool,
    /// `HWTSTAMP_FILTER_ALL`.
    rx_all: AtomicBool,
}

impl Tstamp {
    /// Off in both directions (en_main.c `mlx5e_build_nic_netdev_priv`), over `clock`.
    pub(crate) fn new(clock: Option<&Clock>) -> Self {
        Self {
            clock: clock.map(|c| (c.timer().clone(), c.index())),
            flags: AtomicI32::new(0),
            tx_on: AtomicBool::new(false),
            rx_all: AtomicBool::new(false),
        }
    }

    /// The configuration in force (`ndo_hwtstamp_get`); `EOPNOTSUPP` without a clock.
    pub(crate) fn get(&self) -> Result<HwTstampConfig> {
        if self.clock.is_none() {
            return Err(eopnotsupp());
        }
        let on = |b: &AtomicBool, yes, no| if b.load(Ordering::Relaxed) { yes } else { no };
        Ok(HwTstampConfig {
            flags: self.flags.load(Ordering::Relaxed),
            tx_type: on(&self.tx_on, tx_type::ON, tx_type::OFF),
            rx_filter: on(&self.rx_all, rx_filter::ALL, rx_filter::NONE),
        })
    }

    /// Applies `config` (`ndo_hwtstamp_set`): TX off or on; RX none, or any filter widened to
    /// all packets (the card stamps every CQE), which `config` then says. `ERANGE` for other
    /// values, `EOPNOTSUPP` without a clock.
    pub(crate) fn set(&self, config: &mut HwTstampConfig) -> Result {
        if self.clock.is_none() {
            return Err(eopnotsupp());
        }
        let tx = match config.tx_type {
            tx_type::OFF => false,
            tx_type::ON => true,
            _ => return Err(ERANGE),
        };
        let rx = match config.rx_filter {
            rx_filter::NONE => false,
            f if (rx_filter::ALL..=rx_filter::NTP_ALL).contains(&f) => true,
            _ => return Err(ERANGE),
        };
        if rx {
            config.rx_filter = rx_filter::ALL;
        }
        self.flags.store(config.flags, Ordering::Relaxed);
        self.tx_on.store(tx, Ordering::Relaxed);
        self.rx_all.store(rx, Ordering::Relaxed);
        Ok(())
    }

    /// `ethtool -T`: hardware stamps both ways, raw (the PHC's time), software TX stamps at
    /// the doorbell, the PHC; nothing without a clock.
    pub(crate) fn ts_info(&self, info: &mut TsInfo<'_>) {
        let Some((_, index)) = &self.clock else {
            info.set_phc_index(-1);
            return;
        };
        info.set_phc_index(*index);
        info.add_so_timestamping(
            sof::TX_HARDWARE | sof::TX_SOFTWARE | sof::RX_HARDWARE | sof::RAW_HARDWARE,
        );
        info.set_tx_types(&[tx_type::OFF, tx_type::ON]);
        info.set_rx_filters(&[rx_filter::NONE, rx_filter::ALL]);
    }

    /// Whether sent packets that ask for it get hardware timestamps.
    pub(crate) fn tx_on(&self) -> bool {
        self.tx_on.load(Ordering::Relaxed)
    }

    /// The clock, while received packets get hardware timestamps.
    pub(crate) fn rx_timer(&self) -> Option<&Timer> {
        if self.rx_all.load(Ordering::Relaxed) {
            self.timer()
        } else {
            None
        }
    }

    /// The clock, for the send completions.
    pub(crate) fn timer(&self) -> Option<&Timer> {
        self.clock.as_ref().map(|(t, _)| &**t)
    }
}
