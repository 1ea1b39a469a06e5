//! Pairing in the App, without a terminal (issue 11): talking to the room
//! or the agent, the room's timeline (people's commands and records among
//! the messages), the cancelled mark, Esc that asks before stopping
//! someone else's work, renaming, and the shell's directory in the status
//! bar. Frames are the fixtures'; the screen is drawn to text.

use crate::common::tui_fixtures::*;
use crossterm::event::KeyCode;
use duet::client::http::StatusError;
use duet::client::rpc::{RoomOp, RpcError};
use duet::protocol::*;
use duet::tui::app::{App, Effect, Modal, Msg};
use duet::tui::composer::Mode;

/// A record: a system message with its event.
fn record_msg(id: u32, event: Event, text: &str) -> DuetMessage {
    DuetMessage {
        id: id.to_string(),
        role: Role::System,
        user_id: event.by().map(str::to_string),
        text: text.into(),
        ts: T0 + i64::from(id) * 60_000,
        event: Some(event),
        ..DuetMessage::default()
    }
}

/// A message for the room.
fn room_msg(id: u32, who: &str, text: &str) -> DuetMessage {
    DuetMessage {
        to: Some(Addressee::Room),
        ..user_msg(id, who, text)
    }
}

/// A command record of `by`, started at minute `minute` after T0.
fn exec_record(id: &str, cmd: &str, by: &str, minute: i64, exit: i32) -> ExecRecord {
    ExecRecord {
        by: by.into(),
        exit_code: Some(exit),
        ts: T0 + minute * 60_000,
        ..record(id, cmd, "out\n")
    }
}

fn done_with(id: &str, code: i32, timed_out: bool, interrupted: bool, cwd: Option<&str>) -> Msg {
    frame(ServerFrame::Exec(ExecFrame::Complete {
        exec_id: id.into(),
        exit_code: Some(code),
        duration: 10,
        timed_out,
        truncated: false,
        interrupted,
        error: (timed_out || interrupted).then(|| "the shell was restarted".to_string()),
        cwd: cwd.map(str::to_string),
    }))
}

/// The chat pane's lines at 120×40 (the left column of the wide layout),
/// trimmed: what a person reads in the chat.
fn chat_lines(app: &mut App) -> Vec<String> {
    let screen = render(app, 120, 40);
    let chat_width = app.pane_size(duet::tui::app::Pane::Chat).0 as usize;
    screen
        .lines()
        .skip(1)
        .take(30)
        .map(|l| {
            let cut: String = l.chars().take(chat_width).collect();
            cut.trim_end().to_string()
        })
        .filter(|l| !l.is_empty())
        .collect()
}

/// The status bar: the last line of the screen at `w`×`h`.
fn status_bar(app: &mut App, w: u16, h: u16) -> String {
    render(app, w, h).lines().last().unwrap_or("").to_string()
}

#[test]
fn ctrl_t_talks_to_the_room_and_the_mode_is_always_shown() {
    let mut app = app();
    assert_eq!(app.composer.mode, Mode::Ask, "Duet starts asking the agent");
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("to the agent"), "{screen}");
    assert!(
        screen.contains("^T room"),
        "the footer names the key: {screen}"
    );
    app.update(ctrl('t'));
    assert_eq!(app.composer.mode, Mode::Room);
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("to the room"), "{screen}");
    assert!(screen.lines().any(|l| l.starts_with('»')), "{screen}");
    // Narrow, the title still says it.
    assert!(render(&mut app, 40, 12).contains("to the room"));
    app.update(ctrl('r'));
    assert!(render(&mut app, 120, 40).contains("run in the sandbox"));
    app.update(ctrl('g'));
    assert_eq!(app.composer.mode, Mode::Ask);
}

#[test]
fn the_help_names_room_mode_and_at_agent() {
    let mut app = app();
    app.update(key(KeyCode::F(1)));
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("Ctrl+T") && screen.contains("talk to the room"),
        "{screen}"
    );
    assert!(screen.contains("@agent TEXT"), "{screen}");
}

#[test]
fn a_room_message_runs_no_turn_and_at_agent_asks_from_any_mode() {
    let mut app = app();
    app.update(ctrl('t'));
    assert_eq!(
        submit(&mut app, "ok thanks"),
        vec![Effect::Call(RoomOp::to_room("ok thanks"))]
    );
    assert!(!app.agent_busy(), "no turn for a room message");
    assert_eq!(
        RoomOp::to_room("ok thanks").args(),
        vec![serde_json::json!({"text": "ok thanks", "to": "room"})],
        "the rpc sends `to`"
    );
    assert_eq!(
        submit(&mut app, "@agent why does it fail?"),
        vec![Effect::Call(RoomOp::to_agent("why does it fail?"))]
    );
    assert!(app.agent_busy());
    assert_eq!(app.composer.mode, Mode::Room, "the mode stays");
    assert_eq!(
        RoomOp::to_agent("x").args(),
        vec![serde_json::json!({"text": "x", "to": "agent"})]
    );
    // `!cmd` still runs, and `@agents` is just a word.
    assert_eq!(
        submit(&mut app, "!ls"),
        vec![Effect::Call(RoomOp::Exec("ls".into()))]
    );
    assert_eq!(
        submit(&mut app, "@agents are busy"),
        vec![Effect::Call(RoomOp::to_room("@agents are busy"))]
    );
    app.update(ctrl('r'));
    assert_eq!(
        submit(&mut app, "@Agent: what is in /tmp?"),
        vec![Effect::Call(RoomOp::to_agent("what is in /tmp?"))]
    );
    assert!(submit(&mut app, "@agent").is_empty(), "nothing to ask");
}

#[test]
fn a_room_message_that_failed_comes_back_in_room_mode() {
    let mut app = app();
    app.update(ctrl('t'));
    submit(&mut app, "brb");
    app.update(ctrl('g'));
    app.update(answer(
        RoomOp::to_room("brb"),
        Err(RpcError::NotSent("offline".into())),
    ));
    assert_eq!(app.composer.text(), "brb");
    assert_eq!(
        app.composer.mode,
        Mode::Room,
        "sent again, it goes to the room"
    );
}

#[test]
fn room_messages_are_labelled_apart_from_questions() {
    let mut app = app();
    app.update(state(
        vec![
            room_msg(1, "bob", "shall we try the tests?"),
            user_msg(2, "bob", "what do the tests need?"),
        ],
        vec![],
    ));
    let lines = chat_lines(&mut app);
    assert!(lines.iter().any(|l| l == "10:01 bob → room"), "{lines:#?}");
    assert!(lines.iter().any(|l| l == "10:02 bob"), "{lines:#?}");
}

#[test]
fn peoples_commands_are_lines_of_the_chat_in_time_order() {
    let mut app = app();
    app.update(state(
        vec![user_msg(1, "bob", "first"), user_msg(3, "ada", "third")],
        vec![
            exec_record("e1", "make build", "bob", 2, 0),
            exec_record("e2", "cargo test", "ada", 4, 2),
            ExecRecord {
                source: ExecSource::Agent,
                ..exec_record("e3", "agent-only", "agent", 4, 0)
            },
        ],
    ));
    let lines = chat_lines(&mut app);
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle} not in {lines:#?}"))
    };
    assert!(at("first") < at("bob $ make build"));
    assert!(at("bob $ make build") < at("third"));
    assert!(at("third") < at("ada $ cargo test"));
    assert!(lines[at("bob $ make build")].ends_with("✓ 0"));
    assert!(lines[at("ada $ cargo test")].ends_with("✗ 2"));
    assert!(
        !lines.iter().any(|l| l.contains("agent-only")),
        "the agent's commands stay in its replies"
    );
    // The output stays in the output pane, not in the chat.
    assert!(!lines.iter().any(|l| l.trim() == "out"));
    assert_eq!(app.execs.runs().len(), 3);
}

#[test]
fn a_live_command_appears_as_it_starts_and_gets_its_badge() {
    let mut app = app();
    app.update(state(vec![user_msg(1, "ada", "watch this")], vec![]));
    app.update(exec_start("e1", "sleep 30", "bob"));
    let lines = chat_lines(&mut app);
    let line = lines.last().unwrap();
    assert!(line.starts_with("10:01 bob $ sleep 30"), "{lines:#?}");
    assert!(
        duet::tui::cell::SPINNER.iter().any(|f| line.contains(f)),
        "running: {line}"
    );
    // A message stored after it comes after it, whatever this clock says.
    app.update(delta(user_msg(2, "ada", "still going?")));
    app.update(done_with("e1", 130, false, true, Some("/workspace")));
    let lines = chat_lines(&mut app);
    let cmd = lines.iter().position(|l| l.contains("sleep 30")).unwrap();
    let later = lines
        .iter()
        .position(|l| l.contains("still going?"))
        .unwrap();
    assert!(cmd < later, "{lines:#?}");
    assert!(lines[cmd].ends_with("■ interrupted"), "{lines:#?}");
    app.update(exec_start("e2", "make slow", "bob"));
    app.update(done_with("e2", 124, true, false, None));
    assert!(
        chat_lines(&mut app)
            .last()
            .unwrap()
            .ends_with("⏱ timed out")
    );
}

#[test]
fn a_long_command_is_cut_and_keeps_its_badge() {
    let mut app = app();
    let long = format!("echo {}", "very-long-argument ".repeat(10));
    app.update(exec_start("e1", &long, "bob"));
    app.update(exec_done("e1", 0, 3));
    for (w, h) in [(120, 40), (80, 24), (40, 12)] {
        let screen = render(&mut app, w, h);
        let line = screen
            .lines()
            .find(|l| l.contains("bob $ echo"))
            .unwrap_or_else(|| panic!("no command line at {w}x{h}:\n{screen}"));
        assert!(
            line.contains('…') && line.contains("✓ 0"),
            "{w}x{h}: {line}"
        );
    }
}

#[test]
fn every_kind_of_record_is_one_readable_line() {
    let mut app = app();
    app.update(state(
        vec![
            record_msg(
                1,
                Event::Cancel {
                    by: "bob".into(),
                    turn_id: "t1".into(),
                },
                "bob cancelled",
            ),
            record_msg(
                2,
                Event::Interrupt {
                    by: "ann".into(),
                    exec_id: "e1".into(),
                    cmd: "sleep 100".into(),
                },
                "ann interrupted sleep 100",
            ),
            record_msg(
                3,
                Event::Upload {
                    by: "bob".into(),
                    path: "docs/notes.txt".into(),
                    size: 2100,
                },
                "bob uploaded docs/notes.txt",
            ),
            record_msg(
                4,
                Event::Rename {
                    by: "bob".into(),
                    from: "bob".into(),
                    to: "robert".into(),
                },
                "bob is now robert",
            ),
            record_msg(
                5,
                Event::Shell {
                    by: "ann".into(),
                    reason: "exit".into(),
                    cwd: "/workspace".into(),
                    reset: true,
                    exec_id: Some("e2".into()),
                },
                "the shell exited",
            ),
            record_msg(
                6,
                Event::Shell {
                    by: "bob".into(),
                    reason: "timeout".into(),
                    cwd: "/workspace/app".into(),
                    reset: false,
                    exec_id: None,
                },
                "timed out",
            ),
            record_msg(7, Event::Other, "something new happened"),
        ],
        vec![],
    ));
    let lines = chat_lines(&mut app);
    let expected = [
        "10:01 · bob cancelled the agent's turn",
        "10:02 · ann interrupted `sleep 100`",
        "10:03 · bob uploaded docs/notes.txt (2.1 KB)",
        "10:04 · bob is now robert",
        "10:07 · something new happened",
    ];
    for line in expected {
        assert!(lines.iter().any(|l| l == line), "{line:?} in {lines:#?}");
    }
    // Long ones wrap under their time.
    let all = lines
        .iter()
        .map(|l| l.trim_start())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        all.contains(
            "10:05 · the shell exited after ann's command: a fresh shell in /workspace, directory and variables reset"
        ),
        "a reset says so: {lines:#?}"
    );
    assert!(
        all.contains(
            "10:06 · bob's command timed out: a new shell goes on in /workspace/app, variables kept"
        ),
        "{all}"
    );
    assert!(
        !all.contains("· system"),
        "records have no system header: {all}"
    );
}

#[test]
fn a_cleaned_up_room_shows_just_its_cleanup_record() {
    let mut app = app();
    app.update(state(
        vec![user_msg(1, "bob", "hi"), user_msg(2, "ada", "yo")],
        vec![exec_record("e1", "ls", "bob", 1, 0)],
    ));
    app.update(frame(ServerFrame::Cleanup { by: "bob".into() }));
    app.update(frame(ServerFrame::State {
        state: RoomState {
            terminal: None,
            processes: Vec::new(),
            ports: Vec::new(),
            checkpoints: Vec::new(),
            messages: vec![record_msg(
                3,
                Event::Cleanup { by: "bob".into() },
                "bob cleaned up",
            )],
            execs: vec![],
            shell: Some(ShellState {
                cwd: "/workspace".into(),
            }),
            ..Default::default()
        },
    }));
    // The toast saying so floats over the chat's right edge: it is not chat.
    app.toasts.clear();
    let lines = chat_lines(&mut app);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(
        lines[0].starts_with("10:03 · bob cleaned up the room"),
        "{lines:#?}"
    );
    assert!(app.execs.runs().is_empty());
}

#[test]
fn a_cancelled_reply_keeps_its_text_and_says_who_cancelled_it() {
    let mut app = app();
    app.update(state(
        vec![
            user_msg(1, "ada", "explain the build"),
            DuetMessage {
                cancelled_by: Some("bob".into()),
                ..agent_msg(2, "The build has three", None)
            },
            DuetMessage {
                cancelled_by: Some("ada".into()),
                ..agent_msg(3, "", None)
            },
        ],
        vec![],
    ));
    let lines = chat_lines(&mut app);
    let text = lines
        .iter()
        .position(|l| l.contains("The build has three"))
        .unwrap();
    assert_eq!(lines[text + 1].trim(), "■ cancelled by bob", "{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("cancelled by ada before the agent said anything")),
        "{lines:#?}"
    );
}

#[test]
fn esc_on_someone_elses_command_asks_first_and_n_does_nothing() {
    let mut app = app();
    app.update(presence(&[("c-ada", "ada"), ("c-bob", "bob")]));
    app.update(exec_start_by("e1", "sleep 100", "bob", "c-bob"));
    assert!(
        app.update(key(KeyCode::Esc)).is_empty(),
        "asked, not stopped"
    );
    let Some(Modal::ConfirmStop(stop)) = app.modals.last().cloned() else {
        panic!("a question: {:?}", app.modals)
    };
    assert_eq!(stop.question(), "Stop bob's `sleep 100`?");
    assert!(render(&mut app, 120, 40).contains("Stop bob's `sleep 100`?"));
    assert!(app.update(key(KeyCode::Char('n'))).is_empty());
    assert!(app.modals.is_empty());
    // Asked again, y stops it (and the backend records who did).
    app.update(key(KeyCode::Esc));
    assert_eq!(
        app.update(key(KeyCode::Char('y'))),
        vec![Effect::Call(RoomOp::Interrupt(Some("e1".into())))]
    );
    assert!(app.modals.is_empty());
}

#[test]
fn a_command_that_ended_while_asking_is_not_stopped() {
    let mut app = app();
    app.update(exec_start_by("e1", "sleep 1", "bob", "c-bob"));
    app.update(key(KeyCode::Esc));
    app.update(exec_done("e1", 0, 1000));
    assert!(app.update(key(KeyCode::Char('y'))).is_empty());
    assert!(app.toasts.last().unwrap().text.contains("already ended"));
}

#[test]
fn esc_on_someone_elses_turn_asks_and_names_them() {
    let mut app = app();
    app.update(presence(&[("c-ada", "ada"), ("c-bob", "bob")]));
    app.update(state(vec![user_msg(1, "bob", "explain")], vec![]));
    app.update(ai_start_by("t1", "c-bob"));
    assert!(app.update(key(KeyCode::Esc)).is_empty());
    let Some(Modal::ConfirmStop(stop)) = app.modals.last().cloned() else {
        panic!("a question: {:?}", app.modals)
    };
    assert_eq!(stop.question(), "Cancel the agent's turn for bob?");
    assert_eq!(
        app.update(key(KeyCode::Char('y'))),
        vec![Effect::Call(RoomOp::Cancel(Some("t1".into())))]
    );
    // A turn begun over HTTP (no connection) is nobody's here: asked too.
    app.update(ai(AiPhase::Start, "t2", None));
    app.update(key(KeyCode::Esc));
    assert!(matches!(app.modals.last(), Some(Modal::ConfirmStop(_))));
}

#[test]
fn esc_says_which_it_stops_when_a_command_and_a_turn_run() {
    let mut app = app();
    app.update(ai_start_by("t1", "c-ada"));
    app.update(frame(ServerFrame::Exec(ExecFrame::Start {
        exec_id: "e1".into(),
        cmd: "make test".into(),
        by: "agent".into(),
        source: ExecSource::Agent,
        by_connection: Some("c-ada".into()),
    })));
    assert_eq!(
        app.update(key(KeyCode::Esc)),
        vec![Effect::Call(RoomOp::Interrupt(Some("e1".into())))],
        "the agent's command in ada's own turn is ada's"
    );
    let said = &app.toasts.last().unwrap().text;
    assert!(
        said.contains("the agent's `make test`") && said.contains("turn goes on"),
        "{said}"
    );
}

#[test]
fn a_room_on_a_host_folder_says_so_in_the_bar_and_before_a_cleanup() {
    let mut app = app();
    let bar = status_bar(&mut app, 120, 40);
    assert!(!bar.contains(" · on "), "a room of its own: {bar}");
    app.session.folder = Some("~/src/app".into());
    app.update(presence(&[("c-ada", "ada")]));
    for (w, h) in [(120, 40), (100, 30)] {
        let bar = status_bar(&mut app, w, h);
        assert!(bar.contains(" · on ~/src/app"), "{w}x{h}: {bar}");
    }
    // Narrow, its end says which folder it is.
    let bar = status_bar(&mut app, 80, 24);
    assert!(
        bar.contains(" · on …/app") || bar.contains(" · on …/src/app"),
        "{bar}"
    );
    submit(&mut app, "/cleanup");
    assert_eq!(app.modals, vec![Modal::ConfirmCleanup]);
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("the sandbox is")
            && screen.contains("stopped; the files in ~/src/app stay."),
        "{screen}"
    );
    assert!(!screen.contains("destroyed"), "{screen}");
}

#[test]
fn the_status_bar_shows_the_shells_directory_and_its_reset() {
    let mut app = app();
    app.update(presence(&[("c-ada", "ada"), ("c-bob", "bob")]));
    app.update(frame(ServerFrame::State {
        state: RoomState {
            terminal: None,
            processes: Vec::new(),
            ports: Vec::new(),
            checkpoints: Vec::new(),
            messages: vec![],
            execs: vec![],
            shell: Some(ShellState {
                cwd: "/workspace".into(),
            }),
            ..Default::default()
        },
    }));
    assert!(status_bar(&mut app, 120, 40).contains("cwd /workspace"));
    app.update(exec_start("e1", "cd /tmp", "bob"));
    app.update(done_with("e1", 0, false, false, Some("/tmp")));
    for (w, h) in [(120, 40), (100, 30)] {
        let bar = status_bar(&mut app, w, h);
        assert!(bar.contains("cwd /tmp"), "{w}x{h}: {bar}");
        assert!(bar.contains("2 here"), "{w}x{h}: {bar}");
    }
    // `exit`: the shell is replaced, the directory and variables reset.
    app.update(exec_start("e2", "exit", "bob"));
    app.update(done_with("e2", 0, false, false, Some("/workspace")));
    app.update(delta(record_msg(
        1,
        Event::Shell {
            by: "bob".into(),
            reason: "exit".into(),
            cwd: "/workspace".into(),
            reset: true,
            exec_id: Some("e2".into()),
        },
        "the shell exited",
    )));
    app.update(patch(serde_json::json!({"shell": {"cwd": "/workspace"}})));
    assert!(status_bar(&mut app, 120, 40).contains("cwd /workspace"));
    assert!(
        chat_lines(&mut app)
            .iter()
            .any(|l| l.contains("directory and variables reset")),
        "the record says so"
    );
    // A patch moves it; a cleanup takes it back to /workspace.
    app.update(patch(serde_json::json!({"shell": {"cwd": "/srv"}})));
    assert!(status_bar(&mut app, 120, 40).contains("cwd /srv"));
    app.update(frame(ServerFrame::Cleanup { by: "ada".into() }));
    assert!(status_bar(&mut app, 120, 40).contains("cwd /workspace"));
}

#[test]
fn a_long_directory_is_abbreviated_before_anything_important_goes() {
    let mut app = app();
    app.update(presence(&[("c-ada", "ada"), ("c-bob", "bob")]));
    app.update(patch(serde_json::json!({
        "shell": {"cwd": "/workspace/services/payments/src/handlers/api"}
    })));
    let wide = status_bar(&mut app, 130, 40);
    assert!(
        wide.contains("cwd /workspace/services/payments/src/handlers/api")
            && wide.contains("as ada")
            && wide.contains("join: duet join 127.0.0.1:8787/demo-room"),
        "{wide}"
    );
    let bar = status_bar(&mut app, 100, 30);
    assert!(
        bar.contains("cwd …/")
            && bar.contains("/src/handlers/api")
            && bar.contains("join: duet join 127.0.0.1:8787/demo-room"),
        "cut from the left at a slash: {bar}"
    );
    let bar = status_bar(&mut app, 80, 24);
    assert!(
        bar.contains("2 here")
            && bar.contains("as ada")
            && bar.contains("join: duet join 127.0.0.1:8787/demo-room"),
        "the directory goes before them: {bar}"
    );
    let tiny = status_bar(&mut app, 40, 12);
    assert!(
        tiny.contains("demo-room") && tiny.contains('●') && !tiny.contains("cwd"),
        "{tiny}"
    );
    assert_eq!(
        duet::tui::view::status::dir_forms("/workspace/src/app"),
        ["/workspace/src/app", "~w/src/app", "…/src/app", "…/app"]
    );
    assert_eq!(
        duet::tui::view::status::dir_forms("/tmp"),
        ["/tmp"],
        "nothing shorter to say"
    );
}

#[test]
fn a_rename_shows_in_the_status_bar_and_a_refusal_is_a_sentence() {
    let mut app = app();
    submit(&mut app, "/name robert");
    app.update(answer(
        RoomOp::Rename("robert".into()),
        Ok(serde_json::json!({"name": "robert"})),
    ));
    assert!(status_bar(&mut app, 120, 40).contains("as robert"));
    // The client checks what it can; the backend has the last word.
    submit(&mut app, "/name ro bert");
    let refused = answer(
        RoomOp::Rename("ro bert".into()),
        Err(RpcError::Failed(StatusError {
            status: 400,
            error: "invalid request".into(),
            details: Some(
                [(
                    "name".to_string(),
                    vec!["is taken by the room's agent".to_string()],
                )]
                .into(),
            ),
        })),
    );
    app.update(refused);
    let toast = app.toasts.last().unwrap();
    assert!(toast.error);
    assert_eq!(
        toast.text,
        "Cannot rename you to \"ro bert\": the name is taken by the room's agent."
    );
    assert_eq!(app.composer.text(), "/name ro bert", "the line comes back");
    assert_eq!(app.session.name, "robert");
}

#[test]
fn a_backend_without_rename_is_joined_again_under_the_name() {
    let mut app = app();
    submit(&mut app, "/name bob");
    let effects = app.update(answer(
        RoomOp::Rename("bob".into()),
        Err(RpcError::Refused("unknown method \"rename\"".into())),
    ));
    assert_eq!(effects, vec![Effect::Rejoin("bob".into())]);
    assert_eq!(app.session.name, "bob");
}
