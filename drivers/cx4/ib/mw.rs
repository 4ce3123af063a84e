// SPDX-License-Identifier: GPL-2.0
//! Memory windows (mlx5_ib mr.c `mlx5_ib_alloc_mw`, `mlx5_ib_dealloc_mw`): a free KLM mkey
//! in the window's PD that the process binds, rebinds and invalidates itself with work
//! requests (libmlx5's UMR WQEs: `ibv_bind_mw`, `IBV_WR_BIND_MW`, `IBV_WR_LOCAL_INV`) and a
//! peer invalidates with `SEND_WITH_INV` (type 2: remote invalidation enabled); the card
//! checks the window's range, rights and bound QP on every access through its rkey.

use ib::{
    Pd,
    Udata, //
};
use kernel::prelude::*;
use zerocopy_derive::{
    FromBytes,
    Immutable,
    IntoBytes,
    KnownLayout, //
};

use crate::{
    ib::IbDev,
    mkey::Mkey, //
};

/// `struct mlx5_ib_alloc_mw`, optional (libmlx5 sends none): a comp_mask and reserved
/// fields that must be zero; `num_klms` sizes mlx5_ib's translation table, whose four
/// entries are always enough for the one range a bind gives.
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Default, Debug)]
struct AllocMwReq {
    comp_mask: u32,
    num_klms: u8,
    reserved1: u8,
    reserved2: u16,
}

/// A memory window: its mkey, destroyed on drop.
pub(crate) struct IbMw {
    _mkey: Mkey,
}

impl IbMw {
    /// A window of `pd` (type 2 if `type_2`); returns it and its initial rkey.
    pub(crate) fn alloc(
        pd: &Pd<IbDev>,
        type_2: bool,
        udata: &mut Udata<'_>,
    ) -> Result<(Self, u32)> {
        let sh = pd.device().data();
        if sh.caps.gen().imaicl() == 0 {
            return Err(ib::eopnotsupp());
        }
        if udata.in_len() > 0 {
            let req: AllocMwReq = udata.read(size_of::<AllocMwReq>())?;
            if req.reserved1 != 0 || req.reserved2 != 0 || req.comp_mask != 0 {
                return Err(ib::eopnotsupp());
            }
        }
        let mkey = Mkey::create_window(&sh.mdev, pd.pdn(), type_2)?;
        let rkey = mkey.key();
        Ok((Self { _mkey: mkey }, rkey))
    }
}
