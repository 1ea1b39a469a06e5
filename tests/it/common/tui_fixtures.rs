//! Shared helpers of the TUI tests: an App with fixed ids and clock, key
//! and frame builders, and rendering to text.
#![allow(dead_code)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use duet::client::deltas::Delta;
use duet::client::rpc::{Answer, RoomOp, RpcError};
use duet::client::socket::{ConnState, SocketEvent};
use duet::protocol::*;
use duet::tui::app::{App, Effect, Msg, Session};
use duet::tui::theme::Theme;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// 2026-01-02 10:00:00 UTC.
pub const T0: i64 = 1_767_348_000_000;

pub fn app() -> App {
    let session = Session {
        server: "http://127.0.0.1:8787".into(),
        room: "demo-room".into(),
        name: "ada".into(),
        connection_id: "c-ada".into(),
        backend: duet::client::join::Backend::Server { token: false },
        folder: None,
    };
    let mut app = App::new(session, Theme::DARK, time::UtcOffset::UTC, T0);
    app.update(Msg::Resize(120, 40));
    app.update(Msg::Socket(SocketEvent::State(ConnState::Connected {
        rtt_ms: Some(3),
    })));
    app
}

pub fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

pub fn ctrl(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

pub fn alt(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::ALT))
}

/// Types `text` key by key; answers the effects.
pub fn type_text(app: &mut App, text: &str) -> Vec<Effect> {
    let mut effects = Vec::new();
    for c in text.chars() {
        effects.extend(app.update(key(KeyCode::Char(c))));
    }
    effects
}

/// Types `text` and presses Enter; answers Enter's effects.
pub fn submit(app: &mut App, text: &str) -> Vec<Effect> {
    type_text(app, text);
    app.update(key(KeyCode::Enter))
}

/// The answer of a room operation, as the socket reports it.
pub fn answer(op: RoomOp, result: Result<serde_json::Value, RpcError>) -> Msg {
    Msg::Socket(SocketEvent::Answer(Box::new(Answer { op, result })))
}

/// A `duet_message` delta.
pub fn delta(message: DuetMessage) -> Msg {
    Msg::Socket(SocketEvent::Delta(Box::new(Delta::Message { message })))
}

/// A `duet_state` patch.
pub fn patch(patch: serde_json::Value) -> Msg {
    let serde_json::Value::Object(patch) = patch else {
        panic!("a patch is an object")
    };
    Msg::Socket(SocketEvent::Delta(Box::new(Delta::State { patch })))
}

pub fn frame(frame: ServerFrame) -> Msg {
    Msg::Socket(SocketEvent::Frame(Box::new(frame)))
}

pub fn user_msg(id: u32, who: &str, text: &str) -> DuetMessage {
    DuetMessage {
        client_id: None,
        id: id.to_string(),
        role: Role::User,
        user_id: Some(who.into()),
        text: text.into(),
        ts: T0 + i64::from(id) * 60_000,
        runs: None,
        ..DuetMessage::default()
    }
}

pub fn agent_msg(id: u32, text: &str, runs: Option<Vec<Run>>) -> DuetMessage {
    DuetMessage {
        client_id: None,
        id: id.to_string(),
        role: Role::Agent,
        user_id: None,
        text: text.into(),
        ts: T0 + i64::from(id) * 60_000,
        runs,
        ..DuetMessage::default()
    }
}

pub fn state(messages: Vec<DuetMessage>, execs: Vec<ExecRecord>) -> Msg {
    frame(ServerFrame::State {
        state: RoomState {
            terminal: None,
            processes: Vec::new(),
            ports: Vec::new(),
            checkpoints: Vec::new(),
            messages,
            execs,
            shell: None,
            ..Default::default()
        },
    })
}

pub fn exec_start(id: &str, cmd: &str, by: &str) -> Msg {
    frame(ServerFrame::Exec(ExecFrame::Start {
        exec_id: id.into(),
        cmd: cmd.into(),
        by: by.into(),
        source: if by == "agent" {
            ExecSource::Agent
        } else {
            ExecSource::User
        },
        by_connection: None,
    }))
}

/// A command `by` started from the socket `conn` (its `byConnection`).
pub fn exec_start_by(id: &str, cmd: &str, by: &str, conn: &str) -> Msg {
    frame(ServerFrame::Exec(ExecFrame::Start {
        exec_id: id.into(),
        cmd: cmd.into(),
        by: by.into(),
        source: ExecSource::User,
        by_connection: Some(conn.into()),
    }))
}

/// The start of an agent turn that the socket `conn`'s message began.
pub fn ai_start_by(turn: &str, conn: &str) -> Msg {
    frame(ServerFrame::Ai {
        phase: AiPhase::Start,
        turn_id: turn.into(),
        text: None,
        error: None,
        by_connection: Some(conn.into()),
    })
}

pub fn exec_out(id: &str, data: &str) -> Msg {
    frame(ServerFrame::Exec(ExecFrame::Stdout {
        exec_id: id.into(),
        data: data.into(),
    }))
}

pub fn exec_err(id: &str, data: &str) -> Msg {
    frame(ServerFrame::Exec(ExecFrame::Stderr {
        exec_id: id.into(),
        data: data.into(),
    }))
}

pub fn exec_done(id: &str, code: i32, ms: u64) -> Msg {
    frame(ServerFrame::Exec(ExecFrame::Complete {
        exec_id: id.into(),
        exit_code: Some(code),
        duration: ms,
        timed_out: false,
        truncated: false,
        interrupted: false,
        error: None,
        cwd: None,
    }))
}

pub fn record(id: &str, cmd: &str, stdout: &str) -> ExecRecord {
    ExecRecord {
        exec_id: id.into(),
        cmd: cmd.into(),
        by: "bob".into(),
        source: ExecSource::User,
        stdout: stdout.into(),
        stderr: String::new(),
        exit_code: Some(0),
        duration: 4,
        ts: T0,
        truncated: false,
        error: None,
        timed_out: false,
        interrupted: false,
    }
}

pub fn ai(phase: AiPhase, turn: &str, text: Option<&str>) -> Msg {
    frame(ServerFrame::Ai {
        phase,
        turn_id: turn.into(),
        text: text.map(str::to_string),
        error: None,
        by_connection: None,
    })
}

pub fn presence(names: &[(&str, &str)]) -> Msg {
    frame(ServerFrame::Presence {
        users: names
            .iter()
            .map(|(id, name)| PresenceUser {
                role: duet::protocol::RoomRole::Owner,
                id: id.to_string(),
                name: name.to_string(),
                since: T0,
            })
            .collect(),
    })
}

/// `duet_you`: this socket (`c-ada`) as the room knows it.
pub fn you(name: &str, role: RoomRole) -> Msg {
    frame(ServerFrame::You {
        id: "c-ada".into(),
        name: name.into(),
        role,
        invite_id: Some("i1".into()),
    })
}

/// An agent's command waiting for a person (`duet_approval request`).
pub fn approval_request(id: &str, cmd: &str) -> Msg {
    frame(ServerFrame::Approval(ApprovalFrame::Request {
        approval_id: id.into(),
        turn_id: "t1".into(),
        cmd: cmd.into(),
    }))
}

/// Draws the App at `w`×`h` and answers the screen as text.
pub fn render(app: &mut App, w: u16, h: u16) -> String {
    app.update(Msg::Resize(w, h));
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| duet::tui::view::draw(f, app)).unwrap();
    let buffer = terminal.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..h {
        out.push_str(&row_text(&buffer, y, 0, w));
        out.push('\n');
    }
    out
}

/// Row `y` of `buffer` from column `from` to `to` as text, a wide
/// character once, without trailing blanks.
pub fn row_text(buffer: &ratatui::buffer::Buffer, y: u16, from: u16, to: u16) -> String {
    let mut line = String::new();
    let mut skip = 0;
    for x in from..to {
        if skip > 0 {
            skip -= 1;
            continue;
        }
        let symbol = buffer[(x, y)].symbol();
        skip = duet::tui::text::width(symbol).saturating_sub(1);
        line.push_str(symbol);
    }
    line.trim_end().to_string()
}

/// A background process `by` started at `T0`, running or ended.
pub fn process(id: &str, cmd: &str, by: &str, status: ProcessStatus) -> Process {
    let ended = status != ProcessStatus::Running;
    Process {
        id: id.into(),
        name: default_process_name(cmd),
        cmd: cmd.into(),
        by: by.into(),
        status,
        exit_code: match status {
            ProcessStatus::Running => None,
            ProcessStatus::Exited => Some(0),
            ProcessStatus::Killed => Some(143),
        },
        started_at: T0 as u64,
        ended_at: ended.then_some(T0 as u64 + 4_000),
    }
}

/// A `duet_process` frame.
pub fn process_frame(frame: ProcessFrame) -> Msg {
    self::frame(ServerFrame::Process(frame))
}

/// A checkpoint taken at `T0 + minutes`, a person's or an automatic one.
pub fn checkpoint(id: &str, name: &str, auto: bool, minutes: i64) -> Checkpoint {
    Checkpoint {
        id: id.into(),
        name: name.into(),
        ts: (T0 + minutes * 60_000) as u64,
        by: if auto { "duet" } else { "ada" }.into(),
        size: 2150,
        auto,
        turn_id: auto.then(|| format!("t-{id}")),
        expires_at: None,
    }
}
