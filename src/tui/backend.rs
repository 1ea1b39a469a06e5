//! The embedded backend of a data directory, from the client's side:
//! start it (holding the lock, publishing the port) or join the one another
//! `duet` runs; and when that one goes away, take over: the first client
//! to find the lock free starts a backend, the others follow the port file.

use crate::cli::ServeArgs;
use crate::client::local::{self, BackendLock};
use crate::server::RunningServer;
use anyhow::Context;
use clap::Parser;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// The embedded backend's settings, parsed by clap like `duet serve`'s so
/// that its defaults and environment variables apply unchanged.
#[derive(Debug, Parser)]
struct EmbeddedServe {
    #[command(flatten)]
    serve: ServeArgs,
}

/// A backend this process runs, with the lock that says so.
pub struct Owned {
    running: RunningServer,
    lock: BackendLock,
}

impl Owned {
    /// Stops the backend gracefully, then releases the lock.
    pub async fn stop(self) {
        self.running.shutdown.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.running.stopped).await;
        drop(self.lock);
    }
}

/// Starts the embedded backend of `dir` if its lock is free (`Ok(None)`
/// when another process holds it).
pub async fn start_owned(dir: &Path) -> anyhow::Result<Option<(String, Owned)>> {
    let lock = BackendLock::try_acquire(dir)
        .with_context(|| format!("cannot use the data directory {}", dir.display()))?;
    let Some(lock) = lock else { return Ok(None) };
    let data_dir = dir.to_string_lossy().to_string();
    let args = EmbeddedServe::try_parse_from([
        "duet-serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        &data_dir,
    ])
    .context("embedded backend settings")?
    .serve;
    let mut args = args;
    if args.token.as_deref().is_none_or(str::is_empty) {
        args.token = Some(
            local::embedded_token(dir)
                .with_context(|| format!("cannot keep a token in {}", dir.display()))?,
        );
    }
    let running = crate::server::start(args)
        .await
        .context("cannot start the embedded backend")?;
    let url = format!("http://{}", running.addr);
    lock.publish(&url)
        .with_context(|| format!("cannot write {}", local::port_path(dir).display()))?;
    tracing::info!(%url, "embedded backend started");
    Ok(Some((url, Owned { running, lock })))
}

/// The embedded backend to use: ours (started now) or another `duet`'s.
pub async fn embedded(dir: &Path) -> anyhow::Result<(String, Option<Owned>)> {
    if let Some((url, owned)) = start_owned(dir).await? {
        return Ok((url, Some(owned)));
    }
    // Another duet holds the lock: join its backend once it published
    // where it listens.
    for _ in 0..50 {
        if let Some(url) = local::running_backend(dir) {
            tracing::info!(%url, "joining the embedded backend of another duet");
            return Ok((url, None));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!(
        "another duet holds {} but published no port in {}; is it still starting?",
        local::lock_path(dir).display(),
        local::port_path(dir).display()
    );
}

/// What the event loop holds of a watcher: poke it when the connection
/// drops; it answers with the backend's new URL when it moved.
pub struct Watch {
    pub poke: Arc<Notify>,
    pub moved: mpsc::UnboundedReceiver<String>,
}

/// Watches a joined embedded backend; stops (and stops a backend it took
/// over) when cancelled.
pub fn watch(
    dir: PathBuf,
    current: String,
    stop: CancellationToken,
) -> (Watch, tokio::task::JoinHandle<()>) {
    let poke = Arc::new(Notify::new());
    let (tx, moved) = mpsc::unbounded_channel();
    let task = tokio::spawn(watcher(dir, current, stop, poke.clone(), tx));
    (Watch { poke, moved }, task)
}

async fn watcher(
    dir: PathBuf,
    mut current: String,
    stop: CancellationToken,
    poke: Arc<Notify>,
    moved: mpsc::UnboundedSender<String>,
) {
    let mut owned: Option<Owned> = None;
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = poke.notified() => {}
        }
        if owned.is_some() {
            continue;
        }
        let next = match local::running_backend(&dir) {
            Some(url) => Some(url),
            None => match start_owned(&dir).await {
                Ok(Some((url, mine))) => {
                    owned = Some(mine);
                    Some(url)
                }
                // Someone else was faster: the next poke finds its port.
                Ok(None) => None,
                Err(err) => {
                    tracing::warn!("cannot take the embedded backend over: {err:#}");
                    None
                }
            },
        };
        if let Some(url) = next.filter(|u| *u != current) {
            tracing::info!(%url, "the embedded backend moved");
            current = url.clone();
            if moved.send(url).is_err() {
                break;
            }
        }
    }
    if let Some(owned) = owned {
        owned.stop().await;
    }
}
