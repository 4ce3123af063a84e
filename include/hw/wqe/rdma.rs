// SPDX-License-Identifier: GPL-2.0
//! WQE segments of the RDMA (mlx5_ib) queues, from `include/linux/mlx5/qp.h` and `device.h`.
//!
//! After the [`super::WqeCtrlSeg`] a send WQE carries, by transport and opcode:
//!
//! * XRC: a [`WqeXrcSeg`] naming the remote XRC SRQ;
//! * UD (and the GSI QP): a datagram segment, the address vector [`Av`];
//! * RDMA write / read and atomics on RC/UC/XRC: a [`WqeRaddrSeg`], then for atomics a
//!   [`WqeAtomicSeg`] (or a [`WqeMaskedAtomicSeg`] for the masked ones);
//! * UMR (memory registration, also local invalidate): a [`WqeUmrCtrlSeg`], a [`MkeySeg`] and
//!   the translation entries ([`Mtt`], [`Klm`]) inline or by pointer;
//!
//! and then the [`super::WqeDataSeg`] gather list (or inline data). A receive WQE of an SRQ
//! starts with a [`WqeSrqNextSeg`] before its scatter list.
//!
//! The WQE opcodes are in [`super::opcode`]; the completion opcodes and error syndromes of
//! the CQEs these WQEs produce are in [`crate::cq::cqe::opcode`] and
//! [`crate::cq::cqe::syndrome`].

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// Remote address segment of RDMA write, RDMA read and atomic WQEs
    /// (`struct mlx5_wqe_raddr_seg`, qp.h).
    pub struct WqeRaddrSeg: CStruct "mlx5_wqe_raddr_seg", 0x10 {
        /// Remote virtual address.
        raddr, set_raddr: u64 @ 0x000, 0x40;
        /// Remote key.
        rkey, set_rkey: u32 @ 0x040, 0x20;
    }

    /// Atomic segment of compare-and-swap / fetch-and-add WQEs (`struct mlx5_wqe_atomic_seg`,
    /// qp.h).
    pub struct WqeAtomicSeg: CStruct "mlx5_wqe_atomic_seg", 0x10 {
        /// The swap value (compare and swap) or the addend (fetch and add).
        swap_add, set_swap_add: u64 @ 0x000, 0x40;
        /// The compare value (compare and swap).
        compare, set_compare: u64 @ 0x040, 0x40;
    }

    /// Atomic segment of the masked atomics (`struct mlx5_wqe_masked_atomic_seg`, qp.h).
    pub struct WqeMaskedAtomicSeg: CStruct "mlx5_wqe_masked_atomic_seg", 0x20 {
        /// The swap value or addend.
        swap_add, set_swap_add: u64 @ 0x000, 0x40;
        /// The compare value.
        compare, set_compare: u64 @ 0x040, 0x40;
        /// Mask of the swapped bits (or the field boundaries of a masked fetch and add).
        swap_add_mask, set_swap_add_mask: u64 @ 0x080, 0x40;
        /// Mask of the compared bits.
        compare_mask, set_compare_mask: u64 @ 0x0c0, 0x40;
    }

    /// XRC segment: the remote XRC SRQ of an XRC send (`struct mlx5_wqe_xrc_seg`, qp.h).
    pub struct WqeXrcSeg: CStruct "mlx5_wqe_xrc_seg", 0x10 {
        /// The XRC SRQ number at the responder.
        xrc_srqn, set_xrc_srqn: u32 @ 0x000, 0x20;
    }

    /// Address vector (`struct mlx5_av`, qp.h), the datagram segment of UD send WQEs
    /// (`struct mlx5_wqe_datagram_seg`) and the form mlx5_ib keeps an address handle in.
    pub struct Av: CStruct "mlx5_av", 0x30 {
        /// Destination Q_Key (`key.qkey.qkey`).
        qkey, set_qkey: u32 @ 0x000, 0x20;
        /// DC access key (`key.dc_key`, the same bytes as `qkey` and the reserved word).
        dc_key, set_dc_key: u64 @ 0x000, 0x40;
        /// Destination QP (bits 23:0) and [`EXTENDED_UD_AV`] (bit 31).
        dqp_dct, set_dqp_dct: u32 @ 0x040, 0x20;
        /// Bits 23:0 of `dqp_dct`: the destination QP number.
        dqpn, set_dqpn: u32 @ 0x048, 0x18;
        /// Static rate (bits 7:4) and service level (bits 3:0).
        stat_rate_sl, set_stat_rate_sl: u32 @ 0x060, 0x8;
        /// Bits 7:4 of `stat_rate_sl`.
        stat_rate, set_stat_rate: u32 @ 0x060, 0x4;
        /// Bits 3:0 of `stat_rate_sl`.
        sl, set_sl: u32 @ 0x064, 0x4;
        /// Force loopback (bit 7) and the source path bits (mlid, bits 6:0).
        fl_mlid, set_fl_mlid: u32 @ 0x068, 0x8;
        /// Remote LID (InfiniBand).
        rlid, set_rlid: u32 @ 0x070, 0x10;
        /// UDP source port (RoCE v2; a union with `rlid`).
        udp_sport, set_udp_sport: u32 @ 0x070, 0x10;
        /// Destination MAC address (RoCE).
        rmac, rmac_mut: bytes @ 0x0a0, 0x30;
        /// Traffic class (IPv6) / DSCP and ECN (IPv4).
        tclass, set_tclass: u32 @ 0x0d0, 0x8;
        /// Hop limit / TTL.
        hop_limit, set_hop_limit: u32 @ 0x0d8, 0x8;
        /// GRH present ([`AV_GRH`], bit 30), source GID index (bits 27:20), flow label
        /// (bits 19:0).
        grh_gid_fl, set_grh_gid_fl: u32 @ 0x0e0, 0x20;
        /// Destination GID (the IPv6 or IPv4-mapped destination address on RoCE v2).
        rgid, rgid_mut: bytes @ 0x100, 0x80;
    }

    /// The "next" segment that starts each receive WQE of an SRQ, linking the free WQEs
    /// (`struct mlx5_wqe_srq_next_seg`, device.h).
    pub struct WqeSrqNextSeg: CStruct "mlx5_wqe_srq_next_seg", 0x10 {
        /// Index of the next WQE of the free list.
        next_wqe_index, set_next_wqe_index: u32 @ 0x010, 0x10;
        /// WQE signature.
        signature, set_signature: u32 @ 0x020, 0x8;
    }

    /// UMR control segment: what a UMR WQE changes in its mkey (`struct mlx5_wqe_umr_ctrl_seg`,
    /// qp.h).
    pub struct WqeUmrCtrlSeg: CStruct "mlx5_wqe_umr_ctrl_seg", 0x30 {
        /// [`UMR_INLINE`], [`UMR_CHECK_FREE`] / [`UMR_CHECK_NOT_FREE`],
        /// [`UMR_TRANSLATION_OFFSET_EN`].
        flags, set_flags: u32 @ 0x000, 0x8;
        /// Size of the translation entries in 16-byte units.
        xlt_octowords, set_xlt_octowords: u32 @ 0x020, 0x10;
        /// Offset of the first entry in the mkey's translation table, bits 15:0, in 16-byte
        /// units.
        xlt_offset, set_xlt_offset: u32 @ 0x030, 0x10;
        /// Size of the BSF in 16-byte units (signature mkeys; a union with `xlt_offset`).
        bsf_octowords, set_bsf_octowords: u32 @ 0x030, 0x10;
        /// The mkey fields the WQE sets ([`MkeyMask`]).
        mkey_mask, set_mkey_mask: u64 @ 0x040, 0x40;
        /// Bits 47:16 of the translation offset.
        xlt_offset_47_16, set_xlt_offset_47_16: u32 @ 0x080, 0x20;
    }

    /// The mkey context of a UMR WQE (`struct mlx5_mkey_seg`, device.h): the byte-oriented
    /// form of [`crate::mkey::Mkc`].
    pub struct MkeySeg: CStruct "mlx5_mkey_seg", 0x40 {
        /// Bits 7:6: [`MKEY_STATUS_FREE`] (bit 6) for an mkey without translation.
        status, set_status: u32 @ 0x000, 0x8;
        /// PCIe control: small fence, relaxed ordering, no snoop.
        pcie_control, set_pcie_control: u32 @ 0x008, 0x8;
        /// Access rights ([`Perm`]) and access mode bits 1:0.
        flags, set_flags: u32 @ 0x010, 0x8;
        /// Version.
        version, set_version: u32 @ 0x018, 0x8;
        /// QP number (bits 31:8) and the variant byte of the key (bits 7:0).
        qpn_mkey7_0, set_qpn_mkey7_0: u32 @ 0x020, 0x20;
        /// Bits 7:0 of `qpn_mkey7_0`: the key's variant byte.
        mkey7_0, set_mkey7_0: u32 @ 0x038, 0x8;
        /// [`MKEY_REMOTE_INVAL`], [`MKEY_FLAG_SYNC_UMR`], [`MKEY_BSF_EN`], length64 (bit 31)
        /// and the PD (bits 23:0).
        flags_pd, set_flags_pd: u32 @ 0x060, 0x20;
        /// Bit 31 of `flags_pd` (`length64` of the [`crate::mkey::Mkc`]): the key spans the
        /// whole address space and `len` is ignored.
        length64, set_length64: u32 @ 0x060, 0x1;
        /// Bits 23:0 of `flags_pd`: the protection domain.
        pd, set_pd: u32 @ 0x068, 0x18;
        /// Start address.
        start_addr, set_start_addr: u64 @ 0x080, 0x40;
        /// Length in bytes.
        len, set_len: u64 @ 0x0c0, 0x40;
        /// BSF size in 16-byte units.
        bsfs_octo_size, set_bsfs_octo_size: u32 @ 0x100, 0x20;
        /// Translation table size in 16-byte units.
        xlt_oct_size, set_xlt_oct_size: u32 @ 0x1a0, 0x20;
        /// Log2 of the page size of the translation entries.
        log2_page_size, set_log2_page_size: u32 @ 0x1d8, 0x8;
    }

    /// A memory translation table entry (`struct mlx5_mtt`, qp.h): a page address with the
    /// read (bit 0) and write (bit 1) enables ([`MTT_EN_RD`], [`MTT_EN_WR`]).
    pub struct Mtt: CStruct "mlx5_mtt", 0x8 {
        /// Page address | enables.
        ptag, set_ptag: u64 @ 0x000, 0x40;
    }

    /// A fixed-size indirect (KSM) translation entry (`struct mlx5_ksm`, qp.h): the next
    /// `2^log_page_size` bytes of the range are at `va` of the mkey `key`.
    pub struct Ksm: CStruct "mlx5_ksm", 0x10 {
        /// Memory key.
        key, set_key: u32 @ 0x020, 0x20;
        /// Virtual address inside the key.
        va, set_va: u64 @ 0x040, 0x40;
    }

    /// An indirect (KLM) translation entry (`struct mlx5_klm`, qp.h): `bcount` bytes at `va` of
    /// the mkey `key`.
    pub struct Klm: CStruct "mlx5_klm", 0x10 {
        /// Byte count.
        bcount, set_bcount: u32 @ 0x000, 0x20;
        /// Memory key.
        key, set_key: u32 @ 0x020, 0x20;
        /// Virtual address inside the key.
        va, set_va: u64 @ 0x040, 0x40;
    }
}

impl MkeySeg {
    /// Whether the key covers no bytes (`len` 0 without `length64`).
    pub fn is_empty(&self) -> bool {
        self.len() == 0 && self.length64() == 0
    }
}

/// `MLX5_EXTENDED_UD_AV` (device.h): bit 31 of [`Av::dqp_dct`], set in every UD datagram
/// segment mlx5_ib posts (the full 48-byte address vector follows).
pub const EXTENDED_UD_AV: u32 = 0x8000_0000;
/// Bit 30 of [`Av::grh_gid_fl`]: a GRH (or, on RoCE, the IP header) is built from the vector.
pub const AV_GRH: u32 = 1 << 30;

/// [`WqeUmrCtrlSeg::flags`]: `xlt_offset` is valid (`MLX5_UMR_TRANSLATION_OFFSET_EN`).
pub const UMR_TRANSLATION_OFFSET_EN: u8 = 1 << 4;
/// [`WqeUmrCtrlSeg::flags`]: fail unless the mkey is free (`MLX5_UMR_CHECK_NOT_FREE`; the
/// kernel's name reads the other way round, its use does not: umr.c
/// `mlx5r_umr_set_update_xlt_ctrl_seg` sets it with the comment "fail if not free" to enable
/// a free cache mkey, wr.c sets it for IB_WR_REG_MR on a free mkey, and libmlx5 calls the
/// same bit `MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE` for binding a free type 2 memory window).
pub const UMR_CHECK_NOT_FREE: u8 = 1 << 5;
/// [`WqeUmrCtrlSeg::flags`]: fail if the mkey is free (`MLX5_UMR_CHECK_FREE`; umr.c "fail if
/// free", used to change a live MR's PD and access rights).
pub const UMR_CHECK_FREE: u8 = 2 << 5;
/// [`WqeUmrCtrlSeg::flags`]: fail unless the mkey is bound to this QP or to none
/// (`MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN`, rdma-core mlx5dv.h; libmlx5 sets it to invalidate).
pub const UMR_CHECK_QPN: u8 = 1 << 3;
/// [`WqeUmrCtrlSeg::flags`]: the translation entries are inline in the WQE (`MLX5_UMR_INLINE`).
pub const UMR_INLINE: u8 = 1 << 7;
/// Alignment of a UMR translation buffer (`MLX5_UMR_ALIGN`).
pub const UMR_ALIGN: usize = 2048;
/// Alignment of the translation entries of a UMR in bytes (`MLX5_UMR_FLEX_ALIGNMENT`).
pub const UMR_FLEX_ALIGNMENT: usize = 0x40;

/// [`MkeySeg::status`]: the mkey is free (`MLX5_MKEY_STATUS_FREE`).
pub const MKEY_STATUS_FREE: u8 = 1 << 6;
/// [`MkeySeg::flags_pd`]: remote invalidation allowed (`MLX5_MKEY_REMOTE_INVAL`).
pub const MKEY_REMOTE_INVAL: u32 = 1 << 24;
/// [`MkeySeg::flags_pd`]: synchronous UMR (`MLX5_MKEY_FLAG_SYNC_UMR`).
pub const MKEY_FLAG_SYNC_UMR: u32 = 1 << 29;
/// [`MkeySeg::flags_pd`]: a BSF follows (`MLX5_MKEY_BSF_EN`).
pub const MKEY_BSF_EN: u32 = 1 << 30;

/// [`Mtt::ptag`]: the page may be read (`MLX5_EN_RD`).
pub const MTT_EN_RD: u64 = 1;
/// [`Mtt::ptag`]: the page may be written (`MLX5_EN_WR`).
pub const MTT_EN_WR: u64 = 2;

bitflags::bitflags! {
    /// [`WqeUmrCtrlSeg::mkey_mask`]: the [`MkeySeg`] fields a UMR WQE sets (`MLX5_MKEY_MASK_*`,
    /// device.h).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct MkeyMask: u64 {
        /// `len`.
        const LEN = 1 << 0;
        /// `log2_page_size`.
        const PAGE_SIZE = 1 << 1;
        /// `start_addr`.
        const START_ADDR = 1 << 6;
        /// `pd`.
        const PD = 1 << 7;
        /// [`MKEY_REMOTE_INVAL`].
        const EN_RINVAL = 1 << 8;
        /// Expected signature error count.
        const EN_SIGERR = 1 << 9;
        /// [`MKEY_BSF_EN`].
        const BSF_EN = 1 << 12;
        /// `mkey7_0`.
        const KEY = 1 << 13;
        /// `qpn`.
        const QPN = 1 << 14;
        /// [`Perm::LOCAL_READ`].
        const LR = 1 << 17;
        /// [`Perm::LOCAL_WRITE`].
        const LW = 1 << 18;
        /// [`Perm::REMOTE_READ`].
        const RR = 1 << 19;
        /// [`Perm::REMOTE_WRITE`].
        const RW = 1 << 20;
        /// [`Perm::ATOMIC`].
        const A = 1 << 21;
        /// Small fence.
        const SMALL_FENCE = 1 << 23;
        /// Relaxed ordering of writes.
        const RELAXED_ORDERING_WRITE = 1 << 25;
        /// `status` (free).
        const FREE = 1 << 29;
        /// Bit 5 of the page size.
        const PAGE_SIZE_5 = 1 << 42;
        /// Relaxed ordering of reads.
        const RELAXED_ORDERING_READ = 1 << 47;
    }
}

bitflags::bitflags! {
    /// Access rights in [`MkeySeg::flags`] (`MLX5_PERM_*`, device.h).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Perm: u8 {
        /// Local read.
        const LOCAL_READ = 1 << 2;
        /// Local write.
        const LOCAL_WRITE = 1 << 3;
        /// Remote read.
        const REMOTE_READ = 1 << 4;
        /// Remote write.
        const REMOTE_WRITE = 1 << 5;
        /// Remote atomics.
        const ATOMIC = 1 << 6;
        /// The mkey may be changed by UMR.
        const UMR_EN = 1 << 7;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(byte offset, bit width)` of a declared field.
    fn at(fields: &[crate::bits::Field], name: &str) -> (u32, u32) {
        let f = fields.iter().find(|f| f.0 == name).expect(name);
        (f.1 / 8, f.2)
    }

    // struct mlx5_wqe_raddr_seg: __be64 raddr; __be32 rkey; u32 reserved;
    // struct mlx5_wqe_atomic_seg: __be64 swap_add; __be64 compare;
    // struct mlx5_wqe_masked_atomic_seg: __be64 swap_add, compare, swap_add_mask, compare_mask;
    // struct mlx5_wqe_xrc_seg: __be32 xrc_srqn; u8 rsvd[12];
    #[test]
    fn raddr_atomic_and_xrc_segs_match_qp_h() {
        assert_eq!(WqeRaddrSeg::SIZE, 16);
        assert_eq!(at(WqeRaddrSeg::FIELDS, "raddr"), (0, 64));
        assert_eq!(at(WqeRaddrSeg::FIELDS, "rkey"), (8, 32));
        assert_eq!(WqeAtomicSeg::SIZE, 16);
        assert_eq!(at(WqeAtomicSeg::FIELDS, "swap_add"), (0, 64));
        assert_eq!(at(WqeAtomicSeg::FIELDS, "compare"), (8, 64));
        assert_eq!(WqeMaskedAtomicSeg::SIZE, 32);
        let f = WqeMaskedAtomicSeg::FIELDS;
        assert_eq!(at(f, "swap_add"), (0, 64));
        assert_eq!(at(f, "compare"), (8, 64));
        assert_eq!(at(f, "swap_add_mask"), (16, 64));
        assert_eq!(at(f, "compare_mask"), (24, 64));
        assert_eq!(WqeXrcSeg::SIZE, 16);
        assert_eq!(at(WqeXrcSeg::FIELDS, "xrc_srqn"), (0, 32));
        let mut r = WqeRaddrSeg::new();
        r.set_raddr(0x0102_0304_0506_0708);
        r.set_rkey(0xaabb_ccdd);
        assert_eq!(
            r.0,
            [1, 2, 3, 4, 5, 6, 7, 8, 0xaa, 0xbb, 0xcc, 0xdd, 0, 0, 0, 0]
        );
    }

    // struct mlx5_av: union { struct { __be32 qkey; __be32 reserved; } qkey; __be64 dc_key; }
    // key; __be32 dqp_dct; u8 stat_rate_sl; u8 fl_mlid; union { __be16 rlid; __be16
    // udp_sport; }; u8 reserved0[4]; u8 rmac[6]; u8 tclass; u8 hop_limit; __be32 grh_gid_fl;
    // u8 rgid[16];  (48 bytes)
    #[test]
    fn av_matches_qp_h() {
        let f = Av::FIELDS;
        assert_eq!(Av::SIZE, 48);
        assert_eq!(at(f, "qkey"), (0, 32));
        assert_eq!(at(f, "dc_key"), (0, 64));
        assert_eq!(at(f, "dqp_dct"), (8, 32));
        assert_eq!(at(f, "stat_rate_sl"), (12, 8));
        assert_eq!(at(f, "fl_mlid"), (13, 8));
        assert_eq!(at(f, "rlid"), (14, 16));
        assert_eq!(at(f, "udp_sport"), (14, 16));
        assert_eq!(at(f, "rmac"), (20, 48));
        assert_eq!(at(f, "tclass"), (26, 8));
        assert_eq!(at(f, "hop_limit"), (27, 8));
        assert_eq!(at(f, "grh_gid_fl"), (28, 32));
        assert_eq!(at(f, "rgid"), (32, 128));
        // wr.c set_datagram_seg: dqp_dct = remote_qpn | MLX5_EXTENDED_UD_AV; ah.c:
        // stat_rate_sl = rate << 4 | sl, grh_gid_fl = flow_label | 1 << 30 | sgid_index << 20.
        let mut a = Av::new();
        a.set_dqp_dct(0x12_3456 | EXTENDED_UD_AV);
        a.set_stat_rate(7);
        a.set_sl(3);
        a.set_grh_gid_fl(AV_GRH | (5 << 20) | 0x1_2345);
        a.rmac_mut().copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        assert_eq!(&a.0[8..14], &[0x80, 0x12, 0x34, 0x56, 0x73, 0]);
        assert_eq!(a.dqpn(), 0x12_3456);
        assert_eq!(&a.0[20..26], &[2, 0, 0, 0, 0, 1]);
        assert_eq!(&a.0[28..32], &[0x40, 0x51, 0x23, 0x45]);
    }

    // struct mlx5_wqe_srq_next_seg: u8 rsvd0[2]; __be16 next_wqe_index; u8 signature;
    // u8 rsvd1[11];
    #[test]
    fn srq_next_seg_matches_device_h() {
        assert_eq!(WqeSrqNextSeg::SIZE, 16);
        assert_eq!(at(WqeSrqNextSeg::FIELDS, "next_wqe_index"), (2, 16));
        assert_eq!(at(WqeSrqNextSeg::FIELDS, "signature"), (4, 8));
        let mut s = WqeSrqNextSeg::new();
        s.set_next_wqe_index(0x1234);
        assert_eq!(&s.0[..4], &[0, 0, 0x12, 0x34]);
    }

    // struct mlx5_wqe_umr_ctrl_seg: u8 flags; u8 rsvd0[3]; __be16 xlt_octowords; union {
    // __be16 xlt_offset; __be16 bsf_octowords; }; __be64 mkey_mask; __be32 xlt_offset_47_16;
    // u8 rsvd1[28];  (48 bytes)
    #[test]
    fn umr_ctrl_seg_matches_qp_h() {
        let f = WqeUmrCtrlSeg::FIELDS;
        assert_eq!(WqeUmrCtrlSeg::SIZE, 48);
        assert_eq!(at(f, "flags"), (0, 8));
        assert_eq!(at(f, "xlt_octowords"), (4, 16));
        assert_eq!(at(f, "xlt_offset"), (6, 16));
        assert_eq!(at(f, "bsf_octowords"), (6, 16));
        assert_eq!(at(f, "mkey_mask"), (8, 64));
        assert_eq!(at(f, "xlt_offset_47_16"), (16, 32));
        let mut u = WqeUmrCtrlSeg::new();
        u.set_flags((UMR_INLINE | UMR_CHECK_FREE).into());
        u.set_mkey_mask((MkeyMask::LEN | MkeyMask::PAGE_SIZE_5).bits());
        assert_eq!(u.0[0], 0xc0);
        assert_eq!(&u.0[8..16], &[0, 0, 0x04, 0, 0, 0, 0, 0x01]);
    }

    // struct mlx5_mkey_seg: u8 status, pcie_control, flags, version; __be32 qpn_mkey7_0;
    // u8 rsvd1[4]; __be32 flags_pd; __be64 start_addr; __be64 len; __be32 bsfs_octo_size;
    // u8 rsvd2[16]; __be32 xlt_oct_size; u8 rsvd3[3]; u8 log2_page_size; u8 rsvd4[4];
    // (64 bytes)
    #[test]
    fn mkey_seg_matches_device_h() {
        let f = MkeySeg::FIELDS;
        assert_eq!(MkeySeg::SIZE, 64);
        let expect = [
            ("status", (0, 8)),
            ("pcie_control", (1, 8)),
            ("flags", (2, 8)),
            ("version", (3, 8)),
            ("qpn_mkey7_0", (4, 32)),
            ("flags_pd", (12, 32)),
            ("start_addr", (16, 64)),
            ("len", (24, 64)),
            ("bsfs_octo_size", (32, 32)),
            ("xlt_oct_size", (52, 32)),
            ("log2_page_size", (59, 8)),
        ];
        for (name, want) in expect {
            assert_eq!(at(f, name), want, "{name}");
        }
        let mut m = MkeySeg::new();
        m.set_flags_pd(MKEY_REMOTE_INVAL | 0x12_3456);
        m.set_mkey7_0(0xab);
        m.set_flags((Perm::LOCAL_READ | Perm::REMOTE_WRITE).bits().into());
        assert_eq!(&m.0[12..16], &[0x01, 0x12, 0x34, 0x56]);
        assert_eq!(m.pd(), 0x12_3456);
        assert_eq!(m.0[7], 0xab);
        assert_eq!(m.0[2], 0x24);
        assert!(m.is_empty());
        m.set_length64(1);
        assert_eq!(m.0[12], 0x81);
        assert!(!m.is_empty());
    }

    // struct mlx5_mtt: __be64 ptag; struct mlx5_klm: __be32 bcount; __be32 key; __be64 va;
    #[test]
    fn translation_entries_match_qp_h() {
        assert_eq!(Mtt::SIZE, 8);
        assert_eq!(at(Mtt::FIELDS, "ptag"), (0, 64));
        assert_eq!(Klm::SIZE, 16);
        assert_eq!(at(Klm::FIELDS, "bcount"), (0, 32));
        assert_eq!(at(Klm::FIELDS, "key"), (4, 32));
        assert_eq!(at(Klm::FIELDS, "va"), (8, 64));
        // struct mlx5_ksm: __be32 reserved; __be32 key; __be64 va;
        assert_eq!(Ksm::SIZE, 16);
        assert_eq!(at(Ksm::FIELDS, "key"), (4, 32));
        assert_eq!(at(Ksm::FIELDS, "va"), (8, 64));
        assert_eq!(UMR_FLEX_ALIGNMENT / Mtt::SIZE, 8);
        assert_eq!(UMR_FLEX_ALIGNMENT / Klm::SIZE, 4);
    }
}
