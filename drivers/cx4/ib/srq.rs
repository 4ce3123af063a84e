// SPDX-License-Identifier: GPL-2.0
//! User shared receive queues (mlx5_ib srq.c `mlx5_ib_create_srq`, srq_cmd.c
//! `create_rmp_cmd`): with ISSI 1 a basic SRQ is a receive memory pool (RMP). libmlx5
//! allocates the linked list of receive WQEs (a 16-byte next segment, then the scatter
//! entries, rounded up to a power of two of at least 32 bytes) and the doorbell record in
//! the process's memory; the driver pins them and creates the RMP, ready, on their pages.

use cx4_hw::{
    command,
    srq::{
        rmpc_state,
        CreateRmpIn, //
    },
};
use ib::{
    Access,
    Pd,
    SrqInitAttr,
    Udata,
    Umem, //
};
use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    cmd::input,
    ib::{
        abi::{
            self,
            CreateSrqReq,
            CreateSrqResp, //
        },
        cq::ADAPTER_PAGE,
        IbDev, //
    },
    mdev::Mdev,
};

/// A receive WQE's next segment (`struct mlx5_wqe_srq_next_seg`) and a scatter entry
/// (`struct mlx5_wqe_data_seg`).
const NEXT_SEG: u32 = 16;
const DATA_SEG: u32 = 16;

/// A user SRQ (an RMP). Dropping it destroys it, then unpins its memory.
pub(crate) struct IbSrq {
    mdev: Arc<Mdev>,
    rmpn: u32,
    _buf: Umem,
    _db: Umem,
}

impl IbSrq {
    /// The RMP number, which QPs on the SRQ name.
    pub(crate) fn rmpn(&self) -> u32 {
        self.rmpn
    }

    /// Creates a basic user SRQ from libmlx5's request.
    pub(crate) fn create(
        pd: &Pd<IbDev>,
        attr: &SrqInitAttr,
        udata: Option<&mut Udata<'_>>,
    ) -> Result<Self> {
        let udata = udata.ok_or_else(ib::eopnotsupp)?;
        if !attr.basic {
            return Err(ib::eopnotsupp());
        }
        let dev = pd.device();
        let sh = dev.data();
        let g = sh.caps.gen();
        let max_wqes = 1u32 << g.log_max_srq_sz();
        if attr.max_wr >= max_wqes || attr.max_sge > g.max_wqe_sz_rq() / DATA_SEG {
            return Err(EINVAL);
        }
        let req: CreateSrqReq = udata.read(abi::CREATE_SRQ_REQ_MIN_LEN)?;
        if req.flags != 0 || req.reserved0 != 0 || req.reserved1 != 0 {
            return Err(EINVAL);
        }
        let max = (attr.max_wr + 1).next_power_of_two();
        let desc = (NEXT_SEG + attr.max_sge * DATA_SEG)
            .next_power_of_two()
            .max(32);
        let bytes = usize::try_from(max)? * usize::try_from(desc)?;
        // The work queue's page offset is not offered: libmlx5's buffers are page aligned.
        if req.buf_addr % ADAPTER_PAGE as u64 != 0 || req.db_addr % 8 != 0 {
            return Err(EINVAL);
        }
        let buf = Umem::get(dev, req.buf_addr, bytes, Access::LOCAL_WRITE)?;
        let db = Umem::get(dev, req.db_addr, 8, Access::LOCAL_WRITE)?;
        let pas = buf.dma_blocks(ADAPTER_PAGE)?;
        let mut m = input::<command::CreateRmp>(pas.len() * 8)?;
        {
            let c = m.ctx_mut();
            c.set_state(rmpc_state::RDY.into());
            let wq = c.wq_mut();
            wq.set_log_wq_pg_sz(0);
            wq.set_log_wq_stride(desc.ilog2());
            wq.set_log_wq_sz(max.ilog2());
            wq.set_lwm(attr.srq_limit);
            wq.set_pd(pd.pdn());
            wq.set_dbr_addr(db.start_dma());
        }
        for (i, pa) in pas.iter().enumerate() {
            CreateRmpIn::set_wq_pas(m.bytes_mut(), i, *pa).map_err(|_| EINVAL)?;
        }
        let out = sh.mdev.cmdq.exec::<command::CreateRmp>(&m, 0)?;
        let srq = Self {
            mdev: sh.mdev.clone(),
            rmpn: out.rmpn(),
            _buf: buf,
            _db: db,
        };
        udata.respond(&CreateSrqResp {
            srqn: srq.rmpn,
            reserved: 0,
        })?;
        Ok(srq)
    }
}

impl Drop for IbSrq {
    fn drop(&mut self) {
        if let Ok(mut m) = input::<command::DestroyRmp>(0) {
            m.set_rmpn(self.rmpn);
            if let Err(e) = self.mdev.cmdq.exec::<command::DestroyRmp>(&m, 0) {
                dev_warn!(
                    self.mdev.dev.dev(),
                    "DESTROY_RMP {:#x}: {:?}\n",
                    self.rmpn,
                    e
                );
            }
        }
    }
}
