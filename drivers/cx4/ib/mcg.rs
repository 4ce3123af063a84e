// SPDX-License-Identifier: GPL-2.0
//! Multicast groups (mlx5_ib main.c `mlx5_ib_mcg_attach`/`mlx5_ib_mcg_detach` over cmd.c
//! `mlx5_cmd_attach_mcg`/`mlx5_cmd_detach_mcg`): a UD QP joins the card's group of a
//! multicast GID with `ATTACH_TO_MCG` and leaves it with `DETACH_FROM_MCG`; the card delivers
//! each datagram sent to the group (BTH destination QP 0xFFFFFF, the GID as the destination
//! address) to every QP attached to it. The core counts a QP's attachments and does not
//! destroy an attached QP (uverbs detaches a process's QPs first), so nothing is tracked here.

use cx4_hw::command;
use kernel::prelude::*;

use crate::{
    cmd::input,
    mdev::Mdev, //
};

/// `ATTACH_TO_MCG`: QP `qpn` joins the group of `gid`.
pub(crate) fn attach(mdev: &Mdev, qpn: u32, gid: &[u8; 16]) -> Result {
    let mut m = input::<command::AttachToMcg>(0)?;
    m.set_qpn(qpn);
    m.multicast_gid_mut().copy_from_slice(gid);
    mdev.cmdq.exec::<command::AttachToMcg>(&m, 0).map(|_| ())
}

/// `DETACH_FROM_MCG`: QP `qpn` leaves the group of `gid`.
pub(crate) fn detach(mdev: &Mdev, qpn: u32, gid: &[u8; 16]) -> Result {
    let mut m = input::<command::DetachFromMcg>(0)?;
    m.set_qpn(qpn);
    m.multicast_gid_mut().copy_from_slice(gid);
    mdev.cmdq.exec::<command::DetachFromMcg>(&m, 0).map(|_| ())
}
