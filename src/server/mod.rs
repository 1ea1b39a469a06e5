//! The backend: `duet serve` and the embedded server of the terminal client.

use crate::cli::ServeArgs;
use std::net::SocketAddr;

/// A backend running in this process.
pub struct RunningServer {
    /// Where it listens (the real port when asked for port 0).
    pub addr: SocketAddr,
    /// Resolves when the server has stopped.
    pub stopped: tokio::task::JoinHandle<()>,
    /// Cancel to stop it gracefully.
    pub shutdown: tokio_util::sync::CancellationToken,
}

/// Starts the backend on `args.listen` and returns once it listens.
pub async fn start(args: ServeArgs) -> anyhow::Result<RunningServer> {
    let _ = args;
    anyhow::bail!("the backend is not built yet")
}

/// Runs the backend until Ctrl+C or SIGTERM.
pub async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let running = start(args).await?;
    running.stopped.await?;
    Ok(())
}
