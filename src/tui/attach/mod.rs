//! `duet term`: the person's own terminal attached to the room's shared
//! terminal, full screen, as `tmate attach` does. Keystrokes go on as the
//! raw bytes the terminal sends (function keys, Alt, paste), except the
//! detach key (Ctrl+]); the output is drawn through a local emulator
//! (`TermScreen`), never written raw, and the program's key and mouse
//! modes are mirrored onto the person's terminal so that its raw bytes are
//! what the program expects. The last line is a status bar, so the size
//! asked for is the window less one row. It re-attaches after a drop, and
//! the terminal is restored on every way out.

use crate::client::commands::{server_url, token_for};
use crate::client::rpc::{Answer, RoomOp, RpcError};
use crate::client::socket::{self, ConnState, SocketCommand, SocketEvent, SocketParams};
use crate::client::term::screen::{Seen, TermScreen};
use crate::client::term::{DETACH_BYTE, DETACH_LABEL};
use crate::config::ClientSettings;
use crate::protocol::{ServerFrame, TermSize, TerminalState};
use crate::tui::terminal::TerminalGuard;
use crate::tui::theme::Theme;
use anyhow::Context;
use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

mod viewer;
use viewer::{Mirror, Viewer};

/// Least time between two frames drawn.
const FRAME: Duration = Duration::from_millis(16);
/// How long "X is typing" shows after their last keystroke.
const TYPING: Duration = Duration::from_secs(3);
/// How long a refusal from the backend shows in the status bar.
const NOTICE: Duration = Duration::from_secs(5);

/// How an attachment ended.
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    /// The detach key, or stdin closed.
    Detached,
    /// The terminal ended (its exit code, when it exited by itself).
    Exited(Option<i32>),
    /// A signal (SIGTERM, SIGHUP, SIGINT, SIGQUIT).
    Signal(&'static str),
    /// The backend refused to attach, or the connection for good.
    Failed(String),
}

impl End {
    /// What is printed once the terminal is restored, and the exit code.
    pub fn said(&self, room: &str) -> (String, ExitCode) {
        match self {
            End::Detached => (
                format!("[detached from the terminal of room {room}]"),
                ExitCode::SUCCESS,
            ),
            End::Exited(Some(code)) => (
                format!("[the terminal exited (code {code})]"),
                ExitCode::SUCCESS,
            ),
            End::Exited(None) => ("[the terminal was closed]".into(), ExitCode::SUCCESS),
            End::Signal(name) => (
                format!("[detached from the terminal of room {room}: {name}]"),
                ExitCode::from(1),
            ),
            End::Failed(why) => (
                format!("duet: cannot attach to the terminal of room {room}: {why}"),
                ExitCode::FAILURE,
            ),
        }
    }
}

/// The size to ask for in a window of `cols`×`rows`: the status bar takes
/// a row, and the protocol's bounds hold.
pub fn size_for_window(cols: u16, rows: u16) -> TermSize {
    TermSize {
        cols: cols.clamp(1, TermSize::MAX_COLS),
        rows: rows.saturating_sub(1).clamp(1, TermSize::MAX_ROWS),
    }
}

/// Input read from the person's terminal, split at the detach key.
#[derive(Debug, PartialEq, Eq)]
pub struct Keys<'a> {
    /// The bytes to send (those before the detach key).
    pub send: &'a [u8],
    /// Whether the detach key was pressed.
    pub detach: bool,
}

/// Splits what stdin gave at the detach key: the bytes before it go to
/// the terminal, the rest is dropped.
pub fn split_detach(bytes: &[u8]) -> Keys<'_> {
    match bytes.iter().position(|b| *b == DETACH_BYTE) {
        Some(at) => Keys {
            send: &bytes[..at],
            detach: true,
        },
        None => Keys {
            send: bytes,
            detach: false,
        },
    }
}

/// `duet term`: attaches this terminal to the room's shared terminal
/// until the detach key, the terminal's end or a signal.
pub async fn term(settings: &ClientSettings) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;
    let room = settings
        .room
        .clone()
        .context("no room: pass --room ROOM (or set DUET_ROOM)")?;
    if !crate::protocol::valid_room_id(&room) {
        anyhow::bail!("room {room:?} is not a valid room id");
    }
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        anyhow::bail!(
            "`duet term` needs a terminal (stdin and stdout); from scripts use `duet exec`"
        );
    }
    let server = server_url(settings)?;
    crate::client::log_file::init_logging(&settings.data_dir);
    let params = SocketParams {
        base: server,
        room: room.clone(),
        name: settings.name.clone(),
        token: token_for(settings),
        connection_id: format!("c{}", crate::client::join::random_room()),
        deltas: true,
    };
    let log = crate::client::local::log_path(&settings.data_dir);
    let guard = TerminalGuard::enter_raw(Some(&log))?;
    let ended = attach(params, room.clone()).await;
    drop(guard);
    let end = ended?;
    let (said, code) = end.said(&room);
    if matches!(end, End::Failed(_)) {
        eprintln!("{said}");
    } else {
        println!("{said}");
    }
    Ok(code)
}

/// The attachment's loop, in raw mode on the alternate screen.
async fn attach(params: SocketParams, room: String) -> anyhow::Result<End> {
    let mut terminal =
        ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(std::io::stdout()))?;
    terminal.clear()?;
    let (cols, rows) = crossterm::terminal::size()?;
    let mut window = size_for_window(cols, rows);
    // The size last given to the socket (which re-attaches with it).
    let mut given = window;

    let (events_tx, mut events) = mpsc::unbounded_channel();
    let (socket, socket_task) = socket::spawn(params, events_tx);
    socket.send(SocketCommand::Call(RoomOp::TermOpen(Some(window))));
    let mut stdin = read_stdin();
    let mut winch = signal(SignalKind::window_change())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut quit = signal(SignalKind::quit())?;
    let mut housekeeping = tokio::time::interval(Duration::from_millis(500));

    let mut viewer = Viewer {
        room,
        screen: TermScreen::new(window),
        attached: false,
        was_attached: false,
        conn: ConnState::Connecting,
        typing: Vec::new(),
        notice: None,
        theme: Theme::from_env(),
    };
    let mut mirror = Mirror::new();
    let mut dirty = true;
    let mut last_draw: Option<Instant> = None;
    let end = loop {
        if dirty && last_draw.is_none_or(|t| t.elapsed() >= FRAME) {
            if let Some(bytes) = mirror.update(viewer.screen.screen()) {
                terminal.backend_mut().write_all(&bytes)?;
            }
            terminal.draw(|frame| viewer.draw(frame))?;
            dirty = false;
            last_draw = Some(Instant::now());
        }
        // A window resized while attaching (or offline) says so once attached.
        if let Some(term_id) = viewer.term_id().filter(|_| window != given) {
            socket.send(SocketCommand::TermResize {
                term_id: term_id.to_string(),
                size: window,
            });
            given = window;
        }
        let frame_due = last_draw.map(|t| t + FRAME).filter(|_| dirty);
        tokio::select! {
            bytes = stdin.recv() => {
                let Some(bytes) = bytes else { break End::Detached };
                let keys = split_detach(&bytes);
                if let (Some(term_id), false) = (viewer.term_id(), keys.send.is_empty()) {
                    socket.send(SocketCommand::TermInput {
                        term_id: term_id.to_string(),
                        data: keys.send.to_vec(),
                    });
                }
                if keys.detach {
                    if let Some(term_id) = viewer.term_id() {
                        socket.send(SocketCommand::Call(RoomOp::TermDetach(Some(term_id.to_string()))));
                    }
                    break End::Detached;
                }
            }
            event = events.recv() => {
                let Some(event) = event else { break End::Failed("the connection ended".into()) };
                if let Some(end) = viewer.on_event(event) {
                    break end;
                }
                dirty = true;
            }
            _ = winch.recv() => {
                let (cols, rows) = crossterm::terminal::size()?;
                window = size_for_window(cols, rows);
                dirty = true;
            }
            _ = term.recv() => break End::Signal("SIGTERM"),
            _ = hup.recv() => break End::Signal("SIGHUP"),
            _ = int.recv() => break End::Signal("SIGINT"),
            _ = quit.recv() => break End::Signal("SIGQUIT"),
            _ = housekeeping.tick() => {
                let before = viewer.typing.len();
                viewer.typing.retain(|(_, _, until)| *until > Instant::now());
                dirty |= before != viewer.typing.len();
                if viewer.notice.as_ref().is_some_and(|(_, until)| *until <= Instant::now()) {
                    viewer.notice = None;
                    dirty = true;
                }
            }
            _ = sleep_until(frame_due), if frame_due.is_some() => {}
        }
    };
    socket.send(SocketCommand::Close);
    // The detach frame goes before the socket closes; a backend that is
    // gone does not hold the person up.
    let _ = tokio::time::timeout(Duration::from_secs(1), socket_task).await;
    Ok(end)
}

/// Stdin's bytes as they come, read on a thread of their own (a read
/// cannot be cancelled; the thread ends with the process). Closed at EOF.
fn read_stdin() -> mpsc::UnboundedReceiver<Vec<u8>> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = vec![0u8; crate::protocol::MAX_TERM_INPUT];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    if tx.send(buf[..n].to_vec()).is_err() {
                        return;
                    }
                }
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    });
    rx
}

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at.into()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_detach_key_ends_what_is_sent() {
        assert_eq!(
            split_detach(b"ls\r"),
            Keys {
                send: b"ls\r",
                detach: false
            }
        );
        assert_eq!(
            split_detach(b"q\x1dmore"),
            Keys {
                send: b"q",
                detach: true
            }
        );
        // Ctrl+C is the shell's.
        assert!(!split_detach(&[0x03]).detach);
    }

    #[test]
    fn the_window_less_the_status_bar_is_the_size_asked_for() {
        assert_eq!(size_for_window(80, 25), TermSize { cols: 80, rows: 24 });
        assert_eq!(size_for_window(0, 1), TermSize { cols: 1, rows: 1 });
        assert_eq!(
            size_for_window(900, 900),
            TermSize {
                cols: 500,
                rows: 200
            }
        );
    }

    #[test]
    fn the_programs_modes_are_mirrored_once_each_change() {
        let mut mirror = Mirror::new();
        let mut parser = vt100::Parser::new(4, 20, 0);
        assert_eq!(mirror.update(parser.screen()), None);
        parser.process(b"\x1b[?1h\x1b[?1000h\x1b[?1006h");
        let bytes = mirror.update(parser.screen()).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.contains("\x1b[?1h"), "{text:?}");
        assert!(text.contains("\x1b[?1000h"), "{text:?}");
        assert!(text.contains("\x1b[?1006h"), "{text:?}");
        assert_eq!(mirror.update(parser.screen()), None);
        parser.process(b"\x1b[?1l");
        let text = String::from_utf8(mirror.update(parser.screen()).unwrap()).unwrap();
        assert!(text.contains("\x1b[?1l"), "{text:?}");
    }

    #[test]
    fn a_smaller_terminal_is_drawn_top_left_over_the_status_bar() {
        use crate::protocol::TermFrame;
        let mut screen = TermScreen::new(TermSize::DEFAULT);
        screen.attached(&TerminalState {
            term_id: "t1".into(),
            cols: 12,
            rows: 2,
        });
        screen.apply(&TermFrame::Data {
            term_id: "t1".into(),
            data: base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                "$ make\r\nok, built",
            ),
            snapshot: true,
        });
        let viewer = Viewer {
            room: "r1".into(),
            screen,
            attached: true,
            was_attached: false,
            conn: ConnState::Connected { rtt_ms: None },
            typing: vec![("c2".into(), "bob".into(), Instant::now() + TYPING)],
            notice: None,
            theme: Theme::PLAIN,
        };
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(90, 5)).unwrap();
        terminal.draw(|frame| viewer.draw(frame)).unwrap();
        let buffer = terminal.backend().buffer();
        let rows: Vec<String> = (0..5)
            .map(|y| {
                (0..90)
                    .map(|x| buffer[(x, y)].symbol())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect();
        assert_eq!(rows[0], "$ make");
        // The rest of the line and the window stay blank.
        assert_eq!(rows[1], "ok, built");
        assert_eq!(rows[2], "");
        assert_eq!(rows[3], "");
        assert!(
            rows[4].starts_with(
                " r1 · terminal 12×2 · bob is typing · a smaller window sets the size  "
            ),
            "{:?}",
            rows[4]
        );
        assert!(rows[4].ends_with("Ctrl+] detach"), "{:?}", rows[4]);
    }

    #[test]
    fn each_end_says_what_happened() {
        assert_eq!(
            End::Exited(Some(0)).said("r").0,
            "[the terminal exited (code 0)]"
        );
        assert_eq!(End::Exited(Some(0)).said("r").1, ExitCode::SUCCESS);
        assert!(End::Detached.said("r").0.contains("detached"));
        assert_eq!(End::Failed("no".into()).said("r").1, ExitCode::FAILURE);
    }

    #[test]
    fn a_refusal_of_the_backend_shows_in_the_status_bar() {
        let mut viewer = Viewer {
            room: "r1".into(),
            screen: TermScreen::new(TermSize { cols: 80, rows: 24 }),
            attached: false,
            was_attached: false,
            conn: ConnState::Connecting,
            typing: Vec::new(),
            notice: None,
            theme: Theme::PLAIN,
        };
        let refused = ServerFrame::Error {
            error: "rate limited".into(),
            retry_after_ms: Some(300),
        };
        assert!(
            viewer
                .on_event(SocketEvent::Frame(Box::new(refused)))
                .is_none()
        );
        let (left, _) = viewer.status(Rect::new(0, 0, 80, 25));
        assert!(left.ends_with(" · backend: rate limited"), "{left}");
    }
}
