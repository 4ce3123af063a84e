//! The RoCE engine's counters ([`RoceStats`]; the control socket's `stats` and `roce` lines).
//! State only, so that the engine (`engine.rs`) and the `roce-wire` fault (`wire_faults.rs`)
//! both count into it without importing each other.

/// RoCE statistics of the device.
#[derive(Clone, Copy, Debug, Default)]
pub struct RoceStats {
    /// RoCE packets sent.
    pub tx_packets: u64,
    /// Their bytes.
    pub tx_bytes: u64,
    /// RoCE packets received for one of the port's addresses.
    pub rx_packets: u64,
    /// Their bytes.
    pub rx_bytes: u64,
    /// Dropped: malformed, bad ICRC.
    pub rx_malformed: u64,
    /// Dropped: no QP, or a QP not in a state or service that takes the packet.
    pub rx_no_qp: u64,
    /// Dropped by the transport (duplicates, out of sequence, error state).
    pub rx_dropped: u64,
    /// Send doorbells on QPs.
    pub doorbells: u64,
    /// Send WQEs executed.
    pub wqes: u64,
    /// WQEs completed in error (not counting flushes).
    pub errors: u64,
    /// WQEs flushed.
    pub flushed: u64,
    /// Doorbells and packets for services the engine does not run.
    pub unsupported: u64,
    /// Requester timer expiries handled.
    pub timer_runs: u64,
    /// UD and GSI packets sent.
    pub ud_tx: u64,
    /// UD and GSI sends not put on the wire: their address vector names no usable source
    /// GID entry, or mixes IPv4 and IPv6 (the WQE still completes, as a lost datagram).
    pub ud_tx_bad_av: u64,
    /// UD multicast sends looped back to QPs of the group on this port (besides the wire).
    pub ud_mc_loopback: u64,
    /// UD send WQEs with IPoIB's offloads asking for checksums or LSO (`ipoib_offload.rs`).
    pub ud_tx_offload: u64,
    /// Datagrams LSO WQEs of offloading UD QPs were cut into.
    pub ud_tx_lso_segments: u64,
    /// RC request packets to a QP of this card that crossed the loopback together, one
    /// message part at a time (`burst.rs`; their packets count in `tx`/`rx` as frames).
    pub loopback_bursts: u64,
    /// UD and GSI packets delivered to a receive WQE (multicast: once per attached QP).
    pub ud_rx: u64,
    /// UD packets dropped: the DETH Q_Key is not the QP's.
    pub ud_rx_qkey: u64,
    /// UD packets dropped: no receive WQE posted (UD has no RNR).
    pub ud_rx_no_recv: u64,
    /// UD packets dropped: payload larger than the receiving QP's MTU.
    pub ud_rx_too_long: u64,
    /// UD packets dropped: a UD opcode without a DETH (cannot be built by a sender; counted
    /// for completeness).
    pub ud_rx_malformed: u64,
    /// UD packets dropped: multicast to a group with no attached QP, or to QP 1 on a port
    /// without a GSI QP.
    pub ud_rx_no_target: u64,
    /// `roce-wire` fault: received RoCE frames dropped.
    pub wire_dropped: u64,
    /// `roce-wire` fault: received RoCE frames held back behind the next one.
    pub wire_reordered: u64,
    /// `roce-wire` fault: received RoCE frames with a byte flipped (the ICRC rejects them).
    pub wire_flipped: u64,
    /// `roce-wire` fault: received RoCE frames delivered late.
    pub wire_delayed: u64,
    /// XRC requests refused (NAKed): their XRCETH names no XRC SRQ, or one of another XRC
    /// domain than the target QP's.
    pub xrc_bad_srq: u64,
    /// XRC packets dropped: a request to an initiator QP or a response to a target QP.
    pub xrc_misdirected: u64,
    /// DC: connections DCIs opened (`dc.rs`).
    pub dc_connects: u64,
    /// DC packets dropped: a request to a DCI or a response to a DCT.
    pub dc_misdirected: u64,
    /// DC requests a DCT dropped for a wrong access key.
    pub dc_key_violations: u64,
    /// DC requests a DCT dropped as packets of an earlier connection.
    pub dc_stale: u64,
    /// `roce-wire` fault: received RoCE requests marked ECN CE.
    pub wire_ce_marked: u64,
    /// Vector-calc (erasure-coding) WQEs taken.
    pub ec_calcs: u64,
    /// Bytes of vector-calc results sent.
    pub ec_bytes: u64,
    /// Vector-calc WQEs refused (error CQE; also counted in `errors`).
    pub ec_errors: u64,
    /// UMR WQEs applied (fast registrations, local invalidates, mlx5_ib's MR updates).
    pub umrs: u64,
    /// R_Keys invalidated by a SEND with invalidate.
    pub remote_invalidations: u64,
}

impl RoceStats {
    /// One line for logs and the control socket.
    pub fn line(&self) -> String {
        format!(
            "roce: tx {} pkts {} bytes; rx {} pkts {} bytes ({} malformed, {} no qp, {} dropped); \
             {} loopback bursts; {} doorbells {} wqes {} errors {} flushed {} unsupported {} timer runs; \
             mkeys: {} umrs {} remote invalidations; ud: tx {} ({} bad av, {} mc looped) rx {} (dropped: {} qkey, {} no recv, {} too long, \
             {} malformed, {} no target); \
             ipoib offloads: {} wqes {} lso segments; \
             xrc: {} bad srq {} misdirected; \
             dc: {} connects {} misdirected {} key violations {} stale; \
             ec: {} calcs {} bytes {} errors; \
             wire faults: {} dropped {} reordered {} flipped {} delayed {} ce-marked",
            self.tx_packets,
            self.tx_bytes,
            self.rx_packets,
            self.rx_bytes,
            self.rx_malformed,
            self.rx_no_qp,
            self.rx_dropped,
            self.loopback_bursts,
            self.doorbells,
            self.wqes,
            self.errors,
            self.flushed,
            self.unsupported,
            self.timer_runs,
            self.umrs,
            self.remote_invalidations,
            self.ud_tx,
            self.ud_tx_bad_av,
            self.ud_mc_loopback,
            self.ud_rx,
            self.ud_rx_qkey,
            self.ud_rx_no_recv,
            self.ud_rx_too_long,
            self.ud_rx_malformed,
            self.ud_rx_no_target,
            self.ud_tx_offload,
            self.ud_tx_lso_segments,
            self.xrc_bad_srq,
            self.xrc_misdirected,
            self.dc_connects,
            self.dc_misdirected,
            self.dc_key_violations,
            self.dc_stale,
            self.ec_calcs,
            self.ec_bytes,
            self.ec_errors,
            self.wire_dropped,
            self.wire_reordered,
            self.wire_flipped,
            self.wire_delayed,
            self.wire_ce_marked
        )
    }
}
