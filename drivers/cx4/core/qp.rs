// SPDX-License-Identifier: GPL-2.0
//! Kernel QPs (core/qp.c `mlx5_core_create_qp`, `mlx5_core_qp_modify`, `mlx5_core_destroy_qp`):
//! the `CREATE_QP` of a QP whose rings and doorbell record the driver owns, its state
//! transitions, and its destruction. Used by the RDMA layer's kernel QPs (ib/qp.rs) and the EC
//! engine's loopback QP (ec/qp.rs); their rings are posted through wq.rs.

use cx4_hw::{
    command,
    pages::PAGE_SIZE,
    qp::{
        pm_state,
        qpc_st,
        rq_type,
        CreateQpIn,
        OptParam,
        Qpc, //
    },
};
use kernel::prelude::*;

use crate::{
    cmd::input,
    mdev::Mdev, //
};

/// The user index of a QP when the CQE version is 1 (`MLX5_IB_DEFAULT_UIDX`).
pub(crate) const DEFAULT_UIDX: u32 = 0xff_ffff;

/// A kernel QP's receive side.
#[derive(Clone, Copy, Debug)]
pub(crate) enum KernelRq {
    /// Receives come from the SRQ (RMP) with this number.
    Srq(u32),
    /// Its own ring: `wqes` (a power of two) WQEs of `1 << log_stride` bytes, at the start of
    /// the buffer.
    Ring {
        /// Receive WQEs.
        wqes: u32,
        /// log2 of a WQE's bytes (at least 4).
        log_stride: u32,
    },
    /// None.
    Zero,
}

/// What a kernel QP is created with (`create_kernel_qp`'s QP context).
pub(crate) struct KernelQp {
    /// The service type (`cx4_hw::qp::qpc_st`).
    pub(crate) st: u8,
    pub(crate) pdn: u32,
    /// The UAR page of its doorbells.
    pub(crate) uar: u32,
    pub(crate) rq: KernelRq,
    /// Send-queue basic blocks (a power of two), 0 for no send queue.
    pub(crate) sq_bbs: u32,
    pub(crate) cqn_snd: u32,
    pub(crate) cqn_rcv: u32,
    /// The general caps' `cqe_version` is 1 (the QP then names the default user index).
    pub(crate) cqe_v1: bool,
    /// The doorbell record's bus address (wq.rs `DbRecord::dma`).
    pub(crate) dbr: u64,
    /// The rings' buffer: bus address of its first adapter page (`PAGE_SIZE`, 4 KiB), and
    /// the page count.
    pub(crate) pages: (u64, usize),
}

impl KernelQp {
    /// Creates the QP in the reset state, with fast registration and the reserved lkey
    /// enabled, as mlx5_ib's `create_kernel_qp`. Returns its number; the caller destroys it
    /// ([`destroy`]).
    pub(crate) fn create(&self, mdev: &Mdev) -> Result<u32> {
        let (dma, npages) = self.pages;
        let mut msg = input::<command::CreateQp>(npages * 8)?;
        {
            let c = msg.qpc_mut();
            c.set_st(self.st.into());
            c.set_pm_state(pm_state::MIGRATED.into());
            c.set_pd(self.pdn);
            c.set_uar_page(self.uar);
            match self.rq {
                KernelRq::Srq(rmpn) => {
                    c.set_rq_type(rq_type::SRQ_RQ.into());
                    c.set_srqn_rmpn_xrqn(rmpn);
                }
                KernelRq::Ring { wqes, log_stride } => {
                    c.set_rq_type(rq_type::NON_ZERO_RQ.into());
                    c.set_log_rq_size(wqes.ilog2());
                    c.set_log_rq_stride(log_stride - 4);
                }
                KernelRq::Zero => c.set_rq_type(rq_type::ZERO_LEN_RQ.into()),
            }
            if self.sq_bbs > 0 {
                c.set_log_sq_size(self.sq_bbs.ilog2());
            } else {
                c.set_no_sq(1);
            }
            c.set_cqn_snd(self.cqn_snd);
            c.set_cqn_rcv(self.cqn_rcv);
            if self.cqe_v1 {
                c.set_user_index(DEFAULT_UIDX);
            }
            c.set_log_page_size(0);
            c.set_dbr_addr(self.dbr);
            c.set_fre(1);
            c.set_rlky(1);
        }
        for i in 0..npages {
            CreateQpIn::set_pas(msg.bytes_mut(), i, dma + (i * PAGE_SIZE) as u64)
                .map_err(|_| EINVAL)?;
        }
        Ok(mdev.cmdq.exec::<command::CreateQp>(&msg, 0)?.qpn())
    }
}

/// Destroys QP `qpn` (`DESTROY_QP`); a failure is logged with `what` ("" or a prefix naming
/// the QP's owner, ending in ": ").
pub(crate) fn destroy(mdev: &Mdev, qpn: u32, what: &str) {
    if let Ok(mut msg) = input::<command::DestroyQp>(0) {
        msg.set_qpn(qpn);
        if let Err(e) = mdev.cmdq.exec::<command::DestroyQp>(&msg, 0) {
            dev_warn!(mdev.dev.dev(), "{}DESTROY_QP {:#x}: {:?}\n", what, qpn, e);
        }
    }
}

/// Whether service type `st` is a datagram one (UD, or the GSI QP's QP1).
pub(crate) fn is_datagram(st: u8) -> bool {
    st == qpc_st::UD || st == qpc_st::QP1
}

/// The PRM command of a QP state transition (qp.c `mlx5_core_qp_modify`; the optional
/// parameters each takes: mlx5_ib's `opt_mask`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Transition {
    /// RESET → INIT (`RST2INIT_QP`).
    Rst2Init,
    /// INIT → INIT (`INIT2INIT_QP`).
    Init2Init,
    /// INIT → RTR (`INIT2RTR_QP`).
    Init2Rtr,
    /// RTR → RTS (`RTR2RTS_QP`).
    Rtr2Rts,
    /// RTS → RTS (`RTS2RTS_QP`).
    Rts2Rts,
    /// SQE → RTS (`SQERR2RTS_QP`).
    Sqerr2Rts,
    /// SQD → RTS (`SQD2RTS_QP`).
    Sqd2Rts,
    /// Any → ERR (`2ERR_QP`).
    ToErr,
    /// Any → RESET (`2RST_QP`).
    ToRst,
}

impl Transition {
    /// The optional parameters the transition takes for service type `st` (`opt_mask`).
    pub(crate) fn allowed(self, st: u8) -> OptParam {
        use OptParam as O;
        // XRC QPs take RC's optional parameters.
        let rc = st == qpc_st::RC || st == qpc_st::XRC;
        let (uc, ud) = (st == qpc_st::UC, is_datagram(st));
        let rw = O::RRE | O::RAE | O::RWE;
        match self {
            Self::Init2Init if rc => rw | O::PKEY_INDEX | O::PRI_PORT | O::LAG_TX_AFF,
            Self::Init2Init if uc => O::RWE | O::PKEY_INDEX | O::PRI_PORT | O::LAG_TX_AFF,
            Self::Init2Init if ud => O::PKEY_INDEX | O::Q_KEY | O::PRI_PORT,
            Self::Init2Rtr if rc => O::ALT_ADDR_PATH | rw | O::PKEY_INDEX | O::LAG_TX_AFF,
            Self::Init2Rtr if uc => O::ALT_ADDR_PATH | O::RWE | O::PKEY_INDEX | O::LAG_TX_AFF,
            Self::Init2Rtr if ud => O::PKEY_INDEX | O::Q_KEY,
            Self::Rtr2Rts if rc => O::ALT_ADDR_PATH | rw | O::PM_STATE | O::RNR_TIMEOUT,
            Self::Rtr2Rts if uc => O::ALT_ADDR_PATH | O::RWE | O::PM_STATE | O::PP_INDEX,
            Self::Rtr2Rts if ud => O::Q_KEY | O::PP_INDEX,
            Self::Rts2Rts if rc => rw | O::RNR_TIMEOUT | O::PM_STATE | O::ALT_ADDR_PATH,
            Self::Rts2Rts if uc => O::RWE | O::PM_STATE | O::ALT_ADDR_PATH | O::PP_INDEX,
            Self::Rts2Rts if ud => O::Q_KEY | O::SRQN | O::CQN_RCV | O::PP_INDEX,
            Self::Sqerr2Rts | Self::Sqd2Rts if rc => O::RNR_TIMEOUT | rw,
            Self::Sqerr2Rts | Self::Sqd2Rts if uc => O::RWE,
            Self::Sqerr2Rts | Self::Sqd2Rts if ud => O::Q_KEY,
            _ => O::empty(),
        }
    }

    /// Executes the transition's command on QP `qpn`.
    pub(crate) fn run(self, mdev: &Mdev, qpn: u32, opt: u32, c: &Qpc) -> Result {
        macro_rules! with_ctx {
            ($cmd:ident) => {{
                let mut msg = input::<command::$cmd>(0)?;
                msg.set_qpn(qpn);
                msg.set_opt_param_mask(opt);
                *msg.qpc_mut() = *c;
                mdev.cmdq.exec::<command::$cmd>(&msg, 0).map(|_| ())
            }};
        }
        macro_rules! bare {
            ($cmd:ident) => {{
                let mut msg = input::<command::$cmd>(0)?;
                msg.set_qpn(qpn);
                mdev.cmdq.exec::<command::$cmd>(&msg, 0).map(|_| ())
            }};
        }
        match self {
            Self::Rst2Init => with_ctx!(Rst2InitQp),
            Self::Init2Init => with_ctx!(Init2InitQp),
            Self::Init2Rtr => with_ctx!(Init2RtrQp),
            Self::Rtr2Rts => with_ctx!(Rtr2RtsQp),
            Self::Rts2Rts => with_ctx!(Rts2RtsQp),
            Self::Sqerr2Rts => with_ctx!(Sqerr2RtsQp),
            Self::Sqd2Rts => with_ctx!(Sqd2RtsQp),
            Self::ToErr => bare!(ToErrQp),
            Self::ToRst => bare!(ToRstQp),
        }
    }
}

#[kunit_tests(cx4_qp_transitions)]
#[allow(unsafe_code)] // The suite's registration, generated by the kernel's `kunit_tests` macro.
mod tests {
    use super::*;

    /// mlx5_ib qp.c `opt_mask[cur][new][st]` for RC (0), UC (1), UD (2) and XRC (3), with the
    /// PRM's bit values (qp.h `MLX5_QP_OPTPAR_*`) written out, so that a wrong bit in the
    /// schema fails here as well as a wrong arm.
    const ALT: u32 = 1 << 0;
    const RRE: u32 = 1 << 1;
    const RAE: u32 = 1 << 2;
    const RWE: u32 = 1 << 3;
    const PKEY: u32 = 1 << 4;
    const QKEY: u32 = 1 << 5;
    const RNR: u32 = 1 << 6;
    const PM: u32 = 1 << 10;
    const LAG: u32 = 1 << 15;
    const PORT: u32 = 1 << 16;
    const SRQN: u32 = 1 << 18;
    const CQN_RCV: u32 = 1 << 19;
    const PP: u32 = 1 << 22;

    fn upstream(t: Transition, st: u8) -> u32 {
        let (rc, uc, ud, xrc) = (st == 0, st == 1, st == 2, st == 3);
        let rcx = rc || xrc;
        match t {
            Transition::Init2Init if rcx => RRE | RAE | RWE | PKEY | PORT | LAG,
            Transition::Init2Init if uc => RWE | PKEY | PORT | LAG,
            Transition::Init2Init if ud => PKEY | QKEY | PORT,
            Transition::Init2Rtr if rcx => ALT | RRE | RAE | RWE | PKEY | LAG,
            Transition::Init2Rtr if uc => ALT | RWE | PKEY | LAG,
            Transition::Init2Rtr if ud => PKEY | QKEY,
            Transition::Rtr2Rts if rcx => ALT | RRE | RAE | RWE | PM | RNR,
            Transition::Rtr2Rts if uc => ALT | RWE | PM | PP,
            Transition::Rtr2Rts if ud => QKEY | PP,
            Transition::Rts2Rts if rcx => RRE | RAE | RWE | RNR | PM | ALT,
            Transition::Rts2Rts if uc => RWE | PM | ALT | PP,
            Transition::Rts2Rts if ud => QKEY | SRQN | CQN_RCV | PP,
            Transition::Sqerr2Rts | Transition::Sqd2Rts if rcx => RNR | RWE | RAE | RRE,
            Transition::Sqerr2Rts | Transition::Sqd2Rts if uc => RWE,
            Transition::Sqerr2Rts | Transition::Sqd2Rts if ud => QKEY,
            _ => 0,
        }
    }

    #[test]
    fn optional_parameters_match_mlx5_ib() {
        assert_eq!(qpc_st::RC, 0);
        assert_eq!(qpc_st::UC, 1);
        assert_eq!(qpc_st::UD, 2);
        assert_eq!(qpc_st::XRC, 3);
        let all = [
            Transition::Rst2Init,
            Transition::Init2Init,
            Transition::Init2Rtr,
            Transition::Rtr2Rts,
            Transition::Rts2Rts,
            Transition::Sqerr2Rts,
            Transition::Sqd2Rts,
            Transition::ToErr,
            Transition::ToRst,
        ];
        for t in all {
            for st in 0..4u8 {
                assert_eq!(t.allowed(st).bits(), upstream(t, st));
            }
        }
    }

    #[test]
    fn datagram_types_are_ud_and_the_gsi_qp() {
        assert!(is_datagram(qpc_st::UD));
        assert!(is_datagram(qpc_st::QP1));
        assert!(!is_datagram(qpc_st::RC));
        assert!(!is_datagram(qpc_st::UC));
        assert!(!is_datagram(qpc_st::XRC));
    }
}
