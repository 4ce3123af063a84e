//! The Ethernet objects of a function, in one place so that teardown can account for them like
//! firmware pages: TISes, SQs, RQs, RQTs, TIRs, mkeys, queue and flow counters, VXLAN ports and
//! the port's traffic counters. (Flow tables live in [`super::Firmware::flow_tables`].)

use std::collections::{BTreeMap, BTreeSet};

use super::{
    counters::{PortCounters, QCounter},
    flow::FlowCount,
    mkey::Mkey,
    tir::{Rqt, Tir, Tis},
    wq::{Rq, Sq},
};

/// Per-function Ethernet objects.
#[derive(Debug, Default)]
pub struct NicObjects {
    /// Transport interface sends.
    pub tises: BTreeMap<u32, Tis>,
    /// Send queues.
    pub sqs: BTreeMap<u32, Sq>,
    /// Receive queues.
    pub rqs: BTreeMap<u32, Rq>,
    /// RQ tables.
    pub rqts: BTreeMap<u32, Rqt>,
    /// Transport interface receives.
    pub tirs: BTreeMap<u32, Tir>,
    /// Memory keys by index.
    pub mkeys: BTreeMap<u32, Mkey>,
    /// Queue counter sets by id.
    pub q_counters: BTreeMap<u8, QCounter>,
    /// Flow counters by id.
    pub flow_counters: BTreeMap<u32, FlowCount>,
    /// UDP destination ports parsed as VXLAN.
    pub vxlan_ports: BTreeSet<u16>,
    /// Port and vport traffic counters (they survive teardown, like the port).
    pub port: PortCounters,
}

impl NicObjects {
    /// Live objects as "N kind" items (empty if none).
    pub fn live(&self) -> Vec<String> {
        [
            (self.tises.len(), "TISes"),
            (self.sqs.len(), "SQs"),
            (self.rqs.len(), "RQs"),
            (self.rqts.len(), "RQTs"),
            (self.tirs.len(), "TIRs"),
            (self.mkeys.len(), "mkeys"),
            (self.q_counters.len(), "Q counters"),
            (self.flow_counters.len(), "flow counters"),
            (self.vxlan_ports.len(), "VXLAN ports"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect()
    }

    /// Releases every object and VXLAN port (TEARDOWN_HCA); the port counters stay, they
    /// belong to the port.
    pub fn release(&mut self) {
        let port = std::mem::take(&mut self.port);
        *self = NicObjects {
            port,
            ..Default::default()
        };
    }
}
