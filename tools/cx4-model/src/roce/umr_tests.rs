//! Memory-key work requests between two cards (the harness of `device_tests.rs`): fast
//! registration and local invalidate as mlx5_ib posts them (`wr.c` `set_reg_wr`,
//! `set_linv_wr`), SEND with invalidate, indirect (KLM) mkeys made by CREATE_MKEY and by UMR,
//! mlx5_ib's own `REG_UMR` QP (`umr.c`), the UMR errors with their syndromes, and a fuzzer.

use super::*;
use crate::fw::{MkeyMap, MKEY_QPN_NONE};
use crate::roce::umr::{UmrQp, UmrWqe};
use cx4_hw::mkey::mkey_index;
use cx4_hw::wqe::rdma::{
    MkeyMask, MkeySeg, Perm, WqeUmrCtrlSeg, MKEY_REMOTE_INVAL, MKEY_STATUS_FREE, MTT_EN_RD,
    MTT_EN_WR, UMR_CHECK_FREE, UMR_CHECK_NOT_FREE, UMR_INLINE, UMR_TRANSLATION_OFFSET_EN,
};

/// Guest memory for the mkeys made here (outside the cards' DATA).
const PAGES: u64 = BASE + 0x10_0000;
/// The iova fast registrations use (not page aligned, as ULPs' iovas are not).
const FR_VA: u64 = 0x9000_0100;

/// `wr.c` `frwr_mkey_mask(atomic)`.
fn frwr_mask(atomic: bool) -> MkeyMask {
    let mut m = MkeyMask::LEN
        | MkeyMask::PAGE_SIZE
        | MkeyMask::START_ADDR
        | MkeyMask::EN_RINVAL
        | MkeyMask::KEY
        | MkeyMask::LR
        | MkeyMask::LW
        | MkeyMask::RR
        | MkeyMask::RW
        | MkeyMask::SMALL_FENCE
        | MkeyMask::FREE;
    if atomic {
        m |= MkeyMask::A;
    }
    m
}

/// A UMR WQE's segments after the control segment.
pub(super) struct Umr {
    flags: u8,
    mask: MkeyMask,
    seg: MkeySeg,
    /// Inline entries (padded to the 64-byte alignment mlx5_ib uses).
    pub(super) inline: Vec<u8>,
    /// Or a data segment pointing at them: (lkey, address, byte count).
    pointer: Option<(u32, u64, u32)>,
    /// `xlt_octowords` (defaults to the inline bytes aligned to 64, / 16).
    octowords: Option<u16>,
    /// Translation offset in 16-byte units (sets `UMR_TRANSLATION_OFFSET_EN`).
    offset: Option<u64>,
}

impl Umr {
    pub(super) fn new(flags: u8, mask: MkeyMask, seg: MkeySeg) -> Umr {
        Umr {
            flags,
            mask,
            seg,
            inline: Vec::new(),
            pointer: None,
            octowords: None,
            offset: None,
        }
    }

    fn segs(&self) -> Vec<[u8; 16]> {
        let mut u = WqeUmrCtrlSeg::new();
        let mut flags = self.flags;
        if self.pointer.is_some() {
            flags &= !UMR_INLINE;
        }
        if let Some(o) = self.offset {
            flags |= UMR_TRANSLATION_OFFSET_EN;
            u.set_xlt_offset((o & 0xffff) as u32);
            u.set_xlt_offset_47_16((o >> 16) as u32);
        }
        u.set_flags(flags.into());
        // mlx5r_umr_get_xlt_octo: the entries' bytes aligned to 64, in 16-byte units.
        let oct = self
            .octowords
            .unwrap_or((self.inline.len().div_ceil(64) * 4) as u16);
        u.set_xlt_octowords(oct.into());
        u.set_mkey_mask(self.mask.bits());
        let mut b = Vec::new();
        b.extend_from_slice(&u.0);
        b.extend_from_slice(&self.seg.0);
        if let Some((lkey, addr, len)) = self.pointer {
            b.extend(data(len, lkey, addr));
        } else {
            let mut x = self.inline.clone();
            x.resize(x.len().div_ceil(64) * 64, 0);
            b.extend(x);
        }
        b.chunks(16).map(|c| c.try_into().unwrap()).collect()
    }
}

/// `wr.c` `set_reg_mkey_seg` for an MTT mkey: rights, new key variant, remote invalidation,
/// iova, length, 4 KiB pages.
fn reg_seg(key: u32, perm: Perm, va: u64, len: u64, mode: u8, ndescs: u32) -> MkeySeg {
    let mut s = MkeySeg::new();
    s.set_flags(u32::from(
        (perm | Perm::LOCAL_READ | Perm::UMR_EN).bits() | mode,
    ));
    s.set_qpn_mkey7_0((key & 0xff) | 0xffff_ff00);
    s.set_flags_pd(MKEY_REMOTE_INVAL);
    s.set_start_addr(va);
    s.set_len(len);
    s.set_xlt_oct_size(ndescs.div_ceil(8) * 4);
    if mode == access_mode::MTT {
        s.set_log2_page_size(12);
    }
    s
}

/// mlx5_ib's `IB_WR_REG_MR`: pages as `mlx5_set_page` writes them (with the enables).
fn reg_mr(key: u32, perm: Perm, va: u64, len: u64, pages: &[u64]) -> Umr {
    let mut u = Umr::new(
        UMR_CHECK_NOT_FREE | UMR_INLINE,
        frwr_mask(perm.contains(Perm::ATOMIC)),
        reg_seg(key, perm, va, len, access_mode::MTT, pages.len() as u32),
    );
    for p in pages {
        u.inline.extend((p | MTT_EN_RD | MTT_EN_WR).to_be_bytes());
    }
    u
}

/// mlx5_ib's `IB_WR_LOCAL_INV`.
fn local_inv() -> Umr {
    let mut s = MkeySeg::new();
    s.set_status(MKEY_STATUS_FREE.into());
    Umr::new(UMR_INLINE, MkeyMask::FREE, s)
}

/// A KLM entry.
pub(super) fn klm(len: u32, key: u32, va: u64) -> [u8; 16] {
    data(len, key, va)
}

impl Card {
    pub(super) fn pd(&self) -> u32 {
        self.d.fw.mkey(self.lkey).unwrap().pd
    }

    /// CREATE_MKEY as mlx5_ib's `ib_alloc_mr` (`mlx5_set_umr_free_mkey`): free, UMR-enabled,
    /// local read, `octowords` of translation table; returns the key (variant 0).
    pub(super) fn alloc_mr(&mut self, mode: u8, octowords: u32, pd: u32) -> u32 {
        let v = input::<cmds::CreateMkey>(|i| {
            let c = i.memory_key_mkey_entry_mut();
            c.set_free(1);
            c.set_umr_en(1);
            c.set_lr(1);
            c.set_pd(pd);
            c.set_qpn(MKEY_QPN_NONE);
            c.set_translations_octword_size(octowords);
            c.set_access_mode_1_0(mode.into());
            if mode == access_mode::MTT || mode == access_mode::KSM {
                c.set_log_page_size(12);
            }
        });
        let idx = view::<CreateMkeyOut>(&exec(&mut self.d, &v, CreateMkeyOut::SIZE)).mkey_index();
        mkey_from_index(idx, 0)
    }

    /// A populated MTT mkey (`reg_create`): `pages` at `va`, local and remote rights.
    fn mtt_mr(&mut self, va: u64, pages: &[u64], umr_en: bool) -> u32 {
        let pd = self.pd();
        let n = pages.len();
        let mut v = input::<cmds::CreateMkey>(|i| {
            i.set_translations_octword_actual_size(n.div_ceil(2) as u32);
            let c = i.memory_key_mkey_entry_mut();
            c.set_access_mode_1_0(access_mode::MTT.into());
            c.set_pd(pd);
            c.set_qpn(MKEY_QPN_NONE);
            c.set_lr(1);
            c.set_lw(1);
            c.set_rr(1);
            c.set_rw(1);
            c.set_umr_en(umr_en.into());
            c.set_start_addr(va);
            c.set_len(n as u64 * 4096);
            c.set_log_page_size(12);
            c.set_translations_octword_size(n.div_ceil(2) as u32);
            c.set_mkey_7_0(0x11);
        });
        v.resize(CreateMkeyIn::SIZE + n.div_ceil(2) * 16, 0);
        for (k, p) in pages.iter().enumerate() {
            CreateMkeyIn::set_mtt(&mut v, k, *p).unwrap();
        }
        let idx = view::<CreateMkeyOut>(&exec(&mut self.d, &v, CreateMkeyOut::SIZE)).mkey_index();
        mkey_from_index(idx, 0x11)
    }

    /// A valid KLM mkey made by CREATE_MKEY over `entries`, starting at `va`.
    fn klm_mr(&mut self, va: u64, entries: &[[u8; 16]]) -> u32 {
        let pd = self.pd();
        let n = entries.len();
        let len: u64 = entries
            .iter()
            .map(|e| u64::from(u32::from_be_bytes(e[..4].try_into().unwrap())))
            .sum();
        let mut v = input::<cmds::CreateMkey>(|i| {
            i.set_translations_octword_actual_size(n as u32);
            let c = i.memory_key_mkey_entry_mut();
            c.set_access_mode_1_0(access_mode::KLMS.into());
            c.set_pd(pd);
            c.set_qpn(MKEY_QPN_NONE);
            c.set_lr(1);
            c.set_lw(1);
            c.set_rr(1);
            c.set_rw(1);
            c.set_start_addr(va);
            c.set_len(len);
            c.set_translations_octword_size(n as u32);
            c.set_mkey_7_0(0x22);
        });
        for e in entries {
            v.extend_from_slice(e);
        }
        let idx = view::<CreateMkeyOut>(&exec(&mut self.d, &v, CreateMkeyOut::SIZE)).mkey_index();
        mkey_from_index(idx, 0x22)
    }

    pub(super) fn post_umr(&mut self, mkey: u32, u: &Umr) -> u16 {
        self.post_send(wop::UMR, &u.segs(), mkey, true)
    }

    fn phys(&self, pa: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        self.d.bus.mem.read(pa, &mut b).unwrap();
        b
    }
}

fn pattern(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt))
        .collect()
}

/// A requester CQE of the UMR WQE `idx`.
pub(super) fn assert_umr_done(c: &mut Card, idx: u16) {
    let e = c.next_cqe(false).expect("UMR CQE");
    assert_eq!(e[63] >> 4, cqe_op::REQ, "syndrome {:#x}", e[0x37]);
    assert_eq!(be16(&e, 0x3c), idx);
    assert_eq!(be32(&e, 0x38), u32::from(wop::UMR) << 24 | c.qpn);
}

#[test]
fn fast_registration_gives_a_working_rkey_and_local_invalidate_takes_it_away() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    let pd = b.pd();
    let mr = b.alloc_mr(access_mode::MTT, 4, pd);
    assert!(b.d.fw.mkey(mr).is_none(), "a free mkey is no key");
    // Three scattered pages; the new key has another variant, as ib_update_fast_reg_key makes.
    let pages = [PAGES + 0x6000, PAGES + 0x2000, PAGES + 0x9000];
    let key = (mr & !0xff) | 0x77;
    let len = 3 * 4096 - 0x100;
    let rights = Perm::REMOTE_READ | Perm::REMOTE_WRITE | Perm::LOCAL_WRITE;
    let i = b.post_umr(key, &reg_mr(key, rights, FR_VA, len, &pages));
    assert_umr_done(&mut b, i);
    assert!(b.d.fw.mkey(mr).is_none(), "the old variant is stale");
    assert_eq!(b.d.roce.state.stats.umrs, 1);
    // The peer writes 5000 bytes through the new rkey from FR_VA + 0x10.
    let msg = pattern(5000, 3);
    a.write(VA, &msg);
    let w = a.post_send(
        wop::RDMA_WRITE,
        &[raddr(FR_VA + 0x10, key), data(5000, a.lkey, VA)],
        0,
        true,
    );
    run(&mut a, &mut b);
    let c = a.next_cqe(false).unwrap();
    assert_eq!((c[63] >> 4, be16(&c, 0x3c)), (cqe_op::REQ, w));
    // iova FR_VA is at offset 0x100 of the first page: byte k at page k/4096 of the list.
    let mut got = Vec::new();
    got.extend(b.phys(PAGES + 0x6000 + 0x110, 4096 - 0x110));
    got.extend(b.phys(PAGES + 0x2000, 5000 - (4096 - 0x110)));
    assert_eq!(got, msg, "the WRITE landed in the registered pages");
    // And READ back the whole registration.
    let all = pattern(len as usize, 9);
    b.d.bus
        .mem
        .write(PAGES + 0x6100, &all[..4096 - 0x100])
        .unwrap();
    b.d.bus
        .mem
        .write(PAGES + 0x2000, &all[4096 - 0x100..2 * 4096 - 0x100])
        .unwrap();
    b.d.bus
        .mem
        .write(PAGES + 0x9000, &all[2 * 4096 - 0x100..])
        .unwrap();
    let r = a.post_send(
        wop::RDMA_READ,
        &[raddr(FR_VA, key), data(len as u32, a.lkey, VA + 0x8000)],
        0,
        true,
    );
    run(&mut a, &mut b);
    let c = a.next_cqe(false).unwrap();
    assert_eq!(
        (c[63] >> 4, be16(&c, 0x3c)),
        (cqe_op::REQ, r),
        "{:#x}",
        c[0x37]
    );
    assert_eq!(a.read(VA + 0x8000, len as usize), all);
    // LOCAL_INV, then the same WRITE fails on both sides.
    let i = b.post_umr(key, &local_inv());
    assert_umr_done(&mut b, i);
    assert!(b.d.fw.mkey(key).is_none(), "invalidated");
    b.post_recv(VA, 64);
    let w = a.post_send(
        wop::RDMA_WRITE,
        &[raddr(FR_VA, key), data(100, a.lkey, VA)],
        0,
        true,
    );
    run(&mut a, &mut b);
    let c = a.next_cqe(false).unwrap();
    assert_eq!(
        (c[63] >> 4, c[0x37], be16(&c, 0x3c)),
        (cqe_op::REQ_ERR, syndrome::REMOTE_ACCESS_ERR, w)
    );
    assert_eq!((a.state(), b.state()), (qpc_state::ERR, qpc_state::ERR));
    let r = b
        .next_cqe(true)
        .expect("the responder's receive WQE is flushed");
    assert_eq!(
        (r[63] >> 4, r[0x37]),
        (cqe_op::RESP_ERR, syndrome::WR_FLUSH_ERR)
    );
}

#[test]
fn an_invalidated_mkey_can_be_registered_again_but_not_twice() {
    let (_a, mut b) = pair(qpc_st::RC, 14);
    let pd = b.pd();
    let mr = b.alloc_mr(access_mode::MTT, 4, pd);
    let pages = [PAGES];
    let k1 = (mr & !0xff) | 1;
    let i = b.post_umr(k1, &reg_mr(k1, Perm::REMOTE_READ, FR_VA, 64, &pages));
    assert_umr_done(&mut b, i);
    let i = b.post_umr(k1, &local_inv());
    assert_umr_done(&mut b, i);
    let k2 = (mr & !0xff) | 2;
    let i = b.post_umr(k2, &reg_mr(k2, Perm::REMOTE_WRITE, FR_VA, 128, &pages));
    assert_umr_done(&mut b, i);
    let m = b.d.fw.mkey(k2).expect("registered again under the new key");
    assert!(m.access.remote_write && !m.access.remote_read && m.remote_inval);
    assert_eq!((m.start, m.len), (FR_VA, Some(128)));
    // A second registration without invalidation: the mkey is not free.
    let before = b.d.fw.nic.mkeys[&mkey_index(mr)].clone();
    let k3 = (mr & !0xff) | 3;
    let i = b.post_umr(k3, &reg_mr(k3, Perm::REMOTE_READ, FR_VA, 64, &pages));
    let c = b.next_cqe(false).unwrap();
    assert_eq!(
        (c[63] >> 4, c[0x37], be16(&c, 0x3c), c[0x38]),
        (cqe_op::REQ_ERR, syndrome::MW_BIND_ERR, i, wop::UMR)
    );
    assert_eq!(b.d.fw.nic.mkeys[&mkey_index(mr)], before, "nothing changed");
    assert_eq!(b.state(), qpc_state::ERR);
}

#[test]
fn send_with_invalidate_frees_the_rkey_and_the_cqe_names_it() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    let pd = b.pd();
    let mr = b.alloc_mr(access_mode::MTT, 4, pd);
    let key = (mr & !0xff) | 0x42;
    let i = b.post_umr(
        key,
        &reg_mr(
            key,
            Perm::REMOTE_WRITE | Perm::LOCAL_WRITE,
            FR_VA,
            4096,
            &[PAGES],
        ),
    );
    assert_umr_done(&mut b, i);
    b.post_recv(VA + 0x1000, 256);
    a.write(VA, b"invalidate me");
    let s = a.post_send(wop::SEND_INVAL, &[data(13, a.lkey, VA)], key, true);
    run(&mut a, &mut b);
    let c = a.next_cqe(false).unwrap();
    assert_eq!((c[63] >> 4, be16(&c, 0x3c)), (cqe_op::REQ, s));
    let r = b.next_cqe(true).unwrap();
    assert_eq!(r[63] >> 4, cqe_op::RESP_SEND_INV);
    assert_eq!(be32(&r, 0x24), key, "imm_inval_pkey: the invalidated R_Key");
    assert_eq!(be32(&r, 0x2c), 13);
    assert_eq!(b.read(VA + 0x1000, 13), b"invalidate me");
    assert!(b.d.fw.mkey(key).is_none(), "the R_Key is gone");
    assert_eq!(b.d.roce.state.stats.remote_invalidations, 1);
    // The peer's WRITE through it now fails.
    a.post_send(
        wop::RDMA_WRITE,
        &[raddr(FR_VA, key), data(8, a.lkey, VA)],
        0,
        true,
    );
    run(&mut a, &mut b);
    let c = a.next_cqe(false).unwrap();
    assert_eq!(
        (c[63] >> 4, c[0x37]),
        (cqe_op::REQ_ERR, syndrome::REMOTE_ACCESS_ERR)
    );
}

#[test]
fn send_with_invalidate_of_a_key_that_forbids_it_is_an_invalid_request() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    // The cards' MRs are plain reg_mr ones: no en_rinval.
    b.post_recv(VA + 0x1000, 256);
    let s = a.post_send(wop::SEND_INVAL, &[data(8, a.lkey, VA)], b.lkey, true);
    run(&mut a, &mut b);
    let c = a.next_cqe(false).unwrap();
    assert_eq!(
        (c[63] >> 4, c[0x37], be16(&c, 0x3c)),
        (cqe_op::REQ_ERR, syndrome::REMOTE_INVAL_REQ_ERR, s)
    );
    let r = b.next_cqe(true).unwrap();
    assert_eq!(
        (r[63] >> 4, r[0x37], be16(&r, 0x3c)),
        (cqe_op::RESP_ERR, syndrome::REMOTE_INVAL_REQ_ERR, 0)
    );
    assert!(b.d.fw.mkey(b.lkey).is_some(), "the key stays valid");
    assert_eq!((a.state(), b.state()), (qpc_state::ERR, qpc_state::ERR));
}

/// Three MTT mkeys and a KLM mkey over parts of them: (card with the mkeys, KLM key, the
/// physical pieces the KLM range maps to, in order).
fn klm_setup(b: &mut Card) -> (u32, Vec<(u64, usize)>) {
    let m1 = b.mtt_mr(0x1_0000, &[PAGES, PAGES + 0x3000], false);
    let m2 = b.mtt_mr(0x2_0000, &[PAGES + 0x5000], false);
    let m3 = b.mtt_mr(0x8_0000, &[PAGES + 0xc000], false);
    let k = b.klm_mr(
        0x5000_0000,
        &[
            klm(0x1800, m1, 0x1_0800),
            klm(0x100, m2, 0x2_0010),
            klm(0x900, m3, 0x8_0200),
        ],
    );
    let pieces = vec![
        (PAGES + 0x800, 0x800),
        (PAGES + 0x3000, 0x1000),
        (PAGES + 0x5010, 0x100),
        (PAGES + 0xc200, 0x900),
    ];
    (k, pieces)
}

#[test]
fn klm_indirect_mkey_spans_several_mtt_mkeys() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    let (k, pieces) = klm_setup(&mut b);
    let total: usize = pieces.iter().map(|p| p.1).sum();
    assert_eq!(total, 0x2200);
    let msg = pattern(total, 0x5a);
    a.write(VA, &msg);
    a.post_send(
        wop::RDMA_WRITE,
        &[raddr(0x5000_0000, k), data(total as u32, a.lkey, VA)],
        0,
        true,
    );
    run(&mut a, &mut b);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    let mut at = 0;
    for (pa, n) in &pieces {
        assert_eq!(b.phys(*pa, *n), msg[at..at + n], "piece at {pa:#x}");
        at += n;
    }
    // New bytes in the pieces, read back across every boundary, from inside the first entry
    // to inside the last.
    let want = pattern(total, 0x13);
    let mut at = 0;
    for (pa, n) in &pieces {
        b.d.bus.mem.write(*pa, &want[at..at + n]).unwrap();
        at += n;
    }
    a.post_send(
        wop::RDMA_READ,
        &[
            raddr(0x5000_0000 + 0x7f0, k),
            data(0x1900, a.lkey, VA + 0x8000),
        ],
        0,
        true,
    );
    run(&mut a, &mut b);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    assert_eq!(a.read(VA + 0x8000, 0x1900), want[0x7f0..0x7f0 + 0x1900]);
    // One byte past the KLM's end: remote access error.
    a.post_send(
        wop::RDMA_READ,
        &[raddr(0x5000_0000 + 0x2200 - 4, k), data(8, a.lkey, VA)],
        0,
        true,
    );
    run(&mut a, &mut b);
    let c = a.next_cqe(false).unwrap();
    assert_eq!(
        (c[63] >> 4, c[0x37]),
        (cqe_op::REQ_ERR, syndrome::REMOTE_ACCESS_ERR)
    );
}

#[test]
fn klm_by_umr_through_a_pointer_and_nested_klms_loops_refused() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    let (inner, pieces) = klm_setup(&mut b);
    let pd = b.pd();
    let m2 = b.mtt_mr(0x3_0000, &[PAGES + 0x7000], false);
    // A free KLM mkey filled by a UMR whose entries are in memory (a data segment through the
    // card's lkey), as mlx5_ib's REG_MR posts long descriptor lists.
    let mr = b.alloc_mr(access_mode::KLMS, 4, pd);
    let key = mr | 0x10;
    let mut list = Vec::new();
    list.extend(klm(0x2200, inner, 0x5000_0000)); // a KLM inside a KLM
    list.extend(klm(0x200, m2, 0x3_0100));
    list.resize(64, 0);
    b.write(VA + 0x400, &list);
    let mut u = Umr::new(
        UMR_CHECK_NOT_FREE,
        frwr_mask(false),
        reg_seg(
            key,
            Perm::REMOTE_READ | Perm::REMOTE_WRITE | Perm::LOCAL_WRITE,
            0x6000_0000,
            0x2400,
            access_mode::KLMS,
            4,
        ),
    );
    u.pointer = Some((b.lkey, VA + 0x400, 64));
    u.octowords = Some(4);
    let i = b.post_umr(key, &u);
    assert_umr_done(&mut b, i);
    let msg = pattern(0x2400, 0x77);
    a.write(VA, &msg);
    a.post_send(
        wop::RDMA_WRITE,
        &[raddr(0x6000_0000, key), data(0x2400, a.lkey, VA)],
        0,
        true,
    );
    run(&mut a, &mut b);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    assert_eq!(
        b.phys(PAGES + 0x7100, 0x200),
        msg[0x2200..],
        "the last entry"
    );
    assert_eq!(
        b.phys(PAGES + 0x5010, 0x100),
        msg[0x1800..0x1900],
        "through two levels"
    );
    let _ = pieces;
    // A KLM naming itself: every access through it fails, nothing panics.
    let lp = b.alloc_mr(access_mode::KLMS, 4, pd);
    let lkey = lp | 0x20;
    let mut u = Umr::new(
        UMR_CHECK_NOT_FREE | UMR_INLINE,
        frwr_mask(false),
        reg_seg(lkey, Perm::REMOTE_READ, 0, 0x100, access_mode::KLMS, 4),
    );
    u.inline.extend(klm(0x100, lkey, 0));
    let i = b.post_umr(lkey, &u);
    assert_umr_done(&mut b, i);
    a.post_send(
        wop::RDMA_READ,
        &[raddr(0, lkey), data(16, a.lkey, VA)],
        0,
        true,
    );
    run(&mut a, &mut b);
    let c = a.next_cqe(false).unwrap();
    assert_eq!(
        (c[63] >> 4, c[0x37]),
        (cqe_op::REQ_ERR, syndrome::REMOTE_ACCESS_ERR)
    );
}

/// Runs `setup` (returning the mkey and the UMR) on a fresh pair's responder card, posts the
/// UMR, and checks the error CQE's syndrome, the QP in error, the mkey unchanged and the peer
/// untouched.
fn umr_fails(want: u8, setup: impl FnOnce(&mut Card) -> (u32, Umr)) {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    let (mkey, u) = setup(&mut b);
    let before = b.d.fw.nic.mkeys.clone();
    let i = b.post_umr(mkey, &u);
    let c = b.next_cqe(false).expect("an error CQE");
    assert_eq!(
        (c[63] >> 4, c[0x37], be16(&c, 0x3c), c[0x38]),
        (cqe_op::REQ_ERR, want, i, wop::UMR),
        "syndrome {:#x}",
        c[0x37]
    );
    assert!(b.next_cqe(false).is_none());
    assert_eq!(b.state(), qpc_state::ERR);
    assert_eq!(b.d.fw.nic.mkeys, before, "no mkey changed");
    assert_eq!(a.state(), qpc_state::RTS, "the peer is not disturbed");
    run(&mut a, &mut b);
    assert!(a.next_cqe(false).is_none() && a.next_cqe(true).is_none());
}

#[test]
fn umr_errors_complete_with_the_prm_syndrome_and_change_nothing() {
    let pages = [PAGES];
    // Not UMR-enabled: the cards' MRs (CREATE_MKEY without umr_en).
    umr_fails(syndrome::MW_BIND_ERR, |b| {
        let k = b.lkey;
        (k, reg_mr(k, Perm::REMOTE_READ, FR_VA, 64, &pages))
    });
    // LOCAL_INV of an mkey that does not exist.
    umr_fails(syndrome::MW_BIND_ERR, |_| (0xabcd_ef00, local_inv()));
    // CHECK_FREE ("fail if free") on a free mkey, as mlx5_ib's rereg_pd_access.
    umr_fails(syndrome::MW_BIND_ERR, |b| {
        let pd = b.pd();
        let mr = b.alloc_mr(access_mode::MTT, 4, pd);
        let mut u = reg_mr(mr, Perm::REMOTE_READ, FR_VA, 64, &pages);
        u.flags = UMR_CHECK_FREE | UMR_INLINE;
        (mr, u)
    });
    // More entries than the mkey's table holds (4 octowords: 8 MTTs; 16 sent).
    umr_fails(syndrome::MW_BIND_ERR, |b| {
        let pd = b.pd();
        let mr = b.alloc_mr(access_mode::MTT, 4, pd);
        let many: Vec<u64> = (0..16).map(|k| PAGES + k * 4096).collect();
        (mr, reg_mr(mr, Perm::REMOTE_READ, FR_VA, 16 * 4096, &many))
    });
    // KLM entries at an offset past the table.
    umr_fails(syndrome::MW_BIND_ERR, |b| {
        let pd = b.pd();
        let mr = b.alloc_mr(access_mode::KLMS, 4, pd);
        let mut u = Umr::new(
            UMR_CHECK_NOT_FREE | UMR_INLINE,
            frwr_mask(false),
            reg_seg(mr, Perm::REMOTE_READ, 0, 16, access_mode::KLMS, 4),
        );
        u.inline.extend(klm(16, b.lkey, VA));
        u.offset = Some(4);
        (mr, u)
    });
    // Inline entries beyond the WQE's segment count.
    umr_fails(syndrome::LOCAL_QP_OP_ERR, |b| {
        let pd = b.pd();
        let mr = b.alloc_mr(access_mode::MTT, 4, pd);
        let mut u = reg_mr(mr, Perm::REMOTE_READ, FR_VA, 64, &pages);
        u.octowords = Some(40);
        (mr, u)
    });
    // A pointer whose byte count is short of the entries.
    umr_fails(syndrome::LOCAL_LENGTH_ERR, |b| {
        let pd = b.pd();
        let mr = b.alloc_mr(access_mode::MTT, 4, pd);
        let mut u = reg_mr(mr, Perm::REMOTE_READ, FR_VA, 64, &[]);
        u.pointer = Some((b.lkey, VA, 16));
        u.octowords = Some(4);
        (mr, u)
    });
    // A pointer through a key that does not exist.
    umr_fails(syndrome::LOCAL_PROT_ERR, |b| {
        let pd = b.pd();
        let mr = b.alloc_mr(access_mode::MTT, 4, pd);
        let mut u = reg_mr(mr, Perm::REMOTE_READ, FR_VA, 64, &[]);
        u.pointer = Some((0x00ee_ee00, VA, 64));
        u.octowords = Some(4);
        (mr, u)
    });
    // An mkey of another PD.
    umr_fails(syndrome::MW_BIND_ERR, |b| {
        let other = view::<AllocPdOut>(&ok::<cmds::AllocPd>(&mut b.d, |_| {})).pd();
        let mr = b.alloc_mr(access_mode::MTT, 4, other);
        (mr, reg_mr(mr, Perm::REMOTE_READ, FR_VA, 64, &pages))
    });
    // Moving an mkey to another PD from an ordinary QP.
    umr_fails(syndrome::MW_BIND_ERR, |b| {
        let pd = b.pd();
        let other = view::<AllocPdOut>(&ok::<cmds::AllocPd>(&mut b.d, |_| {})).pd();
        let mr = b.alloc_mr(access_mode::MTT, 4, pd);
        let mut u = reg_mr(mr, Perm::REMOTE_READ, FR_VA, 64, &pages);
        u.mask |= MkeyMask::PD;
        u.seg.set_pd(other);
        (mr, u)
    });
    // A page size change while umr_modify_entity_size_disabled (firmware that restricts
    // UMR; the ConnectX-4 profile's 0 allows it).
    umr_fails(syndrome::MW_BIND_ERR, |b| {
        b.d.fw
            .caps
            .set_general("umr_modify_entity_size_disabled", 1);
        let pd = b.pd();
        let mr = b.alloc_mr(access_mode::MTT, 4, pd);
        let mut u = reg_mr(mr, Perm::REMOTE_READ, FR_VA, 64, &pages);
        u.seg.set_log2_page_size(13);
        (mr, u)
    });
}

/// The REG_UMR QP as mlx5_ib creates and connects it (`umr.c` `mlx5r_umr_resource_init`,
/// `mlx5r_umr_qp_rst2rts`): send queue only, its own PD.
fn umr_qp(b: &mut Card, pd: u32) -> u32 {
    let mut v = input::<cmds::CreateQp>(|i| {
        let c = i.qpc_mut();
        c.set_st(qpc_st::REG_UMR.into());
        c.set_pd(pd);
        c.set_uar_page(UAR);
        c.set_cqn_snd(SCQ);
        c.set_cqn_rcv(SCQ);
        c.set_rq_type(rq_type::ZERO_LEN_RQ.into());
        c.set_log_sq_size(4);
        c.set_dbr_addr(QP_DBR + 0x40);
    });
    v.resize(CreateQpIn::SIZE + 8, 0);
    CreateQpIn::set_pas(&mut v, 0, PAGES + 0x3_0000).unwrap();
    let qpn = view::<CreateQpOut>(&exec(&mut b.d, &v, CreateQpOut::SIZE)).qpn();
    ok::<cmds::Rst2InitQp>(&mut b.d, |i| {
        i.set_qpn(qpn);
        let c = i.qpc_mut();
        c.set_pd(pd);
        c.primary_address_path_mut().set_vhca_port_num(1);
    });
    ok::<cmds::Init2RtrQp>(&mut b.d, |i| {
        i.set_qpn(qpn);
        i.qpc_mut().set_mtu(mtu::MTU_256.into());
    });
    ok::<cmds::Rtr2RtsQp>(&mut b.d, |i| i.set_qpn(qpn));
    qpn
}

/// Posts one WQE on the UMR QP (ring of 16 basic blocks at PAGES + 0x30000).
fn post_on_umr_qp(b: &mut Card, qpn: u32, pc: &mut u16, mkey: u32, u: &Umr) -> u16 {
    let idx = *pc;
    let segs = u.segs();
    let mut w = Vec::new();
    w.extend(wqe::opmod_idx_opcode(0, idx, wop::UMR).to_be_bytes());
    w.extend(wqe::qpn_ds(qpn, 1 + segs.len() as u8).to_be_bytes());
    w.extend([0, 0, 0, 0x08 | 0x20]);
    w.extend(mkey.to_be_bytes());
    for s in &segs {
        w.extend(s);
    }
    for (k, chunk) in w.chunks(64).enumerate() {
        let slot = (u64::from(idx) + k as u64) % 16;
        b.d.bus
            .mem
            .write(PAGES + 0x3_0000 + slot * 64, chunk)
            .unwrap();
    }
    *pc = pc.wrapping_add(w.len().div_ceil(64) as u16);
    b.d.bus
        .mem
        .write(QP_DBR + 0x44, &u32::from(*pc).to_be_bytes())
        .unwrap();
    let db: [u8; 8] = w[..8].try_into().unwrap();
    b.d.region_write(0, u64::from(UAR) * 4096 + 0x800, &db)
        .unwrap();
    idx
}

#[test]
fn mlx5_ib_reg_umr_qp_revokes_reenables_and_rereg_changes_access() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    let umr_pd = view::<AllocPdOut>(&ok::<cmds::AllocPd>(&mut b.d, |_| {})).pd();
    let qpn = umr_qp(&mut b, umr_pd);
    let mut pc = 0u16;
    // An MR as reg_create makes it (umr_en), remote write only.
    let mr = b.mtt_mr(0x4_0000, &[PAGES + 0x8000, PAGES + 0xa000], true);
    let user_pd = b.pd();
    // rereg_pd_access: CHECK_FREE ("fail if free"), access and PD from the mkey segment.
    let mut s = MkeySeg::new();
    s.set_flags(u32::from((Perm::LOCAL_READ | Perm::REMOTE_READ).bits()));
    s.set_pd(user_pd);
    s.set_qpn_mkey7_0(0xffff_ff00 | (mr & 0xff));
    let u = Umr::new(
        UMR_CHECK_FREE | UMR_INLINE,
        MkeyMask::LR | MkeyMask::LW | MkeyMask::RR | MkeyMask::RW | MkeyMask::A | MkeyMask::PD,
        s,
    );
    let i = post_on_umr_qp(&mut b, qpn, &mut pc, mr, &u);
    let c = b.next_cqe(false).unwrap();
    assert_eq!((c[63] >> 4, be16(&c, 0x3c)), (cqe_op::REQ, i));
    assert_eq!(be32(&c, 0x38), u32::from(wop::UMR) << 24 | qpn);
    let m = b.d.fw.mkey(mr).unwrap();
    assert!(m.access.remote_read && !m.access.remote_write && !m.access.local_write);
    // The peer reads it; a write is now refused... on a fresh connection below.
    b.d.bus.mem.write(PAGES + 0xa000, b"umr qp").unwrap();
    a.post_send(
        wop::RDMA_READ,
        &[raddr(0x4_1000, mr), data(6, a.lkey, VA)],
        0,
        true,
    );
    run(&mut a, &mut b);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    assert_eq!(a.read(VA, 6), b"umr qp");
    // revoke_mr: free, into the UMR PD.
    let mut s = MkeySeg::new();
    s.set_status(MKEY_STATUS_FREE.into());
    s.set_pd(umr_pd);
    let i = post_on_umr_qp(
        &mut b,
        qpn,
        &mut pc,
        mr,
        &Umr::new(UMR_INLINE, MkeyMask::PD | MkeyMask::FREE, s),
    );
    assert_eq!(be16(&b.next_cqe(false).unwrap(), 0x3c), i);
    assert!(b.d.fw.mkey(mr).is_none());
    assert_eq!(b.d.fw.nic.mkeys[&mkey_index(mr)].pd, umr_pd);
    // update_xlt with ENABLE: CHECK_NOT_FREE, entries by pointer at an offset, new range.
    let mut xlt = Vec::new();
    // A whole octoword: two MTT entries (the second page stays where it was), present
    // (umr.c mlx5r_umr_update_mr_pas: MLX5_IB_MTT_PRESENT).
    xlt.extend((PAGES + 0xb000 + 3).to_be_bytes());
    xlt.extend((PAGES + 0xa000 + 3).to_be_bytes());
    b.write(VA + 0x800, &xlt);
    let mut s = MkeySeg::new();
    s.set_flags(u32::from(
        (Perm::LOCAL_READ | Perm::LOCAL_WRITE | Perm::REMOTE_WRITE).bits(),
    ));
    s.set_pd(user_pd);
    s.set_start_addr(0x4_0000);
    s.set_len(0x2000);
    s.set_log2_page_size(12);
    let mut u = Umr::new(
        UMR_CHECK_NOT_FREE,
        MkeyMask::LEN
            | MkeyMask::PAGE_SIZE
            | MkeyMask::START_ADDR
            | MkeyMask::PD
            | MkeyMask::FREE
            | MkeyMask::LR
            | MkeyMask::LW
            | MkeyMask::RR
            | MkeyMask::RW,
        s,
    );
    // The UMR QP reads the list through a key of its own PD (mlx5_ib: the UMR PD's
    // local_dma_lkey); here a PA mkey in the UMR PD.
    let pa = {
        let v = input::<cmds::CreateMkey>(|i| {
            let c = i.memory_key_mkey_entry_mut();
            c.set_access_mode_1_0(access_mode::PA.into());
            c.set_pd(umr_pd);
            c.set_qpn(MKEY_QPN_NONE);
            c.set_lr(1);
            c.set_lw(1);
            c.set_length64(1);
        });
        let idx = view::<CreateMkeyOut>(&exec(&mut b.d, &v, CreateMkeyOut::SIZE)).mkey_index();
        mkey_from_index(idx, 0)
    };
    u.pointer = Some((pa, DATA + 0x800, 16));
    u.octowords = Some(1);
    u.offset = Some(0);
    let i = post_on_umr_qp(&mut b, qpn, &mut pc, mr, &u);
    let c = b.next_cqe(false).unwrap();
    assert_eq!(
        (c[63] >> 4, be16(&c, 0x3c)),
        (cqe_op::REQ, i),
        "{:#x}",
        c[0x37]
    );
    let m = b.d.fw.mkey(mr).expect("enabled again");
    assert_eq!(m.pd, user_pd);
    assert_eq!(
        m.map,
        MkeyMap::Mtt {
            page_shift: 12,
            pages: vec![PAGES + 0xb000, PAGES + 0xa000],
            enables: vec![3, 3],
        }
    );
    a.write(VA, b"xlt");
    a.post_send(
        wop::RDMA_WRITE,
        &[raddr(0x4_0000, mr), data(3, a.lkey, VA)],
        0,
        true,
    );
    run(&mut a, &mut b);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    assert_eq!(b.phys(PAGES + 0xb000, 3), b"xlt");
    // An error on the UMR QP: its QP to error, later WQEs flushed.
    let i = post_on_umr_qp(&mut b, qpn, &mut pc, 0x00dd_dd00, &local_inv());
    let c = b.next_cqe(false).unwrap();
    assert_eq!(
        (c[63] >> 4, c[0x37], be16(&c, 0x3c)),
        (cqe_op::REQ_ERR, syndrome::MW_BIND_ERR, i)
    );
    let i = post_on_umr_qp(&mut b, qpn, &mut pc, mr, &local_inv());
    let c = b.next_cqe(false).unwrap();
    assert_eq!(
        (c[63] >> 4, c[0x37], be16(&c, 0x3c)),
        (cqe_op::REQ_ERR, syndrome::WR_FLUSH_ERR, i)
    );
    assert!(
        b.d.fw.mkey(mr).is_some(),
        "the flushed LOCAL_INV did nothing"
    );
    assert_eq!(b.state(), qpc_state::RTS, "the RC QP is not disturbed");
}

#[test]
fn a_umr_waits_for_the_requests_before_it_to_complete() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    let pd = a.pd();
    let mr = a.alloc_mr(access_mode::MTT, 4, pd);
    let w = a.post_send(
        wop::RDMA_WRITE,
        &[raddr(VA, b.lkey), data(100, a.lkey, VA)],
        0,
        true,
    );
    let key = mr | 5;
    let u = a.post_umr(key, &reg_mr(key, Perm::REMOTE_READ, FR_VA, 64, &[PAGES]));
    assert!(
        a.next_cqe(false).is_none(),
        "the WRITE is in flight: the UMR waits"
    );
    assert!(a.d.fw.mkey(key).is_some(), "but it took effect");
    run(&mut a, &mut b);
    assert_eq!(be16(&a.next_cqe(false).unwrap(), 0x3c), w);
    let c = a.next_cqe(false).unwrap();
    assert_eq!((c[63] >> 4, be16(&c, 0x3c)), (cqe_op::REQ, u));
}

#[test]
fn fuzzed_umr_wqes_and_translations_never_panic() {
    let mut seed: u64 = 0x5eed_0f0a_1100;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    let pd = b.pd();
    let mut keys = vec![b.lkey];
    for mode in [
        access_mode::MTT,
        access_mode::KLMS,
        access_mode::KSM,
        access_mode::MTT,
    ] {
        keys.push(b.alloc_mr(mode, 8, pd));
    }
    let (klm, _) = klm_setup(&mut b);
    keys.push(klm);
    let umr_qp = UmrQp {
        qpn: b.qpn,
        pd,
        privileged: false,
    };
    let (mut applied, mut refused) = (0, 0);
    for round in 0..3000 {
        // A random UMR WQE: real structure, random fields, keys from the live set or not.
        let mut w = vec![0u8; 64 * (2 + (rnd() % 3) as usize)];
        for x in w.iter_mut() {
            *x = rnd() as u8;
        }
        w[3] = wop::UMR;
        // Mostly a consistent size, sometimes short.
        w[7] = (w.len() / 16) as u8 - if rnd() % 8 == 0 { (rnd() % 9) as u8 } else { 0 };
        let key = keys[(rnd() % keys.len() as u64) as usize];
        let key = if rnd() % 8 == 0 { rnd() as u32 } else { key };
        w[12..16].copy_from_slice(&key.to_be_bytes());
        // Entry sizes the WQE mostly holds; the offset mostly inside small tables.
        w[20..22].copy_from_slice(&((rnd() % 6) as u16).to_be_bytes());
        if rnd() % 2 == 0 {
            w[16] &= !UMR_TRANSLATION_OFFSET_EN;
        } else {
            w[22..24].copy_from_slice(&((rnd() % 8) as u16).to_be_bytes());
            w[32..36].fill(0);
        }
        if rnd() % 4 != 0 {
            w[16] |= UMR_INLINE;
        }
        if rnd() % 2 == 0 {
            // Entries mostly naming live keys, so nested walks happen.
            for e in w.chunks_mut(16).skip(8) {
                let k = keys[(rnd() % keys.len() as u64) as usize];
                e[4..8].copy_from_slice(&k.to_be_bytes());
                e[0..4].copy_from_slice(&((rnd() % 0x3000) as u32).to_be_bytes());
            }
        }
        if let Ok(u) = UmrWqe::decode(&w[..], round as u16) {
            let dma = crate::eth::mkeys::MkeyDma {
                fw: &b.d.fw,
                mem: &b.d.bus.mem,
                pd,
            };
            if let Ok(e) = u.entries(&dma) {
                match crate::roce::umr::apply(&mut b.d.fw, &u, &e, umr_qp) {
                    Ok(()) => applied += 1,
                    Err(_) => refused += 1,
                }
            }
        }
        // Random translations through every key.
        for &k in &keys {
            let k = b.d.fw.nic.mkeys.get(&mkey_index(k)).map_or(k, |m| m.key);
            let addr = rnd() % 0x1_0000_0000;
            let len = (rnd() % 0x4000) as u32;
            let _ =
                b.d.fw
                    .translate(&b.d.bus.mem, k, pd, addr, len, rnd() % 2 == 0);
        }
    }
    assert!(
        applied > 20 && refused > 20,
        "{applied} applied, {refused} refused"
    );
    // And some through the send queue: the device survives and the peer is untouched.
    for _ in 0..200 {
        let mut segs = vec![[0u8; 16]; (rnd() % 12) as usize];
        for s in segs.iter_mut() {
            for x in s.iter_mut() {
                *x = rnd() as u8;
            }
        }
        let key = keys[(rnd() % keys.len() as u64) as usize];
        b.post_send(wop::UMR, &segs, key, true);
        while b.next_cqe(false).is_some() {}
    }
    run(&mut a, &mut b);
    assert_eq!(a.state(), qpc_state::RTS);
}
