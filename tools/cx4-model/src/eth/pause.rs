//! MAC control frames (IEEE 802.3 Annex 31B pause, 802.1Qbb PFC) and a frame's priority.
//!
//! Pure functions: [`parse_mac_control`] recognises a received MAC control frame,
//! [`pfc_frame`] / [`pause_frame`] build the ones the port sends, [`frame_priority`] classifies
//! a frame by the port's trust state, and [`pause_time`] converts quanta to time at a link
//! speed. The pause state machine that uses them is `crate::pause`.

use std::time::Duration;

/// Ethertype of MAC control frames.
pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;
/// MAC control opcode of 802.3x (global) pause.
pub const OPCODE_PAUSE: u16 = 0x0001;
/// MAC control opcode of priority flow control (802.1Qbb).
pub const OPCODE_PFC: u16 = 0x0101;
/// Destination of pause and PFC frames (a bridge never forwards it).
pub const PAUSE_DMAC: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
/// Largest pause quanta: the XOFF the port sends.
pub const XOFF_QUANTA: u16 = 0xffff;
/// Bit times per pause quantum.
pub const QUANTUM_BITS: u64 = 512;
/// Minimum frame length without FCS.
const MIN_FRAME: usize = 60;

/// A received MAC control frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MacControl {
    /// 802.3x pause of all traffic for `quanta` (0: resume).
    Pause {
        /// Pause time in quanta.
        quanta: u16,
    },
    /// PFC: for each priority whose bit is set in `enable`, pause for `quanta[p]` (0: resume).
    Pfc {
        /// Class-enable vector.
        enable: u8,
        /// Pause time per priority.
        quanta: [u16; 8],
    },
    /// Any other (or truncated) MAC control frame.
    Unsupported {
        /// Its opcode (0 if the frame is too short to carry one).
        opcode: u16,
    },
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// The MAC control frame in `frame` (ethertype 0x8808, untagged as 802.3 requires), or `None`
/// for any other frame.
pub fn parse_mac_control(frame: &[u8]) -> Option<MacControl> {
    if be16(frame, 12)? != ETHERTYPE_MAC_CONTROL {
        return None;
    }
    let Some(opcode) = be16(frame, 14) else {
        return Some(MacControl::Unsupported { opcode: 0 });
    };
    Some(match opcode {
        OPCODE_PAUSE => match be16(frame, 16) {
            Some(quanta) => MacControl::Pause { quanta },
            None => MacControl::Unsupported { opcode },
        },
        OPCODE_PFC => {
            let (Some(enable), Some(_)) = (be16(frame, 16), be16(frame, 18 + 7 * 2)) else {
                return Some(MacControl::Unsupported { opcode });
            };
            let mut quanta = [0u16; 8];
            for (p, q) in quanta.iter_mut().enumerate() {
                *q = be16(frame, 18 + 2 * p).unwrap_or(0);
            }
            MacControl::Pfc {
                enable: enable as u8,
                quanta,
            }
        }
        _ => MacControl::Unsupported { opcode },
    })
}

fn mac_control_frame(src: [u8; 6], opcode: u16, body: &[u16]) -> Vec<u8> {
    let mut f = Vec::with_capacity(MIN_FRAME);
    f.extend_from_slice(&PAUSE_DMAC);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ETHERTYPE_MAC_CONTROL.to_be_bytes());
    f.extend_from_slice(&opcode.to_be_bytes());
    for v in body {
        f.extend_from_slice(&v.to_be_bytes());
    }
    f.resize(MIN_FRAME, 0);
    f
}

/// A PFC frame from `src`: priorities in `enable` paused for `quanta` (0: XON).
pub fn pfc_frame(src: [u8; 6], enable: u8, quanta: u16) -> Vec<u8> {
    let mut body = [0u16; 9];
    body[0] = enable.into();
    for p in 0..8 {
        if enable & (1 << p) != 0 {
            body[1 + p] = quanta;
        }
    }
    mac_control_frame(src, OPCODE_PFC, &body)
}

/// An 802.3x pause frame from `src` for `quanta` (0: XON).
pub fn pause_frame(src: [u8; 6], quanta: u16) -> Vec<u8> {
    mac_control_frame(src, OPCODE_PAUSE, &[quanta])
}

/// The time `quanta` pause quanta last at `bits_per_sec`.
pub fn pause_time(quanta: u16, bits_per_sec: u64) -> Duration {
    let bits = u128::from(quanta) * u128::from(QUANTUM_BITS);
    let ns = bits * 1_000_000_000 / u128::from(bits_per_sec.max(1));
    Duration::from_nanos(ns as u64)
}

/// VLAN tag protocol identifiers.
const TPIDS: [u16; 3] = [0x8100, 0x88a8, 0x9100];

/// A frame's priority: with `trust_dscp`, an IPv4/IPv6 frame's DSCP through `dscp2prio`;
/// otherwise (and for non-IP frames) the PCP of its outer VLAN tag, 0 if untagged. Truncated
/// frames are priority 0.
pub fn frame_priority(frame: &[u8], trust_dscp: bool, dscp2prio: &[u8; 64]) -> u8 {
    let Some(mut ethertype) = be16(frame, 12) else {
        return 0;
    };
    let mut l3 = 14;
    let mut pcp = 0;
    if TPIDS.contains(&ethertype) {
        pcp = frame.get(14).map_or(0, |b| b >> 5);
        ethertype = be16(frame, 16).unwrap_or(0);
        l3 = 18;
        // A second tag (QinQ): the classification stays on the outer PCP.
        if TPIDS.contains(&ethertype) {
            ethertype = be16(frame, 20).unwrap_or(0);
            l3 = 22;
        }
    }
    if trust_dscp {
        let dscp = match ethertype {
            0x0800 => frame.get(l3 + 1).map(|tos| tos >> 2),
            0x86dd => be16(frame, l3).map(|w| ((w >> 4) & 0xff) as u8 >> 2),
            _ => None,
        };
        if let Some(d) = dscp {
            return dscp2prio[usize::from(d & 0x3f)] & 7;
        }
    }
    pcp
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 9];

    #[test]
    fn built_frames_parse_back() {
        let f = pfc_frame(SRC, 0x08, XOFF_QUANTA);
        assert_eq!(f.len(), 60);
        assert_eq!(&f[..6], &PAUSE_DMAC);
        assert_eq!(&f[12..18], &[0x88, 0x08, 0x01, 0x01, 0x00, 0x08]);
        let mut quanta = [0; 8];
        quanta[3] = 0xffff;
        assert_eq!(
            parse_mac_control(&f),
            Some(MacControl::Pfc {
                enable: 0x08,
                quanta
            })
        );
        let f = pause_frame(SRC, 0);
        assert_eq!(parse_mac_control(&f), Some(MacControl::Pause { quanta: 0 }));
    }

    #[test]
    fn other_and_short_frames() {
        assert_eq!(parse_mac_control(&[0u8; 60]), None);
        let mut f = pause_frame(SRC, 1);
        f[15] = 0x02;
        assert_eq!(
            parse_mac_control(&f),
            Some(MacControl::Unsupported { opcode: 2 })
        );
        assert_eq!(
            parse_mac_control(&f[..14]),
            Some(MacControl::Unsupported { opcode: 0 })
        );
        let f = pfc_frame(SRC, 1, 1);
        assert_eq!(
            parse_mac_control(&f[..20]),
            Some(MacControl::Unsupported { opcode: OPCODE_PFC })
        );
    }

    #[test]
    fn pause_time_is_512_bit_times_per_quantum() {
        assert_eq!(pause_time(1, 100_000_000_000), Duration::from_nanos(5));
        assert_eq!(
            pause_time(0xffff, 25_000_000_000),
            Duration::from_nanos(0xffff * 512 / 25)
        );
        assert_eq!(pause_time(0, 1), Duration::ZERO);
    }

    #[test]
    fn priority_by_pcp_or_dscp() {
        let map: [u8; 64] = std::array::from_fn(|d| (d >> 3) as u8);
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[15] = 46 << 2; // EF
        assert_eq!(frame_priority(&f, false, &map), 0, "untagged: 0");
        assert_eq!(frame_priority(&f, true, &map), 5, "DSCP 46 → 5");
        let mut t = vec![0u8; 64];
        t[12..14].copy_from_slice(&[0x81, 0x00]);
        t[14] = 3 << 5;
        t[16..18].copy_from_slice(&[0x86, 0xdd]);
        t[18] = 0x6b; // version 6, traffic class 0xb8 = DSCP 46
        t[19] = 0x80;
        assert_eq!(frame_priority(&t, false, &map), 3, "PCP 3");
        assert_eq!(frame_priority(&t, true, &map), 5, "IPv6 DSCP 46");
        t[16..18].copy_from_slice(&[0x88, 0xb5]);
        assert_eq!(frame_priority(&t, true, &map), 3, "non-IP under DSCP: PCP");
        assert_eq!(frame_priority(&t[..10], true, &map), 0);
    }
}
