//! The NIC data path's counters (`datapath.rs` and `striding.rs` count into them; the
//! control socket's `stats` prints them). State only: the part that owns it, [`crate::hca::Hca`],
//! imports it without importing the data path's behaviour.

/// Data-path statistics of the device (the control socket's `stats`, the model's log).
#[derive(Clone, Copy, Debug, Default)]
pub struct PathStats {
    /// SQ doorbells rung.
    pub sq_doorbells: u64,
    /// Send WQEs executed (NOPs included).
    pub tx_wqes: u64,
    /// Frames put on the wire.
    pub tx_frames: u64,
    /// LSO outputs put on the wire as one superframe (their frames count in `tx_frames`).
    pub tx_superframes: u64,
    /// Bytes put on the wire.
    pub tx_bytes: u64,
    /// Frames not sent because the port was down.
    pub tx_link_down: u64,
    /// Send WQEs refused (error CQE, SQ to error).
    pub tx_errors: u64,
    /// WQEs flushed on an SQ in error.
    pub tx_flushed: u64,
    /// UMR WQEs applied on `reg_umr` SQs.
    pub tx_umrs: u64,
    /// Frames merged into an earlier one by LRO (each also counts in `rx_frames`).
    pub rx_lro_merged: u64,
    /// Packets of more than one segment LRO delivered.
    pub rx_lro_packets: u64,
    /// Filler CQEs of striding RQs.
    pub rx_fillers: u64,
    /// Frames from the wire.
    pub rx_wire: u64,
    /// Superframes from the wire cut into segments (each counts in `rx_wire`).
    pub rx_superframes: u64,
    /// Frames delivered into an RQ.
    pub rx_frames: u64,
    /// Frames dropped: port down.
    pub rx_link_down: u64,
    /// Frames dropped: longer than the port MTU.
    pub rx_oversize: u64,
    /// Frames dropped: malformed.
    pub rx_malformed: u64,
    /// Frames dropped by steering (no rule, drop rule).
    pub rx_steered_drop: u64,
    /// Frames dropped: the RQ had no WQE posted.
    pub rx_out_of_buffer: u64,
    /// Frames dropped: the RQ (or its TIR/RQT) is not ready.
    pub rx_no_rq: u64,
    /// Receive error CQEs.
    pub rx_errors: u64,
    /// CPU time spent executing SQ doorbells (engine, guest memory, wire writes), ns.
    pub tx_ns: u64,
    /// CPU time spent on frames from the wire (steering, engine, guest memory), ns.
    pub rx_ns: u64,
}

impl PathStats {
    /// One line for logs and the control socket.
    pub fn line(&self) -> String {
        format!(
            "tx: {} doorbells {} wqes {} frames {} bytes ({} link down, {} errors, {} flushed); \
             rx: {} from wire, {} delivered ({} link down, {} oversize, {} malformed, {} steered \
             away, {} out of buffer, {} no rq, {} errors); time tx {} us rx {} us; \
             superframes tx {} rx {}; umrs {}; lro {} merged into {} packets; {} fillers",
            self.sq_doorbells,
            self.tx_wqes,
            self.tx_frames,
            self.tx_bytes,
            self.tx_link_down,
            self.tx_errors,
            self.tx_flushed,
            self.rx_wire,
            self.rx_frames,
            self.rx_link_down,
            self.rx_oversize,
            self.rx_malformed,
            self.rx_steered_drop,
            self.rx_out_of_buffer,
            self.rx_no_rq,
            self.rx_errors,
            self.tx_ns / 1000,
            self.rx_ns / 1000,
            self.tx_superframes,
            self.rx_superframes,
            self.tx_umrs,
            self.rx_lro_merged,
            self.rx_lro_packets,
            self.rx_fillers
        )
    }
}
