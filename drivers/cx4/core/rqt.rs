// SPDX-License-Identifier: GPL-2.0
//! RQ tables (en/rqt.c): the indirection an indirect TIR dispatches through, a list of RQ
//! numbers of at most `rqt_max_size` entries (`CREATE_RQT`) that can be rewritten in place
//! (`MODIFY_RQT`, e.g. to move traffic between the drop RQ and the channels' RQs).

use cx4_hw::{
    command,
    tir::{
        rqt_msg_len,
        set_rqt_rq_num,
        CreateRqtIn,
        ModifyRqtIn, //
    },
};
use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    cmd::input,
    mdev::Mdev, //
};

/// An RQT. Dropping it destroys it (no TIR may still use it).
pub(crate) struct Rqt {
    mdev: Arc<Mdev>,
    rqtn: u32,
    max_size: u32,
}

impl Rqt {
    /// Creates an RQT of up to `max_size` entries listing `rqns` (1..=`max_size` of them).
    pub(crate) fn create(mdev: &Arc<Mdev>, max_size: u32, rqns: &[u32]) -> Result<Self> {
        let n = rqns.len();
        if n == 0 || n > max_size as usize {
            return Err(EINVAL);
        }
        let mut m = input::<command::CreateRqt>(rqt_msg_len(n) - CreateRqtIn::SIZE)?;
        {
            let c = m.rqt_context_mut();
            c.set_rqt_max_size(max_size);
            c.set_rqt_actual_size(n as u32);
        }
        for (i, &rqn) in rqns.iter().enumerate() {
            set_rqt_rq_num(m.bytes_mut(), i, rqn).map_err(|_| EINVAL)?;
        }
        let out = mdev.cmdq.exec::<command::CreateRqt>(&m, 0)?;
        Ok(Self {
            mdev: mdev.clone(),
            rqtn: out.rqtn(),
            max_size,
        })
    }

    /// The RQT number.
    pub(crate) fn rqtn(&self) -> u32 {
        self.rqtn
    }

    /// The most entries it can list.
    pub(crate) fn max_size(&self) -> u32 {
        self.max_size
    }

    /// Replaces the list with `rqns` (1..=`max_size` of them).
    pub(crate) fn redirect(&self, rqns: &[u32]) -> Result {
        let n = rqns.len();
        if n == 0 || n > self.max_size as usize {
            return Err(EINVAL);
        }
        let mut m = input::<command::ModifyRqt>(rqt_msg_len(n) - ModifyRqtIn::SIZE)?;
        m.set_rqtn(self.rqtn);
        m.bitmask_mut().set_rqn_list(1);
        m.ctx_mut().set_rqt_actual_size(n as u32);
        for (i, &rqn) in rqns.iter().enumerate() {
            set_rqt_rq_num(m.bytes_mut(), i, rqn).map_err(|_| EINVAL)?;
        }
        self.mdev.cmdq.exec::<command::ModifyRqt>(&m, 0).map(|_| ())
    }
}

impl Drop for Rqt {
    fn drop(&mut self) {
        if let Ok(mut m) = input::<command::DestroyRqt>(0) {
            m.set_rqtn(self.rqtn);
            let _ = self.mdev.cmdq.exec::<command::DestroyRqt>(&m, 0);
        }
    }
}
