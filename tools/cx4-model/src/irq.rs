//! MSI-X vectors: one eventfd per vector, handed over by the client through SET_IRQS.

use std::{fs::File, io::Write};

use vfio_user_proto::wire::{
    VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_DATA_NONE,
};

/// The interrupt vectors of the function.
pub struct MsiX {
    vectors: Vec<Option<File>>,
    /// Delivery delay per vector in milliseconds (fault injection).
    pub delay_ms: std::collections::BTreeMap<u16, u64>,
}

impl MsiX {
    /// `n` vectors, none connected.
    pub fn new(n: u16) -> Self {
        MsiX {
            vectors: (0..n).map(|_| None).collect(),
            delay_ms: Default::default(),
        }
    }

    /// Applies a SET_IRQS request for the MSI-X index.
    pub fn set(
        &mut self,
        flags: u32,
        start: u32,
        count: u32,
        fds: Vec<File>,
    ) -> std::io::Result<()> {
        let inval = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, m.to_string());
        if flags & VFIO_IRQ_SET_ACTION_TRIGGER == 0 {
            // Masking is emulated by the client (QEMU owns the MSI-X table); nothing to do.
            return Ok(());
        }
        let end = start
            .checked_add(count)
            .ok_or_else(|| inval("vector range overflows"))?;
        if end as usize > self.vectors.len() {
            return Err(inval("vector range beyond the MSI-X table"));
        }
        if flags & VFIO_IRQ_SET_DATA_EVENTFD != 0 && fds.is_empty() {
            // QEMU de-assigns vectors by sending the range without descriptors.
            for v in start..end {
                self.vectors[v as usize] = None;
            }
        } else if flags & VFIO_IRQ_SET_DATA_EVENTFD != 0 {
            if fds.len() != count as usize {
                return Err(inval("eventfd count does not match the vector count"));
            }
            for (i, fd) in fds.into_iter().enumerate() {
                self.vectors[start as usize + i] = Some(fd);
            }
        } else if flags & VFIO_IRQ_SET_DATA_NONE != 0 && count == 0 {
            self.vectors.iter_mut().for_each(|v| *v = None);
        } else if flags & VFIO_IRQ_SET_DATA_NONE != 0 {
            for v in start..end {
                self.trigger(v as u16);
            }
        }
        Ok(())
    }

    /// Raises vector `v`; returns whether an eventfd was connected.
    pub fn trigger(&mut self, v: u16) -> bool {
        match self.vectors.get_mut(v as usize) {
            Some(Some(f)) => {
                if let Some(&ms) = self.delay_ms.get(&v) {
                    // Deliver late from a thread holding its own handle of the eventfd.
                    if let Ok(mut late) = f.try_clone() {
                        std::thread::spawn(move || {
                            std::thread::sleep(std::time::Duration::from_millis(ms));
                            let _ = late.write_all(&1u64.to_ne_bytes());
                        });
                        return true;
                    }
                }
                if let Err(e) = f.write_all(&1u64.to_ne_bytes()) {
                    log::warn!("MSI-X vector {v}: eventfd write failed: {e}");
                }
                true
            }
            _ => false,
        }
    }

    /// Forgets every eventfd (device reset).
    pub fn reset(&mut self) {
        self.vectors.iter_mut().for_each(|v| *v = None);
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    /// Whether the function has no vectors (never, for a configured model).
    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }
}
