//! The model's reproducible generator: xorshift64 seeded through splitmix64, for the fault
//! modes whose draws must replay from a seed (`roce-wire`, `lie`).

/// A xorshift64 generator; never 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rng(u64);

impl Rng {
    /// A generator started from `seed` (splitmix64 of it: never 0, which xorshift could not
    /// leave).
    pub fn new(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)) | 1)
    }

    /// The next 64 bits (a default, unseeded generator starts from seed 1).
    pub fn next_u64(&mut self) -> u64 {
        if self.0 == 0 {
            *self = Rng::new(1);
        }
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// One draw: true `permille` times in a thousand.
    pub fn hit(&mut self, permille: u16) -> bool {
        permille > 0 && self.below(1000) < u64::from(permille)
    }

    /// One of `items` (which must not be empty).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn a_seed_replays_and_seeds_differ() {
        let draws = |s| {
            let mut r = Rng::new(s);
            (0..8).map(|_| r.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(draws(7), draws(7));
        assert_ne!(draws(7), draws(8));
        assert!(draws(0).iter().all(|&x| x != 0));
    }

    #[test]
    fn hit_keeps_its_share() {
        let mut r = Rng::new(3);
        let n = (0..100_000).filter(|_| r.hit(250)).count();
        assert!((23_000..27_000).contains(&n), "{n}");
        assert!(!(0..1000).any(|_| r.hit(0)));
        assert!((0..1000).all(|_| r.hit(1000)));
    }
}
