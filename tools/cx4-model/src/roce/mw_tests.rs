//! Memory windows (`imaicl`) as mlx5_ib and libmlx5 use them: a free, UMR-enabled KLM mkey
//! with local read only (mlx5_ib `mlx5_ib_alloc_mw`), bound by a UMR WQE on the owner's QP
//! (libmlx5 `qp.c` `set_bind_wr`: the new key variant, the bound QP for type 2, the window's
//! remote rights, start and length, one inline KLM into the MR). The responder serves the
//! window's range with the window's rights — not the local rights of its mkey, which a window
//! does not have — and a window bound to a QP serves that QP only.

use super::umr_tests::{assert_umr_done, klm, Umr};
use super::*;
use crate::fw::MKEY_QPN_NONE;
use cx4_hw::wqe::rdma::{MkeyMask, MkeySeg, Perm, UMR_CHECK_NOT_FREE, UMR_INLINE};

/// The window's range in the responder's memory (inside the MR of `b.lkey`).
const WIN: u64 = VA + 0x1000;
const WIN_LEN: u32 = 0x1000;

/// libmlx5's bind of `mw` (new key variant `key`) to `qpn` (type 2) over `WIN` with `perm`.
fn bind(mr: u32, key: u32, qpn: u32, perm: Perm) -> Umr {
    let mut s = MkeySeg::new();
    s.set_flags(u32::from(perm.bits()));
    s.set_qpn_mkey7_0((key & 0xff) | (qpn << 8));
    s.set_start_addr(WIN);
    s.set_len(WIN_LEN.into());
    let mask = MkeyMask::FREE
        | MkeyMask::KEY
        | MkeyMask::QPN
        | MkeyMask::LEN
        | MkeyMask::START_ADDR
        | MkeyMask::LW
        | MkeyMask::RR
        | MkeyMask::RW
        | MkeyMask::A;
    // libmlx5's MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE (1 << 5): the window must be free.
    let mut u = Umr::new(UMR_INLINE | UMR_CHECK_NOT_FREE, mask, s);
    u.inline.extend(klm(WIN_LEN, mr, WIN));
    u
}

/// A signaled RDMA WRITE of 16 bytes from `a` to `va` through `rkey`; whether it worked (a
/// refused one leaves both QPs in error).
fn write_through(a: &mut Card, b: &mut Card, rkey: u32, va: u64, byte: u8) -> bool {
    a.write(VA, &[byte; 16]);
    a.post_send(
        wop::RDMA_WRITE,
        &[raddr(va, rkey), data(16, a.lkey, VA)],
        0,
        true,
    );
    run(a, b);
    let c = a.next_cqe(false).unwrap();
    match c[63] >> 4 {
        cqe_op::REQ => true,
        _ => {
            assert_eq!(c[0x37], syndrome::REMOTE_ACCESS_ERR);
            false
        }
    }
}

#[test]
fn a_type_2_window_serves_its_range_with_its_rights_to_its_qp_only() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    let pd = b.pd();
    let mw = b.alloc_mr(access_mode::KLMS, 4, pd);
    let key = (mw & !0xff) | 0x07;
    // Bound to b's QP with remote write and read (no local rights: libmlx5 asks none).
    let qpn = b.qpn;
    let i = b.post_umr(
        mw,
        &bind(b.lkey, key, qpn, Perm::REMOTE_WRITE | Perm::REMOTE_READ),
    );
    assert_umr_done(&mut b, i);
    assert!(write_through(&mut a, &mut b, key, WIN + 0x10, 0x5a));
    assert_eq!(b.read(WIN + 0x10, 16), [0x5a; 16]);
    // Outside the window: refused, nothing written.
    assert!(!write_through(
        &mut a,
        &mut b,
        key,
        WIN + u64::from(WIN_LEN),
        0x66
    ));
    assert_eq!(b.read(WIN + u64::from(WIN_LEN), 16), [0; 16]);

    // The same window bound to another QP (free again first) is not served to b's.
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    let pd = b.pd();
    let mw = b.alloc_mr(access_mode::KLMS, 4, pd);
    let key = (mw & !0xff) | 0x08;
    let i = b.post_umr(mw, &bind(b.lkey, key, b.qpn ^ 1, Perm::REMOTE_WRITE));
    assert_umr_done(&mut b, i);
    assert!(!write_through(&mut a, &mut b, key, WIN + 0x20, 0x77));
    assert_eq!(b.read(WIN + 0x20, 16), [0; 16]);
}

#[test]
fn a_read_only_window_refuses_writes() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    let pd = b.pd();
    let mw = b.alloc_mr(access_mode::KLMS, 4, pd);
    let key = (mw & !0xff) | 0x09;
    let i = b.post_umr(mw, &bind(b.lkey, key, MKEY_QPN_NONE, Perm::REMOTE_READ));
    assert_umr_done(&mut b, i);
    assert!(!write_through(&mut a, &mut b, key, WIN + 0x30, 0x11));
    assert_eq!(b.read(WIN + 0x30, 16), [0; 16]);
}
