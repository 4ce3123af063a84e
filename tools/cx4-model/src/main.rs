//! cx4-model: a vfio-user device model of a ConnectX-4 (mlx5) NIC.

use std::{
    process::ExitCode,
    sync::{Arc, Mutex},
};

use cx4_model::{config, device, logger, runtime, transport, wire};

fn main() -> ExitCode {
    let cfg = match config::Config::from_args(std::env::args().skip(1)) {
        Ok(c) => c,
        Err(config::ArgError::Help) => {
            print!("{}", config::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(config::ArgError::Bad(msg)) => {
            eprintln!("cx4-model: {msg}\n\n{}", config::USAGE);
            return ExitCode::from(2);
        }
    };
    logger::init(cfg.verbose);
    log::info!(
        "cx4-model: {} {:04x}:{:04x}, firmware {}.{}.{}, cmdif rev {}, {} MSI-X vectors, pages {}/{}/{}",
        cfg.chip.name(),
        cx4_hw::pci::VENDOR_MELLANOX,
        cfg.chip.device_id(),
        cfg.fw.major,
        cfg.fw.minor,
        cfg.fw.subminor,
        cfg.cmdif_rev,
        cfg.msix_vectors,
        cfg.boot_pages,
        cfg.init_pages,
        cfg.regular_pages,
    );
    let dev = Arc::new(Mutex::new(device::Device::new(&cfg)));
    for f in &cfg.faults {
        if let Err(e) = dev.lock().expect("not yet shared").inject(f) {
            eprintln!("cx4-model: fault {f:?}: {e}");
            return ExitCode::from(2);
        }
    }
    if let Err(e) = runtime::spawn_cq_timer(dev.clone()) {
        eprintln!("cx4-model: CQ timer thread: {e}");
        return ExitCode::FAILURE;
    }
    if let Some(name) = &cfg.tap {
        let tap = match wire::Tap::open(name, cfg.wire_gso) {
            Ok(t) => std::sync::Arc::new(t),
            Err(e) => {
                eprintln!("cx4-model: --tap {name}: {e}");
                return ExitCode::FAILURE;
            }
        };
        log::info!(
            "port 1 on TAP {name} (carrier {})",
            if wire::Port::carrier(&*tap) {
                "on"
            } else {
                "off"
            }
        );
        dev.lock().expect("not yet shared").attach(tap.clone());
        if let Err(e) = runtime::spawn_wire(tap, dev.clone()) {
            eprintln!("cx4-model: wire threads: {e}");
            return ExitCode::FAILURE;
        }
    } else if let Err(e) = runtime::spawn_timers(dev.clone()) {
        eprintln!("cx4-model: timer thread: {e}");
        return ExitCode::FAILURE;
    }
    if let Some(path) = &cfg.control {
        if let Err(e) = transport::spawn_control(path, dev.clone()) {
            eprintln!("cx4-model: {e}");
            return ExitCode::FAILURE;
        }
    }
    let res = transport::serve(&cfg.socket, dev);
    if let Some(path) = &cfg.control {
        let _ = std::fs::remove_file(path);
    }
    match res {
        Ok(()) => {
            log::info!("model exiting");
            ExitCode::SUCCESS
        }
        Err(e) => {
            log::error!("transport error: {e}");
            ExitCode::FAILURE
        }
    }
}
