//! cx4-model: a vfio-user device model of a ConnectX-4 (mlx5) NIC.

use cx4_model::{config, device, logger, transport};
use std::process::ExitCode;

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
        "cx4-model: {} {:04x}:{:04x}, firmware {}.{}.{}, cmdif rev {}, {} MSI-X vectors, socket {}",
        cfg.chip.name(),
        cx4_hw::pci::VENDOR_MELLANOX,
        cfg.chip.device_id(),
        cfg.fw.major,
        cfg.fw.minor,
        cfg.fw.subminor,
        cfg.cmdif_rev,
        cfg.msix_vectors,
        cfg.socket.display()
    );
    let mut dev = device::Device::new(&cfg);
    match transport::serve(&cfg.socket, &mut dev) {
        Ok(()) => {
            log::info!("client disconnected, model exiting");
            ExitCode::SUCCESS
        }
        Err(e) => {
            log::error!("transport error: {e}");
            ExitCode::FAILURE
        }
    }
}
