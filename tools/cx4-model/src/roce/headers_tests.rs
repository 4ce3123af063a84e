use super::*;

/// The RC, UC and UD rows of rxe's `rxe_opcode[]` (drivers/infiniband/sw/rxe/rxe_opcode.c
/// of Linux 7.2.12, values from include/rdma/ib_pack.h), transcribed mechanically: opcode,
/// name, extension headers in offset order, `.length` (BTH plus extension headers) and
/// whether `RXE_PAYLOAD_MASK` is set. RD and rxe's FLUSH/ATOMIC_WRITE rows are left out
/// (not implemented by the ConnectX-4); rxe has no CNP row.
#[allow(clippy::type_complexity)]
const RXE: &[(u8, &str, &[Ext], usize, bool)] = &[
    (0x00, "RC_SEND_FIRST", &[], 12, true),
    (0x01, "RC_SEND_MIDDLE", &[], 12, true),
    (0x02, "RC_SEND_LAST", &[], 12, true),
    (0x03, "RC_SEND_LAST_WITH_IMMEDIATE", &[Ext::ImmDt], 16, true),
    (0x04, "RC_SEND_ONLY", &[], 12, true),
    (0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", &[Ext::ImmDt], 16, true),
    (0x06, "RC_RDMA_WRITE_FIRST", &[Ext::Reth], 28, true),
    (0x07, "RC_RDMA_WRITE_MIDDLE", &[], 12, true),
    (0x08, "RC_RDMA_WRITE_LAST", &[], 12, true),
    (
        0x09,
        "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
        &[Ext::ImmDt],
        16,
        true,
    ),
    (0x0a, "RC_RDMA_WRITE_ONLY", &[Ext::Reth], 28, true),
    (
        0x0b,
        "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
        &[Ext::Reth, Ext::ImmDt],
        32,
        true,
    ),
    (0x0c, "RC_RDMA_READ_REQUEST", &[Ext::Reth], 28, false),
    (0x0d, "RC_RDMA_READ_RESPONSE_FIRST", &[Ext::Aeth], 16, true),
    (0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE", &[], 12, true),
    (0x0f, "RC_RDMA_READ_RESPONSE_LAST", &[Ext::Aeth], 16, true),
    (0x10, "RC_RDMA_READ_RESPONSE_ONLY", &[Ext::Aeth], 16, true),
    (0x11, "RC_ACKNOWLEDGE", &[Ext::Aeth], 16, false),
    (
        0x12,
        "RC_ATOMIC_ACKNOWLEDGE",
        &[Ext::Aeth, Ext::AtomicAckEth],
        24,
        false,
    ),
    (0x13, "RC_COMPARE_SWAP", &[Ext::AtomicEth], 40, false),
    (0x14, "RC_FETCH_ADD", &[Ext::AtomicEth], 40, false),
    (0x16, "RC_SEND_LAST_WITH_INVALIDATE", &[Ext::Ieth], 16, true),
    (0x17, "RC_SEND_ONLY_WITH_INVALIDATE", &[Ext::Ieth], 16, true),
    (0x20, "UC_SEND_FIRST", &[], 12, true),
    (0x21, "UC_SEND_MIDDLE", &[], 12, true),
    (0x22, "UC_SEND_LAST", &[], 12, true),
    (0x23, "UC_SEND_LAST_WITH_IMMEDIATE", &[Ext::ImmDt], 16, true),
    (0x24, "UC_SEND_ONLY", &[], 12, true),
    (0x25, "UC_SEND_ONLY_WITH_IMMEDIATE", &[Ext::ImmDt], 16, true),
    (0x26, "UC_RDMA_WRITE_FIRST", &[Ext::Reth], 28, true),
    (0x27, "UC_RDMA_WRITE_MIDDLE", &[], 12, true),
    (0x28, "UC_RDMA_WRITE_LAST", &[], 12, true),
    (
        0x29,
        "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
        &[Ext::ImmDt],
        16,
        true,
    ),
    (0x2a, "UC_RDMA_WRITE_ONLY", &[Ext::Reth], 28, true),
    (
        0x2b,
        "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
        &[Ext::Reth, Ext::ImmDt],
        32,
        true,
    ),
    (0x64, "UD_SEND_ONLY", &[Ext::Deth], 20, true),
    (
        0x65,
        "UD_SEND_ONLY_WITH_IMMEDIATE",
        &[Ext::Deth, Ext::ImmDt],
        24,
        true,
    ),
];

#[test]
fn opcode_table_matches_rxe() {
    for &(code, name, exts, len, payload) in RXE {
        let op = Opcode::from_u8(code).unwrap_or_else(|e| panic!("{name}: {e}"));
        let info = op.info();
        assert_eq!(info.name, name);
        assert_eq!(info.headers, exts, "{name}");
        assert_eq!(info.header_len(), len, "{name}");
        assert_eq!(info.payload, payload, "{name}");
    }
    // Ours is rxe's set plus the CNP, the XRC rows (`xrc_wire_tests.rs`) and the model's DC
    // rows (`dc.rs`), one for each RC opcode.
    let count = |s| Opcode::ALL.iter().filter(|o| o.info().service == s).count();
    let (xrc, dc) = (count(Service::Xrc), count(Service::Dc));
    assert_eq!(dc, count(Service::Rc));
    assert_eq!(Opcode::ALL.len(), RXE.len() + 1 + xrc + dc);
    let cnp = Opcode::Cnp.info();
    assert_eq!(Opcode::Cnp.value(), 0x81);
    assert_eq!(
        (cnp.name, cnp.service, cnp.payload),
        ("CNP", Service::Cnp, false)
    );
    assert_eq!(cnp.header_len(), BTH_LEN + 16);
}

#[test]
fn opcode_values_and_services() {
    for v in 0..=255u8 {
        match Opcode::from_u8(v) {
            Ok(op) => {
                assert_eq!(op.value(), v);
                let prefix = match op.info().service {
                    Service::Rc => (v >> 5 == 0, "RC_"),
                    Service::Uc => (v >> 5 == 1, "UC_"),
                    Service::Ud => (v >> 5 == 3, "UD_"),
                    Service::Cnp => (v >> 5 == 4, "CNP"),
                    Service::Xrc => (v >> 5 == 5, "XRC_"),
                    Service::Dc => (v >> 5 == 6, "DC_"),
                };
                assert!(prefix.0, "{v:#x} service");
                assert!(op.name().starts_with(prefix.1), "{v:#x} name");
            }
            Err(e) => assert_eq!(e, WireError::UnknownOpcode(v)),
        }
    }
    assert_eq!(
        Opcode::from_u8(0x15),
        Err(WireError::UnknownOpcode(0x15)),
        "0x15 is reserved"
    );
    assert_eq!(
        Opcode::ALL
            .iter()
            .filter(|o| (0x80..0xa0).contains(&o.value()))
            .count(),
        1
    );
}

/// Sample extension headers for `op`, every field away from zero.
fn sample_ext(op: Opcode, seed: u32) -> ExtHeaders {
    let mut ext = ExtHeaders::default();
    for &kind in op.info().headers {
        match kind {
            Ext::Deth => {
                ext.deth = Some(Deth {
                    qkey: 0x8001_0000 ^ seed,
                    src_qp: 0x00ab_cdef ^ (seed & 0xff),
                })
            }
            Ext::Reth => {
                ext.reth = Some(Reth {
                    va: 0x0123_4567_89ab_cdef ^ u64::from(seed),
                    rkey: 0xfeed_0000 | seed,
                    dma_len: 0x1000 + seed,
                })
            }
            Ext::AtomicEth => {
                ext.atomic = Some(AtomicEth {
                    va: 0x7f00_0000_1000 + u64::from(seed) * 8,
                    rkey: 0x1234_5678,
                    swap_add: 0xdead_beef_0000_0001,
                    compare: 0x0000_0001_dead_beef,
                })
            }
            Ext::Aeth => {
                ext.aeth = Some(Aeth {
                    syndrome: Syndrome::Nak(NakCode::RemoteAccessError),
                    msn: 0x00ff_fffe ^ seed,
                })
            }
            Ext::AtomicAckEth => {
                ext.atomic_ack = Some(AtomicAckEth {
                    orig: 0xa5a5_5a5a_0f0f_f0f0,
                })
            }
            Ext::ImmDt => {
                ext.imm = Some(ImmDt {
                    imm: 0xcafe_0000 | seed,
                })
            }
            Ext::Ieth => ext.ieth = Some(Ieth { rkey: 0x0bad_f00d }),
            Ext::Xrceth => {
                ext.xrc = Some(Xrceth {
                    srqn: 0x00fe_dcba ^ (seed & 0xff),
                })
            }
            Ext::Dceth => {
                ext.dc = Some(crate::roce::headers::Dceth {
                    key: 0xfedc_ba98_7654_3210 ^ u64::from(seed),
                    dci: 0x00ab_cdef ^ (seed & 0xff),
                    conn_psn: 0x0012_3456 ^ (seed & 0xff),
                })
            }
            Ext::CnpReserved => {}
        }
    }
    ext
}

#[test]
fn every_opcode_round_trips() {
    for (i, &op) in Opcode::ALL.iter().enumerate() {
        let t = TransportHeaders {
            bth: Bth {
                solicited: i % 2 == 0,
                migreq: i % 3 == 0,
                pad: (i % 4) as u8,
                tver: 0,
                pkey: 0x8000 | i as u16,
                fecn: i % 5 == 0,
                becn: i % 7 == 0,
                ack_req: i % 2 == 1,
                ..Bth::new(op, 0x00ff_ff00 | i as u32, 0x00ff_fff0 + i as u32 % 16)
            },
            ext: sample_ext(op, i as u32),
        };
        let mut buf = [0xeeu8; 64];
        let n = t.encode(&mut buf).unwrap();
        assert_eq!(n, op.info().header_len(), "{}", op.name());
        assert_eq!(n, t.wire_len());
        assert_eq!(buf[n], 0xee, "{}: wrote past its headers", op.name());
        let (back, m) = TransportHeaders::decode(&buf[..n]).unwrap();
        assert_eq!((back, m), (t, n), "{}", op.name());
        // Every shorter input is a truncation, never a panic.
        for cut in 0..n {
            assert!(
                matches!(
                    TransportHeaders::decode(&buf[..cut]),
                    Err(WireError::Truncated { .. })
                ),
                "{} cut at {cut}",
                op.name()
            );
            assert!(
                matches!(
                    t.encode(&mut [0u8; 64][..cut]),
                    Err(WireError::BufferTooSmall { .. })
                ),
                "{} into {cut}",
                op.name()
            );
        }
    }
}

#[test]
fn bth_bit_positions() {
    let b = [
        0x0a, 0xb0, 0x80, 0x01, 0xc0, 0x12, 0x34, 0x56, 0x80, 0xab, 0xcd, 0xef,
    ];
    let bth = Bth::decode(&b).unwrap();
    assert_eq!(
        bth,
        Bth {
            opcode: Opcode::RcRdmaWriteOnly,
            solicited: true,
            migreq: false,
            pad: 3,
            tver: 0,
            pkey: 0x8001,
            fecn: true,
            becn: true,
            dest_qp: 0x12_3456,
            ack_req: true,
            psn: 0xab_cdef,
        }
    );
    let mut out = [0u8; BTH_LEN];
    bth.encode(&mut out).unwrap();
    assert_eq!(out, b);
    // Reserved bits are ignored on receipt and sent as zero.
    let mut r = b;
    r[4] |= 0x3f;
    r[8] |= 0x7f;
    assert_eq!(Bth::decode(&r).unwrap(), bth);
    // The migreq bit and the version nibble.
    let m = Bth::decode(&[0x04, 0x4f, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]).unwrap();
    assert!(m.migreq && !m.solicited);
    assert_eq!((m.pad, m.tver), (0, 0xf));
}

#[test]
fn extension_header_layouts() {
    let mut b = [0u8; ATOMIC_ETH_LEN];
    Reth {
        va: 0x0102_0304_0506_0708,
        rkey: 0x090a_0b0c,
        dma_len: 0x0d0e_0f10,
    }
    .encode(&mut b)
    .unwrap();
    assert_eq!(&b[..16], &(1..=16).collect::<Vec<u8>>()[..]);
    AtomicEth {
        va: 0x0102_0304_0506_0708,
        rkey: 0x090a_0b0c,
        swap_add: 0x0d0e_0f10_1112_1314,
        compare: 0x1516_1718_191a_1b1c,
    }
    .encode(&mut b)
    .unwrap();
    assert_eq!(&b[..], &(1..=28).collect::<Vec<u8>>()[..]);
    Deth {
        qkey: 0x8001_0000,
        src_qp: 0x12_3456,
    }
    .encode(&mut b)
    .unwrap();
    assert_eq!(&b[..8], &[0x80, 0x01, 0, 0, 0, 0x12, 0x34, 0x56]);
    // The reserved byte before the source QP is ignored.
    let d = Deth::decode(&[0, 0, 0, 1, 0xff, 0, 0, 2]).unwrap();
    assert_eq!((d.qkey, d.src_qp), (1, 2));
    Aeth {
        syndrome: Syndrome::RnrNak { timer: 14 },
        msn: 0x01_0203,
    }
    .encode(&mut b)
    .unwrap();
    assert_eq!(&b[..4], &[0x2e, 0x01, 0x02, 0x03]);
}

#[test]
fn aeth_syndromes() {
    let mut valid = 0;
    for v in 0..=255u8 {
        match Syndrome::from_u8(v) {
            Ok(s) => {
                valid += 1;
                assert_eq!(s.to_u8(), Ok(v));
            }
            Err(e) => assert_eq!(e, WireError::AethSyndrome(v)),
        }
    }
    // 32 ACK credit counts, 32 RNR timers, 5 NAK codes.
    assert_eq!(valid, 69);
    assert_eq!(
        Syndrome::from_u8(0x1f),
        Ok(Syndrome::Ack {
            credits: Syndrome::CREDITS_INVALID
        })
    );
    let naks = [
        (0x60, NakCode::PsnSequenceError),
        (0x61, NakCode::InvalidRequest),
        (0x62, NakCode::RemoteAccessError),
        (0x63, NakCode::RemoteOperationalError),
        (0x64, NakCode::InvalidRdRequest),
    ];
    for (v, code) in naks {
        assert_eq!(Syndrome::from_u8(v), Ok(Syndrome::Nak(code)));
    }
    assert_eq!(Syndrome::from_u8(0x65), Err(WireError::AethSyndrome(0x65)));
    assert_eq!(Syndrome::from_u8(0x40), Err(WireError::AethSyndrome(0x40)));
    assert_eq!(Syndrome::from_u8(0x80), Err(WireError::AethSyndrome(0x80)));
    assert_eq!(
        Aeth::decode(&[0x41, 0, 0, 0]),
        Err(WireError::AethSyndrome(0x41))
    );
}

#[test]
fn out_of_range_fields_are_errors() {
    let mut b = [0u8; 64];
    let range = |r: Result<(), WireError>| matches!(r, Err(WireError::FieldRange { .. }));
    let bth = Bth::new(Opcode::RcSendOnly, 1, 1);
    assert!(range(
        Bth {
            dest_qp: 1 << 24,
            ..bth
        }
        .encode(&mut b)
    ));
    assert!(range(
        Bth {
            psn: 1 << 24,
            ..bth
        }
        .encode(&mut b)
    ));
    assert!(range(Bth { pad: 4, ..bth }.encode(&mut b)));
    assert!(range(Bth { tver: 16, ..bth }.encode(&mut b)));
    assert!(range(
        Deth {
            qkey: 0,
            src_qp: 1 << 24
        }
        .encode(&mut b)
    ));
    let ack = |syndrome, msn| Aeth { syndrome, msn };
    assert!(range(
        ack(Syndrome::Ack { credits: 0 }, 1 << 24).encode(&mut b)
    ));
    assert!(range(ack(Syndrome::Ack { credits: 32 }, 0).encode(&mut b)));
    assert!(range(ack(Syndrome::RnrNak { timer: 32 }, 0).encode(&mut b)));
    assert_eq!(
        Bth {
            dest_qp: MASK_24,
            psn: MASK_24,
            ..bth
        }
        .encode(&mut b),
        Ok(())
    );
}

#[test]
fn mismatched_extension_headers_are_errors() {
    let bth = Bth::new(Opcode::RcRdmaWriteOnlyWithImmediate, 1, 1);
    let mut buf = [0u8; 64];
    let only_reth = ExtHeaders {
        reth: Some(Reth::default()),
        ..ExtHeaders::default()
    };
    let t = TransportHeaders {
        bth,
        ext: only_reth,
    };
    assert_eq!(t.encode(&mut buf), Err(WireError::MissingHeader("ImmDt")));
    let extra = ExtHeaders {
        imm: Some(ImmDt::default()),
        deth: Some(Deth::default()),
        ..only_reth
    };
    let t = TransportHeaders { bth, ext: extra };
    assert_eq!(t.encode(&mut buf), Err(WireError::UnexpectedHeader("DETH")));
    let ack = TransportHeaders {
        bth: Bth::new(Opcode::RcAcknowledge, 1, 1),
        ext: ExtHeaders::default(),
    };
    assert_eq!(ack.encode(&mut buf), Err(WireError::MissingHeader("AETH")));
}

#[test]
fn garbage_never_panics() {
    // Every byte value as an opcode, with every short tail.
    for op in 0..=255u8 {
        let mut b = [0xa5u8; 64];
        b[0] = op;
        b[1] = op.rotate_left(3);
        for len in 0..b.len() {
            let _ = TransportHeaders::decode(&b[..len]);
        }
    }
}
