//! The event loop: one `tokio::select!` over terminal events, the socket
//! actor (frames and the answers of room operations), answers of HTTP calls
//! (files, older pages) and the App's next timer; a frame is drawn
//! only when something changed (at most ~60 a second).

use crate::client::cp::{self, Saved};
use crate::client::http::HttpClient;
use crate::client::socket::{self, ConnState, SocketCommand, SocketEvent, SocketParams};
use crate::tui::app::{App, Effect, Msg, Session};
use crate::tui::files::Overwrite;
use crate::tui::terminal::{StopSignals, TerminalGuard, set_mouse};
use crossterm::event::{Event, EventStream};
use futures_util::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Least time between two frames.
const FRAME: Duration = Duration::from_millis(16);
/// Messages per older page.
const PAGE: usize = 50;

/// How a room's UI ended.
#[derive(Debug)]
pub struct Ended {
    /// The session as it ended (the backend may have moved meanwhile, and
    /// the join hint with it; `/name` may have renamed the person).
    pub session: Session,
    /// The room to go to next (`/fork`'s switch), if any.
    pub next_room: Option<String>,
    /// Messages the outbox still held (the backend was out of reach): the
    /// way out prints them, so that nothing typed is lost.
    pub unsent: Vec<String>,
    /// Whether this person may make invites (an owner): the way out tells
    /// only them how to make one.
    pub may_invite: bool,
}

/// What the event loop holds of a watcher: poke it when the connection
/// drops; it answers with the backend's new URL when it moved.
pub struct Watch {
    pub poke: std::sync::Arc<tokio::sync::Notify>,
    pub moved: mpsc::UnboundedReceiver<String>,
}

/// Runs the UI until the person quits or switches rooms.
pub async fn run(
    mut app: App,
    mut http: HttpClient,
    params: SocketParams,
    mut watch: Option<&mut Watch>,
    stderr_log: Option<&std::path::Path>,
) -> anyhow::Result<Ended> {
    // The code grammars load beside the UI, not in its first frame.
    std::thread::spawn(crate::tui::highlight::warm_up);
    let mut stop = StopSignals::catch()?;
    let guard = TerminalGuard::enter(stderr_log)?;
    crate::tui::terminal::set_title(&format!("duet: {}", app.session.room));
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    terminal.clear()?;
    let size = terminal.size()?;
    app.now_ms = crate::protocol::now_ms();
    app.clipboard = crate::tui::share::ClipboardPath::detect();
    app.update(Msg::Resize(size.width, size.height));

    let (socket_tx, mut socket_rx) = mpsc::unbounded_channel();
    let (socket, socket_task) = socket::spawn(params, socket_tx);
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Msg>();
    let mut events = EventStream::new();
    let mut last_draw: Option<Instant> = None;
    let mut next_room = None;

    let result: anyhow::Result<()> = loop {
        if app.dirty && last_draw.is_none_or(|t| t.elapsed() >= FRAME) {
            app.now_ms = crate::protocol::now_ms();
            if let Err(err) = terminal.draw(|frame| crate::tui::view::draw(frame, &app)) {
                break Err(err.into());
            }
            app.dirty = false;
            last_draw = Some(Instant::now());
        }
        // Sleep until the next frame is due (if one is wanted) or the App's
        // next timer; with neither, only an event wakes the loop.
        let now_ms = crate::protocol::now_ms();
        let wake = app
            .next_wake()
            .map(|at| Instant::now() + Duration::from_millis((at - now_ms).max(0) as u64));
        let frame_due = if app.dirty {
            last_draw.map(|t| t + FRAME)
        } else {
            None
        };
        let deadline = match (wake, frame_due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let msg = tokio::select! {
            event = events.next() => match event {
                Some(Ok(event)) if crate::tui::terminal::is_suspend(&event) => {
                    if let Err(err) = guard.suspend() {
                        break Err(err.into());
                    }
                    // Back from `fg`: the whole screen again, at its size now.
                    let _ = terminal.clear();
                    match terminal.size() {
                        Ok(size) => Msg::Resize(size.width, size.height),
                        Err(err) => break Err(err.into()),
                    }
                }
                Some(Ok(event)) => match to_msg(event) {
                    Some(msg) => msg,
                    None => continue,
                },
                Some(Err(err)) => break Err(err.into()),
                None => break Ok(()),
            },
            Some(event) = socket_rx.recv() => {
                if let (Some(watch), SocketEvent::State(ConnState::Reconnecting { .. })) = (watch.as_deref(), &event) {
                    watch.poke.notify_one();
                }
                Msg::Socket(event)
            }
            Some(url) = moved(&mut watch) => {
                match http.with_base(&url) {
                    Ok(client) => {
                        http = client;
                        socket.send(SocketCommand::Retarget { base: url.clone() });
                        Msg::ServerMoved(Ok(url))
                    }
                    Err(err) => Msg::ServerMoved(Err(format!("the backend moved to {url}, but: {err}"))),
                }
            }
            Some(msg) = done_rx.recv() => msg,
            signal = stop.next() => break Err(anyhow::anyhow!("ended by {signal}")),
            _ = sleep_until(deadline), if deadline.is_some() => {
                if wake.is_some_and(|w| w <= Instant::now()) { Msg::Tick } else { continue }
            }
        };
        app.now_ms = crate::protocol::now_ms();
        for effect in app.update(msg) {
            match effect {
                Effect::Quit => {}
                Effect::SwitchRoom(room) => next_room = Some(room),
                Effect::Typing => socket.send(SocketCommand::Typing),
                Effect::Call(op) => socket.send(SocketCommand::Call(op)),
                Effect::Rejoin(name) => {
                    http.set_name(&name);
                    socket.send(SocketCommand::Rejoin { name });
                }
                Effect::NameChanged(name) => http.set_name(&name),
                Effect::Redraw => {
                    // A failed clear shows as a stale screen, not an exit.
                    let _ = terminal.clear();
                }
                Effect::SetMouse(on) => set_mouse(on),
                Effect::TermInput { term_id, data } => {
                    socket.send(SocketCommand::TermInput { term_id, data });
                }
                Effect::TermResize { term_id, size } => {
                    socket.send(SocketCommand::TermResize { term_id, size });
                }
                Effect::Clipboard(text) => {
                    // A terminal without OSC 52 ignores it; a failed write
                    // leaves the clipboard as it was, not the UI.
                    let _ = crate::tui::clipboard::write_osc52(terminal.backend_mut(), &text);
                }
                other => spawn_call(other, http.clone(), done_tx.clone()),
            }
        }
        if app.quit || next_room.is_some() {
            break Ok(());
        }
    };
    socket.send(SocketCommand::Close);
    let _ = tokio::time::timeout(Duration::from_secs(1), socket_task).await;
    drop(terminal);
    drop(guard);
    let may_invite = app.may(crate::tui::roles::Deed::ManageInvites).is_ok();
    result.map(|()| Ended {
        session: app.session,
        next_room,
        unsent: app.outbox,
        may_invite,
    })
}

/// The next URL the backend watcher reports (never, without a watcher).
async fn moved(watch: &mut Option<&mut Watch>) -> Option<String> {
    match watch {
        Some(watch) => watch.moved.recv().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    if let Some(at) = deadline {
        tokio::time::sleep_until(at.into()).await;
    }
}

/// Terminal events the App cares about (key presses are filtered there).
fn to_msg(event: Event) -> Option<Msg> {
    match event {
        Event::Key(key) => Some(Msg::Key(key)),
        Event::Paste(text) => Some(Msg::Paste(text)),
        Event::Resize(w, h) => Some(Msg::Resize(w, h)),
        Event::Mouse(mouse) => Some(Msg::Mouse(mouse)),
        Event::FocusGained | Event::FocusLost => None,
    }
}

/// `/export FILE`: the room's history read whole and written, or why not.
async fn export(http: &HttpClient, path: &str) -> Result<String, String> {
    use crate::client::export;
    let history = export::fetch(http)
        .await
        .map_err(|e| format!("/export: {}", crate::client::explain::http(&e)))?;
    let format = export::Format::of_path(path);
    let text = export::render(
        &history,
        format,
        crate::protocol::now_ms(),
        crate::support::local_offset(),
    );
    export::write_file(path, &text).map_err(|e| format!("/export: {e}"))?;
    Ok(format!(
        "exported {} messages and {} commands to {path}",
        history.messages.len(),
        history.execs.len()
    ))
}

/// Runs an HTTP effect in its own task; its answer comes back as a Msg.
fn spawn_call(effect: Effect, http: HttpClient, done: mpsc::UnboundedSender<Msg>) {
    tokio::spawn(async move {
        let msg = match effect {
            Effect::Put { local, remote } => Msg::TransferDone(
                cp::upload(&http, std::path::Path::new(&local), &remote)
                    .await
                    .map(|answer| format!("sent {} bytes to {}", answer.size, answer.path))
                    .map_err(|e| format!("/put {local}: {e:#}")),
            ),
            Effect::Get {
                remote,
                local,
                replace,
            } => {
                let here = if local.is_empty() { "." } else { &local };
                match cp::download(&http, &remote, std::path::Path::new(here), replace).await {
                    Ok(Saved::Written { to, size }) => {
                        Msg::TransferDone(Ok(format!("got {size} bytes: {}", to.display())))
                    }
                    Ok(Saved::Exists { to, size }) => {
                        Msg::WouldOverwrite(Overwrite { remote, to, size })
                    }
                    Err(e) => Msg::TransferDone(Err(format!("/get: {e:#}"))),
                }
            }
            Effect::ListDir(dir) => Msg::Listed(
                http.list_dir(&dir)
                    .await
                    .map(|entries| crate::tui::files::Listing {
                        dir: dir.clone(),
                        entries,
                    })
                    .map_err(|err| {
                        format!("/ls: {}", crate::client::ls::path_error(&dir, true, &err))
                    }),
            ),
            Effect::Export(path) => Msg::TransferDone(export(&http, &path).await),
            Effect::Diff { from, purpose } => Msg::Diffed {
                result: http
                    .diff(Some(&from), &[])
                    .await
                    .map_err(|e| crate::client::explain::http(&e)),
                from,
                purpose,
            },
            Effect::LoadOlder { before } => Msg::OlderLoaded(
                http.messages(before.as_deref(), Some(PAGE))
                    .await
                    .map_err(|e| crate::client::explain::http(&e)),
            ),
            Effect::Typing
            | Effect::Call(_)
            | Effect::Rejoin(_)
            | Effect::NameChanged(_)
            | Effect::Quit
            | Effect::SwitchRoom(_)
            | Effect::SetMouse(_)
            | Effect::Redraw
            | Effect::Clipboard(_)
            | Effect::TermInput { .. }
            | Effect::TermResize { .. } => return,
        };
        let _ = done.send(msg);
    });
}
