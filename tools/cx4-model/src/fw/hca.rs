//! HCA life cycle: ENABLE/DISABLE_HCA, ISSI, INIT/TEARDOWN_HCA, QUERY_ADAPTER,
//! SET_DRIVER_VERSION.

use cx4_hw::command::{self as cmds};
use cx4_hw::hca::{teardown_profile, InitHcaIn};

use super::{cmd_in, cmd_out, fail, need_in, Bus, CmdResult, Firmware, HcaState};
use crate::pages::Stage;

/// ISSIs the model supports: 0 and 1 (bit n = ISSI n), like ConnectX-4 firmware.
pub const SUPPORTED_ISSI: u32 = 0b11;
/// Mellanox' IEEE OUI, reported by QUERY_ADAPTER.
pub const IEEE_VENDOR_ID: u32 = 0x0002c9;

impl Firmware {
    pub(super) fn enable_hca(&mut self, input: &[u8]) -> CmdResult {
        let inp = cmd_in::<cmds::EnableHca>(input)?;
        if inp.function_id() != 0 || inp.embedded_cpu_function() != 0 {
            fail!(
                BAD_PARAM,
                "ENABLE_HCA of another function",
                "function {}",
                inp.function_id()
            );
        }
        if self.state != HcaState::Disabled {
            fail!(
                BAD_SYS_STATE,
                "ENABLE_HCA of an enabled function",
                "state {:?}",
                self.state
            );
        }
        self.state = HcaState::Enabled;
        Ok(())
    }

    pub(super) fn disable_hca(&mut self, input: &[u8]) -> CmdResult {
        let inp = cmd_in::<cmds::DisableHca>(input)?;
        if inp.function_id() != 0 {
            fail!(
                BAD_PARAM,
                "DISABLE_HCA of another function",
                "function {}",
                inp.function_id()
            );
        }
        if self.state == HcaState::Disabled {
            fail!(BAD_SYS_STATE, "DISABLE_HCA of a disabled function");
        }
        if self.state == HcaState::Initialized {
            log::warn!("DISABLE_HCA without TEARDOWN_HCA");
        }
        log::info!("teardown: {}", self.pages.report());
        self.state = HcaState::Disabled;
        // A disabled function boots again from scratch: the next ENABLE_HCA asks for boot
        // pages first (without this, a re-probe books its boot pages as regular ones).
        self.pages.stage = None;
        self.issi = 0;
        self.caps = self.caps.reset_current();
        Ok(())
    }

    pub(super) fn query_issi(&mut self, _input: &[u8], out: &mut [u8]) -> CmdResult {
        let o = cmd_out::<cmds::QueryIssi>(out)?;
        o.set_current_issi(self.issi.into());
        o.set_supported_issi_dw0(SUPPORTED_ISSI);
        Ok(())
    }

    pub(super) fn set_issi(&mut self, input: &[u8]) -> CmdResult {
        let issi = cmd_in::<cmds::SetIssi>(input)?.current_issi();
        if !cx4_hw::hca::issi_supported(SUPPORTED_ISSI, issi) {
            fail!(BAD_PARAM, "SET_ISSI to an unsupported ISSI", "ISSI {issi}");
        }
        self.issi = issi as u16;
        Ok(())
    }

    pub(super) fn init_hca(&mut self, ctx: &mut Bus, input: &[u8]) -> CmdResult {
        need_in(input, InitHcaIn::SIZE.min(0x10))?;
        if self.state != HcaState::Enabled {
            fail!(
                BAD_SYS_STATE,
                "INIT_HCA outside the enabled state",
                "state {:?}",
                self.state
            );
        }
        for stage in [Stage::Boot, Stage::Init] {
            let missing = self.pages.query(stage);
            if missing > 0 {
                fail!(
                    NO_RES,
                    "INIT_HCA without the pages it asked for",
                    "{missing} {stage:?} pages missing"
                );
            }
        }
        self.state = HcaState::Initialized;
        self.pages.initialized();
        // Regular pages are asked for by event once the driver has a pages EQ.
        self.request_regular_pages(ctx);
        Ok(())
    }

    pub(super) fn teardown_hca(&mut self, input: &[u8]) -> CmdResult {
        let profile = cmd_in::<cmds::TeardownHca>(input)?.profile() as u16;
        if profile != teardown_profile::GRACEFUL_CLOSE && profile != teardown_profile::FORCE_CLOSE {
            fail!(
                BAD_PARAM,
                "TEARDOWN_HCA with an unsupported profile",
                "profile {profile:#x}"
            );
        }
        if self.state != HcaState::Initialized {
            fail!(
                BAD_SYS_STATE,
                "TEARDOWN_HCA of a function that is not initialized",
                "state {:?}",
                self.state
            );
        }
        let live = self.live_objects();
        if self.has_live_objects() {
            log::warn!("TEARDOWN_HCA with objects alive, released by firmware: {live}");
        }
        self.nic.release();
        self.rdma = super::RdmaObjects::default();
        self.eqs.clear();
        self.cqs.clear();
        self.cq_timers.clear();
        self.uars.clear();
        self.pds.clear();
        self.tds.clear();
        self.flow_tables.clear();
        self.flow_root.clear();
        self.state = HcaState::TornDown;
        Ok(())
    }

    pub(super) fn query_adapter(&mut self, _input: &[u8], out: &mut [u8]) -> CmdResult {
        let o = cmd_out::<cmds::QueryAdapter>(out)?;
        let blk = o.query_adapter_struct_mut();
        blk.set_ieee_vendor_id(IEEE_VENDOR_ID);
        blk.set_vsd_vendor_id(u32::from(cx4_hw::pci::VENDOR_MELLANOX));
        let psid = blk.vsd_contd_psid_mut();
        let n = self.psid.len().min(psid.len());
        psid[..n].copy_from_slice(&self.psid.as_bytes()[..n]);
        Ok(())
    }

    pub(super) fn set_driver_version(&mut self, input: &[u8]) -> CmdResult {
        let v = cmd_in::<cmds::SetDriverVersion>(input)?.driver_version();
        let end = v.iter().position(|&b| b == 0).unwrap_or(v.len());
        self.driver_version = String::from_utf8_lossy(&v[..end]).into_owned();
        log::info!("driver version: {}", self.driver_version);
        Ok(())
    }
}
