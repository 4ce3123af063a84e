//! The HCA life cycle as mlx5_core drives it: init segment, ENABLE/DISABLE_HCA, ISSI,
//! capabilities, INIT/TEARDOWN_HCA, QUERY_ADAPTER and SET_DRIVER_VERSION, each with its
//! success and its errors.

mod common;

use std::time::Duration;

use common::{out_status, view, Driver, Model};
use cx4_hw::{
    caps::{self, cap_type, HcaCapUnion, QueryHcaCapOut},
    command as cmds,
    hca::{teardown_profile, QueryAdapterOut, QueryIssiOut},
    iseg,
    pages::query_pages_op_mod,
    status,
};

#[test]
fn init_segment_reports_firmware_version_big_endian() {
    let mut d = Driver::start(&["--fw-version", "12.28.2006"]);
    let fw = iseg::FwVersion::from_regs(d.iseg32(iseg::FW_REV), d.iseg32(iseg::CMDIF_REV_FW_SUB));
    assert_eq!(
        (fw.major, fw.minor, fw.subminor),
        (12, 28, 2006),
        "expected firmware 12.28.2006, seen {fw:?}"
    );
    let addr_l = d.iseg32(iseg::CMDQ_ADDR_L_SZ);
    assert_eq!(
        u64::from(addr_l & !0xfff),
        d.cmdq & 0xffff_ffff,
        "cmdq_addr_l: expected the programmed address {:#x}, seen {addr_l:#x}",
        d.cmdq
    );
    assert_eq!(
        (addr_l >> 8) & 7,
        0,
        "nic_interface bits must read 0, seen {addr_l:#x}"
    );
}

#[test]
fn initializing_bit_is_set_until_the_delay_passes() {
    // Driver::start waits for the bit; look at a fresh model through a bare client.
    let m = Model::start(&["--init-delay-ms", "300"]);
    let mut c = vfio_user_proto::Client::connect(&m.socket).expect("connect");
    let mut b = [0u8; 4];
    c.region_read(0, iseg::INITIALIZING as u64, &mut b).unwrap();
    assert_ne!(
        u32::from_be_bytes(b) & iseg::INITIALIZING_BIT,
        0,
        "expected the initializing bit set right after start, seen {b:02x?}"
    );
    std::thread::sleep(Duration::from_millis(350));
    c.region_read(0, iseg::INITIALIZING as u64, &mut b).unwrap();
    assert_eq!(
        u32::from_be_bytes(b) & iseg::INITIALIZING_BIT,
        0,
        "expected the initializing bit clear after the delay, seen {b:02x?}"
    );
}

#[test]
fn health_counter_advances_while_firmware_is_alive() {
    let mut d = Driver::start(&[]);
    let a = d.iseg32(iseg::HEALTH_COUNTER);
    std::thread::sleep(Duration::from_millis(250));
    let b = d.iseg32(iseg::HEALTH_COUNTER);
    assert!(
        b > a,
        "health counter: expected to advance from {a}, seen {b}"
    );
}

#[test]
fn full_bring_up_and_teardown_balances_pages() {
    let mut d = Driver::up(&[]);
    let eqn = d.create_eq(4, 0, cx4_hw::eq::EventMask::ASYNC_BASE.bits());
    d.destroy_eq(eqn);
    d.shut_down();
    assert!(
        d.fw_pages.is_empty(),
        "expected every page back after teardown, still lent: {}",
        d.fw_pages.len()
    );
    let log = d.model.log();
    assert!(
        log.contains("page accounting balanced"),
        "expected \"page accounting balanced\" at DISABLE_HCA; log:\n{log}"
    );
}

#[test]
fn enable_hca_succeeds_once_then_is_a_state_error() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    d.err::<cmds::EnableHca>(status::BAD_SYS_STATE, |_| {});
}

#[test]
fn enable_hca_of_another_function_is_a_parameter_error() {
    let mut d = Driver::start(&[]);
    d.err::<cmds::EnableHca>(status::BAD_PARAM, |i| i.set_function_id(3));
    d.err::<cmds::EnableHca>(status::BAD_PARAM, |i| i.set_embedded_cpu_function(1));
    d.enable_hca();
}

#[test]
fn disable_hca_before_enable_is_a_state_error() {
    let mut d = Driver::start(&[]);
    d.err::<cmds::DisableHca>(status::BAD_SYS_STATE, |_| {});
    d.enable_hca();
    d.err::<cmds::DisableHca>(status::BAD_PARAM, |i| i.set_function_id(1));
    d.ok::<cmds::DisableHca>(|_| {});
    // A disabled function can be enabled again.
    d.enable_hca();
}

#[test]
fn query_issi_reports_issi_0_and_1_and_set_issi_takes_1() {
    let mut d = Driver::start(&[]);
    d.err::<cmds::QueryIssi>(status::BAD_SYS_STATE, |_| {});
    d.enable_hca();
    let q: QueryIssiOut = view(&d.ok::<cmds::QueryIssi>(|_| {}));
    assert_eq!(
        (q.current_issi(), q.supported_issi_dw0()),
        (0, 0b11),
        "expected current ISSI 0 and supported 0b11, seen {} and {:#b}",
        q.current_issi(),
        q.supported_issi_dw0()
    );
    assert_eq!(d.negotiate_issi(), 1);
    let q: QueryIssiOut = view(&d.ok::<cmds::QueryIssi>(|_| {}));
    assert_eq!(
        q.current_issi(),
        1,
        "expected current ISSI 1 after SET_ISSI"
    );
}

#[test]
fn query_issi_with_a_short_output_is_an_output_length_error() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    let inp = common::input::<cmds::QueryIssi>(|_| {});
    d.run_err(&inp, 0x10, status::BAD_OUTP_LEN);
}

#[test]
fn set_issi_refuses_unsupported_issi_and_the_wrong_state() {
    let mut d = Driver::start(&[]);
    d.err::<cmds::SetIssi>(status::BAD_SYS_STATE, |i| i.set_current_issi(1));
    d.enable_hca();
    d.err::<cmds::SetIssi>(status::BAD_PARAM, |i| i.set_current_issi(2));
    d.err::<cmds::SetIssi>(status::BAD_PARAM, |i| i.set_current_issi(0xffff));
    d.ok::<cmds::SetIssi>(|i| i.set_current_issi(0));
    d.bring_up_rest();
    d.err::<cmds::SetIssi>(status::BAD_SYS_STATE, |i| i.set_current_issi(1));
}

trait BringUpRest {
    fn bring_up_rest(&mut self);
}

impl BringUpRest for Driver {
    /// Bring-up after ENABLE_HCA and ISSI.
    fn bring_up_rest(&mut self) {
        self.satisfy_pages(query_pages_op_mod::BOOT);
        self.satisfy_pages(query_pages_op_mod::INIT);
        self.init_hca();
    }
}

#[test]
fn query_hca_cap_returns_max_and_current_general_caps_across_mailboxes() {
    let mut d = Driver::start(&[]);
    d.err::<cmds::QueryHcaCap>(status::BAD_SYS_STATE, |i| {
        i.set_op_mod(caps::query_op_mod(cap_type::GENERAL, true).into())
    });
    d.enable_hca();
    let max = d.query_cap(cap_type::GENERAL, false);
    let g = view::<HcaCapUnion>(&max);
    let g = g.cmd_hca_cap();
    assert_eq!(
        (g.port_type(), g.log_max_qp(), g.log_max_eq()),
        (1, 18, 5),
        "general max caps: expected port_type 1, log_max_qp 18, log_max_eq 5"
    );
    // The capability page spans the inline output and 8 mailbox blocks: its last bytes must
    // arrive too (they are zero in the profile, so check the output length).
    let out = d.ok::<cmds::QueryHcaCap>(|i| {
        i.set_op_mod(caps::query_op_mod(cap_type::FLOW_TABLE, true).into())
    });
    assert_eq!(out.len(), QueryHcaCapOut::SIZE);
    let ft = view::<QueryHcaCapOut>(&out);
    assert_eq!(
        ft.capability()
            .flow_table_nic_cap()
            .flow_table_properties_nic_receive()
            .max_ft_level(),
        128,
        "flow table cap nic_receive.max_ft_level: expected 128"
    );
}

#[test]
fn query_hca_cap_of_an_unknown_type_or_other_function_is_a_parameter_error() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    d.err::<cmds::QueryHcaCap>(status::BAD_PARAM, |i| {
        i.set_op_mod(caps::query_op_mod(cap_type::TLS, true).into())
    });
    d.err::<cmds::QueryHcaCap>(status::BAD_PARAM, |i| {
        i.set_op_mod(caps::query_op_mod(cap_type::GENERAL, true).into());
        i.set_other_function(1);
    });
    let short = common::input::<cmds::QueryHcaCap>(|_| {});
    d.run_err(&short, 0x100, status::BAD_OUTP_LEN);
}

#[test]
fn set_hca_cap_lowers_current_values_and_keeps_the_maximum() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    let cur = d.query_cap(cap_type::GENERAL, true);
    d.ok::<cmds::SetHcaCap>(|i| {
        i.set_op_mod(caps::set_op_mod(cap_type::GENERAL).into());
        i.capability_mut().0.copy_from_slice(&cur);
        i.capability_mut().cmd_hca_cap_mut().set_log_max_qp(10);
    });
    let now = d.query_cap(cap_type::GENERAL, true);
    let max = d.query_cap(cap_type::GENERAL, false);
    let (c, m) = (view::<HcaCapUnion>(&now), view::<HcaCapUnion>(&max));
    assert_eq!(
        (c.cmd_hca_cap().log_max_qp(), m.cmd_hca_cap().log_max_qp()),
        (10, 18),
        "log_max_qp: expected current 10 and max 18"
    );
}

#[test]
fn set_hca_cap_above_max_or_of_a_fixed_type_or_after_init_is_refused() {
    let mut d = Driver::start(&[]);
    d.err::<cmds::SetHcaCap>(status::BAD_SYS_STATE, |_| {});
    d.enable_hca();
    let cur = d.query_cap(cap_type::GENERAL, true);
    d.err::<cmds::SetHcaCap>(status::BAD_PARAM, |i| {
        i.set_op_mod(caps::set_op_mod(cap_type::GENERAL).into());
        i.capability_mut().0.copy_from_slice(&cur);
        i.capability_mut().cmd_hca_cap_mut().set_log_max_qp(30);
    });
    d.err::<cmds::SetHcaCap>(status::BAD_PARAM, |i| {
        i.set_op_mod(caps::set_op_mod(cap_type::FLOW_TABLE).into())
    });
    d.err::<cmds::SetHcaCap>(status::BAD_PARAM, |i| {
        i.set_op_mod(caps::query_op_mod(cap_type::GENERAL, true).into())
    });
    // The short form (no capability page) is an input length error.
    let short =
        common::input::<cmds::QueryHcaCap>(|i| i.set_opcode(cx4_hw::opcode::SET_HCA_CAP.into()));
    d.run_err(&short, 0x10, status::BAD_INP_LEN);
    d.bring_up_rest();
    d.err::<cmds::SetHcaCap>(status::BAD_SYS_STATE, |i| {
        i.set_op_mod(caps::set_op_mod(cap_type::GENERAL).into());
        i.capability_mut().0.copy_from_slice(&cur);
    });
}

#[test]
fn init_hca_requires_the_enabled_state_and_teardown_the_initialized_one() {
    let mut d = Driver::start(&[]);
    d.err::<cmds::InitHca>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::TeardownHca>(status::BAD_SYS_STATE, |_| {});
    d.enable_hca();
    d.err::<cmds::TeardownHca>(status::BAD_SYS_STATE, |_| {});
    d.bring_up_rest();
    d.err::<cmds::InitHca>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::TeardownHca>(status::BAD_PARAM, |i| {
        i.set_profile(teardown_profile::PREPARE_FAST_TEARDOWN.into())
    });
    d.ok::<cmds::TeardownHca>(|i| i.set_profile(teardown_profile::FORCE_CLOSE.into()));
    d.err::<cmds::TeardownHca>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::InitHca>(status::BAD_SYS_STATE, |_| {});
}

#[test]
fn teardown_releases_objects_the_driver_left_alive() {
    let mut d = Driver::up(&[]);
    d.create_eq(3, 0, 0);
    d.ok::<cmds::AllocPd>(|_| {});
    d.ok::<cmds::TeardownHca>(|_| {});
    assert!(
        d.model
            .log()
            .contains("TEARDOWN_HCA with objects alive, released by firmware: 1 UARs, 1 EQs"),
        "expected the leak report at TEARDOWN_HCA; log:\n{}",
        d.model.log_tail(10)
    );
    // Objects are gone: querying the EQ is a state error now (not initialized).
    d.err::<cmds::QueryEq>(status::BAD_SYS_STATE, |i| i.set_eq_number(0));
}

#[test]
fn query_adapter_reports_vendor_and_psid() {
    let mut d = Driver::start(&[]);
    d.err::<cmds::QueryAdapter>(status::BAD_SYS_STATE, |_| {});
    d.enable_hca();
    let out = d.ok::<cmds::QueryAdapter>(|_| {});
    let a = view::<QueryAdapterOut>(&out);
    let blk = a.query_adapter_struct();
    assert_eq!(
        (blk.ieee_vendor_id(), blk.vsd_vendor_id()),
        (0x0002c9, 0x15b3),
        "vendor ids: expected 0x2c9 and 0x15b3"
    );
    assert!(
        blk.vsd_contd_psid().starts_with(b"MT_2190110032"),
        "PSID: expected MT_2190110032, seen {:?}",
        String::from_utf8_lossy(blk.vsd_contd_psid())
    );
    let short = common::input::<cmds::QueryAdapter>(|_| {});
    d.run_err(&short, 0x10, status::BAD_OUTP_LEN);
}

#[test]
fn set_driver_version_is_logged_after_init_and_refused_before() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    d.err::<cmds::SetDriverVersion>(status::BAD_SYS_STATE, |_| {});
    d.bring_up_rest();
    d.ok::<cmds::SetDriverVersion>(|i| {
        i.driver_version_mut()[..13].copy_from_slice(b"cx4-test,1.0\0")
    });
    assert!(
        d.model.log().contains("driver version: cx4-test,1.0"),
        "expected the driver version in the log; log:\n{}",
        d.model.log_tail(5)
    );
    // Without the 64-byte string the input is too short.
    let short = common::input::<cmds::QueryAdapter>(|i| {
        i.set_opcode(cx4_hw::opcode::SET_DRIVER_VERSION.into())
    });
    d.run_err(&short, 0x10, status::BAD_INP_LEN);
}

#[test]
fn client_disconnect_logs_the_page_report_and_the_model_exits() {
    let mut d = Driver::up(&[]);
    d.shut_down();
    let mut m = d.disconnect();
    let st = m.wait_exit(Duration::from_secs(5));
    assert!(
        st.is_some_and(|s| s.success()),
        "expected the model to exit cleanly after the client left, seen {st:?}"
    );
    let log = m.log();
    assert!(
        log.contains("client disconnected; page accounting balanced"),
        "expected the disconnect page report; log:\n{log}"
    );
}

#[test]
fn cx4lx_profile_reports_its_firmware_and_psid() {
    let mut d = Driver::start(&["--chip", "cx4lx"]);
    let fw = iseg::FwVersion::from_regs(d.iseg32(iseg::FW_REV), d.iseg32(iseg::CMDIF_REV_FW_SUB));
    assert_eq!(
        fw.major, 14,
        "cx4lx firmware major: expected 14, seen {fw:?}"
    );
    d.enable_hca();
    let out = d.ok::<cmds::QueryAdapter>(|_| {});
    let psid = view::<QueryAdapterOut>(&out);
    assert!(
        psid.query_adapter_struct()
            .vsd_contd_psid()
            .starts_with(b"MT_2420110034"),
        "cx4lx PSID: expected MT_2420110034"
    );
    assert_eq!(out_status(&out), status::OK);
}
