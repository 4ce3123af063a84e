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
    /// CPU time spent executing SQ doorbells (engine, guest memory, wire writes), ns,
    /// estimated from a sample ([`PathStats::time_start`]).
    pub tx_ns: u64,
    /// CPU time spent on frames from the wire (steering, engine, guest memory), ns, estimated
    /// from a sample.
    pub rx_ns: u64,
    /// Doorbells and wire frames seen by [`PathStats::time_start`].
    timed: u64,
}

/// One in this many doorbells and wire frames has its thread CPU time read for `tx_ns` and
/// `rx_ns` (each reading is a system call, two per event would cost more than a small
/// frame's data path); the sample, scaled by this, estimates the whole.
pub const CPU_SAMPLE: u64 = 8;

impl PathStats {
    /// Starts timing a doorbell or wire frame if it is in the sample: the thread's CPU time
    /// now, for [`PathStats::time_since`]. The sample is one in [`CPU_SAMPLE`] events spread
    /// by a multiplicative hash of their count, so no periodic pattern of the traffic keeps
    /// the same kind of event in or out of it.
    pub fn time_start(&mut self) -> Option<u64> {
        self.timed = self.timed.wrapping_add(1);
        let pick = self.timed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 61 == 0;
        pick.then(crate::clock::thread_cpu_ns)
    }

    /// The CPU time since `t0` ([`PathStats::time_start`]) scaled to stand for the events
    /// outside the sample; 0 for an event outside it.
    pub fn time_since(t0: Option<u64>) -> u64 {
        t0.map_or(0, |t| {
            crate::clock::thread_cpu_ns().saturating_sub(t) * CPU_SAMPLE
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_event_in_cpu_sample_is_timed_and_scaled() {
        let mut p = PathStats::default();
        let n = 8000;
        let timed = (0..n).filter(|_| p.time_start().is_some()).count() as u64;
        assert!(
            timed.abs_diff(n / CPU_SAMPLE) <= 10,
            "{timed} of {n} events timed"
        );
        // No run of untimed events much longer than the sample period.
        let longest = (0..n)
            .map(|_| p.time_start().is_some())
            .fold((0, 0), |(run, max), t| {
                if t {
                    (0, max)
                } else {
                    (run + 1, max.max(run + 1))
                }
            })
            .1;
        assert!(
            longest <= 2 * CPU_SAMPLE,
            "{longest} events in a row untimed"
        );
        assert_eq!(PathStats::time_since(None), 0);
        let t0 = crate::clock::thread_cpu_ns();
        assert!(PathStats::time_since(Some(t0)).is_multiple_of(CPU_SAMPLE));
    }
}
