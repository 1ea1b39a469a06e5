//! `duet` with no subcommand (and `duet join LINK`): resolve the settings,
//! find or start the backend (the embedded one of the data directory
//! unless `--server` names another), open the UI in the room, and on the
//! way out say how to come back.

use super::ClientArgs;
use super::backend;
use crate::client::http::HttpClient;
use crate::client::join;
use crate::client::local;
use crate::client::socket::SocketParams;
use crate::config::ClientSettings;
use crate::tui::app::{App, Session};
use crate::tui::theme::Theme;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Clone, Args)]
pub struct JoinArgs {
    /// The room's link: [https://][TOKEN@]HOST[:PORT]/ROOM
    pub link: String,
    /// Your name in the room
    #[arg(long, env = "DUET_NAME")]
    pub name: Option<String>,
}

/// Runs the terminal client (on a room of the folder `workspace`, when
/// given); the process's exit code.
pub fn main(args: ClientArgs, data_dir: Option<PathBuf>, workspace: Option<PathBuf>) -> ExitCode {
    let tz = super::local_offset();
    let (mut settings, ui) = match super::settings_and_ui(&args, data_dir) {
        Ok(found) => found,
        Err(err) => {
            eprintln!("duet: {err}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(dir) = workspace {
        match super::folder::bind(&dir, &args, &settings) {
            Ok(room) => settings.room = Some(room),
            Err(err) => {
                eprintln!("duet: --workspace {}: {err:#}", dir.display());
                return ExitCode::FAILURE;
            }
        }
    }
    crate::client::log_file::init_logging(&settings.data_dir);
    crate::tui::keymap::configure(ui.keys.unwrap_or_default());
    let runtime = match super::runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    match runtime.block_on(start(settings, ui.theme, tz)) {
        Ok(goodbye) => {
            // The terminal is back to normal: these stay on it.
            println!("{goodbye}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            tracing::error!("{err:#}");
            eprintln!("duet: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// `duet join LINK`: the terminal client in the room the link names.
pub fn join(args: JoinArgs, data_dir: Option<PathBuf>) -> ExitCode {
    let link = match join::parse_link(&args.link) {
        Ok(link) => link,
        Err(err) => {
            eprintln!("duet: {err}");
            return ExitCode::FAILURE;
        }
    };
    let client = ClientArgs {
        server: Some(link.server),
        room: Some(link.room),
        token: link.token,
        name: args.name,
    };
    main(client, data_dir, None)
}

/// What is said on the way out: how to come back and, while the backend
/// stays up for the others, how they join; and the messages that were
/// still waiting to be sent, whole, so that nothing typed is lost.
fn goodbye(ended: &crate::tui::run::Ended, backend_stays: bool) -> String {
    let session = &ended.session;
    let back = session.come_back(&session.room);
    let mut said = format!("Left room {}. Back in: {back}", session.room);
    if backend_stays {
        let join = others_join(session, ended.may_invite);
        said.push_str(&format!("\nOthers join: {join}"));
    }
    if !ended.unsent.is_empty() {
        said.push_str("\nNot sent (the backend was out of reach):");
        for text in &ended.unsent {
            said.push_str(&format!("\n{text}"));
        }
    }
    said
}

/// How others join, in words for the way out (no token: an owner makes
/// them an invite with `duet invite`; others are told to ask one).
fn others_join(session: &Session, may_invite: bool) -> String {
    let hint = session.join_hint();
    let server = match session.backend {
        join::Backend::Embedded { .. } => String::new(),
        join::Backend::Server { .. } => format!(" --server {}", session.server),
    };
    if session.backend.needs_token() && !may_invite {
        format!("{hint}, with an invite from an owner of the room")
    } else if session.backend.needs_token() {
        format!(
            "{hint}, with an invite: `duet invite --role writer{server} --room {}` makes one",
            session.room
        )
    } else {
        hint
    }
}

/// The host folder `room` works on, as the status bar shows it: a room
/// of the embedded backend bound to one (`duet --workspace`).
fn on_folder(settings: &ClientSettings, room: &str) -> Option<String> {
    if settings.server.is_some() {
        return None;
    }
    crate::sandbox::folder::bound(&settings.data_dir, room).map(|dir| super::folder::shown(&dir))
}

async fn start(
    settings: ClientSettings,
    theme: Option<crate::tui::theme::Palette>,
    tz: time::UtcOffset,
) -> anyhow::Result<String> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "the terminal client needs a terminal; from scripts use `duet exec` or `duet cleanup`"
        );
    }
    let room = settings.room.clone().unwrap_or_else(join::random_room);
    if !crate::protocol::valid_room_id(&room) {
        anyhow::bail!(
            "room {room:?} is not a valid room id: 1–63 of A-Z a-z 0-9 _ -, first and last alphanumeric"
        );
    }
    if let Some(problem) = crate::protocol::name_problem(&settings.name) {
        anyhow::bail!("name {:?}: it {problem} (pass --name NAME)", settings.name);
    }
    let embedded = backend::Embedded::of(&settings);
    let (server, owned) = match &settings.server {
        Some(server) => (server.clone(), None),
        None => backend::embedded(&embedded).await?,
    };
    // A client that joined another duet's backend takes over if it goes.
    let stop_watch = tokio_util::sync::CancellationToken::new();
    let watch = (settings.server.is_none() && owned.is_none())
        .then(|| backend::watch(embedded, server.clone(), stop_watch.clone()));
    let token = crate::client::commands::token_for(&settings);
    let log = local::log_path(&settings.data_dir);
    let (mut watch, watch_task) = match watch {
        Some((watch, task)) => (Some(watch), Some(task)),
        None => (None, None),
    };
    let mut server = server;
    let mut room = room;
    let mut name = settings.name.clone();
    // One room at a time; `/fork`'s switch goes on in the next one, as the
    // same person on the same backend.
    let result = loop {
        let http = HttpClient::new(&server, &room, token.clone(), &name)?;
        let connection_id = format!("c{}", join::random_room());
        let session = Session {
            server: server.clone(),
            room: room.clone(),
            name: name.clone(),
            connection_id: connection_id.clone(),
            backend: join::Backend::of(&settings),
            folder: on_folder(&settings, &room),
        };
        let params = SocketParams {
            base: server.clone(),
            room: room.clone(),
            name: name.clone(),
            token: token.clone(),
            connection_id,
            deltas: true,
        };
        let app = App::new(
            session,
            Theme::with_palette(theme),
            tz,
            crate::protocol::now_ms(),
        );
        match crate::tui::run::run(app, http, params, watch.as_mut(), Some(&log)).await {
            Ok(crate::tui::run::Ended {
                session,
                next_room: Some(next),
                ..
            }) => {
                server = session.server;
                name = session.name;
                room = next;
            }
            Ok(ended) => break Ok(ended),
            Err(err) => break Err(err),
        }
    };
    stop_watch.cancel();
    let mut backend_stays = owned.is_none();
    if let Some(task) = watch_task {
        // A backend the watcher took over stops with it.
        backend_stays &= !task.await.unwrap_or(false);
    }
    if let Some(owned) = owned {
        owned.stop().await;
    }
    result.map(|ended| goodbye(&ended, backend_stays))
}
