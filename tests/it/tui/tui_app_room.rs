//! The room's side of the App, without a terminal: full states and
//! deltas, the agent's streamed reply, command output, presence and
//! typing, and the answers of room operations.

use crate::common::tui_fixtures::*;
use crossterm::event::KeyCode;
use duet::client::http::StatusError;
use duet::client::rpc::{RoomOp, RpcError};
use duet::client::socket::{ConnState, SocketEvent};
use duet::protocol::*;
use duet::tui::app::{Msg, Pane, TYPING_MS};

#[test]
fn states_rebuild_the_chat_without_duplicates() {
    let mut app = app();
    app.update(state(vec![user_msg(1, "bob", "hi")], vec![]));
    app.update(state(
        vec![user_msg(1, "bob", "hi"), user_msg(2, "ada", "yo")],
        vec![],
    ));
    // A reconnect sends the same state again.
    app.update(Msg::Socket(SocketEvent::State(ConnState::Reconnecting {
        in_secs: 1,
        reason: "dropped".into(),
    })));
    app.update(state(
        vec![user_msg(1, "bob", "hi"), user_msg(2, "ada", "yo")],
        vec![record("e1", "ls", "a\n")],
    ));
    app.update(state(
        vec![user_msg(1, "bob", "hi"), user_msg(2, "ada", "yo")],
        vec![record("e1", "ls", "a\n")],
    ));
    let ids: Vec<_> = app.chat.messages().map(|m| m.id.clone()).collect();
    assert_eq!(ids, ["1", "2"]);
    assert_eq!(app.execs.runs().len(), 1);
}

#[test]
fn the_agent_reply_streams_then_becomes_the_stored_message() {
    let mut app = app();
    submit(&mut app, "what is here?");
    app.update(state(vec![user_msg(1, "ada", "what is here?")], vec![]));
    app.update(ai(AiPhase::Start, "t1", None));
    app.update(ai(AiPhase::Delta, "t1", Some("Let me ")));
    app.update(ai(AiPhase::Delta, "t1", Some("look.")));
    assert_eq!(app.chat.turn.as_ref().unwrap().text, "Let me look.");
    assert_eq!(app.chat.len(), 2, "the message and the live reply");
    app.update(ai(AiPhase::End, "t1", None));
    app.update(state(
        vec![
            user_msg(1, "ada", "what is here?"),
            agent_msg(2, "Let me look.", None),
        ],
        vec![],
    ));
    assert!(app.chat.turn.is_none());
    assert_eq!(app.chat.len(), 2);
    app.update(answer(
        RoomOp::to_agent("what is here?"),
        Ok(serde_json::json!({"reply": "Let me look.", "messages": []})),
    ));
    assert!(!app.agent_busy());
}

#[test]
fn an_agent_error_ends_the_live_reply() {
    let mut app = app();
    app.update(ai(AiPhase::Start, "t1", None));
    app.update(frame(ServerFrame::Ai {
        phase: AiPhase::Error,
        turn_id: "t1".into(),
        text: None,
        error: Some("model unreachable".into()),
        by_connection: None,
    }));
    assert!(
        app.chat.turn.is_none(),
        "the stored system message says why"
    );
}

#[test]
fn a_later_round_of_the_same_turn_streams_on() {
    let mut app = app();
    app.update(state(vec![user_msg(1, "ada", "fix it")], vec![]));
    app.update(ai(AiPhase::Start, "t1", None));
    app.update(ai(AiPhase::Delta, "t1", Some("Looking.")));
    app.update(ai(AiPhase::End, "t1", None));
    app.update(ai(AiPhase::Start, "t1", None));
    let turn = app.chat.turn.as_ref().unwrap();
    assert!(!turn.ended, "the second round is live again");
    assert!(app.agent_busy());
    app.update(ai(AiPhase::Delta, "t1", Some("\n\nFixed.")));
    assert_eq!(app.chat.turn.as_ref().unwrap().text, "Looking.\n\nFixed.");
}

#[test]
fn commands_stream_into_the_output_pane() {
    let mut app = app();
    app.update(exec_start("e1", "echo hi", "bob"));
    app.update(exec_out("e1", "h"));
    app.update(exec_out("e1", "i\n"));
    app.update(exec_err("e1", "warn\n"));
    app.update(exec_done("e1", 0, 12));
    let run = &app.execs.runs()[0];
    assert_eq!(run.by, "bob");
    assert_eq!(run.output.plain_lines(), vec!["hi", "warn"]);
    assert_eq!(run.done.as_ref().unwrap().exit_code, Some(0));
    app.update(state(vec![], vec![record("e1", "echo hi", "hi\n")]));
    assert_eq!(app.execs.runs().len(), 1);
}

#[test]
fn a_command_behind_another_shows_waiting_until_its_turn() {
    let mut app = app();
    app.update(exec_start("e1", "sleep 20", "ann"));
    app.update(exec_start("e2", "echo queued", "bob"));
    let screen = render(&mut app, 120, 40);
    let line = |screen: &str, cmd: &str| {
        screen
            .lines()
            .find(|l| l.contains(cmd))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        line(&screen, "echo queued").contains("… waiting"),
        "{screen}"
    );
    assert!(!line(&screen, "sleep 20").contains("waiting"), "{screen}");
    // The first ends: the second runs, its time counted from now.
    app.update(exec_done("e1", 0, 20_000));
    let screen = render(&mut app, 120, 40);
    assert!(
        !line(&screen, "echo queued").contains("waiting"),
        "{screen}"
    );
    assert_eq!(app.execs.runs()[1].started_ms, app.now_ms);
}

#[test]
fn an_output_the_backend_cut_says_so_below_it() {
    let mut app = app();
    app.update(exec_start("e1", "yes | head -c 2M", "bob"));
    app.update(exec_out("e1", "y\ny\n"));
    app.update(frame(ServerFrame::Exec(ExecFrame::Complete {
        exec_id: "e1".into(),
        exit_code: Some(0),
        duration: 40,
        timed_out: false,
        truncated: true,
        interrupted: false,
        error: None,
        cwd: None,
    })));
    // A stored record says the same after a reload.
    let kept = ExecRecord {
        truncated: true,
        ..record("e2", "cat big.log", "first\n")
    };
    app.update(state(vec![], vec![kept, record("e3", "ls", "a\n")]));
    let screen = render(&mut app, 120, 40);
    let cut = "… output cut (over the limit)";
    assert_eq!(screen.matches(cut).count(), 2, "{screen}");
    let lines: Vec<&str> = screen.lines().collect();
    let at = |what: &str| lines.iter().position(|l| l.contains(what)).unwrap();
    let second = at("first")
        + lines[at("first")..]
            .iter()
            .position(|l| l.contains(cut))
            .unwrap();
    // Each below its own command's output, in the output pane.
    assert!(at("│y") < at(cut) && second < at("│bob $ ls"), "{screen}");
    app.update(exec_start("e4", "yes | head -c 2M", "bob"));
    app.update(exec_out("e4", "y\n"));
    let screen = render(&mut app, 120, 40);
    assert_eq!(
        screen.matches(cut).count(),
        2,
        "not while it runs: {screen}"
    );
}

#[test]
fn a_cleanup_empties_the_room_for_everyone() {
    let mut app = app();
    app.update(state(
        vec![user_msg(1, "bob", "hi")],
        vec![record("e1", "ls", "x")],
    ));
    app.update(frame(ServerFrame::Cleanup { by: "bob".into() }));
    app.update(state(vec![], vec![]));
    assert!(app.chat.is_empty());
    assert!(app.execs.runs().is_empty());
    assert!(
        app.toasts
            .iter()
            .any(|t| t.text == "bob cleaned up the room")
    );
}

#[test]
fn clear_empties_this_screen_only_and_for_good() {
    let mut app = app();
    app.update(state(
        vec![user_msg(1, "bob", "hi")],
        vec![record("e1", "ls", "x")],
    ));
    submit(&mut app, "/clear");
    app.update(state(
        vec![user_msg(1, "bob", "hi"), user_msg(2, "bob", "new")],
        vec![record("e1", "ls", "x")],
    ));
    let ids: Vec<_> = app.chat.messages().map(|m| m.id.clone()).collect();
    assert_eq!(ids, ["2"]);
    assert!(app.execs.runs().is_empty());
}

#[test]
fn typing_shows_for_a_while_and_not_for_oneself() {
    let mut app = app();
    app.update(frame(ServerFrame::Typing {
        id: "c-bob".into(),
        name: "bob".into(),
        term_id: None,
    }));
    app.update(frame(ServerFrame::Typing {
        id: "c-ada".into(),
        name: "ada".into(),
        term_id: None,
    }));
    assert_eq!(app.typing.len(), 1);
    assert_eq!(app.next_wake(), Some(T0 + TYPING_MS));
    app.now_ms += TYPING_MS;
    app.update(Msg::Tick);
    assert!(app.typing.is_empty());
}

#[test]
fn an_idle_client_asks_for_no_timer() {
    let mut app = app();
    assert_eq!(app.next_wake(), None);
    app.update(exec_start("e1", "sleep 5", "bob"));
    assert!(app.next_wake().is_some(), "the spinner needs frames");
    app.update(exec_done("e1", 0, 5000));
    assert_eq!(app.next_wake(), None);
    app.update(Msg::Tick);
}

#[test]
fn tab_switches_panes_and_presence_and_connection_are_kept() {
    let mut app = app();
    app.update(key(KeyCode::Tab));
    assert_eq!(app.focus, Pane::Output);
    app.update(presence(&[("c-ada", "ada"), ("c-bob", "bob")]));
    assert_eq!(app.presence.len(), 2);
    app.update(Msg::Socket(SocketEvent::State(ConnState::Offline(
        "401 Unauthorized: unauthorized".into(),
    ))));
    assert!(matches!(app.conn, ConnState::Offline(_)));
}

#[test]
fn a_moved_backend_is_followed_or_the_reason_shown() {
    let mut app = app();
    app.update(Msg::ServerMoved(Ok("http://127.0.0.1:9999".into())));
    assert_eq!(app.session.server, "http://127.0.0.1:9999");
    app.update(Msg::ServerMoved(Err(
        "the backend moved to x, but: bad URL".into(),
    )));
    assert_eq!(app.session.server, "http://127.0.0.1:9999");
    assert!(app.toasts.last().unwrap().error);
}

#[test]
fn message_deltas_add_and_replace_without_a_full_state() {
    let mut app = app();
    app.update(state(vec![user_msg(1, "bob", "hi")], vec![]));
    app.update(delta(user_msg(2, "ada", "what is here?")));
    app.update(ai(AiPhase::Start, "t1", None));
    app.update(ai(AiPhase::Delta, "t1", Some("Looking.")));
    app.update(ai(AiPhase::End, "t1", None));
    assert!(
        app.chat.turn.is_some(),
        "the live reply waits for its message"
    );
    app.update(delta(agent_msg(3, "Looking.", None)));
    assert!(app.chat.turn.is_none(), "the stored reply takes its place");
    // A message that changed is replaced, not repeated.
    app.update(delta(user_msg(1, "bob", "hi there")));
    app.update(delta(agent_msg(3, "Looking.", None)));
    let shown: Vec<_> = app
        .chat
        .messages()
        .map(|m| (m.id.clone(), m.text.clone()))
        .collect();
    assert_eq!(
        shown,
        [
            ("1".to_string(), "hi there".to_string()),
            ("2".to_string(), "what is here?".to_string()),
            ("3".to_string(), "Looking.".to_string()),
        ]
    );
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("hi there") && screen.contains("Looking."),
        "{screen}"
    );
}

#[test]
fn a_full_state_after_deltas_still_replaces_the_view() {
    let mut app = app();
    app.update(state(vec![user_msg(1, "bob", "hi")], vec![]));
    app.update(delta(user_msg(2, "bob", "yo")));
    // After a cleanup the backend sends the emptied state.
    app.update(state(vec![], vec![]));
    assert!(app.chat.is_empty());
    app.update(delta(user_msg(3, "ada", "fresh start")));
    let ids: Vec<_> = app.chat.messages().map(|m| m.id.clone()).collect();
    assert_eq!(ids, ["3"]);
}

#[test]
fn patches_apply_field_by_field_and_unknown_fields_are_ignored() {
    let mut app = app();
    app.update(state(vec![user_msg(1, "bob", "hi")], vec![]));
    app.update(patch(serde_json::json!({
        "shell": {"cwd": "/workspace/src"},
        "somethingNew": 42,
        "execs": [serde_json::to_value(record("e1", "ls", "a\n")).unwrap()],
    })));
    assert_eq!(app.execs.runs().len(), 1);
    assert_eq!(app.chat.len(), 2, "bob's message and his command's line");
    assert_eq!(app.shell_cwd.as_deref(), Some("/workspace/src"));
    // A field of the wrong shape changes nothing.
    app.update(patch(
        serde_json::json!({"execs": "not a list", "shell": 7}),
    ));
    assert_eq!(app.execs.runs().len(), 1);
    assert_eq!(app.shell_cwd.as_deref(), Some("/workspace/src"));
}

#[test]
fn a_failed_message_is_shown_whole_and_the_text_comes_back() {
    let mut app = app();
    submit(&mut app, "hello");
    app.update(answer(
        RoomOp::to_agent("hello"),
        Err(RpcError::Failed(StatusError {
            status: 400,
            error: "invalid request".into(),
            details: Some([("text".to_string(), vec!["must not be empty".to_string()])].into()),
        })),
    ));
    assert_eq!(app.composer.text(), "hello");
    let toast = app.toasts.last().unwrap();
    assert!(toast.error);
    assert!(toast.text.contains("text: must not be empty"));
    app.now_ms += 60_000;
    app.update(Msg::Tick);
    assert!(app.toasts.is_empty(), "toasts go away");
}

#[test]
fn a_message_sent_while_offline_comes_back_to_the_line() {
    let mut app = app();
    submit(&mut app, "are you there?");
    app.update(answer(
        RoomOp::to_agent("are you there?"),
        Err(RpcError::NotSent("reconnecting in 2 s: refused".into())),
    ));
    assert_eq!(app.composer.text(), "are you there?");
    assert!(!app.agent_busy());
    let toast = app.toasts.last().unwrap();
    assert!(
        toast.error && toast.text.contains("not connected"),
        "{}",
        toast.text
    );
}

#[test]
fn a_message_whose_answer_was_lost_is_reported_not_put_back() {
    let mut app = app();
    submit(&mut app, "run the tests");
    app.update(answer(
        RoomOp::to_agent("run the tests"),
        Err(RpcError::Lost("no answer from the backend".into())),
    ));
    assert!(
        app.composer.is_empty(),
        "it may have been sent: no double send"
    );
    let toast = app.toasts.last().unwrap();
    assert!(
        toast.error && toast.text.contains("run the tests") && toast.text.contains("may have"),
        "{}",
        toast.text
    );
    // It is still one Up away.
    app.update(key(KeyCode::Up));
    assert_eq!(app.composer.text(), "run the tests");
}

#[test]
fn a_failed_command_comes_back_with_its_bang() {
    let mut app = app();
    submit(&mut app, "!make");
    app.update(answer(
        RoomOp::Exec("make".into()),
        Err(RpcError::NotSent("offline".into())),
    ));
    assert_eq!(app.composer.text(), "!make");
}

#[test]
fn stop_and_cleanup_answers_are_said() {
    let mut app = app();
    app.update(answer(
        RoomOp::Interrupt(None),
        Ok(serde_json::json!({"interrupted": false})),
    ));
    assert_eq!(app.toasts.last().unwrap().text, "nothing to interrupt");
    app.update(answer(
        RoomOp::Cleanup,
        Ok(serde_json::json!({"cleaned": true, "roomId": "demo-room", "errors": ["disk busy"]})),
    ));
    let toast = app.toasts.last().unwrap();
    assert!(
        toast.error && toast.text.contains("disk busy"),
        "{}",
        toast.text
    );
}

#[test]
fn output_drawn_once_still_shows_what_streams_after() {
    let mut app = app();
    app.update(exec_start("e1", "make", "bob"));
    app.update(exec_out("e1", "step one\n"));
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("step one") && !screen.contains("step two"));
    app.update(exec_out("e1", "step two\n"));
    app.update(exec_done("e1", 0, 30));
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("step two") && screen.contains("✓ 0"),
        "{screen}"
    );
    // Narrower (the output pane behind Tab), it is drawn for that width.
    app.update(Msg::Resize(80, 24));
    app.update(key(KeyCode::Tab));
    let screen = render(&mut app, 80, 24);
    assert!(
        screen.contains("step two") && screen.contains("✓ 0"),
        "{screen}"
    );
}

#[test]
fn a_reply_cut_off_by_a_backend_restart_stops_spinning_and_gives_way_to_the_note() {
    let mut app = app();
    let conn = |state: ConnState| Msg::Socket(SocketEvent::State(state));
    app.update(conn(ConnState::Connected { rtt_ms: None }));
    app.update(state(vec![user_msg(1, "ada", "explain")], vec![]));
    app.update(ai(AiPhase::Start, "t1", None));
    app.update(ai(AiPhase::Delta, "t1", Some("Half a")));
    assert!(!app.chat.turn.as_ref().unwrap().ended, "streaming");
    app.update(conn(ConnState::Reconnecting {
        in_secs: 1,
        reason: "the backend closed the connection".into(),
    }));
    app.update(conn(ConnState::Connected { rtt_ms: None }));
    assert!(
        app.chat.turn.as_ref().unwrap().ended,
        "no spinner after the reconnect"
    );
    // The restarted backend's note about the cut-off turn replaces it.
    let mut note = user_msg(2, "ada", "The server restarted before the agent answered");
    note.role = Role::System;
    app.update(state(vec![user_msg(1, "ada", "explain"), note], vec![]));
    assert!(
        app.chat.turn.is_none(),
        "the live reply gave way to the note"
    );
}

#[test]
fn export_writes_the_room_s_history_to_the_file_named_and_says_so() {
    let mut app = app();
    app.update(state(Vec::new(), Vec::new()));
    assert_eq!(
        submit(&mut app, "/export notes/room.cast"),
        vec![duet::tui::app::Effect::Export("notes/room.cast".into())]
    );
    // Without a file it says how, and asks for nothing.
    assert!(submit(&mut app, "/export").is_empty());
    assert!(
        app.toasts
            .last()
            .is_some_and(|t| t.text.contains("usage: /export FILE"))
    );
    app.update(Msg::TransferDone(Ok(
        "exported 3 messages and 1 commands to notes/room.cast".into(),
    )));
    assert!(
        app.toasts
            .last()
            .is_some_and(|t| t.text.contains("exported 3 messages"))
    );
}

#[test]
fn a_command_cut_by_a_restart_stops_spinning_after_the_reconnect() {
    let cmd = "for i in $(seq 1 20); do echo tick $i; sleep 1; done";
    let mut app = app();
    app.update(state(vec![], vec![]));
    app.update(exec_start("x00000000001", cmd, "bob"));
    app.update(exec_out("x00000000001", "tick 1\ntick 2\n"));
    assert!(app.execs.running().is_some());
    // The server stops and comes back: the socket reconnects and the
    // state has the command ended by the stop.
    app.update(Msg::Socket(SocketEvent::State(ConnState::Reconnecting {
        in_secs: 1,
        reason: "The connection broke".into(),
    })));
    app.update(Msg::Socket(SocketEvent::State(ConnState::Connecting)));
    app.update(Msg::Socket(SocketEvent::State(ConnState::Connected {
        rtt_ms: None,
    })));
    let cut = ExecRecord {
        exit_code: None,
        error: Some("the server stopped while it ran".into()),
        ..record("x00000000001", cmd, "tick 1\ntick 2\ntick 3\n")
    };
    app.update(state(vec![], vec![cut]));
    assert!(app.execs.running().is_none(), "the spinner goes on");
    assert!(
        app.stop_target().is_none(),
        "Esc would stop a command that is gone"
    );
    let screen = render(&mut app, 120, 30);
    assert!(screen.contains("tick 3"), "{screen}");
    assert!(screen.contains("error: the server stopped"), "{screen}");
}

#[test]
fn your_own_command_shows_the_time_it_started_before_any_record() {
    let mut app = app();
    // A fresh room: no message or record has given the backend's time yet.
    app.update(state(vec![], vec![]));
    submit(&mut app, "!echo hi");
    app.update(exec_start_by("e1", "echo hi", "ada", "c-ada"));
    app.update(exec_out("e1", "hi\n"));
    app.update(exec_done("e1", 0, 12));
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("10:00 ada $ echo hi"), "{screen}");
    assert!(!screen.contains("00:00 ada"), "{screen}");
}

#[test]
fn the_output_pane_gets_its_share_of_a_wide_window() {
    let mut app = app();
    let line = "-rw-r--r-- 1 ada ada 1234 Dec  3 07:59 Cargo.toml";
    app.update(exec_start("e1", "ls -la", "bob"));
    app.update(exec_out("e1", &format!("{line}\n")));
    app.update(exec_done("e1", 0, 12));
    // The chat has the focus; at 140 columns `ls -la` still fits beside it.
    let screen = render(&mut app, 140, 40);
    assert!(screen.contains(line), "{screen}");
}

#[test]
fn a_narrow_chat_keeps_the_commands_start_and_cuts_the_badge_first() {
    let mut app = app();
    app.update(exec_start("e1", "sleep 100", "bob"));
    app.update(frame(ServerFrame::Exec(ExecFrame::Complete {
        exec_id: "e1".into(),
        exit_code: Some(130),
        duration: 900,
        timed_out: false,
        truncated: false,
        interrupted: true,
        error: None,
        cwd: None,
    })));
    // The output has the focus: the chat is its narrow side.
    app.update(key(KeyCode::Tab));
    let screen = render(&mut app, 100, 30);
    assert!(
        screen.lines().any(|l| l.starts_with("10:00 bob $ sleep")),
        "{screen}"
    );
}
