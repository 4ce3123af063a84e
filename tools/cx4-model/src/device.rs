//! The modelled ConnectX-4 function: config space, BAR0 and its initialization segment,
//! MSI-X and guest memory. Commands, pages, EQs and the data path hang off this type.

use std::{fs::File, time::Instant};

use cx4_hw::{
    iseg::{self, CmdqSize},
    pci::BAR0_SIZE,
};

use crate::{config::Config, guest_mem::GuestMem, irq::MsiX, pci_cfg::PciConfig};

/// VFIO region index of BAR0.
pub const REGION_BAR0: u32 = 0;
/// VFIO region index of the configuration space.
pub const REGION_CONFIG: u32 = 7;
/// VFIO IRQ index of MSI-X.
pub const IRQ_MSIX: u32 = 2;

/// The command queue geometry the model advertises: 32 slots of 64 bytes (one 4 KiB page
/// holds 2^5 entries of 2^6 bytes, as the PRM requires log_sz + log_stride <= 12).
pub const CMDQ_GEOMETRY: CmdqSize = CmdqSize {
    log_size: 5,
    log_stride: 6,
};

/// Errors the device reports for a region access; they become vfio-user errnos.
#[derive(Debug)]
pub enum AccessError {
    /// No such region, or outside it.
    OutOfRange,
    /// The access width or alignment is not supported by the register.
    BadAccess,
}

/// The device.
pub struct Device {
    cfg: Config,
    pci: PciConfig,
    /// Guest memory reachable by DMA.
    pub mem: GuestMem,
    /// Interrupt vectors.
    pub msix: MsiX,
    created: Instant,
    reset_at: Instant,
    cmdq_addr_h: u32,
    cmdq_addr_l: u32,
    /// Command doorbell rings seen (for tests and the log).
    pub doorbells: u64,
}

impl Device {
    /// A device in its power-on state.
    pub fn new(cfg: &Config) -> Self {
        let now = Instant::now();
        Device {
            pci: PciConfig::new(cfg.chip.device_id(), cfg.msix_vectors),
            mem: GuestMem::default(),
            msix: MsiX::new(cfg.msix_vectors),
            cfg: cfg.clone(),
            created: now,
            reset_at: now,
            cmdq_addr_h: 0,
            cmdq_addr_l: 0,
            doorbells: 0,
        }
    }

    /// Function-level reset: firmware starts initializing again, all state is dropped.
    pub fn reset(&mut self) {
        log::info!("device reset");
        self.reset_at = Instant::now();
        self.cmdq_addr_h = 0;
        self.cmdq_addr_l = 0;
        self.msix.reset();
    }

    fn initializing(&self) -> bool {
        self.reset_at.elapsed().as_millis() < u128::from(self.cfg.init_delay_ms)
    }

    /// Host-order value of the 32-bit initialization-segment word at `off` (4-aligned).
    fn iseg_word(&self, off: usize) -> u32 {
        let (fw_rev, cmdif_sub) = self.cfg.fw.to_regs(self.cfg.cmdif_rev);
        let ns = self.created.elapsed().as_nanos() as u64;
        match off {
            iseg::FW_REV => fw_rev,
            iseg::CMDIF_REV_FW_SUB => cmdif_sub,
            iseg::CMDQ_ADDR_H => self.cmdq_addr_h,
            // Bits 10:8 (nic_interface) read 0: the driver owns the NIC interface.
            iseg::CMDQ_ADDR_L_SZ => (self.cmdq_addr_l & !0xfff) | CMDQ_GEOMETRY.to_reg(),
            iseg::INITIALIZING if self.initializing() => iseg::INITIALIZING_BIT,
            // Health buffer: zero but for the firmware version word (fatal when all-ones).
            o if o == iseg::HEALTH + 0x30 => fw_rev,
            iseg::INTERNAL_TIMER_H => (ns >> 32) as u32,
            o if o == iseg::INTERNAL_TIMER_H + 4 => ns as u32,
            // Firmware ticks its health counter while alive; ~10 times a second here.
            iseg::HEALTH_COUNTER => (self.created.elapsed().as_millis() / 100) as u32,
            _ => 0,
        }
    }

    fn iseg_write(&mut self, off: usize, v: u32) {
        match off {
            iseg::CMDQ_ADDR_H => self.cmdq_addr_h = v,
            iseg::CMDQ_ADDR_L_SZ => self.cmdq_addr_l = v,
            iseg::CMD_DBELL => {
                self.doorbells += 1;
                log::debug!(
                    "command doorbell {v:#x}, queue at {:#x}",
                    (u64::from(self.cmdq_addr_h) << 32) | u64::from(self.cmdq_addr_l & !0xfff)
                );
            }
            _ => log::debug!("write to read-only init segment word {off:#x} = {v:#x} ignored"),
        }
    }

    /// A read of BAR0. The init segment is big-endian; accesses are split into dwords.
    fn bar0_read(&mut self, off: u64, out: &mut [u8]) -> Result<(), AccessError> {
        let end = off
            .checked_add(out.len() as u64)
            .ok_or(AccessError::OutOfRange)?;
        if end > BAR0_SIZE {
            return Err(AccessError::OutOfRange);
        }
        for (i, b) in out.iter_mut().enumerate() {
            let a = off as usize + i;
            let word = if a < iseg::SIZE {
                self.iseg_word(a & !3)
            } else {
                0
            };
            *b = word.to_be_bytes()[a & 3];
        }
        if self.cfg.verbose {
            log::debug!("BAR0 read {off:#x} len {} -> {:02x?}", out.len(), out);
        }
        Ok(())
    }

    fn bar0_write(&mut self, off: u64, data: &[u8]) -> Result<(), AccessError> {
        let end = off
            .checked_add(data.len() as u64)
            .ok_or(AccessError::OutOfRange)?;
        if end > BAR0_SIZE {
            return Err(AccessError::OutOfRange);
        }
        if self.cfg.verbose {
            log::debug!("BAR0 write {off:#x} {:02x?}", data);
        }
        if (off as usize) < iseg::SIZE {
            if off % 4 != 0 || data.len() % 4 != 0 {
                log::warn!(
                    "unaligned init segment write at {off:#x} len {}",
                    data.len()
                );
                return Err(AccessError::BadAccess);
            }
            for (i, w) in data.chunks_exact(4).enumerate() {
                let v = u32::from_be_bytes([w[0], w[1], w[2], w[3]]);
                self.iseg_write(off as usize + 4 * i, v);
            }
        }
        Ok(())
    }

    /// A read of a VFIO region.
    pub fn region_read(
        &mut self,
        region: u32,
        off: u64,
        out: &mut [u8],
    ) -> Result<(), AccessError> {
        match region {
            REGION_CONFIG => {
                self.pci.read(off, out);
                Ok(())
            }
            REGION_BAR0 => self.bar0_read(off, out),
            _ => Err(AccessError::OutOfRange),
        }
    }

    /// A write of a VFIO region.
    pub fn region_write(&mut self, region: u32, off: u64, data: &[u8]) -> Result<(), AccessError> {
        match region {
            REGION_CONFIG => {
                let was_master = self.pci.bus_master();
                self.pci.write(off, data);
                if was_master != self.pci.bus_master() {
                    log::info!(
                        "bus master {}",
                        if self.pci.bus_master() { "on" } else { "off" }
                    );
                }
                Ok(())
            }
            REGION_BAR0 => self.bar0_write(off, data),
            _ => Err(AccessError::OutOfRange),
        }
    }

    /// SET_IRQS for MSI-X.
    pub fn set_msix(
        &mut self,
        flags: u32,
        start: u32,
        count: u32,
        fds: Vec<File>,
    ) -> std::io::Result<()> {
        self.msix.set(flags, start, count, fds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(extra: &str) -> Device {
        let args = format!("--socket /x --init-delay-ms 0 {extra}");
        Device::new(&Config::from_args(args.split_whitespace().map(String::from)).unwrap())
    }

    fn rd32(d: &mut Device, off: u64) -> u32 {
        let mut b = [0; 4];
        d.region_read(REGION_BAR0, off, &mut b).unwrap();
        u32::from_be_bytes(b)
    }

    #[test]
    fn init_segment_is_big_endian_with_the_configured_firmware() {
        let mut d = dev("--fw-version 12.28.2006");
        // The kernel's mellanox_check_broken_intx_masking reads these two words.
        assert_eq!(rd32(&mut d, 0), 28 << 16 | 12);
        assert_eq!(rd32(&mut d, 4), 5 << 16 | 2006);
        let mut b = [0; 4];
        d.region_read(REGION_BAR0, 0, &mut b).unwrap();
        assert_eq!(b, [0x00, 0x1c, 0x00, 0x0c], "byte order on the bus");
    }

    #[test]
    fn initializing_bit_clears_after_the_delay() {
        let mut d = dev("--init-delay-ms 200");
        assert_ne!(
            rd32(&mut d, iseg::INITIALIZING as u64) & iseg::INITIALIZING_BIT,
            0
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
        assert_eq!(
            rd32(&mut d, iseg::INITIALIZING as u64) & iseg::INITIALIZING_BIT,
            0
        );
        d.reset();
        assert_ne!(
            rd32(&mut d, iseg::INITIALIZING as u64) & iseg::INITIALIZING_BIT,
            0
        );
    }

    #[test]
    fn cmdq_address_keeps_the_advertised_geometry() {
        let mut d = dev("");
        assert_eq!(rd32(&mut d, 0x14) & 0xff, 0x56);
        d.region_write(REGION_BAR0, 0x10, &0x1u32.to_be_bytes())
            .unwrap();
        d.region_write(REGION_BAR0, 0x14, &0xabcd_e000u32.to_be_bytes())
            .unwrap();
        assert_eq!(rd32(&mut d, 0x10), 1);
        assert_eq!(rd32(&mut d, 0x14), 0xabcd_e056);
        assert_eq!(rd32(&mut d, 0x14) >> 8 & 7, 0, "nic_interface must read 0");
    }

    #[test]
    fn health_counter_ticks() {
        let mut d = dev("");
        let a = rd32(&mut d, iseg::HEALTH_COUNTER as u64);
        std::thread::sleep(std::time::Duration::from_millis(220));
        assert!(rd32(&mut d, iseg::HEALTH_COUNTER as u64) > a);
    }

    #[test]
    fn out_of_range_and_unaligned_accesses_are_errors() {
        let mut d = dev("");
        let mut b = [0; 8];
        assert!(d.region_read(REGION_BAR0, BAR0_SIZE - 4, &mut b).is_err());
        assert!(d.region_read(REGION_BAR0, u64::MAX, &mut b).is_err());
        assert!(d.region_read(3, 0, &mut b).is_err());
        assert!(d.region_write(REGION_BAR0, 0x11, &[1, 2, 3, 4]).is_err());
    }
}
