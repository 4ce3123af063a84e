//! What the RoCE engine's two-card host tests share: a device brought to the point where a
//! driver has initialised the HCA (memory mapped, a UAR, the port up, a completion EQ), and
//! the firmware command helpers they build their objects with (real command inputs,
//! executed through [`crate::fw::Firmware::execute`], the QP transitions applied).

use cx4_hw::{
    bits::Layout,
    cmd::MboxIn,
    command::{self as cmds, Command},
    mkey::{access_mode, mkey_from_index, CreateMkeyIn, CreateMkeyOut},
    roce::{roce_l3_type, roce_version},
};
use zerocopy::FromBytes;

use crate::{
    config::Config,
    device::Device,
    eq::Eq,
    fw::{Arm, Cq, HcaState},
    guest_mem::test_backing,
};

/// The completion EQ's number.
pub(super) const EQN: u8 = 5;

/// A device started with `args` (the model's command line), `mem` bytes of guest memory at
/// `base`, UAR page `uar` allocated, the port administratively up, and EQ [`EQN`] (completion
/// events, 64 entries) whose ring is the first page at `base`.
pub(super) fn device(args: &str, base: u64, mem: u64, uar: u32) -> Device {
    let mut d = Device::new(&Config::from_args(args.split_whitespace().map(String::from)).unwrap());
    d.bus
        .mem
        .map(base, mem, 0, Some(test_backing(mem as usize)))
        .unwrap();
    d.fw.state = HcaState::Initialized;
    d.fw.uars.insert(uar, ());
    d.fw.regs.admin_status = cx4_hw::regs::port_status::UP;
    d.fw.eqs.insert(EQN, eq(EQN, base, [1, 0, 0, 0], uar, 1));
    d
}

/// A 64-entry EQ `eqn` taking the event types of `mask`, its ring the page at `ring`, on
/// MSI-X `vector`.
pub(super) fn eq(eqn: u8, ring: u64, mask: [u64; 4], uar: u32, vector: u16) -> Eq {
    Eq {
        eqn,
        log_size: 6,
        pas: vec![ring],
        page_shift: 12,
        uar_page: uar,
        vector,
        mask,
        pi: 0,
        ci: 0,
        armed: false,
        overrun: false,
        events: 0,
        interrupts: 0,
    }
}

/// Writes send WQE `w` (whole basic blocks from counter `pc`) into the 64-block send ring at
/// `ring`, advances the doorbell record's send counter at `dbr` + 4 and rings UAR page `uar`
/// (the BlueFlame-less doorbell at +0x800); returns the new counter.
pub(super) fn ring_sq(d: &mut Device, (ring, dbr, uar): (u64, u64, u32), pc: u16, w: &[u8]) -> u16 {
    for (k, chunk) in w.chunks(64).enumerate() {
        let slot = (u64::from(pc) + k as u64) % 64;
        d.bus.mem.write(ring + slot * 64, chunk).unwrap();
    }
    let pc = pc.wrapping_add(w.len().div_ceil(64) as u16);
    d.bus
        .mem
        .write(dbr + 4, &u32::from(pc).to_be_bytes())
        .unwrap();
    let db: [u8; 8] = w[..8].try_into().unwrap();
    d.region_write(0, u64::from(uar) * 4096 + 0x800, &db)
        .unwrap();
    pc
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
        moderation: Default::default(),
        mod_state: Default::default(),
        cqes: 0,
    }
}

/// The input of command `C`, opcode set, the rest filled by `f`.
pub(crate) fn input<C: Command>(f: impl FnOnce(&mut C::In)) -> Vec<u8> {
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
    let out = d.hca.fw.execute(&mut d.bus, input, out_len).unwrap();
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

/// The IPv4-mapped GID of `ip`.
pub(super) fn v4_gid(ip: [u8; 4]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12..].copy_from_slice(&ip);
    g
}

/// RoCE address table entry 0: RoCE v2 over IPv4, `gid` from `mac` (SET_ROCE_ADDRESS).
pub(super) fn set_gid0_v2_ipv4(d: &mut Device, gid: &[u8; 16], mac: [u8; 6]) {
    ok::<cmds::SetRoceAddress>(d, |i| {
        i.set_roce_address_index(0);
        i.set_vhca_port_num(1);
        let a = i.roce_address_mut();
        a.source_l3_address_mut().copy_from_slice(gid);
        a.set_source_mac(mac);
        a.set_roce_version(roce_version::V2.into());
        a.set_roce_l3_type(roce_l3_type::IPV4.into());
    });
}

/// The link-local GID mlx5_ib's RoCE v1 entry holds for `mac` (`fe80::` + the EUI-64 of the
/// MAC: universal/local bit flipped, ff:fe in the middle).
pub(super) fn link_local_gid(mac: [u8; 6]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[0] = 0xfe;
    g[1] = 0x80;
    g[8..11].copy_from_slice(&[mac[0] ^ 2, mac[1], mac[2]]);
    g[11] = 0xff;
    g[12] = 0xfe;
    g[13..].copy_from_slice(&mac[3..]);
    g
}

/// RoCE address table entry `index`: RoCE v1 (EtherType 0x8915 framing), `gid` (link-local
/// or IPv4-mapped), source `mac`, tagged with `vlan` if given (SET_ROCE_ADDRESS as mlx5_core
/// sends it for a v1 GID: `roce_l3_type` from the GID's form, though v1 ignores it).
pub(super) fn set_gid_v1(
    d: &mut Device,
    index: u16,
    gid: &[u8; 16],
    mac: [u8; 6],
    vlan: Option<u16>,
) {
    let l3 = if gid[..12] == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff] {
        roce_l3_type::IPV4
    } else {
        roce_l3_type::IPV6
    };
    ok::<cmds::SetRoceAddress>(d, |i| {
        i.set_roce_address_index(index.into());
        i.set_vhca_port_num(1);
        let a = i.roce_address_mut();
        a.source_l3_address_mut().copy_from_slice(gid);
        a.set_source_mac(mac);
        a.set_roce_version(roce_version::V1.into());
        a.set_roce_l3_type(l3.into());
        if let Some(id) = vlan {
            a.set_vlan_valid(1);
            a.set_vlan_id(id.into());
        }
    });
}

/// An MTT memory key (variant 0x5a) in `pd` mapping `len` bytes at virtual `va` onto the
/// guest-physical pages from `pa` (contiguous, 2^`page_shift` bytes each), with the local
/// rights and, if `remote`, remote read, write and atomic (ibv_reg_mr with every access
/// flag); returns its lkey.
pub(super) fn mtt_mr(
    d: &mut Device,
    pd: u32,
    (va, pa, len): (u64, u64, u64),
    page_shift: u8,
    remote: bool,
) -> u32 {
    let pages = len >> page_shift;
    let octwords = pages.div_ceil(2) as u32;
    let mut v = input::<cmds::CreateMkey>(|i| {
        i.set_translations_octword_actual_size(octwords);
        let c = i.memory_key_mkey_entry_mut();
        c.set_access_mode_1_0(access_mode::MTT.into());
        c.set_pd(pd);
        c.set_qpn(0xff_ffff);
        c.set_lr(1);
        c.set_lw(1);
        if remote {
            c.set_rr(1);
            c.set_rw(1);
            c.set_a(1);
        }
        c.set_start_addr(va);
        c.set_len(len);
        c.set_log_page_size(page_shift.into());
        c.set_translations_octword_size(octwords);
        c.set_mkey_7_0(0x5a);
    });
    v.resize(CreateMkeyIn::SIZE + pages as usize * 8, 0);
    for k in 0..pages as usize {
        CreateMkeyIn::set_mtt(&mut v, k, pa + ((k as u64) << page_shift)).unwrap();
    }
    let idx = view::<CreateMkeyOut>(&exec(d, &v, CreateMkeyOut::SIZE)).mkey_index();
    mkey_from_index(idx, 0x5a)
}
