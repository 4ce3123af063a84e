//! Command-line configuration of one model instance.

use std::path::PathBuf;

use cx4_hw::{iseg::FwVersion, pci};

/// Usage text.
pub const USAGE: &str = "\
usage: cx4-model --socket PATH [options]

  --socket PATH         vfio-user socket to listen on (must not exist)
  --chip cx4|cx4lx      ConnectX-4 (15b3:1013, default) or ConnectX-4 Lx (15b3:1015)
  --fw-version X.Y.Z    firmware version in the initialization segment and MCQI
                        (X, Y < 256; default 12.28.2006 for cx4, 14.32.1010 for cx4lx)
  --cmdif-rev N         command interface revision to advertise (default 5)
  --init-delay-ms N     how long the initializing bit stays set after reset (default 100)
  --msix-vectors N      number of MSI-X vectors (1..=64, default 4)
  --boot-pages N        firmware pages asked for before INIT_HCA (default 16)
  --init-pages N        firmware pages asked for by INIT_HCA (default 32)
  --regular-pages N     pages asked for by event after INIT_HCA (default 8)
  --fault SPEC          inject a fault from the start (repeatable; see faults.rs)
  --control PATH        control socket taking fault SPECs at run time
  --seed N              varies the MAC address and GUIDs (default 1)
  --eth                 advertise eth_net_offloads (mlx5_core then probes mlx5e and its
                        netdev moves traffic through the data path)
  --roce                advertise RoCE (implies --eth): mlx5_ib binds, verbs objects are
                        created; the RoCE transport engine is work in progress
  --ec-8bit             advertise calc_matrix_type_8bit: the vector-calc engine also takes
                        GF(2^8) matrices (poly 0x11d). A later card's capability, off on
                        the ConnectX-4 and Lx (Documentation/ec.md)
  --link eth|ib         the port's link layer (default eth). ib (ConnectX-4 only; the Lx is
                        Ethernet-only): port_type IB, the firmware's subnet-management
                        agent answers MAD_IFC, QP0/QP1 packets carry an LRH and cross the
                        wire in frames of a private EtherType (Documentation/infiniband.md);
                        not with --eth or --roce
  --tap NAME            the port's wire: attach to TAP device NAME (IFF_TAP|IFF_NO_PI);
                        its carrier is the cable
  --wire-gso            the TAP carries GSO superframes with a virtio-net header, as
                        QEMU's virtio-net does: plain TCP LSO output in one write, the
                        host's superframes cut by the port (Documentation/model.md); off by
                        default, where every frame crosses the TAP on its own
  -v, --verbose         log every BAR access
  -h, --help            this text
";

/// Which card the model presents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chip {
    /// ConnectX-4.
    ConnectX4,
    /// ConnectX-4 Lx.
    ConnectX4Lx,
}

impl Chip {
    /// PCI device id.
    pub fn device_id(self) -> u16 {
        match self {
            Chip::ConnectX4 => pci::DEVICE_CONNECTX4,
            Chip::ConnectX4Lx => pci::DEVICE_CONNECTX4_LX,
        }
    }

    /// Marketing name.
    pub fn name(self) -> &'static str {
        match self {
            Chip::ConnectX4 => "ConnectX-4",
            Chip::ConnectX4Lx => "ConnectX-4 Lx",
        }
    }

    fn default_fw(self) -> FwVersion {
        match self {
            Chip::ConnectX4 => FwVersion {
                major: 12,
                minor: 28,
                subminor: 2006,
            },
            Chip::ConnectX4Lx => FwVersion {
                major: 14,
                minor: 32,
                subminor: 1010,
            },
        }
    }
}

/// Model configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Socket path.
    pub socket: PathBuf,
    /// Card.
    pub chip: Chip,
    /// Firmware version.
    pub fw: FwVersion,
    /// Command interface revision.
    pub cmdif_rev: u16,
    /// Initializing time after reset, in milliseconds.
    pub init_delay_ms: u64,
    /// MSI-X vector count.
    pub msix_vectors: u16,
    /// Debug logging.
    pub verbose: bool,
    /// Boot pages demanded.
    pub boot_pages: u32,
    /// Init pages demanded.
    pub init_pages: u32,
    /// Regular pages demanded.
    pub regular_pages: u32,
    /// Faults from the command line.
    pub faults: Vec<crate::faults::Fault>,
    /// Control socket.
    pub control: Option<PathBuf>,
    /// Identity seed.
    pub seed: u32,
    /// Advertise the Ethernet layer (`eth_net_offloads`).
    pub eth: bool,
    /// Advertise RoCE (`roce`; implies `eth`).
    pub roce: bool,
    /// TAP device of the port's wire.
    pub tap: Option<String>,
    /// Carry GSO superframes on the TAP (`--wire-gso`).
    pub wire_gso: bool,
    /// Advertise 8-bit vector-calc matrices (`calc_matrix_type_8bit`), which ConnectX-4
    /// firmware does not: the GF(2^8) profile of the erasure-coding engine.
    pub ec_8bit: bool,
    /// The port runs InfiniBand (`--link ib`), not Ethernet.
    pub link_ib: bool,
}

/// Why the arguments were not accepted.
#[derive(Debug, PartialEq, Eq)]
pub enum ArgError {
    /// `--help` was given.
    Help,
    /// Invalid arguments.
    Bad(String),
}

fn parse_fw(s: &str) -> Result<FwVersion, ArgError> {
    let parts: Vec<&str> = s.split('.').collect();
    let bad = || ArgError::Bad(format!("bad --fw-version {s:?}, expected X.Y.Z"));
    if parts.len() != 3 {
        return Err(bad());
    }
    let n = |p: &str| p.parse::<u16>().map_err(|_| bad());
    let fw = FwVersion {
        major: n(parts[0])?,
        minor: n(parts[1])?,
        subminor: n(parts[2])?,
    };
    // MCQI reports the version as major << 24 | minor << 16 | subminor.
    if cx4_hw::mng::fw_version(fw.major, fw.minor, fw.subminor).is_none() {
        return Err(ArgError::Bad(format!(
            "bad --fw-version {s:?}: major and minor must be below 256"
        )));
    }
    Ok(fw)
}

fn num<T: std::str::FromStr>(opt: &str, v: &str) -> Result<T, ArgError> {
    v.parse()
        .map_err(|_| ArgError::Bad(format!("bad value {v:?} for {opt}")))
}

impl Config {
    /// Parses the command line (without the program name).
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Self, ArgError> {
        let mut it = args.into_iter();
        let mut socket = None;
        let mut chip = Chip::ConnectX4;
        let mut fw = None;
        let mut cmdif_rev = cx4_hw::iseg::CMDIF_REV;
        let mut init_delay_ms = 100;
        let mut msix_vectors = 4;
        let mut verbose = false;
        let (mut boot_pages, mut init_pages, mut regular_pages) = (16, 32, 8);
        let mut faults = Vec::new();
        let mut control = None;
        let mut seed = 1;
        let mut eth = false;
        let mut roce = false;
        let mut tap = None;
        let mut wire_gso = false;
        let mut ec_8bit = false;
        let mut link_ib = false;
        while let Some(a) = it.next() {
            let mut val = |name: &str| {
                it.next()
                    .ok_or_else(|| ArgError::Bad(format!("{name} needs a value")))
            };
            match a.as_str() {
                "-h" | "--help" => return Err(ArgError::Help),
                "-v" | "--verbose" => verbose = true,
                "--socket" => socket = Some(PathBuf::from(val("--socket")?)),
                "--chip" => {
                    chip = match val("--chip")?.as_str() {
                        "cx4" => Chip::ConnectX4,
                        "cx4lx" => Chip::ConnectX4Lx,
                        o => return Err(ArgError::Bad(format!("unknown chip {o:?}"))),
                    }
                }
                "--fw-version" => fw = Some(parse_fw(&val("--fw-version")?)?),
                "--cmdif-rev" => cmdif_rev = num("--cmdif-rev", &val("--cmdif-rev")?)?,
                "--init-delay-ms" => {
                    init_delay_ms = num("--init-delay-ms", &val("--init-delay-ms")?)?
                }
                "--msix-vectors" => {
                    msix_vectors = num("--msix-vectors", &val("--msix-vectors")?)?;
                    if !(1..=64).contains(&msix_vectors) {
                        return Err(ArgError::Bad("--msix-vectors must be 1..=64".into()));
                    }
                }
                "--boot-pages" => boot_pages = num("--boot-pages", &val("--boot-pages")?)?,
                "--init-pages" => init_pages = num("--init-pages", &val("--init-pages")?)?,
                "--regular-pages" => {
                    regular_pages = num("--regular-pages", &val("--regular-pages")?)?
                }
                "--fault" => faults
                    .push(crate::faults::Fault::parse(&val("--fault")?).map_err(ArgError::Bad)?),
                "--control" => control = Some(PathBuf::from(val("--control")?)),
                "--seed" => seed = num("--seed", &val("--seed")?)?,
                "--eth" => eth = true,
                "--roce" => {
                    roce = true;
                    eth = true;
                }
                "--tap" => tap = Some(val("--tap")?),
                "--wire-gso" => wire_gso = true,
                "--ec-8bit" => ec_8bit = true,
                "--link" => {
                    link_ib = match val("--link")?.as_str() {
                        "eth" => false,
                        "ib" => true,
                        o => return Err(ArgError::Bad(format!("unknown link layer {o:?}"))),
                    }
                }
                o => return Err(ArgError::Bad(format!("unknown argument {o:?}"))),
            }
        }
        let socket = socket.ok_or_else(|| ArgError::Bad("--socket is required".into()))?;
        if link_ib && chip == Chip::ConnectX4Lx {
            return Err(ArgError::Bad(
                "--link ib: the ConnectX-4 Lx is an Ethernet-only card".into(),
            ));
        }
        if link_ib && eth {
            return Err(ArgError::Bad(
                "--link ib runs no Ethernet layer: not with --eth or --roce".into(),
            ));
        }
        Ok(Config {
            socket,
            chip,
            fw: fw.unwrap_or_else(|| chip.default_fw()),
            cmdif_rev,
            init_delay_ms,
            msix_vectors,
            verbose,
            boot_pages,
            init_pages,
            regular_pages,
            faults,
            control,
            seed,
            eth,
            roce,
            tap,
            wire_gso,
            ec_8bit,
            link_ib,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn defaults_follow_the_chip() {
        let c = Config::from_args(args("--socket /x --chip cx4lx")).unwrap();
        assert_eq!(c.chip.device_id(), 0x1015);
        assert_eq!(c.fw.major, 14);
        assert_eq!(c.cmdif_rev, 5);
        assert!(!c.ec_8bit, "ConnectX-4 has no 8-bit vector-calc matrices");
        assert!(
            !c.wire_gso,
            "the TAP carries single frames unless told otherwise"
        );
        assert!(
            Config::from_args(args("--socket /x --tap t0 --wire-gso"))
                .unwrap()
                .wire_gso
        );
        assert!(
            Config::from_args(args("--socket /x --ec-8bit"))
                .unwrap()
                .ec_8bit
        );
    }

    #[test]
    fn the_link_layer_is_ib_on_the_connectx4_alone() {
        assert!(!Config::from_args(args("--socket /x")).unwrap().link_ib);
        assert!(
            Config::from_args(args("--socket /x --link ib"))
                .unwrap()
                .link_ib
        );
        assert!(
            !Config::from_args(args("--socket /x --link eth --roce"))
                .unwrap()
                .link_ib
        );
        for bad in [
            "--chip cx4lx --link ib",
            "--link ib --roce",
            "--eth --link ib",
            "--link opa",
        ] {
            assert!(
                matches!(
                    Config::from_args(args(&format!("--socket /x {bad}"))),
                    Err(ArgError::Bad(_))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn explicit_values_are_taken() {
        let c = Config::from_args(args("--socket /x --fw-version 12.1.3 --cmdif-rev 4")).unwrap();
        assert_eq!(
            c.fw,
            FwVersion {
                major: 12,
                minor: 1,
                subminor: 3
            }
        );
        assert_eq!(c.cmdif_rev, 4);
    }

    #[test]
    fn bad_input_is_rejected_with_a_message() {
        assert!(matches!(
            Config::from_args(args("--chip cx4")),
            Err(ArgError::Bad(_))
        ));
        assert!(matches!(
            Config::from_args(args("--socket /x --fw-version 12.1")),
            Err(ArgError::Bad(_))
        ));
        assert!(matches!(
            Config::from_args(args("--socket /x --fw-version 12.256.1")),
            Err(ArgError::Bad(_))
        ));
        assert!(matches!(
            Config::from_args(args("--socket /x --msix-vectors 0")),
            Err(ArgError::Bad(_))
        ));
        assert!(matches!(
            Config::from_args(args("--socket")),
            Err(ArgError::Bad(_))
        ));
    }
}
