//! This `duet` was built without the `server` feature: it joins remote
//! rooms only. Starting a backend says how to get one.

#[path = "options.rs"]
mod options;
pub use options::{LimitOptions, ServeOptions};
use std::net::SocketAddr;

/// What to do instead, said wherever a backend would start.
pub const NO_SERVER: &str = "this duet was built without the server (cargo build --no-default-features): \
     join a remote room with --server URL (or DUET_SERVER), or build duet with the default features \
     (cargo build) to host rooms";

/// A backend running in this process (never, in this build).
pub struct RunningServer {
    pub addr: SocketAddr,
    pub stopped: tokio::task::JoinHandle<()>,
    pub shutdown: tokio_util::sync::CancellationToken,
}

/// Fails: there is no backend in this build.
pub async fn start(_args: ServeOptions) -> anyhow::Result<RunningServer> {
    anyhow::bail!(NO_SERVER)
}

/// Fails: there is no backend in this build.
pub async fn serve(_args: ServeOptions) -> anyhow::Result<()> {
    anyhow::bail!(NO_SERVER)
}
