//! What the RoCE engine's two-card host tests share: a device brought to the point where a
//! driver has initialised the HCA (memory mapped, a UAR, the port up, a completion EQ), and
//! the firmware command helpers they build their objects with (real command inputs,
//! executed through [`crate::fw::Firmware::execute`], the QP transitions applied).

use cx4_hw::{bits::Layout, cmd::MboxIn, command::Command};
use zerocopy::FromBytes;

use crate::{
    config::Config,
    device::Device,
    eq::Eq,
    fw::{Arm, Cq, Ctx, HcaState},
    guest_mem::test_backing,
};

/// The completion EQ's number.
pub(super) const EQN: u8 = 5;

/// A device started with `args` (the model's command line), `mem` bytes of guest memory at
/// `base`, UAR page `uar` allocated, the port administratively up, and EQ [`EQN`] (completion
/// events, 64 entries) whose ring is the first page at `base`.
pub(super) fn device(args: &str, base: u64, mem: u64, uar: u32) -> Device {
    let mut d = Device::new(&Config::from_args(args.split_whitespace().map(String::from)).unwrap());
    d.mem
        .map(base, mem, 0, Some(test_backing(mem as usize)))
        .unwrap();
    d.fw.state = HcaState::Initialized;
    d.fw.uars.insert(uar, ());
    d.fw.regs.admin_status = cx4_hw::regs::port_status::UP;
    d.fw.eqs.insert(
        EQN,
        Eq {
            eqn: EQN,
            log_size: 6,
            pas: vec![base],
            page_shift: 12,
            uar_page: uar,
            vector: 1,
            mask: [1, 0, 0, 0],
            pi: 0,
            ci: 0,
            armed: false,
            overrun: false,
            events: 0,
            interrupts: 0,
        },
    );
    d
}

/// A 64-entry CQ on EQ [`EQN`] with its ring at `ring` and doorbell record at `dbr`.
pub(super) fn cq(cqn: u32, ring: u64, dbr: u64, uar: u32) -> Cq {
    Cq {
        cqn,
        log_size: 6,
        cqe_size: 64,
        pas: vec![ring],
        page_shift: 12,
        eqn: EQN,
        uar_page: uar,
        dbr,
        pi: 0,
        arm: Arm::None,
        arm_sn: 0,
        overrun: false,
        moderation: (0, 0),
        cqes: 0,
    }
}

/// The input of command `C`, opcode set, the rest filled by `f`.
pub(super) fn input<C: Command>(f: impl FnOnce(&mut C::In)) -> Vec<u8> {
    let mut v = vec![0u8; <C::In as Layout>::SIZE];
    MboxIn::mut_from_prefix(&mut v[..])
        .unwrap()
        .0
        .set_opcode(C::OPCODE.into());
    f(C::In::mut_from_prefix(&mut v[..]).unwrap().0);
    v
}

/// `bytes` read as a `T` (zero-padded if short).
pub(super) fn view<T: Layout>(bytes: &[u8]) -> T {
    let mut b = vec![0u8; T::SIZE];
    let n = bytes.len().min(T::SIZE);
    b[..n].copy_from_slice(&bytes[..n]);
    T::read_from_bytes(&b).unwrap()
}

/// Executes a command that must succeed, then applies the QP transitions it made.
pub(super) fn exec(d: &mut Device, input: &[u8], out_len: usize) -> Vec<u8> {
    let (mem, msix, faults) = (&d.mem, &mut d.msix, &mut d.faults);
    let mut ctx = Ctx { mem, msix, faults };
    let out = d.fw.execute(&mut ctx, input, out_len).unwrap();
    assert_eq!(
        out[0],
        0,
        "command {:02x?} failed: {:02x?}",
        &input[..4],
        &out[..8]
    );
    d.roce_sync();
    out
}

/// [`exec`] of command `C` built by `f`.
pub(super) fn ok<C: Command>(d: &mut Device, f: impl FnOnce(&mut C::In)) -> Vec<u8> {
    exec(d, &input::<C>(f), <C::Out as Layout>::SIZE)
}
