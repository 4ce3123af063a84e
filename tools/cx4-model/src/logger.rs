//! A minimal stderr logger with timestamps relative to start.

use std::{io::Write, sync::OnceLock, time::Instant};

struct Logger {
    start: Instant,
    level: log::LevelFilter,
}

static LOGGER: OnceLock<Logger> = OnceLock::new();

impl log::Log for Logger {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= self.level
    }

    fn log(&self, r: &log::Record<'_>) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let t = self.start.elapsed();
        let _ = writeln!(
            std::io::stderr().lock(),
            "[{:5}.{:06}] {:5} {}",
            t.as_secs(),
            t.subsec_micros(),
            r.level(),
            r.args()
        );
    }

    fn flush(&self) {}
}

/// Installs the logger; `verbose` enables debug messages.
pub fn init(verbose: bool) {
    let level = if verbose {
        log::LevelFilter::Debug
    } else {
        log::LevelFilter::Info
    };
    let l = LOGGER.get_or_init(|| Logger {
        start: Instant::now(),
        level,
    });
    if log::set_logger(l).is_ok() {
        log::set_max_level(level);
    }
}
