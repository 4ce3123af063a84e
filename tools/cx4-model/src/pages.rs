//! Firmware pages: the host memory the firmware borrows from the driver (boot, init and
//! regular pages), every page handed over recorded, and leaks or double returns reported.

use std::collections::BTreeMap;

use crate::guest_mem::GuestMem;

/// The page size the PRM uses for firmware pages.
pub const PAGE: u64 = cx4_hw::pages::PAGE_SIZE as u64;

/// QUERY_PAGES op_mod: which stage's demand is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// Pages needed before INIT_HCA's first half (op_mod 1).
    Boot,
    /// Pages needed by INIT_HCA (op_mod 2).
    Init,
    /// Pages needed at run time (op_mod 3).
    Regular,
}

impl Stage {
    /// From QUERY_PAGES op_mod.
    pub fn from_op_mod(m: u16) -> Option<Self> {
        match m {
            1 => Some(Stage::Boot),
            2 => Some(Stage::Init),
            3 => Some(Stage::Regular),
            _ => None,
        }
    }
}

/// Why a MANAGE_PAGES request was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum PageError {
    /// Not 4 KiB aligned.
    Misaligned(u64),
    /// Not backed by guest memory.
    Unmapped(u64),
    /// Already held by the firmware.
    Duplicate(u64),
}

/// Page accounting of one function.
#[derive(Debug, Default)]
pub struct Pages {
    /// Pages each stage asks for.
    pub demand: BTreeMap<Stage, u32>,
    /// Pages currently held, with the stage they were given for.
    held: BTreeMap<u64, Stage>,
    /// Pages given by the driver in total.
    pub given: u64,
    /// Pages returned to the driver in total.
    pub returned: u64,
    /// Pages given twice (a driver bug the model reports).
    pub double_given: u64,
    /// The stage the firmware is in (pages given now count towards it).
    pub stage: Option<Stage>,
}

impl Pages {
    /// A function that asks for `boot`, `init` and `regular` pages.
    pub fn new(boot: u32, init: u32, regular: u32) -> Self {
        let mut p = Pages::default();
        p.demand.insert(Stage::Boot, boot);
        p.demand.insert(Stage::Init, init);
        p.demand.insert(Stage::Regular, regular);
        p
    }

    /// The stage pages given now are booked to: boot pages until the boot demand is met, then
    /// init pages until INIT_HCA, regular pages after it (independent of which QUERY_PAGES the
    /// driver sent last).
    fn booking_stage(&self) -> Stage {
        match self.stage {
            Some(Stage::Regular) => Stage::Regular,
            _ if self.held_for(Stage::Boot)
                < self.demand.get(&Stage::Boot).copied().unwrap_or(0) =>
            {
                Stage::Boot
            }
            _ => Stage::Init,
        }
    }

    /// Marks INIT_HCA done: later pages are regular pages.
    pub fn initialized(&mut self) {
        self.stage = Some(Stage::Regular);
    }

    /// The same demand with nothing held (function reset).
    pub fn renewed(&self) -> Self {
        Pages {
            demand: self.demand.clone(),
            ..Default::default()
        }
    }

    fn held_for(&self, s: Stage) -> u32 {
        self.held.values().filter(|&&v| v == s).count() as u32
    }

    /// QUERY_PAGES: how many pages `s` still needs.
    pub fn query(&mut self, s: Stage) -> u32 {
        self.demand
            .get(&s)
            .copied()
            .unwrap_or(0)
            .saturating_sub(self.held_for(s))
    }

    /// Pages currently held.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// MANAGE_PAGES give: validates every address first, then records all or none.
    pub fn give(&mut self, mem: &GuestMem, pas: &[u64]) -> Result<(), PageError> {
        let mut seen = std::collections::BTreeSet::new();
        for &pa in pas {
            if pa % PAGE != 0 {
                return Err(PageError::Misaligned(pa));
            }
            let mut probe = [0u8; 1];
            if mem.read(pa, &mut probe).is_err() || mem.read(pa + PAGE - 1, &mut probe).is_err() {
                return Err(PageError::Unmapped(pa));
            }
            if self.held.contains_key(&pa) || !seen.insert(pa) {
                self.double_given += 1;
                return Err(PageError::Duplicate(pa));
            }
        }
        let stage = self.booking_stage();
        for &pa in pas {
            self.held.insert(pa, stage);
        }
        self.given += pas.len() as u64;
        Ok(())
    }

    /// MANAGE_PAGES take: hands back up to `n` pages (the most recently given first).
    pub fn take(&mut self, n: u32) -> Vec<u64> {
        let mut out = Vec::new();
        while out.len() < n as usize {
            let Some((&pa, _)) = self.held.iter().next_back() else {
                break;
            };
            self.held.remove(&pa);
            out.push(pa);
        }
        self.returned += out.len() as u64;
        out
    }

    /// MANAGE_PAGES take while the function runs: only regular pages can be spared then;
    /// after TEARDOWN_HCA every page can be returned.
    pub fn take_for(&mut self, n: u32, running: bool) -> Vec<u64> {
        if !running {
            return self.take(n);
        }
        let spare: Vec<u64> = self
            .held
            .iter()
            .filter(|(_, &s)| s == Stage::Regular)
            .map(|(&pa, _)| pa)
            .take(n as usize)
            .collect();
        for pa in &spare {
            self.held.remove(pa);
        }
        self.returned += spare.len() as u64;
        spare
    }

    /// The accounting summary the model logs at teardown and at disconnect.
    pub fn report(&self) -> String {
        let state = if self.held.is_empty() && self.double_given == 0 {
            "balanced"
        } else {
            "UNBALANCED"
        };
        format!(
            "page accounting {state}: given {}, returned {}, still held {}, given twice {}",
            self.given,
            self.returned,
            self.held.len(),
            self.double_given
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mem() -> GuestMem {
        let mut g = GuestMem::default();
        g.map(
            0x100000,
            0x10000,
            0,
            Some(crate::guest_mem::test_backing(0x10000)),
        )
        .unwrap();
        g
    }

    #[test]
    fn give_take_balances() {
        let g = mem();
        let mut p = Pages::new(2, 3, 0);
        assert_eq!(p.query(Stage::Boot), 2);
        p.give(&g, &[0x100000, 0x101000]).unwrap();
        assert_eq!(p.query(Stage::Boot), 0);
        assert_eq!(p.query(Stage::Init), 3);
        p.give(&g, &[0x102000, 0x103000, 0x104000]).unwrap();
        assert_eq!(p.held(), 5);
        assert_eq!(p.take(4).len(), 4);
        assert_eq!(p.take(4).len(), 1);
        assert!(
            p.report().contains("balanced: given 5, returned 5"),
            "{}",
            p.report()
        );
    }

    #[test]
    fn bad_pages_are_refused_and_nothing_is_recorded() {
        let g = mem();
        let mut p = Pages::new(4, 0, 0);
        p.query(Stage::Boot);
        assert_eq!(
            p.give(&g, &[0x100000, 0x100800]),
            Err(PageError::Misaligned(0x100800))
        );
        assert_eq!(
            p.give(&g, &[0x100000, 0x200000]),
            Err(PageError::Unmapped(0x200000))
        );
        assert_eq!(
            p.give(&g, &[0x100000, 0x100000]),
            Err(PageError::Duplicate(0x100000))
        );
        assert_eq!(p.held(), 0, "a refused request records nothing");
        p.give(&g, &[0x100000]).unwrap();
        assert_eq!(p.give(&g, &[0x100000]), Err(PageError::Duplicate(0x100000)));
        assert!(p.report().contains("UNBALANCED"));
    }
}
