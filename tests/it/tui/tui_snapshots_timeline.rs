//! The room's timeline as a person sees it, at 120×40, 80×24 and 40×12,
//! with insta: room messages beside questions, people's commands as one
//! line each, records, a cancelled reply, the shell's directory in the
//! status bar, room mode, and the question before stopping someone
//! else's command.

use crate::common::tui_fixtures::*;
use crossterm::event::KeyCode;
use duet::protocol::*;
use duet::tui::app::App;

const SIZES: &[(u16, u16)] = &[(120, 40), (80, 24), (40, 12)];

fn snap_all(name: &str, app: &mut App) {
    for &(w, h) in SIZES {
        let screen = render(app, w, h);
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), screen);
    }
}

fn at(minute: i64) -> i64 {
    T0 + minute * 60_000
}

/// Two people pairing: they talk, ask, run commands; someone cancels a
/// turn, a file comes in, the shell is reset.
fn pairing_room() -> App {
    let mut app = app();
    app.update(presence(&[("c-ada", "ada"), ("c-bob", "bob")]));
    let msg = |id: u32, minute: i64, base: DuetMessage| DuetMessage {
        id: id.to_string(),
        ts: at(minute),
        ..base
    };
    let record = |id: u32, minute: i64, event: Event| DuetMessage {
        id: id.to_string(),
        role: Role::System,
        user_id: event.by().map(str::to_string),
        text: "(the backend's words)".into(),
        ts: at(minute),
        event: Some(event),
        ..DuetMessage::default()
    };
    let exec = |id: &str, cmd: &str, by: &str, minute: i64, code: i32| ExecRecord {
        exec_id: id.into(),
        cmd: cmd.into(),
        by: by.into(),
        source: ExecSource::User,
        stdout: format!("output of {cmd}\n"),
        stderr: String::new(),
        exit_code: Some(code),
        duration: 40,
        ts: at(minute),
        truncated: false,
        error: None,
        timed_out: false,
        interrupted: false,
    };
    app.update(frame(ServerFrame::State {
        state: RoomState {
            terminal: None,
            processes: Vec::new(),
            ports: Vec::new(),
            checkpoints: Vec::new(),
            messages: vec![
                msg(
                    1,
                    1,
                    DuetMessage {
                        to: Some(Addressee::Room),
                        ..user_msg(0, "bob", "shall we look at the failing test first?")
                    },
                ),
                msg(
                    2,
                    2,
                    DuetMessage {
                        to: Some(Addressee::Room),
                        ..user_msg(0, "ada", "yes, running it")
                    },
                ),
                msg(4, 4, user_msg(0, "ada", "why does test_parse fail?")),
                msg(
                    5,
                    5,
                    DuetMessage {
                        cancelled_by: Some("bob".into()),
                        ..agent_msg(0, "It fails because the parser", None)
                    },
                ),
                record(
                    6,
                    5,
                    Event::Cancel {
                        by: "bob".into(),
                        turn_id: "t1".into(),
                    },
                ),
                record(
                    7,
                    6,
                    Event::Upload {
                        by: "bob".into(),
                        path: "fixtures/input.json".into(),
                        size: 812,
                    },
                ),
                record(
                    9,
                    8,
                    Event::Shell {
                        by: "ada".into(),
                        reason: "exit".into(),
                        cwd: "/workspace".into(),
                        reset: true,
                        exec_id: Some("e3".into()),
                    },
                ),
            ],
            execs: vec![
                exec("e1", "cargo test test_parse", "ada", 3, 101),
                exec("e2", "cd crates/parser", "bob", 7, 0),
                exec("e3", "exit", "ada", 8, 0),
            ],
            shell: Some(ShellState {
                cwd: "/workspace".into(),
            }),
            ..Default::default()
        },
    }));
    app.update(exec_start_by("e4", "sleep 30", "bob", "c-bob"));
    app
}

#[test]
fn a_pairing_timeline() {
    let mut app = pairing_room();
    snap_all("pairing", &mut app);
}

#[test]
fn talking_to_the_room() {
    let mut app = pairing_room();
    app.update(ctrl('t'));
    type_text(&mut app, "looks like the parser");
    snap_all("room_mode", &mut app);
}

#[test]
fn stopping_someone_elses_command_asks_first() {
    let mut app = pairing_room();
    app.update(key(KeyCode::Esc));
    snap_all("stop_dialog", &mut app);
}

#[test]
fn a_deep_directory_in_the_status_bar() {
    let mut app = pairing_room();
    app.update(patch(serde_json::json!({
        "shell": {"cwd": "/workspace/crates/parser/src/grammar"}
    })));
    snap_all("deep_cwd", &mut app);
}
