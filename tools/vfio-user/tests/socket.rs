//! The listening socket: bind, accept, connect, clean-up.

mod common;

use std::path::PathBuf;

use common::*;
use vfio_user_proto::*;

fn sock_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cx4-vfio-user-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("dev.sock")
}

#[test]
fn bind_accept_connect_and_cleanup() {
    let path = sock_path("bind");
    let server = Server::bind(&path, TestDev::info()).unwrap();
    assert_eq!(server.path(), path);
    let dev = TestDev::new();
    let mut backend = dev.clone();
    let t = std::thread::spawn(move || {
        let mut conn = server.accept().unwrap();
        conn.serve(&mut backend).unwrap();
        server
    });
    let mut c = Client::connect(&path).unwrap();
    assert_eq!(c.device_info().unwrap().num_regions, 9);
    probe(&mut c);
    drop(c);
    let server = t.join().unwrap();
    assert!(path.exists());
    drop(server);
    assert!(!path.exists(), "the socket is removed on drop");
}

#[test]
fn bind_refuses_existing_paths_and_bad_descriptions() {
    let path = sock_path("exists");
    std::fs::write(&path, b"not a socket").unwrap();
    let err = Server::bind(&path, TestDev::info()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        b"not a socket",
        "an existing file is left alone"
    );

    let path = sock_path("bad-info");
    let mut info = TestDev::info();
    info.regions.push(RegionInfo::new(0, 1, 0));
    assert_eq!(
        Server::bind(&path, info).unwrap_err().kind(),
        std::io::ErrorKind::InvalidInput
    );
    let config = ServerConfig {
        max_data_xfer_size: MAX_XFER_LIMIT + 1,
        ..Default::default()
    };
    let err = Server::bind_with_config(&path, TestDev::info(), config).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(!path.exists());
}
