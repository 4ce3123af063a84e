//! The listening socket: [`Server::bind`] a path, [`Server::accept`] clients.

use std::io;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::backend::DeviceInfo;
use crate::connection::{Connection, ServerConfig};

/// A vfio-user server socket. The socket file is removed when the server is dropped.
#[derive(Debug)]
pub struct Server {
    listener: UnixListener,
    path: PathBuf,
    info: Arc<DeviceInfo>,
    config: ServerConfig,
}

impl Server {
    /// Listens on `path` with the default [`ServerConfig`].
    pub fn bind(path: impl AsRef<Path>, info: DeviceInfo) -> io::Result<Self> {
        Self::bind_with_config(path, info, ServerConfig::default())
    }

    /// Listens on `path`, which must not exist (a stale socket is not silently replaced).
    pub fn bind_with_config(
        path: impl AsRef<Path>,
        info: DeviceInfo,
        config: ServerConfig,
    ) -> io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        info.validate()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        config.validate()?;
        if path.symlink_metadata().is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} already exists", path.display()),
            ));
        }
        let listener = UnixListener::bind(&path)?;
        Ok(Self {
            listener,
            path,
            info: Arc::new(info),
            config,
        })
    }

    /// Waits for the next client.
    pub fn accept(&self) -> io::Result<Connection> {
        let (stream, _) = self.listener.accept()?;
        Connection::new(stream, self.info.clone(), self.config)
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The listening socket (e.g. to poll it).
    pub fn listener(&self) -> &UnixListener {
        &self.listener
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_file(&self.path) {
            log::warn!("cannot remove {}: {e}", self.path.display());
        }
    }
}
