//! The vector-calc (erasure-coding) engine through the device, as MLNX_OFED's libmlx5 drives
//! it: an RC QP connected to its own GID and QPN, a receive WQE for the result, the SEND with
//! opmod 0xff and the vector-calc segment, and the receive CQE libmlx5 waits for. Results are
//! compared with independent references — GF-Complete/Jerasure (w = 4) and ISA-L (w = 8)
//! through `tools/ec-ref/ec_ref.c`, compiled here with gcc — and decoding with the libraries'
//! own decoding matrices must restore erased blocks.
//!
//! Until UMR WQEs are modelled the receive is a plain MR and the test de-interleaves the
//! stream itself (what libmlx5's repeat-block mkey does); inputs are one contiguous range of
//! a plain MTT MR (libmlx5's `contig` case, no input UMR).

use std::{
    io::Write,
    path::PathBuf,
    process::{Command, Stdio},
    sync::{Arc, OnceLock},
};

use cx4_hw::{
    caps::{query_op_mod, QueryHcaCapIn, QueryHcaCapOut},
    command::{self as cmds},
    cq::cqe::{opcode as cqe_op, syndrome},
    pd::AllocPdOut,
    qp::{mtu, qpc_st, qpc_state, rq_type, CreateQpIn, CreateQpOut, QueryQpOut},
    wqe::{
        self, opcode as wop,
        vector_calc::{calc_op, noutputs, VecCalcSeg, CALC_MATRIX, CALC_MATRIX_8BIT},
    },
};
use zerocopy::FromBytes;

use super::fixture::{self, exec, input, ok, view};
use crate::{device::Device, ec::calc::deinterleave, wire::Loopback};

const BASE: u64 = 0x10_0000;
const MEM: u64 = 0x280_0000;
const SCQ_RING: u64 = BASE + 0x1000;
const RCQ_RING: u64 = BASE + 0x2000;
const DBRS: u64 = BASE + 0x3000;
const QP_DBR: u64 = DBRS + 0x100;
const QP_BUF: u64 = BASE + 0x4000;
/// Receive queue: 16 WQEs of 64 bytes; the send queue (64 basic blocks) after it.
const RQ_BYTES: u64 = 16 * 64;
/// Guest memory of the MR: 32 MiB in 2 MiB pages.
const DATA: u64 = 0x40_0000;
const DATA_LEN: u64 = 0x200_0000;
const VA: u64 = 0x7000_0000;
/// Where the tests put things inside the MR.
const VA_MATRIX: u64 = VA;
const VA_OUT: u64 = VA + 0x10_0000;
const VA_IN: u64 = VA + 0x80_0000;
const UAR: u32 = 8;
const SCQ: u32 = 0x10;
const RCQ: u32 = 0x11;

fn data_seg(len: u32, lkey: u32, addr: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&len.to_be_bytes());
    b[4..8].copy_from_slice(&lkey.to_be_bytes());
    b[8..16].copy_from_slice(&addr.to_be_bytes());
    b
}

/// One card with libmlx5's calc QP: RC, connected to its own GID and QPN.
struct EcCard {
    d: Device,
    port: Arc<Loopback>,
    lkey: u32,
    qpn: u32,
    sq_pc: u16,
    rq_pc: u16,
    scq_ci: u32,
    rcq_ci: u32,
}

/// What a calculation posts: libmlx5's segment fields.
#[derive(Clone, Debug)]
struct Post {
    /// `calc_op` of the four slots.
    ops: [u8; 4],
    mat_flags: u8,
    vec_count: u8,
    vec_size: u32,
    cm_lkey: u32,
    cm_addr: u64,
    vec_lkey: u32,
    vec_addr: u64,
    ds: u8,
}

impl EcCard {
    /// libmlx5's calc QP (path MTU 1024).
    fn new(extra: &str) -> EcCard {
        EcCard::with_mtu(extra, mtu::MTU_1K)
    }

    /// The calc QP at path MTU code `path_mtu` (cx4's engine: 4096).
    fn with_mtu(extra: &str, path_mtu: u8) -> EcCard {
        let args = format!("--socket /x --init-delay-ms 0 --eth --roce {extra}");
        let mut d = fixture::device(&args, BASE, MEM, UAR);
        d.fw.cqs.insert(SCQ, fixture::cq(SCQ, SCQ_RING, DBRS, UAR));
        d.fw.cqs
            .insert(RCQ, fixture::cq(RCQ, RCQ_RING, DBRS + 0x40, UAR));
        for ring in [SCQ_RING, RCQ_RING] {
            for k in 0..64u64 {
                d.bus.mem.write(ring + k * 64 + 63, &[0xf1]).unwrap();
            }
        }
        let port = Arc::new(Loopback::default());
        d.attach(port.clone());
        let mac = [0x02, 0xc4, 0, 0, 0, 1];
        let gid = fixture::v4_gid([10, 0, 0, 1]);
        fixture::set_gid0_v2_ipv4(&mut d, &gid, mac);
        let pd = view::<AllocPdOut>(&ok::<cmds::AllocPd>(&mut d, |_| {})).pd();
        // An MTT MR over DATA in 2 MiB pages, local read and write (libmlx5 registers the
        // matrix, data and code buffers with IBV_ACCESS_LOCAL_WRITE).
        let lkey = fixture::mtt_mr(&mut d, pd, (VA, DATA, DATA_LEN), 21, false);
        let mut v = input::<cmds::CreateQp>(|i| {
            let c = i.qpc_mut();
            c.set_st(qpc_st::RC.into());
            c.set_pd(pd);
            c.set_uar_page(UAR);
            c.set_cqn_snd(SCQ);
            c.set_cqn_rcv(RCQ);
            c.set_log_rq_size(4);
            c.set_log_rq_stride(2);
            c.set_rq_type(rq_type::NON_ZERO_RQ.into());
            c.set_log_sq_size(6);
            c.set_dbr_addr(QP_DBR);
        });
        v.resize(CreateQpIn::SIZE + 16, 0);
        CreateQpIn::set_pas(&mut v, 0, QP_BUF).unwrap();
        CreateQpIn::set_pas(&mut v, 1, QP_BUF + 0x1000).unwrap();
        let qpn = view::<CreateQpOut>(&exec(&mut d, &v, CreateQpOut::SIZE)).qpn();
        // alloc_calc_qp: INIT, RTR to itself (dest QPN = own, dgid = own GID 0, MTU 1024 —
        // or cx4's 4096 —, hop limit 1), RTS (timeout 14, retry and RNR retry 7).
        ok::<cmds::Rst2InitQp>(&mut d, |i| {
            i.set_qpn(qpn);
            i.qpc_mut().primary_address_path_mut().set_vhca_port_num(1);
        });
        ok::<cmds::Init2RtrQp>(&mut d, |i| {
            i.set_qpn(qpn);
            let c = i.qpc_mut();
            c.set_mtu(path_mtu.into());
            c.set_log_msg_max(30);
            c.set_remote_qpn(qpn);
            c.set_min_rnr_nak(12);
            let p = c.primary_address_path_mut();
            p.set_src_addr_index(0);
            p.set_hop_limit(1);
            p.set_rmac_47_32(u32::from(u16::from_be_bytes([mac[0], mac[1]])));
            p.set_rmac_31_0(u32::from_be_bytes([mac[2], mac[3], mac[4], mac[5]]));
            p.rgid_rip_mut().copy_from_slice(&gid);
            p.set_vhca_port_num(1);
        });
        ok::<cmds::Rtr2RtsQp>(&mut d, |i| {
            i.set_qpn(qpn);
            let c = i.qpc_mut();
            c.set_retry_count(7);
            c.set_rnr_retry(7);
            c.set_log_sra_max(0);
            c.primary_address_path_mut().set_ack_timeout(14);
        });
        EcCard {
            d,
            port,
            lkey,
            qpn,
            sq_pc: 0,
            rq_pc: 0,
            scq_ci: 0,
            rcq_ci: 0,
        }
    }

    fn write(&self, va: u64, b: &[u8]) {
        self.d.bus.mem.write(DATA + (va - VA), b).unwrap();
    }

    fn read(&self, va: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        self.d.bus.mem.read(DATA + (va - VA), &mut b).unwrap();
        b
    }

    /// ec_post_recv: one data segment (and the terminator).
    fn post_recv(&mut self, va: u64, len: u32) {
        let slot = u64::from(self.rq_pc) % 16;
        let mut w = [0u8; 64];
        w[..16].copy_from_slice(&data_seg(len, self.lkey, va));
        w[16..32].copy_from_slice(&data_seg(0, wqe::TERMINATE_SCATTER_LIST_LKEY, 0));
        self.d.bus.mem.write(QP_BUF + slot * 64, &w).unwrap();
        self.rq_pc = self.rq_pc.wrapping_add(1);
        self.d
            .bus
            .mem
            .write(QP_DBR, &u32::from(self.rq_pc).to_be_bytes())
            .unwrap();
    }

    /// The segment libmlx5's post_ec_vec_calc writes for `m` used outputs over the matrix at
    /// VA_MATRIX and the inputs at VA_IN.
    fn libmlx5(&self, k: u8, m: u8, w8: bool, size: u32) -> Post {
        let mut ops = [calc_op::NONE; 4];
        ops[..usize::from(m)].fill(calc_op::XOR);
        Post {
            ops,
            mat_flags: CALC_MATRIX | if w8 { CALC_MATRIX_8BIT } else { 0 },
            vec_count: k,
            vec_size: size & !3,
            cm_lkey: self.lkey,
            cm_addr: VA_MATRIX,
            vec_lkey: self.lkey,
            vec_addr: VA_IN,
            ds: 4,
        }
    }

    /// Posts the vector-calc SEND (unsignaled, as libmlx5) and rings the doorbell.
    fn post_calc(&mut self, p: &Post) {
        let idx = self.sq_pc;
        let mut s = VecCalcSeg::new();
        s.set_calc_op0(p.ops[0].into());
        s.set_calc_op1(p.ops[1].into());
        s.set_calc_op2(p.ops[2].into());
        s.set_calc_op3(p.ops[3].into());
        s.set_mat_le_tag_cs(p.mat_flags.into());
        s.set_vec_count(p.vec_count.into());
        s.set_cm_lkey(p.cm_lkey);
        s.set_cm_addr(p.cm_addr);
        s.set_vec_size(p.vec_size);
        s.set_vec_lkey(p.vec_lkey);
        s.set_vec_addr(p.vec_addr);
        let mut w = Vec::new();
        w.extend(wqe::opmod_idx_opcode(0xff, idx, wop::SEND).to_be_bytes());
        w.extend(wqe::qpn_ds(self.qpn, p.ds).to_be_bytes());
        w.extend([0, 0, 0, 0]);
        w.extend(0u32.to_be_bytes());
        w.extend(s.0);
        let slot = u64::from(idx) % 64;
        self.d
            .bus
            .mem
            .write(QP_BUF + RQ_BYTES + slot * 64, &w)
            .unwrap();
        self.sq_pc = self.sq_pc.wrapping_add(1);
        self.d
            .bus
            .mem
            .write(QP_DBR + 4, &u32::from(self.sq_pc).to_be_bytes())
            .unwrap();
        let db: [u8; 8] = w[..8].try_into().unwrap();
        self.d
            .region_write(0, u64::from(UAR) * 4096 + 0x800, &db)
            .unwrap();
    }

    fn next_cqe(&mut self, recv: bool) -> Option<[u8; 64]> {
        let (ring, dbr, ci) = if recv {
            (RCQ_RING, DBRS + 0x40, &mut self.rcq_ci)
        } else {
            (SCQ_RING, DBRS, &mut self.scq_ci)
        };
        let mut c = [0u8; 64];
        self.d
            .bus
            .mem
            .read(ring + u64::from(*ci % 64) * 64, &mut c)
            .unwrap();
        let owner = ((*ci >> 6) & 1) as u8;
        if c[63] >> 4 == cqe_op::INVALID || c[63] & 1 != owner {
            return None;
        }
        *ci += 1;
        self.d
            .bus
            .mem
            .write(dbr, &(*ci & 0xff_ffff).to_be_bytes())
            .unwrap();
        Some(c)
    }

    fn state(&mut self) -> u8 {
        let qpn = self.qpn;
        let out = ok::<cmds::QueryQp>(&mut self.d, |i| i.set_qpn(qpn));
        view::<QueryQpOut>(&out).qpc().state() as u8
    }

    /// libmlx5's encode/decode: matrix (k × NOUTPUTS(m), its layout) and inputs written, the
    /// receive posted for the whole stream, the SEND posted; returns the m outputs as the
    /// repeat-block mkey would spread them (and the dump for m = 3).
    fn calc(
        &mut self,
        matrix: &[u8],
        inputs: &[u8],
        k: u8,
        m: u8,
        w8: bool,
        size: u32,
    ) -> Vec<Vec<u8>> {
        let n = noutputs(m);
        assert_eq!(matrix.len(), usize::from(k) * usize::from(n));
        self.write(VA_MATRIX, matrix);
        self.write(VA_IN, inputs);
        let stream = size as usize * usize::from(n);
        self.post_recv(VA_OUT, stream as u32);
        let p = self.libmlx5(k, m, w8, size);
        self.post_calc(&p);
        assert!(
            self.port.take().is_empty(),
            "a self-connected QP loops back inside the card"
        );
        let c = self
            .next_cqe(true)
            .expect("the receive CQE libmlx5 waits for");
        assert_eq!(c[63] >> 4, cqe_op::RESP_SEND, "receive CQE {c:02x?}");
        assert_eq!(
            u32::from_be_bytes(c[0x2c..0x30].try_into().unwrap()) as usize,
            stream
        );
        assert!(self.next_cqe(false).is_none(), "the SEND is unsignaled");
        let got = self.read(VA_OUT, stream);
        deinterleave(&got, usize::from(n), size as usize, 64)
    }
}

/// libmlx5's matrix layout from a Jerasure/ISA-L coding matrix (`m` rows × k, row j = output
/// j): k rows × NOUTPUTS(m) columns, bit 4 set on every w ≠ 8 entry, the m = 3 dump column 0
/// (`reg_encode_matrix`, `mlx5_get_ec_decode_mat`).
fn libmlx5_matrix(coding: &[u8], k: usize, m: usize, w8: bool) -> Vec<u8> {
    let n = usize::from(noutputs(m as u8));
    let mut mat = vec![0u8; k * n];
    for i in 0..k {
        for j in 0..m {
            mat[i * n + j] = coding[j * k + i] | if w8 { 0 } else { 0x10 };
        }
    }
    mat
}

/// The reference program, built once per test run with gcc.
fn ec_ref() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ec-ref/ec_ref.c");
        let dir = std::env::current_exe()
            .unwrap()
            .parent()
            .unwrap()
            .to_path_buf();
        // Built under a private name and renamed, so concurrent test runs never see half a
        // binary; one file per target directory.
        let bin = dir.join("ec_ref");
        let tmp = dir.join(format!("ec_ref.tmp-{}", std::process::id()));
        let out = Command::new("gcc")
            .args(["-O2", "-Wall", "-Werror", "-I/usr/include/jerasure", "-o"])
            .arg(&tmp)
            .arg(&src)
            .args(["-lJerasure", "-lgf_complete", "-lisal"])
            .output()
            .expect("gcc (a host prerequisite) must be installed");
        assert!(
            out.status.success(),
            "building {} failed — the references GF-Complete, Jerasure and ISA-L are host \
             prerequisites (apt-get install libgf-complete-dev libjerasure-dev libisal-dev; \
             tools/testbed/host-deps.sh installs them):\n{}",
            src.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::rename(&tmp, &bin).unwrap();
        bin
    })
}

/// Runs the reference; `None` when it has no such matrix (exit 2) or the survivors cannot
/// decode (exit 3).
fn run_ref(args: &[String], stdin: &[u8]) -> Option<Vec<u8>> {
    let mut child = Command::new(ec_ref())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut si = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || si.write_all(&data));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    match out.status.code() {
        Some(0) => Some(out.stdout),
        Some(2) | Some(3) => None,
        _ => panic!(
            "ec_ref {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| (self.next() >> 32) as u8).collect()
    }
}

/// What a round did.
#[derive(Debug, PartialEq, Eq)]
enum Round {
    /// The reference has no such matrix.
    NoMatrix,
    /// Encoded (and, if asked, decoded `decoded` erasure patterns).
    Done { decoded: usize },
}

/// One encode and (if `erase`) decode round against the reference.
/// One round: k, m, the matrix kind, the block size, whether to erase and decode too.
type Case = (usize, usize, String, u32, bool);

fn round(card: &mut EcCard, rng: &mut Rng, w: u32, case: &Case) -> Round {
    let (k, m, kind, size, erase) = (case.0, case.1, case.2.as_str(), case.3, case.4);
    let w8 = w == 8;
    let ctx = format!("w={w} k={k} m={m} {kind} size={size}");
    let data = rng.bytes(k * size as usize);
    let args = |cmd: &str, tail: Vec<String>| {
        let mut a = vec![
            cmd.to_string(),
            w.to_string(),
            k.to_string(),
            m.to_string(),
            kind.to_string(),
        ];
        a.extend(tail);
        a
    };
    let Some(out) = run_ref(&args("encode", vec![size.to_string()]), &data) else {
        return Round::NoMatrix;
    };
    let (coding, code) = out.split_at(m * k);
    assert_eq!(code.len(), m * size as usize, "{ctx}");
    let got = card.calc(
        &libmlx5_matrix(coding, k, m, w8),
        &data,
        k as u8,
        m as u8,
        w8,
        size,
    );
    for j in 0..m {
        assert!(
            got[j] == code[j * size as usize..(j + 1) * size as usize],
            "{ctx}: code block {j} differs from the reference"
        );
    }
    if m == 3 {
        assert!(
            got[3].iter().all(|&b| b == 0),
            "{ctx}: the dump output is zero"
        );
    }
    if !erase {
        return Round::Done { decoded: 0 };
    }
    // Erase 1..=m blocks (data or code), decode from the first k survivors with the
    // reference's decoding matrix, as libmlx5's decode does.
    let blocks: Vec<&[u8]> = data
        .chunks(size as usize)
        .chain(code.chunks(size as usize))
        .collect();
    for _ in 0..4 {
        let e = 1 + rng.below(m as u64) as usize;
        let mut erased: Vec<usize> = Vec::new();
        while erased.len() < e {
            let b = rng.below((k + m) as u64) as usize;
            if !erased.contains(&b) {
                erased.push(b);
            }
        }
        erased.sort_unstable();
        let tail = erased.iter().map(|e| e.to_string()).collect();
        let Some(dec) = run_ref(&args("decode", tail), &[]) else {
            continue; // a Vandermonde matrix that is not MDS for this pattern
        };
        let survivors: Vec<u8> = (0..k + m)
            .filter(|i| !erased.contains(i))
            .take(k)
            .flat_map(|i| blocks[i].to_vec())
            .collect();
        let got = card.calc(
            &libmlx5_matrix(&dec, k, e, w8),
            &survivors,
            k as u8,
            e as u8,
            w8,
            size,
        );
        for (r, &b) in erased.iter().enumerate() {
            assert!(
                got[r] == blocks[b],
                "{ctx}: erased block {b} of {erased:?} not restored"
            );
        }
        return Round::Done { decoded: 1 };
    }
    Round::Done { decoded: 0 }
}

/// Runs rounds; returns (encoded, decoded).
fn rounds(card: &mut EcCard, rng: &mut Rng, w: u32, cases: &[Case]) -> (usize, usize) {
    let (mut enc, mut dec) = (0, 0);
    for case in cases {
        let (k, m, kind) = (case.0, case.1, &case.2);
        match round(card, rng, w, case) {
            Round::Done { decoded } => {
                enc += 1;
                dec += decoded;
            }
            Round::NoMatrix => panic!("w={w} k={k} m={m} {kind}: the reference has no matrix"),
        }
    }
    (enc, dec)
}

#[test]
fn gf16_engine_matches_gf_complete_and_decodes() {
    let mut card = EcCard::new("");
    let mut rng = Rng(0x4e43_3416);
    // Vandermonde and Cauchy (Jerasure's need k + m <= 16 at w = 4), m = 3 with its dump
    // column, 64 B to 1 MiB; then random matrices (any k <= 16, m <= 4), encode only.
    let mut cases: Vec<Case> = [
        (10, 4, "vand", 4096),
        (8, 3, "cauchy", 64),
        (12, 3, "vand", 1 << 20),
        (4, 2, "cauchy", 1088),
        (1, 1, "vand", 64),
        (13, 3, "cauchy", 65536),
        (11, 4, "cauchy", 512),
    ]
    .iter()
    .map(|&(k, m, kind, size)| (k, m, kind.to_string(), size, true))
    .collect();
    for i in 0..8 {
        let (k, m) = (1 + rng.below(16) as usize, 1 + rng.below(4) as usize);
        let kind = format!("random:{}", rng.below(1 << 30));
        cases.push((k, m, kind, [64, 256, 4096, 8192][i % 4], false));
    }
    let (enc, dec) = rounds(&mut card, &mut rng, 4, &cases);
    assert_eq!(
        (enc, dec),
        (15, 7),
        "every round encoded, every MDS round decoded"
    );
    assert_eq!(card.d.roce.state.stats.ec_calcs, 22);
    assert_eq!(card.d.roce.state.stats.ec_errors, 0);
    assert_eq!(card.state(), qpc_state::RTS);
}

#[test]
fn gf256_profile_matches_isa_l_and_decodes() {
    let mut card = EcCard::new("--ec-8bit");
    let mut rng = Rng(0x15a1_0008);
    let mut cases: Vec<Case> = [
        (16, 4, "cauchy", 1 << 20),
        (10, 4, "vand", 4096),
        (6, 3, "cauchy", 64),
        (9, 3, "vand", 65536),
        (16, 2, "vand", 1088),
        (3, 1, "cauchy", 256),
    ]
    .iter()
    .map(|&(k, m, kind, size)| (k, m, kind.to_string(), size, true))
    .collect();
    for i in 0..6 {
        let (k, m) = (1 + rng.below(16) as usize, 1 + rng.below(4) as usize);
        let kind = if i % 2 == 0 { "cauchy" } else { "vand" };
        cases.push((k, m, kind.to_string(), [64, 512, 4096][i % 3], true));
    }
    let (enc, dec) = rounds(&mut card, &mut rng, 8, &cases);
    assert_eq!(enc, 12);
    // ISA-L's Vandermonde is not MDS for every erasure pattern; Cauchy always decodes.
    assert!(dec >= 9, "only {dec} of 12 rounds decoded");
    assert_eq!(card.d.roce.state.stats.ec_errors, 0);
}

#[test]
fn the_cap_pages_say_which_profile_runs() {
    for (extra, bit8) in [("", 0u8), ("--ec-8bit", 1)] {
        let mut card = EcCard::new(extra);
        let general = ok::<cmds::QueryHcaCap>(&mut card.d, |i| {
            i.set_op_mod(query_op_mod(0, true).into());
        });
        let g = view::<QueryHcaCapOut>(&general);
        assert_eq!(g.capability().cmd_hca_cap().vector_calc(), 1);
        for cur in [false, true] {
            // MLNX mlx5_core: op_mod 0x16 max, 0x17 current.
            let op_mod = query_op_mod(0xb, cur);
            assert_eq!(op_mod, if cur { 0x17 } else { 0x16 });
            let out = ok::<cmds::QueryHcaCap>(&mut card.d, |i: &mut QueryHcaCapIn| {
                i.set_op_mod(op_mod.into());
            });
            let o = view::<QueryHcaCapOut>(&out);
            let page =
                cx4_hw::caps::vector_calc::VectorCalcCap::read_from_prefix(&o.capability().0)
                    .unwrap()
                    .0;
            assert_eq!(page.calc_matrix(), 1);
            assert_eq!(page.calc_matrix_type_8bit(), u32::from(bit8), "{extra:?}");
            assert_eq!(page.max_vec_count(), 16);
            for s in [page.calc0(), page.calc1(), page.calc2(), page.calc3()] {
                assert_eq!((s.op_xor(), s.op_add()), (1, 0));
            }
        }
    }
}

/// Posts a bad calculation; returns the send and receive error syndromes.
fn refused(card: &mut EcCard, p: &Post) -> (u8, u8) {
    card.post_recv(VA_OUT, 1 << 20);
    card.post_calc(p);
    let s = card
        .next_cqe(false)
        .expect("an error CQE even for an unsignaled WQE");
    assert_eq!(s[63] >> 4, cqe_op::REQ_ERR, "{p:?}");
    let r = card
        .next_cqe(true)
        .expect("the receive libmlx5 waits on is flushed");
    assert_eq!(r[63] >> 4, cqe_op::RESP_ERR);
    assert_eq!(card.state(), qpc_state::ERR);
    (s[0x37], r[0x37])
}

#[test]
fn bad_parameters_complete_in_error_and_never_panic() {
    let w8_on_cx4 = |c: &EcCard| c.libmlx5(4, 2, true, 64);
    let bad_count = |c: &EcCard| Post {
        vec_count: 17,
        ..c.libmlx5(4, 2, false, 64)
    };
    let zero_count = |c: &EcCard| Post {
        vec_count: 0,
        ..c.libmlx5(4, 2, false, 64)
    };
    let bad_size = |c: &EcCard| Post {
        vec_size: 66,
        ..c.libmlx5(4, 2, false, 64)
    };
    let bad_ops = |c: &EcCard| Post {
        ops: [calc_op::XOR, 0, calc_op::XOR, 0],
        ..c.libmlx5(4, 2, false, 64)
    };
    let no_matrix_flag = |c: &EcCard| Post {
        mat_flags: 0,
        ..c.libmlx5(4, 2, false, 64)
    };
    let big_ds = |c: &EcCard| Post {
        ds: 5,
        ..c.libmlx5(4, 2, false, 64)
    };
    let bad_matrix_key = |c: &EcCard| Post {
        cm_lkey: c.lkey ^ 0x100,
        ..c.libmlx5(4, 2, false, 64)
    };
    let inputs_past_the_mr = |c: &EcCard| Post {
        vec_addr: VA + DATA_LEN - 64,
        ..c.libmlx5(4, 2, false, 64)
    };
    type Case = (&'static str, fn(&EcCard) -> Post, u8);
    let cases: Vec<Case> = vec![
        (
            "8-bit matrix on ConnectX-4",
            w8_on_cx4,
            syndrome::LOCAL_QP_OP_ERR,
        ),
        (
            "vec_count above max_vec_count",
            bad_count,
            syndrome::LOCAL_QP_OP_ERR,
        ),
        (
            "vec_count 0 (libmlx5's k = 256)",
            zero_count,
            syndrome::LOCAL_QP_OP_ERR,
        ),
        (
            "vec_size not a multiple of 4",
            bad_size,
            syndrome::LOCAL_LENGTH_ERR,
        ),
        (
            "calc_op slots not contiguous",
            bad_ops,
            syndrome::LOCAL_QP_OP_ERR,
        ),
        ("no CALC_MATRIX", no_matrix_flag, syndrome::LOCAL_QP_OP_ERR),
        ("ds 5", big_ds, syndrome::LOCAL_QP_OP_ERR),
        (
            "unknown matrix lkey",
            bad_matrix_key,
            syndrome::LOCAL_PROT_ERR,
        ),
        (
            "inputs beyond the MR",
            inputs_past_the_mr,
            syndrome::LOCAL_PROT_ERR,
        ),
    ];
    for (i, (why, post, want)) in cases.into_iter().enumerate() {
        let mut card = EcCard::new("");
        let p = post(&card);
        let (s, r) = refused(&mut card, &p);
        assert_eq!(s, want, "{why}");
        assert_eq!(r, syndrome::WR_FLUSH_ERR, "{why}");
        assert_eq!(card.d.roce.state.stats.ec_errors, 1, "{why} ({i}) counted");
        assert!(card
            .d
            .roce
            .stats()
            .line()
            .contains("ec: 1 calcs 0 bytes 1 errors"));
    }
}

#[test]
fn a_result_longer_than_the_receive_fails_at_the_responder() {
    // The result (2 × 4 KiB) does not fit the posted receive: the responder's length error.
    let mut card = EcCard::new("");
    card.write(VA_MATRIX, &[0x11; 8]);
    card.post_recv(VA_OUT, 4096);
    let p = card.libmlx5(4, 2, false, 4096);
    card.post_calc(&p);
    let r = card.next_cqe(true).expect("receive completes in error");
    assert_eq!(r[63] >> 4, cqe_op::RESP_ERR);
    assert_eq!(r[0x37], syndrome::LOCAL_LENGTH_ERR);
    assert_eq!(card.d.roce.state.stats.ec_calcs, 1);
    assert_eq!(
        card.d.roce.state.stats.ec_errors, 0,
        "the calculation itself was fine"
    );
}

/// A UMR WQE as libmlx5's `post_ec_umr` writes it: control (imm = the mkey), UMR control
/// (inline, `align(entries, 4)` octowords, mask LEN | START_ADDR | KEY | FREE | LR | LW), the
/// mkey segment (local read and write, UMR-enabled, KLM access mode, the key's variant, the
/// PD, start and length), then `entries` (16 bytes each, zero-padded to four).
fn ec_umr(
    idx: u16,
    qpn: u32,
    mkey: u32,
    pd: u32,
    start: u64,
    len: u64,
    entries: &[[u8; 16]],
) -> Vec<u8> {
    use cx4_hw::{
        mkey::access_mode,
        wqe::rdma::{MkeyMask, MkeySeg, Perm, WqeUmrCtrlSeg, UMR_INLINE},
    };
    let oct = entries.len().next_multiple_of(4);
    let ds = (16 + 48 + 64 + oct * 16) / 16;
    let mut w = Vec::new();
    w.extend(wqe::opmod_idx_opcode(0, idx, wop::UMR).to_be_bytes());
    w.extend(wqe::qpn_ds(qpn, ds as u8).to_be_bytes());
    w.extend([0, 0, 0, 0]);
    w.extend(mkey.to_be_bytes());
    let mut u = WqeUmrCtrlSeg::new();
    u.set_flags(UMR_INLINE.into());
    u.set_xlt_octowords(oct as u32);
    u.set_mkey_mask(
        (MkeyMask::LEN
            | MkeyMask::START_ADDR
            | MkeyMask::KEY
            | MkeyMask::FREE
            | MkeyMask::LR
            | MkeyMask::LW)
            .bits(),
    );
    w.extend(u.0);
    let mut s = MkeySeg::new();
    s.set_flags(u32::from(
        (Perm::LOCAL_READ | Perm::LOCAL_WRITE | Perm::UMR_EN).bits() | access_mode::KLMS,
    ));
    s.set_qpn_mkey7_0(0xffff_ff00 | (mkey & 0xff));
    s.set_flags_pd(pd);
    s.set_start_addr(start);
    s.set_len(len);
    s.set_xlt_oct_size(oct as u32);
    w.extend(s.0);
    for e in entries {
        w.extend(e);
    }
    w.resize(ds * 16, 0);
    w
}

impl EcCard {
    /// A free, UMR-enabled KLM mkey of `octowords` entries in the MR's PD (libmlx5's
    /// `ibv_exp_create_mr(IBV_EXP_MR_INDIRECT_KLMS)`).
    fn free_klm_mkey(&mut self, octowords: u32) -> u32 {
        let pd = self.d.fw.mkey(self.lkey).unwrap().pd;
        let v = input::<cmds::CreateMkey>(|i| {
            let c = i.memory_key_mkey_entry_mut();
            c.set_free(1);
            c.set_umr_en(1);
            c.set_lr(1);
            c.set_lw(1);
            c.set_pd(pd);
            c.set_qpn(0xff_ffff);
            c.set_translations_octword_size(octowords);
            c.set_access_mode_1_0(cx4_hw::mkey::access_mode::KLMS.into());
        });
        let idx = view::<cx4_hw::mkey::CreateMkeyOut>(&exec(
            &mut self.d,
            &v,
            cx4_hw::mkey::CreateMkeyOut::SIZE,
        ))
        .mkey_index();
        cx4_hw::mkey::mkey_from_index(idx, 0)
    }

    /// Writes the WQE `w` (whole basic blocks, wrapping at the end of the 64-block ring) at
    /// the producer counter; returns its index. The doorbell is rung by [`EcCard::ring`].
    fn put_wqe(&mut self, w: &[u8]) -> u16 {
        let idx = self.sq_pc;
        for (i, bb) in w.chunks(64).enumerate() {
            let slot = (u64::from(idx) + i as u64) % 64;
            self.d
                .bus
                .mem
                .write(QP_BUF + RQ_BYTES + slot * 64, bb)
                .unwrap();
        }
        self.sq_pc = self.sq_pc.wrapping_add(w.len().div_ceil(64) as u16);
        idx
    }

    /// The doorbell record and register for everything written so far (`last` the first
    /// eight bytes of the last WQE).
    fn ring(&mut self, last: [u8; 8]) {
        self.d
            .bus
            .mem
            .write(QP_DBR + 4, &u32::from(self.sq_pc).to_be_bytes())
            .unwrap();
        self.d
            .region_write(0, u64::from(UAR) * 4096 + 0x800, &last)
            .unwrap();
    }
}

/// libmlx5's full sequence with scattered blocks: the receive through the output pattern
/// mkey, the repeat-block UMR spreading the stream over the m code blocks (a stride-0 dump
/// entry for m = 3), the KLM UMR gathering the k data blocks, the fenced vector-calc SEND; the
/// code blocks must equal the contiguous calculation's outputs, the dump must take the fourth
/// output, and nothing around the blocks may change. Then the same mkeys are reused for
/// another calculation (UMR on valid mkeys), and a repeat block whose byte count disagrees
/// with its entries is refused.
#[test]
fn libmlx5_umr_pattern_and_klm_mkeys_spread_a_calculation() {
    use cx4_hw::wqe::repeat_block::{RepeatBlock, RepeatEnt, REPEAT_BLOCK_OP};
    let mut card = EcCard::new("");
    let pd = card.d.fw.mkey(card.lkey).unwrap().pd;
    let inumr = card.free_klm_mkey(16);
    let outumr = card.free_klm_mkey(8);
    let mut rng = Rng(0x0e0c_0a11);
    for (k, m, size) in [
        (5usize, 3usize, 4096u32),
        (16, 4, 1024),
        (3, 2, 64),
        (7, 2, 32),
    ] {
        let n = usize::from(noutputs(m as u8));
        let coding: Vec<u8> = (0..k * m).map(|_| (rng.next() % 15 + 1) as u8).collect();
        let mat = libmlx5_matrix(&coding, k, m, false);
        let inputs = rng.bytes(k * size as usize);
        // The reference: the same calculation over contiguous inputs.
        let want = card.calc(&mat, &inputs, k as u8, m as u8, false, size);
        // Scattered data blocks (gaps between them, in reverse order) and code blocks.
        let blk = size as u64;
        let data_va: Vec<u64> = (0..k as u64)
            .map(|i| VA_IN + 0x10_0000 - (i + 1) * 3 * blk)
            .collect();
        let code_va: Vec<u64> = (0..m as u64)
            .map(|j| VA_OUT + 0x8_0000 + j * 2 * blk + 16)
            .collect();
        let dump_va = VA_OUT + 0x40_0000;
        for (i, va) in data_va.iter().enumerate() {
            card.write(*va, &inputs[i * size as usize..(i + 1) * size as usize]);
        }
        for va in &code_va {
            card.write(*va - 16, &[0xa5; 16]);
            card.write(*va, &vec![0xee; size as usize]);
            card.write(*va + blk, &[0x5a; 16]);
        }
        card.write(VA_MATRIX, &mat);
        let chunk = size.min(64);
        // 1. The receive, through the pattern mkey (m = 1 would use the code block itself).
        card.post_recv(code_va[0], size * n as u32);
        let rq_pc = card.rq_pc;
        let slot = u64::from(rq_pc.wrapping_sub(1)) % 16;
        let mut r = [0u8; 16];
        r.copy_from_slice(&data_seg(size * n as u32, outumr, code_va[0]));
        card.d.bus.mem.write(QP_BUF + slot * 64, &r).unwrap();
        // 2. The repeat-block UMR.
        let mut h = RepeatBlock::new();
        h.set_byte_count(chunk * n as u32);
        h.set_op(REPEAT_BLOCK_OP);
        h.set_repeat_count(size.div_ceil(chunk));
        h.set_num_ent(n as u32);
        let mut ents = vec![h.0];
        for j in 0..n {
            let mut e = RepeatEnt::new();
            let (va, stride) = match code_va.get(j) {
                Some(va) => (*va, chunk),
                None => (dump_va, 0),
            };
            e.set_stride(stride);
            e.set_byte_count(chunk);
            e.set_memkey(card.lkey);
            e.set_va(va);
            ents.push(e.0);
        }
        let w = ec_umr(
            card.sq_pc,
            card.qpn,
            outumr,
            pd,
            code_va[0],
            blk * n as u64,
            &ents,
        );
        card.put_wqe(&w);
        // 3. The KLM UMR of the inputs.
        let klms: Vec<[u8; 16]> = data_va
            .iter()
            .map(|va| data_seg(size, card.lkey, *va))
            .collect();
        let w = ec_umr(
            card.sq_pc,
            card.qpn,
            inumr,
            pd,
            data_va[0],
            blk * k as u64,
            &klms,
        );
        card.put_wqe(&w);
        // 4. The vector-calc SEND, small-fenced after the UMRs.
        // (The model does not need the fence: a UMR takes effect when it is read.)
        let mut p = card.libmlx5(k as u8, m as u8, false, size);
        p.vec_lkey = inumr;
        p.vec_addr = data_va[0];
        card.post_calc(&p);
        let c = card.next_cqe(true).expect("the receive CQE");
        assert_eq!(c[63] >> 4, cqe_op::RESP_SEND, "k {k} m {m}: {c:02x?}");
        assert!(
            card.next_cqe(false).is_none(),
            "nothing signaled, nothing failed"
        );
        for j in 0..m {
            assert_eq!(
                card.read(code_va[j], size as usize),
                want[j],
                "k {k} m {m} block {j}"
            );
            assert_eq!(
                card.read(code_va[j] - 16, 16),
                [0xa5; 16],
                "before block {j}"
            );
            assert_eq!(
                card.read(code_va[j] + blk, 16),
                [0x5a; 16],
                "after block {j}"
            );
        }
        if m == 3 {
            // Stride 0: every chunk of the fourth output on the same bytes; the last is there.
            let last = want[3][size as usize - chunk as usize..].to_vec();
            assert_eq!(card.read(dump_va, chunk as usize), last);
        }
        assert_eq!(card.state(), qpc_state::RTS);
    }
    match &card.d.fw.mkey(outumr).unwrap().map {
        crate::fw::MkeyMap::Repeat { count, entries, .. } => {
            assert_eq!((*count, entries.len()), (1, 2));
        }
        m => panic!("the output mkey maps {m:?}"),
    }
    // A repeat block whose entries do not add up to its byte count: MW_BIND_ERR, QP to error.
    let mut h = RepeatBlock::new();
    h.set_byte_count(100);
    h.set_op(REPEAT_BLOCK_OP);
    h.set_repeat_count(1);
    h.set_num_ent(1);
    let mut e = RepeatEnt::new();
    e.set_stride(64);
    e.set_byte_count(64);
    e.set_memkey(card.lkey);
    e.set_va(VA_OUT);
    let w = ec_umr(card.sq_pc, card.qpn, outumr, pd, VA_OUT, 64, &[h.0, e.0]);
    let idx = card.put_wqe(&w);
    card.ring(w[..8].try_into().unwrap());
    let c = card.next_cqe(false).expect("the UMR's error CQE");
    assert_eq!(
        (c[63] >> 4, c[0x37], u16::from_be_bytes([c[0x3c], c[0x3d]])),
        (cqe_op::REQ_ERR, syndrome::MW_BIND_ERR, idx)
    );
}

/// The `ec-error` fault: the next vector-calc WQE completes in error (LOCAL_QP_OP_ERR on the
/// send CQ although unsignaled), the QP goes to error and the receive is flushed; the
/// calculation after it (on a fresh card state: the fault is used up) works.
/// An MTT mkey of `pages` 4 KiB pages at `va`, backed by the pages from `pa` in reverse
/// order (so that a range of it is as many guest pieces as pages).
fn reversed_mr(d: &mut Device, pd: u32, va: u64, pa: u64, pages: u64) -> u32 {
    let octwords = pages.div_ceil(2) as u32;
    let mut v = input::<cmds::CreateMkey>(|i| {
        i.set_translations_octword_actual_size(octwords);
        let c = i.memory_key_mkey_entry_mut();
        c.set_access_mode_1_0(cx4_hw::mkey::access_mode::MTT.into());
        c.set_pd(pd);
        c.set_qpn(0xff_ffff);
        c.set_lr(1);
        c.set_lw(1);
        c.set_start_addr(va);
        c.set_len(pages << 12);
        c.set_log_page_size(12);
        c.set_translations_octword_size(octwords);
        c.set_mkey_7_0(0x3c);
    });
    v.resize(cx4_hw::mkey::CreateMkeyIn::SIZE + pages as usize * 8, 0);
    for k in 0..pages {
        let page = pa + ((pages - 1 - k) << 12);
        cx4_hw::mkey::CreateMkeyIn::set_mtt(&mut v, k as usize, page).unwrap();
    }
    let out = exec(d, &v, cx4_hw::mkey::CreateMkeyOut::SIZE);
    cx4_hw::mkey::mkey_from_index(view::<cx4_hw::mkey::CreateMkeyOut>(&out).mkey_index(), 0x3c)
}

/// The (data offset, guest address, bytes) spans of a translation, sorted and merged where
/// they continue each other: two translations that place every byte of the data at the
/// same guest address compare equal, in whatever pieces and order.
fn spans(mut v: Vec<(usize, u64, u32)>) -> Vec<(usize, u64, u32)> {
    v.sort();
    let mut out: Vec<(usize, u64, u32)> = Vec::new();
    for (at, pa, n) in v.into_iter().filter(|s| s.2 > 0) {
        match out.last_mut() {
            Some(l) if l.0 + l.2 as usize == at && l.1 + u64::from(l.2) == pa => l.2 += n,
            _ => out.push((at, pa, n)),
        }
    }
    out
}

/// A device write through a repeat-block mkey, translated as copies (whole repetitions
/// entry by entry, `fw/mkey_write.rs`), places every byte where the piece-by-piece
/// translation does, and fails where it fails: random repeat blocks (1-4 entries of 4-256
/// bytes, strides equal to the length, 0 or longer, over a key whose pages run backwards or
/// the contiguous MR, sometimes past the key's end) and random ranges, partial repetitions
/// at either end included.
#[test]
fn repeat_block_writes_as_copies_place_what_the_pieces_place() {
    use cx4_hw::wqe::repeat_block::{RepeatBlock, RepeatEnt, REPEAT_BLOCK_OP};
    const VA_REV: u64 = 0x9000_0000;
    let mut card = EcCard::new("");
    let pd = card.d.fw.mkey(card.lkey).unwrap().pd;
    let rev = reversed_mr(&mut card.d, pd, VA_REV, DATA + 0x100_0000, 64);
    let outumr = card.free_klm_mkey(8);
    let mut rng = Rng(0x5eed_c0de);
    let (mut strided, mut same, mut failed) = (0, 0, 0);
    for round in 0..400 {
        let n = 1 + rng.below(4) as usize;
        let lens: Vec<u32> = (0..n)
            .map(|_| [64, 16, 100, 4, 256][rng.below(5) as usize])
            .collect();
        let block: u32 = lens.iter().sum();
        let reps = 1 + rng.below(40) as u32;
        let mut h = RepeatBlock::new();
        h.set_byte_count(block);
        h.set_op(REPEAT_BLOCK_OP);
        h.set_repeat_count(reps);
        h.set_num_ent(n as u32);
        let mut ents = vec![h.0];
        for &len in &lens {
            let stride = match rng.below(4) {
                0 => 0,
                1 => len + 4 * rng.below(16) as u32,
                _ => len,
            };
            let (key, base, room) = if rng.below(4) == 0 {
                (card.lkey, VA_OUT, 0x40_0000)
            } else {
                (rev, VA_REV, 64 << 12)
            };
            let mut e = RepeatEnt::new();
            e.set_stride(stride);
            e.set_byte_count(len);
            e.set_memkey(key);
            // Mostly inside the key; now and then running past its end.
            e.set_va(base + 4 * rng.below(room / 4 + room / 64));
            ents.push(e.0);
        }
        let start = VA_OUT + 0x1000 * rng.below(16);
        let total = u64::from(block) * u64::from(reps);
        let w = ec_umr(card.sq_pc, card.qpn, outumr, pd, start, total, &ents);
        card.put_wqe(&w);
        card.ring(w[..8].try_into().unwrap());
        assert!(
            card.next_cqe(false).is_none(),
            "round {round}: the UMR failed"
        );
        assert!(
            matches!(&card.d.fw.mkey(outumr).unwrap().map,
                crate::fw::MkeyMap::Repeat { count, .. } if *count == reps),
            "round {round}: the UMR was not applied"
        );
        for _ in 0..8 {
            let addr = start + rng.below(total + 8);
            let len = rng.below(total + 64) as u32;
            let fw = &card.d.fw;
            let mem = &card.d.bus.mem;
            let pieces = fw.translate(mem, outumr, pd, addr, len, true);
            let copies = fw.translate_write(mem, outumr, pd, addr, len);
            match (pieces, copies) {
                (Ok(p), Ok(c)) => {
                    strided += c
                        .iter()
                        .filter(|c| matches!(c, crate::fw::Copy::Strided { .. }))
                        .count();
                    let mut at = 0;
                    let p: Vec<_> = p
                        .into_iter()
                        .map(|(pa, n)| {
                            at += n as usize;
                            (at - n as usize, pa, n)
                        })
                        .collect();
                    assert_eq!(at, len as usize);
                    let c = c.iter().flat_map(|c| c.spans()).collect();
                    assert_eq!(spans(p), spans(c), "round {round}: {addr:#x}+{len:#x}");
                    same += 1;
                }
                (Err(a), Err(b)) => {
                    assert_eq!(a, b, "round {round}: {addr:#x}+{len:#x}");
                    failed += 1;
                }
                (a, b) => panic!("round {round}: {addr:#x}+{len:#x}: {a:?} vs {b:?}"),
            }
        }
    }
    assert!(
        same > 500 && failed > 100 && strided > 300,
        "{same} placed alike, {failed} failed alike, {strided} strided copies"
    );
}

#[test]
fn injected_engine_fault_fails_one_calculation() {
    let mut card = EcCard::new("");
    card.d.bus.faults.add(&crate::faults::Fault::EcError(1));
    card.write(VA_MATRIX, &[0x11]);
    card.write(VA_IN, &[7u8; 64]);
    card.post_recv(VA_OUT, 64);
    let p = card.libmlx5(1, 1, false, 64);
    card.post_calc(&p);
    let c = card.next_cqe(false).expect("the send's error CQE");
    assert_eq!(
        (c[63] >> 4, c[0x37]),
        (cqe_op::REQ_ERR, syndrome::LOCAL_QP_OP_ERR)
    );
    let r = card.next_cqe(true).expect("the flushed receive");
    assert_eq!(
        (r[63] >> 4, r[0x37]),
        (cqe_op::RESP_ERR, syndrome::WR_FLUSH_ERR)
    );
    assert_eq!(card.state(), qpc_state::ERR);
    assert_eq!(card.d.bus.faults.ec_errors, 0);
    let mut fresh = EcCard::new("");
    let out = fresh.calc(&[0x11], &[7u8; 64], 1, 1, false, 64);
    assert_eq!(out[0], vec![7u8; 64]);
}

/// The kernels read the inputs in place in guest memory: vectors over several stripes,
/// through a KLM mkey whose entries (scattered, in reverse order) cut them anywhere — runs
/// shorter than a stripe, pieces of a few bytes that are copied, entries spanning two
/// vectors — in both fields; the result must equal `ec::calc`'s scalar reference bit for bit.
#[test]
fn inputs_read_in_place_across_klm_entries_match_the_reference() {
    use crate::ec::{calc::Calc, gf::Field};
    for (profile, field) in [("", Field::Gf16), ("--ec-8bit", Field::Gf256)] {
        let mut card = EcCard::new(profile);
        let pd = card.d.fw.mkey(card.lkey).unwrap().pd;
        let inumr = card.free_klm_mkey(32);
        let mut rng = Rng(0x1a_c0de);
        let (k, m, size) = (4usize, 4usize, 100_004u32);
        let total = k * size as usize;
        // Entry lengths: a few tiny ones, the rest large, adding up to k vectors.
        let mut lens: Vec<usize> = vec![1, 3, 4, 61, 200, 4095, 4097, 40_000, 70_000];
        let mut left = total - lens.iter().sum::<usize>();
        while left > 0 {
            let n = (rng.below(90_000) as usize + 5000).min(left);
            lens.push(n);
            left -= n;
        }
        let order: Vec<usize> = (0..lens.len()).collect();
        assert!(lens.len() <= 32 && lens.iter().all(|&n| n <= 0x2_0000));
        let inputs = rng.bytes(total);
        let mut klms = Vec::new();
        let mut at = 0;
        let last = lens.len() as u64 - 1;
        let mut first_va = 0;
        for (&n, i) in lens.iter().zip(order) {
            // Entry i in slot (last - i): the entries lie in reverse order, with gaps.
            let va = VA_IN + (last - i as u64) * 0x2_0000 + 8;
            card.write(va, &inputs[at..at + n]);
            klms.push(data_seg(n as u32, card.lkey, va));
            if i == 0 {
                first_va = va;
            }
            at += n;
        }
        let w = ec_umr(
            card.sq_pc,
            card.qpn,
            inumr,
            pd,
            first_va,
            total as u64,
            &klms,
        );
        card.put_wqe(&w);
        let w8 = field == Field::Gf256;
        let coding: Vec<u8> = (0..k * m).map(|_| (rng.next() % 15 + 1) as u8).collect();
        let mat = libmlx5_matrix(&coding, k, m, w8);
        card.write(VA_MATRIX, &mat);
        let stream = size as usize * m;
        card.post_recv(VA_OUT, stream as u32);
        let mut p = card.libmlx5(k as u8, m as u8, w8, size);
        p.vec_lkey = inumr;
        p.vec_addr = first_va;
        card.post_calc(&p);
        let c = card.next_cqe(true).expect("the receive CQE");
        assert_eq!(c[63] >> 4, cqe_op::RESP_SEND, "{field:?}: {c:02x?}");
        let calc = Calc {
            field,
            vec_count: k,
            vec_size: size as usize,
            outputs: m,
            active: [true; 4],
            chunk: 64,
        };
        let want = calc.compute_scalar(&mat, &inputs);
        assert!(
            card.read(VA_OUT, stream) == want,
            "{field:?}: the stream differs from the scalar reference"
        );
    }
}

/// A vector whose translation passes (first and last byte in guest memory, through the
/// reserved lkey) but which crosses a hole between two guest mappings stays an error:
/// LOCAL_PROT_ERR and the receive flushed.
#[test]
fn an_input_over_a_hole_in_guest_memory_is_a_protection_error() {
    let mut card = EcCard::new("");
    let end = BASE + MEM;
    card.d
        .bus
        .mem
        .map(
            end + 0x1000,
            0x4000,
            0,
            Some(crate::guest_mem::test_backing(0x4000)),
        )
        .unwrap();
    card.write(VA_MATRIX, &[0x11]);
    let p = Post {
        vec_lkey: crate::fw::RESERVED_LKEY,
        vec_addr: end - 2048,
        ..card.libmlx5(1, 1, false, 8192)
    };
    let (s, r) = refused(&mut card, &p);
    assert_eq!((s, r), (syndrome::LOCAL_PROT_ERR, syndrome::WR_FLUSH_ERR));
    assert_eq!(card.d.roce.state.stats.ec_errors, 1);
}

/// A host micro-benchmark of the engine (ignored by `cargo test`).
#[path = "ec_bench.rs"]
mod ec_bench;
