//! The TUI's background processes as a person uses them: `/bg` starts
//! one, F4 (or `/ps`) lists them with the listening ports and their URLs,
//! Enter follows the selected one's log (the answer's log, then its
//! frames; a reconnect asks again and nothing shows twice), `k` stops one
//! (someone else's after a y/n), starts, ends and new ports are toasts,
//! and the status bar counts those running.

use crate::common::tui_fixtures::*;
use crossterm::event::KeyCode;
use duet::client::http::StatusError;
use duet::client::rpc::{RoomOp, RpcError};
use duet::client::socket::{ConnState, SocketEvent};
use duet::protocol::*;
use duet::tui::app::{App, Effect, Modal, Msg};
use serde_json::json;

fn room_with(processes: Vec<Process>, ports: Vec<PortState>) -> App {
    let mut app = app();
    app.update(frame(ServerFrame::State {
        state: RoomState {
            processes,
            ports,
            checkpoints: Vec::new(),
            ..RoomState::default()
        },
    }));
    app
}

fn out(id: &str, data: &str) -> Msg {
    process_frame(ProcessFrame::Stdout {
        process_id: id.into(),
        data: data.into(),
    })
}

fn err(id: &str, data: &str) -> Msg {
    process_frame(ProcessFrame::Stderr {
        process_id: id.into(),
        data: data.into(),
    })
}

fn toasts(app: &App) -> Vec<String> {
    app.toasts.iter().map(|t| t.text.clone()).collect()
}

fn status_bar(app: &mut App) -> String {
    render(app, 120, 40).lines().last().unwrap().to_string()
}

/// The followed log as the view shows it, line by line.
fn log_lines(app: &App) -> Vec<String> {
    app.procs
        .followed
        .as_ref()
        .expect("a log is followed")
        .lines()
        .into_iter()
        .map(|(_, line)| line)
        .collect()
}

#[test]
fn bg_starts_a_process_and_its_start_is_announced_and_counted() {
    let mut app = room_with(Vec::new(), Vec::new());
    let effects = submit(&mut app, "/bg python3 -m http.server 8000");
    assert_eq!(
        effects,
        vec![Effect::Call(RoomOp::ProcessStart {
            cmd: "python3 -m http.server 8000".into(),
            name: None,
        })]
    );
    assert!(app.composer.is_empty(), "the line is taken");
    assert!(!status_bar(&mut app).contains("proc"));

    app.update(process_frame(ProcessFrame::Start {
        process: process(
            "p1",
            "python3 -m http.server 8000",
            "ada",
            ProcessStatus::Running,
        ),
    }));
    assert_eq!(
        toasts(&app),
        vec![
            "ada started p1 (python3): `python3 -m http.server 8000` (F4 shows the processes)"
                .to_string()
        ]
    );
    assert!(
        status_bar(&mut app).contains(" · 1 proc "),
        "{}",
        status_bar(&mut app)
    );

    app.update(process_frame(ProcessFrame::Start {
        process: process("p2", "npm run watch", "bob", ProcessStatus::Running),
    }));
    assert!(status_bar(&mut app).contains(" · 2 procs"));

    // An empty /bg is refused and says how.
    let effects = submit(&mut app, "/bg");
    assert!(effects.is_empty());
    assert!(toasts(&app).last().unwrap().starts_with("usage: /bg CMD"));
}

#[test]
fn a_refused_start_is_said_in_the_servers_words() {
    let mut app = room_with(Vec::new(), Vec::new());
    submit(&mut app, "/bg sleep 100");
    let full = StatusError::from_body(
        409,
        r#"{"error":"too many processes","details":{"processes":["at most 8 processes run at once in a room"]}}"#,
    );
    app.update(answer(
        RoomOp::ProcessStart {
            cmd: "sleep 100".into(),
            name: None,
        },
        Err(RpcError::Failed(full)),
    ));
    let toast = app.toasts.last().unwrap();
    assert!(toast.error);
    assert_eq!(
        toast.text,
        "`sleep 100` was not started: The room cannot do that now (409 Conflict: too many \
         processes; processes: at most 8 processes run at once in a room)"
    );
}

#[test]
fn the_view_lists_processes_and_ports_and_follows_a_log_live() {
    let mut app = room_with(
        vec![
            process(
                "p1",
                "python3 -m http.server 8000",
                "ada",
                ProcessStatus::Running,
            ),
            process("p2", "make test", "bob", ProcessStatus::Exited),
        ],
        vec![PortState::new("demo-room", 8000)],
    );
    app.now_ms = T0 + 192_000;
    assert!(app.update(key(KeyCode::F(4))).is_empty());
    assert_eq!(app.modals, vec![Modal::Processes]);
    // The newest is selected; Up selects the dev server.
    assert_eq!(app.procs.selected().unwrap().id, "p2");
    app.update(key(KeyCode::Up));
    let effects = app.update(key(KeyCode::Enter));
    assert_eq!(
        effects,
        vec![Effect::Call(RoomOp::ProcessFollow("p1".into()))]
    );
    // Output before the answer is in the answer's log: not shown twice.
    app.update(out("p1", "Serving HTTP on 0.0.0.0 port 8000\n"));
    app.update(answer(
        RoomOp::ProcessFollow("p1".into()),
        Ok(json!({
            "processId": "p1",
            "stdout": "Serving HTTP on 0.0.0.0 port 8000\n",
            "stderr": "127.0.0.1 - - \"GET / HTTP/1.1\" 200 -\n",
        })),
    ));
    app.update(err(
        "p1",
        "127.0.0.1 - - \"GET /notes.txt HTTP/1.1\" 200 -\n",
    ));
    app.update(out("p2", "not followed\n"));
    assert_eq!(
        log_lines(&app),
        vec![
            "Serving HTTP on 0.0.0.0 port 8000",
            "127.0.0.1 - - \"GET / HTTP/1.1\" 200 -",
            "127.0.0.1 - - \"GET /notes.txt HTTP/1.1\" 200 -",
        ]
    );
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("8000  http://127.0.0.1:8787/api/rooms/demo-room/ports/8000/"),
        "{screen}"
    );
    assert!(
        screen.contains("Log of p1 (python3) · following"),
        "{screen}"
    );
    insta::assert_snapshot!("processes_view_120x40", screen);
    insta::assert_snapshot!("processes_view_80x24", render(&mut app, 80, 24));

    // Enter again stops following; Esc closes the view.
    let effects = app.update(key(KeyCode::Enter));
    assert_eq!(
        effects,
        vec![Effect::Call(RoomOp::ProcessUnfollow("p1".into()))]
    );
    app.update(key(KeyCode::Enter));
    let effects = app.update(key(KeyCode::Esc));
    assert_eq!(
        effects,
        vec![Effect::Call(RoomOp::ProcessUnfollow("p1".into()))],
        "closing the view unfollows"
    );
    assert!(app.modals.is_empty());
    assert!(app.procs.followed.is_none());
}

#[test]
fn a_reconnect_follows_again_and_nothing_shows_twice() {
    let mut app = room_with(
        vec![process(
            "p1",
            "node server.js",
            "ada",
            ProcessStatus::Running,
        )],
        Vec::new(),
    );
    app.update(key(KeyCode::F(4)));
    app.update(key(KeyCode::Enter));
    app.update(answer(
        RoomOp::ProcessFollow("p1".into()),
        Ok(json!({"processId":"p1","stdout":"one\n","stderr":""})),
    ));
    app.update(out("p1", "two\n"));
    app.update(Msg::Socket(SocketEvent::State(ConnState::Reconnecting {
        in_secs: 1,
        reason: "The connection broke".into(),
    })));
    app.update(Msg::Socket(SocketEvent::State(ConnState::Connecting)));
    let effects = app.update(Msg::Socket(SocketEvent::State(ConnState::Connected {
        rtt_ms: None,
    })));
    assert!(
        effects.contains(&Effect::Call(RoomOp::ProcessFollow("p1".into()))),
        "{effects:?}"
    );
    // Output of the new connection before its answer is in the answer.
    app.update(out("p1", "three\n"));
    app.update(answer(
        RoomOp::ProcessFollow("p1".into()),
        Ok(json!({"processId":"p1","stdout":"one\ntwo\nthree\n","stderr":""})),
    ));
    app.update(out("p1", "four\n"));
    assert_eq!(log_lines(&app), vec!["one", "two", "three", "four"]);
}

#[test]
fn stopping_someone_elses_process_asks_first_and_ones_own_does_not() {
    let mut app = room_with(
        vec![
            process("p1", "sleep 1000", "bob", ProcessStatus::Running),
            process("p2", "sleep 2000", "ada", ProcessStatus::Running),
        ],
        Vec::new(),
    );
    app.update(key(KeyCode::F(4)));
    // p2 is ada's own: stopped at once.
    let effects = app.update(key(KeyCode::Char('k')));
    assert_eq!(
        effects,
        vec![Effect::Call(RoomOp::ProcessKill("p2".into()))]
    );
    assert_eq!(toasts(&app).last().unwrap(), "stopping p2 (sleep)");

    app.update(key(KeyCode::Up));
    assert!(app.update(key(KeyCode::Char('k'))).is_empty());
    let Some(Modal::ConfirmStop(stop)) = app.modals.last().cloned() else {
        panic!("asks first: {:?}", app.modals)
    };
    assert_eq!(stop.question(), "Stop bob's process p1 `sleep 1000`?");
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("Stop bob's process p1 `sleep 1000`?"),
        "{screen}"
    );
    // n keeps it running; y stops it.
    assert!(app.update(key(KeyCode::Char('n'))).is_empty());
    assert_eq!(app.modals, vec![Modal::Processes]);
    app.update(key(KeyCode::Char('k')));
    let effects = app.update(key(KeyCode::Char('y')));
    assert_eq!(
        effects,
        vec![Effect::Call(RoomOp::ProcessKill("p1".into()))]
    );
    assert_eq!(app.modals, vec![Modal::Processes], "back in the view");

    // It ended by itself before the answer: `killed: false` says so.
    app.update(answer(
        RoomOp::ProcessKill("p1".into()),
        Ok(json!({"killed": false})),
    ));
    assert_eq!(toasts(&app).last().unwrap(), "p1 had already ended");
}

#[test]
fn exits_update_the_list_and_are_announced() {
    let mut app = room_with(
        vec![process("p1", "sleep 1000", "bob", ProcessStatus::Running)],
        Vec::new(),
    );
    assert!(status_bar(&mut app).contains("1 proc"));
    app.update(process_frame(ProcessFrame::Exit {
        process_id: "p1".into(),
        status: ProcessStatus::Killed,
        exit_code: Some(143),
    }));
    assert_eq!(
        toasts(&app),
        vec!["p1 (sleep) was killed (code 143)".to_string()]
    );
    let p1 = &app.procs.list[0];
    assert_eq!(
        (p1.status, p1.exit_code),
        (ProcessStatus::Killed, Some(143))
    );
    assert!(p1.ended_at.is_some());
    assert!(!status_bar(&mut app).contains("proc"));
    // Stopping one that ended says so, and sends nothing.
    let effects = submit(&mut app, "/kill p1");
    assert!(effects.is_empty());
    assert_eq!(toasts(&app).last().unwrap(), "p1 (sleep) already ended");
}

#[test]
fn a_port_that_starts_listening_is_announced_with_its_url() {
    let mut app = room_with(Vec::new(), vec![PortState::new("demo-room", 5432)]);
    assert!(
        app.toasts.is_empty(),
        "ports listening at join are not news"
    );
    app.update(patch(json!({"ports": [
        {"port": 5432, "path": "/api/rooms/demo-room/ports/5432/"},
        {"port": 8000, "path": "/api/rooms/demo-room/ports/8000/"},
    ]})));
    assert_eq!(
        toasts(&app),
        vec![
            "port 8000 listens in the sandbox: http://127.0.0.1:8787/api/rooms/demo-room/ports/8000/"
                .to_string()
        ]
    );
    assert_eq!(app.procs.ports.len(), 2);
    // A backend's own public URL wins.
    app.update(patch(json!({"ports": [
        {"port": 3000, "path": "/api/rooms/demo-room/ports/3000/", "url": "https://3000-demo-room.example.dev/"},
    ]})));
    assert!(
        toasts(&app)
            .last()
            .unwrap()
            .ends_with("https://3000-demo-room.example.dev/")
    );
    // A patch of processes replaces the list.
    app.update(patch(json!({"processes": [
        {"id":"p7","name":"vite","cmd":"vite --base /x/","by":"bob","status":"running","exitCode":null,"startedAt":T0},
    ]})));
    assert_eq!(app.procs.list.len(), 1);
    assert_eq!(app.procs.running(), 1);
}

#[test]
fn slash_commands_name_processes_by_id_or_name() {
    let mut app = room_with(
        vec![
            process("p1", "job a", "ada", ProcessStatus::Exited),
            process("p2", "job b", "ada", ProcessStatus::Exited),
            process("p3", "vite", "ada", ProcessStatus::Running),
        ],
        Vec::new(),
    );
    let effects = submit(&mut app, "/logs vite");
    assert_eq!(
        effects,
        vec![Effect::Call(RoomOp::ProcessFollow("p3".into()))]
    );
    assert_eq!(app.modals, vec![Modal::Processes]);
    app.update(key(KeyCode::Esc));

    let effects = submit(&mut app, "/kill job");
    assert!(effects.is_empty());
    assert_eq!(
        toasts(&app).last().unwrap(),
        "2 processes are named \"job\" (p1, p2): give the id"
    );
    assert_eq!(app.composer.text(), "/kill job", "a refused line stays");
    app.composer.clear();
    let effects = submit(&mut app, "/kill p3");
    assert_eq!(
        effects,
        vec![Effect::Call(RoomOp::ProcessKill("p3".into()))]
    );

    submit(&mut app, "/ps");
    assert_eq!(app.modals, vec![Modal::Processes]);
}

#[test]
fn the_help_names_the_commands_and_the_views_keys() {
    let mut app = app();
    app.update(key(KeyCode::F(1)));
    // Tall enough for the whole help.
    let screen = render(&mut app, 120, 90);
    for shown in [
        "/bg CMD",
        "/ps",
        "/logs ID",
        "/kill ID",
        "In the processes view (F4)",
    ] {
        assert!(screen.contains(shown), "{shown} in the help:\n{screen}");
    }
}

#[test]
fn a_cleanup_empties_the_list_and_the_followed_log() {
    let mut app = room_with(
        vec![process("p1", "sleep 1000", "ada", ProcessStatus::Running)],
        vec![PortState::new("demo-room", 8000)],
    );
    app.update(key(KeyCode::F(4)));
    app.update(key(KeyCode::Enter));
    app.update(answer(
        RoomOp::ProcessFollow("p1".into()),
        Ok(json!({"processId":"p1","stdout":"tick\n","stderr":""})),
    ));
    // Its exit comes first, then the cleanup and the emptied state.
    app.update(process_frame(ProcessFrame::Exit {
        process_id: "p1".into(),
        status: ProcessStatus::Killed,
        exit_code: Some(143),
    }));
    app.update(frame(ServerFrame::Cleanup { by: "bob".into() }));
    app.update(state(Vec::new(), Vec::new()));
    assert!(app.procs.followed.is_none());
    assert!(app.procs.list.is_empty() && app.procs.ports.is_empty());
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("No background processes: /bg CMD starts one"),
        "{screen}"
    );
    assert!(
        screen.contains("No ports listening in the sandbox."),
        "{screen}"
    );
    assert!(!status_bar(&mut app).contains("proc"));
}
