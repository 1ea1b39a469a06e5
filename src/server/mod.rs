//! The backend: `duet serve` and the embedded server of the terminal client.

mod options;
pub use options::{LimitOptions, ServeOptions};
mod access;
mod archive;
mod auth;
mod channel_guard;
mod errors;
mod fanout;
mod files;
mod first_use;
mod http;
mod limits;
mod memory;
mod ops;
mod origin;
mod ports;
mod processes;
mod registry;
mod room;
mod rooms;
mod router;
mod store;
mod store_access;
mod store_checkpoints;
mod store_execs;
mod store_lock;
mod store_processes;
mod store_rooms;
mod terminal;
mod tickets;
mod web;
mod ws;

use anyhow::Context;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// How long a stopping server waits for its rooms to store what ran.
const ROOMS_STOP: std::time::Duration = std::time::Duration::from_secs(10);

/// A backend running in this process.
pub struct RunningServer {
    /// Where it listens (the real port when asked for port 0).
    pub addr: SocketAddr,
    /// Resolves when the server has stopped.
    pub stopped: tokio::task::JoinHandle<()>,
    /// Cancel to stop it gracefully.
    pub shutdown: tokio_util::sync::CancellationToken,
}

/// The data directory holds every room's chat and command history: only
/// its owner may read it (the directory 0700, the database 0600; SQLite
/// gives its WAL files the database's mode). The sandboxes do not need to
/// reach in: as root their workspaces are staged through a descriptor.
fn private_data(data_dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    std::fs::set_permissions(data_dir, std::fs::Permissions::from_mode(0o700))?;
    let db = data_dir.join("duet.db");
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&db)?;
    for name in ["duet.db", "duet.db-wal", "duet.db-shm"] {
        let path = data_dir.join(name);
        if path.exists() {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(())
}

/// Raises the soft open-files limit to the hard one: every connection and
/// sandbox holds descriptors. Answers the limit in force (0: unknown).
fn raise_open_files() -> u64 {
    #[cfg(target_os = "linux")]
    {
        use nix::sys::resource::{Resource, getrlimit, setrlimit};
        let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
            return 0;
        };
        if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_err() {
            return soft;
        }
        hard.max(soft)
    }
    #[cfg(not(target_os = "linux"))]
    0
}

/// The sandboxes of this host's rooms, or why there can be none.
fn sandboxes(
    args: &ServeOptions,
    data_dir: &std::path::Path,
) -> anyhow::Result<Arc<dyn crate::sandbox::SandboxFactory>> {
    #[cfg(target_os = "linux")]
    {
        let factory =
            crate::sandbox::local::LocalFactory::new(data_dir.to_path_buf(), args.limits())
                .map_err(anyhow::Error::msg)?;
        Ok(Arc::new(factory))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (args, data_dir);
        anyhow::bail!(
            "duet serve needs Linux for its sandboxes; join a remote room with --server URL"
        )
    }
}

/// Starts the backend on `args.listen` and returns once it listens.
pub async fn start(args: ServeOptions) -> anyhow::Result<RunningServer> {
    let token = args.token.clone().filter(|t| !t.is_empty());
    if !args.listen.ip().is_loopback() && token.is_none() {
        anyhow::bail!(
            "refusing to listen on {} without a token: anyone on the network could run commands. \
             Set one with --token TOKEN or the DUET_TOKEN environment variable",
            args.listen
        );
    }
    let data_dir = match args
        .data_dir
        .clone()
        .or_else(crate::config::default_data_dir)
    {
        Some(dir) => dir,
        None => anyhow::bail!("no data directory: pass --data-dir DIR or set HOME"),
    };
    let sandboxes = sandboxes(&args, &data_dir)?;
    let open_files = raise_open_files();
    tokio::fs::create_dir_all(&data_dir)
        .await
        .with_context(|| format!("cannot create the data directory {}", data_dir.display()))?;
    private_data(&data_dir).with_context(|| {
        format!(
            "cannot make the data directory {} private",
            data_dir.display()
        )
    })?;
    let store = store::Store::open(data_dir.join("duet.db"))
        .await
        .with_context(|| format!("cannot open the database in {}", data_dir.display()))?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = listener.local_addr()?;
    let previews = ports::PreviewHosts::new(args.preview_host.as_deref(), addr)
        .map_err(|e| anyhow::anyhow!(e))?;
    let policy = args.policy();
    let limits = args.limits;
    tracing::info!("rate limits in force: {}", limits.describe());
    tracing::info!(
        data_dir = %data_dir.display(),
        open_files,
        token = token.is_some(),
        "limits in force: timeout {} s (max {} s), output {} KiB per stream, {}",
        policy.default_timeout.as_secs(),
        policy.max_timeout.as_secs(),
        policy.output_cap >> 10,
        sandboxes.describe()
    );
    let shutdown = CancellationToken::new();
    let shared = Arc::new(registry::Shared {
        store,
        agent: crate::ai::Agent::new(args.ai_config()),
        sandboxes: sandboxes.clone(),
        policy,
        limits,
        shutdown: shutdown.clone(),
        room_idle: std::time::Duration::from_secs(args.room_idle_secs),
        terminal_idle: std::time::Duration::from_secs(args.terminal_idle_secs),
        auto_checkpoints: args.auto_checkpoints,
        has_token: token.is_some(),
        approval_timeout: std::time::Duration::from_secs(args.approval_timeout_secs),
        approval_allow: crate::protocol::parse_allow_list(&args.approval_allow),
        access_news: tokio::sync::broadcast::channel(channel_guard::NEWS_KEPT).0,
        ticket_key: rand::random(),
        ticket_lifetime: std::time::Duration::from_secs(args.ticket_secs),
        previews,
        rooms: Default::default(),
        actors: Arc::new(tokio::sync::Semaphore::new(registry::ACTOR_SLOTS as usize)),
    });
    let actors = shared.actors.clone();
    let app = Arc::new(router::App {
        registry: registry::Registry::new(shared),
        token,
        browsers: origin::BrowserPolicy::new(addr, &args.allow_origin, &args.public_host),
        sockets: Default::default(),
    });
    let router = router::build(app);
    let signal = shutdown.clone().cancelled_owned();
    let stopped = tokio::spawn(async move {
        // Frames are small and latency matters: no Nagle delay.
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!("TCP_NODELAY: {e}");
            }
        });
        if let Err(e) = axum::serve(listener, router)
            .with_graceful_shutdown(signal)
            .await
        {
            tracing::error!("the server failed: {e}");
        }
        // Each room stores the commands it still ran before the sandboxes
        // (and those commands) are stopped.
        let rooms_stopped = actors.acquire_many(registry::ACTOR_SLOTS);
        if tokio::time::timeout(ROOMS_STOP, rooms_stopped)
            .await
            .is_err()
        {
            tracing::warn!("rooms still stopping after {ROOMS_STOP:?}: stopping anyway");
        }
        // Quota images are mounted again on the next start.
        let _ = tokio::task::spawn_blocking(move || sandboxes.shutdown()).await;
    });
    Ok(RunningServer {
        addr,
        stopped,
        shutdown,
    })
}

/// Resolves on Ctrl+C or SIGTERM, listened for from the call on: made
/// before the server says it listens, so that a signal sent once it said so
/// is never lost (tokio's `ctrl_c()` registers only when first awaited, and
/// a SIGTERM that came between a handler's install and its listener was
/// dropped: the server then never stopped).
fn stop_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let listening = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        );
        async move {
            if let (Ok(mut term), Ok(mut int)) = listening {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            } else {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Runs the backend until Ctrl+C or SIGTERM.
pub async fn serve(args: ServeOptions) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_env("DUET_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr()) && crate::support::colour_wanted(),
        )
        .try_init();
    if args.token.as_deref().is_none_or(str::is_empty) {
        tracing::warn!(
            "no --token: every user of this machine can join these rooms and run commands \
             in them; set one with --token TOKEN or DUET_TOKEN"
        );
    }
    let stopping = stop_signal();
    let running = start(args).await?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "duet: listening on http://{}", running.addr)?;
        out.flush()?;
    }
    stopping.await;
    tracing::info!("stopping");
    running.shutdown.cancel();
    running.stopped.await?;
    Ok(())
}
