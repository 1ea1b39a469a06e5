//! The embedded backend of a data directory, from the client's side:
//! start it (holding the lock, publishing the port) or join the one another
//! `duet` runs; and when that one goes away, take over: the first client
//! to find the lock free starts a backend, the others follow the port file.
//! It listens on the data directory's own port when it can, so that the
//! join hint others were given stays valid when it restarts.

use super::serve::ServeArgs;
use crate::client::local::{self, BackendLock};
use crate::config::{ClientSettings, ModelSettings};
use crate::server::{RunningServer, ServeOptions};
use crate::tui::run::Watch;
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

/// What the embedded backend starts with: its data directory, and the
/// model the config file names (the `DUET_AI_*` variables beat it).
#[derive(Debug, Clone)]
pub struct Embedded {
    pub data_dir: PathBuf,
    pub model: ModelSettings,
    /// The config file, which the room's advice names when no model is
    /// configured (plain `duet` has no --ai-* flags).
    pub config_file: Option<PathBuf>,
}

impl Embedded {
    /// The embedded backend of `settings`.
    pub fn of(settings: &ClientSettings) -> Embedded {
        Embedded {
            data_dir: settings.data_dir.clone(),
            model: settings.model.clone(),
            config_file: settings.config_file.clone(),
        }
    }

    /// `duet serve`'s settings for it: the defaults and `DUET_*`
    /// variables, as clap reads them for `duet serve`, then the config
    /// file's model and the data directory's token.
    fn serve_args(&self) -> anyhow::Result<ServeOptions> {
        let dir = &self.data_dir;
        let data_dir = dir.to_string_lossy().to_string();
        let mut args: ServeOptions = EmbeddedServe::try_parse_from([
            "duet-serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            &data_dir,
        ])
        .context("embedded backend settings")?
        .serve
        .into();
        if args.token.as_deref().is_none_or(str::is_empty) {
            args.token = Some(
                local::embedded_token(dir)
                    .with_context(|| format!("cannot keep a token in {}", dir.display()))?,
            );
        }
        let model = self.model.clone();
        args.ai_url = args.ai_url.or(model.url);
        args.ai_model = args.ai_model.or(model.model);
        args.ai_key = args.ai_key.or(model.key);
        args.embedded_config = Some(match &self.config_file {
            Some(file) => file.display().to_string(),
            None => "duet.toml in the XDG config directory".to_string(),
        });
        Ok(args)
    }
}

/// Starts the backend on the data directory's own port, or the next free
/// one, or any.
async fn start_listening(mut args: ServeOptions, dir: &Path) -> anyhow::Result<RunningServer> {
    let first = local::preferred_port(dir);
    let free = (0..5)
        .map(|i| local::FIRST_PORT + (first - local::FIRST_PORT + i) % local::PORTS)
        .find(|port| std::net::TcpListener::bind(("127.0.0.1", *port)).is_ok());
    if let Some(port) = free {
        args.listen = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        match crate::server::start(args.clone()).await {
            Ok(running) => return Ok(running),
            // Taken meanwhile (or another failure, which any port repeats).
            Err(err) => tracing::info!("cannot start the backend on port {port}: {err:#}"),
        }
    }
    args.listen = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    crate::server::start(args).await
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

/// Starts the embedded backend if its data directory's lock is free
/// (`Ok(None)` when another process holds it).
pub async fn start_owned(embedded: &Embedded) -> anyhow::Result<Option<(String, Owned)>> {
    let dir = &embedded.data_dir;
    let lock = BackendLock::try_acquire(dir)
        .with_context(|| format!("cannot use the data directory {}", dir.display()))?;
    let Some(lock) = lock else { return Ok(None) };
    let args = embedded.serve_args()?;
    let running = start_listening(args, dir)
        .await
        .context("cannot start the embedded backend")?;
    let url = format!("http://{}", running.addr);
    lock.publish(&url)
        .with_context(|| format!("cannot write {}", local::port_path(dir).display()))?;
    tracing::info!(%url, "embedded backend started");
    Ok(Some((url, Owned { running, lock })))
}

/// The embedded backend to use: ours (started now) or another `duet`'s.
pub async fn embedded(embedded: &Embedded) -> anyhow::Result<(String, Option<Owned>)> {
    let dir = &embedded.data_dir;
    if let Some((url, owned)) = start_owned(embedded).await? {
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

/// Watches a joined embedded backend; stops (and stops a backend it took
/// over) when cancelled, answering whether it had taken one over.
pub fn watch(
    embedded: Embedded,
    current: String,
    stop: CancellationToken,
) -> (Watch, tokio::task::JoinHandle<bool>) {
    let poke = Arc::new(Notify::new());
    let (tx, moved) = mpsc::unbounded_channel();
    let task = tokio::spawn(watcher(embedded, current, stop, poke.clone(), tx));
    (Watch { poke, moved }, task)
}

async fn watcher(
    embedded: Embedded,
    mut current: String,
    stop: CancellationToken,
    poke: Arc<Notify>,
    moved: mpsc::UnboundedSender<String>,
) -> bool {
    let mut owned: Option<Owned> = None;
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = poke.notified() => {}
        }
        if owned.is_some() {
            continue;
        }
        let next = match local::running_backend(&embedded.data_dir) {
            Some(url) => Some(url),
            None => match start_owned(&embedded).await {
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
    let took_over = owned.is_some();
    if let Some(owned) = owned {
        owned.stop().await;
    }
    took_over
}
