//! `duet` with no subcommand: resolve the settings, find or start the
//! backend (the embedded one of the data directory unless `--server` names
//! another), and open the UI in the room.

use crate::cli::{ClientArgs, ServeArgs};
use crate::client::http::HttpClient;
use crate::client::local::{self, BackendLock};
use crate::client::socket::SocketParams;
use crate::config::{self, ClientSettings};
use crate::tui::app::{App, Session};
use crate::tui::theme::Theme;
use anyhow::Context;
use clap::Parser;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The embedded backend's settings, parsed by clap like `duet serve`'s so
/// that its defaults and environment variables apply unchanged.
#[derive(Debug, Parser)]
struct EmbeddedServe {
    #[command(flatten)]
    serve: ServeArgs,
}

/// Runs the terminal client; the process's exit code.
pub fn main(args: ClientArgs, data_dir: Option<PathBuf>) -> ExitCode {
    // Read while the process has one thread (the time crate refuses later).
    let tz = time::UtcOffset::current_local_offset().unwrap_or(time::UtcOffset::UTC);
    let settings = match config::load(&args, data_dir) {
        Ok(settings) => settings,
        Err(err) => {
            eprintln!("duet: {err}");
            return ExitCode::FAILURE;
        }
    };
    init_logging(&settings.data_dir);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("duet: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(start(settings, tz)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("{err:#}");
            eprintln!("duet: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to `duet.log` in the data directory, never to the terminal the
/// UI draws on. Without a writable file there are no logs.
fn init_logging(data_dir: &Path) {
    if std::fs::create_dir_all(data_dir).is_err() {
        return;
    }
    let Ok(file) = std::fs::File::options()
        .create(true)
        .append(true)
        .open(local::log_path(data_dir))
    else {
        return;
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("DUET_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(file))
        .try_init();
}

/// A new room id: 10 random lowercase letters and digits.
pub fn random_room() -> String {
    use rand::Rng;
    const CHARS: &[u8] = b"abcdefghijkmnpqrstuvwxyz23456789";
    let mut rng = rand::rng();
    (0..10)
        .map(|_| char::from(CHARS[rng.random_range(0..CHARS.len())]))
        .collect()
}

/// The command with which a second terminal joins this room.
pub fn join_hint(settings: &ClientSettings, room: &str) -> String {
    match &settings.server {
        Some(server) => {
            let token = if settings.token.is_some() {
                " --token …"
            } else {
                ""
            };
            format!("duet --server {server} --room {room}{token}")
        }
        None if settings.default_data_dir => format!("duet --room {room}"),
        None => format!(
            "duet --data-dir {} --room {room}",
            settings.data_dir.display()
        ),
    }
}

async fn start(settings: ClientSettings, tz: time::UtcOffset) -> anyhow::Result<()> {
    let room = settings.room.clone().unwrap_or_else(random_room);
    if !crate::protocol::valid_room_id(&room) {
        anyhow::bail!(
            "room {room:?} is not a valid room id: 1–63 of A-Z a-z 0-9 _ -, first and last alphanumeric"
        );
    }
    if let Some(problem) = crate::protocol::name_problem(&settings.name) {
        anyhow::bail!("name {:?}: it {problem} (pass --name NAME)", settings.name);
    }
    let (server, embedded) = backend(&settings).await?;
    let http = HttpClient::new(&server, &room, settings.token.clone(), &settings.name)?;
    let connection_id = format!("c{}", random_room());
    let session = Session {
        server: server.clone(),
        room: room.clone(),
        name: settings.name.clone(),
        connection_id: connection_id.clone(),
        join_hint: join_hint(&settings, &room),
    };
    let params = SocketParams {
        base: server,
        room,
        name: settings.name.clone(),
        token: settings.token.clone(),
        connection_id,
    };
    let app = App::new(session, Theme::from_env(), tz, crate::protocol::now_ms());
    let result = crate::tui::run::run(app, http, params).await;
    if let Some((running, lock)) = embedded {
        running.shutdown.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(5), running.stopped).await;
        drop(lock);
    }
    result
}

/// The backend to join: the one named, the embedded one another `duet`
/// runs for this data directory, or a new embedded one (with its lock).
async fn backend(
    settings: &ClientSettings,
) -> anyhow::Result<(String, Option<(crate::server::RunningServer, BackendLock)>)> {
    if let Some(server) = &settings.server {
        return Ok((server.clone(), None));
    }
    let dir = &settings.data_dir;
    let lock = BackendLock::try_acquire(dir)
        .with_context(|| format!("cannot use the data directory {}", dir.display()))?;
    let Some(lock) = lock else {
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
    };
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
    let running = crate::server::start(args)
        .await
        .context("cannot start the embedded backend")?;
    let url = format!("http://{}", running.addr);
    lock.publish(&url)
        .with_context(|| format!("cannot write {}", local::port_path(dir).display()))?;
    tracing::info!(%url, "embedded backend started");
    Ok((url, Some((running, lock))))
}
