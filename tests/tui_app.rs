//! The App's update logic, driven by messages as the event loop would,
//! without a terminal: what the person did, what the App asks the loop to
//! do, what the screen model then holds.

mod tui_fixtures;

use crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyEventState, KeyModifiers, MouseEvent, MouseEventKind,
};
use duet::client::http::StatusError;
use duet::client::rpc::{RoomOp, RpcError};
use duet::client::socket::{ConnState, SocketEvent};
use duet::protocol::*;
use duet::tui::app::{Effect, Modal, Msg, Pane, TYPING_MS};
use duet::tui::composer::Mode;
use tui_fixtures::*;

#[test]
fn plain_text_is_a_message_to_the_agent() {
    let mut app = app();
    assert_eq!(
        submit(&mut app, "hello agent")[0],
        Effect::Call(RoomOp::Message("hello agent".into()))
    );
    assert!(app.composer.is_empty());
    assert!(app.agent_busy());
}

#[test]
fn bang_runs_a_command_and_run_mode_runs_plain_text() {
    let mut app = app();
    assert_eq!(
        submit(&mut app, "!echo hi"),
        vec![Effect::Call(RoomOp::Exec("echo hi".into()))]
    );
    app.update(ctrl('r'));
    assert_eq!(app.composer.mode, Mode::Run);
    assert_eq!(
        submit(&mut app, "ls -la"),
        vec![Effect::Call(RoomOp::Exec("ls -la".into()))]
    );
    app.update(ctrl('g'));
    assert_eq!(app.composer.mode, Mode::Ask);
}

#[test]
fn empty_lines_and_a_bare_bang_send_nothing() {
    let mut app = app();
    assert!(submit(&mut app, "   ").is_empty());
    app.composer.clear();
    assert!(submit(&mut app, "!").is_empty());
}

#[test]
fn name_rejoins_under_the_new_name_and_refuses_a_bad_one() {
    let mut app = app();
    assert_eq!(
        submit(&mut app, "/name bob"),
        vec![Effect::Rejoin("bob".into())]
    );
    assert_eq!(app.session.name, "bob");
    let long = format!("/name {}", "x".repeat(40));
    assert!(submit(&mut app, &long).is_empty());
    assert_eq!(app.composer.text(), long, "a refused line is kept");
    assert!(
        app.toasts
            .iter()
            .any(|t| t.error && t.text.contains("at most 32"))
    );
}

#[test]
fn unknown_slash_commands_are_refused_in_ask_mode_and_run_in_run_mode() {
    let mut app = app();
    assert!(submit(&mut app, "/frobnicate").is_empty());
    assert!(app.toasts.iter().any(|t| t.text.contains("/frobnicate")));
    app.composer.clear();
    app.update(ctrl('r'));
    assert_eq!(
        submit(&mut app, "/bin/ls"),
        vec![Effect::Call(RoomOp::Exec("/bin/ls".into()))]
    );
}

#[test]
fn quit_and_help_commands() {
    let mut app = app();
    submit(&mut app, "/help");
    assert_eq!(app.modals, vec![Modal::Help]);
    app.update(key(KeyCode::Esc));
    assert!(app.modals.is_empty());
    assert_eq!(submit(&mut app, "/quit"), vec![Effect::Quit]);
    assert!(app.quit);
}

#[test]
fn question_mark_opens_help_only_on_an_empty_line() {
    let mut app = app();
    app.update(key(KeyCode::Char('?')));
    assert_eq!(app.modals, vec![Modal::Help]);
    app.update(key(KeyCode::Char('q')));
    assert!(app.modals.is_empty());
    type_text(&mut app, "why?");
    assert_eq!(app.composer.text(), "why?");
    assert!(app.modals.is_empty());
    app.update(key(KeyCode::F(1)));
    assert_eq!(app.modals, vec![Modal::Help]);
}

#[test]
fn cleanup_asks_first_and_y_cleans_up() {
    let mut app = app();
    app.update(ctrl('x'));
    assert_eq!(app.modals, vec![Modal::ConfirmCleanup]);
    assert!(app.update(key(KeyCode::Char('n'))).is_empty());
    assert!(app.modals.is_empty());
    app.update(ctrl('x'));
    // Keys other than y/n do nothing while the dialog is open.
    assert!(app.update(key(KeyCode::Char('a'))).is_empty());
    assert!(app.composer.is_empty());
    assert_eq!(
        app.update(key(KeyCode::Char('y'))),
        vec![Effect::Call(RoomOp::Cleanup)]
    );
    assert!(app.modals.is_empty());
    submit(&mut app, "/cleanup");
    assert_eq!(app.modals, vec![Modal::ConfirmCleanup]);
    app.update(key(KeyCode::Esc));
    assert!(app.modals.is_empty());
}

#[test]
fn esc_interrupts_a_running_command_else_cancels_the_turn() {
    let mut app = app();
    assert!(app.update(key(KeyCode::Esc)).is_empty(), "nothing to stop");
    app.update(ai(AiPhase::Start, "t1", None));
    assert_eq!(
        app.update(key(KeyCode::Esc)),
        vec![Effect::Call(RoomOp::Cancel(Some("t1".into())))]
    );
    app.update(exec_start("e1", "sleep 100", "bob"));
    assert_eq!(
        app.update(key(KeyCode::Esc)),
        vec![Effect::Call(RoomOp::Interrupt(Some("e1".into())))]
    );
    app.update(exec_done("e1", 130, 10));
    assert_eq!(
        app.update(key(KeyCode::Esc)),
        vec![Effect::Call(RoomOp::Cancel(Some("t1".into())))]
    );
}

#[test]
fn ctrl_c_clears_the_line_then_quits() {
    let mut app = app();
    type_text(&mut app, "draft");
    assert!(app.update(ctrl('c')).is_empty());
    assert!(app.composer.is_empty());
    assert_eq!(app.update(ctrl('c')), vec![Effect::Quit]);

    let mut app = tui_fixtures::app();
    assert!(app.update(ctrl('c')).is_empty());
    assert!(!app.quit);
    type_text(&mut app, "x");
    app.update(key(KeyCode::Backspace));
    assert!(app.update(ctrl('c')).is_empty(), "another key disarms");
    assert_eq!(app.update(ctrl('c')), vec![Effect::Quit]);
}

#[test]
fn paste_inserts_newlines_without_sending() {
    let mut app = app();
    let effects = app.update(Msg::Paste("line one\nline two\r\nthree".into()));
    assert!(
        !effects
            .iter()
            .any(|e| matches!(e, Effect::Call(RoomOp::Message(_))))
    );
    assert_eq!(app.composer.text(), "line one\nline two\nthree");
    assert_eq!(
        app.update(key(KeyCode::Enter))[0],
        Effect::Call(RoomOp::Message("line one\nline two\nthree".into()))
    );
}

#[test]
fn alt_enter_and_ctrl_j_add_lines() {
    let mut app = app();
    type_text(&mut app, "a");
    app.update(alt(KeyCode::Enter));
    type_text(&mut app, "b");
    app.update(ctrl('j'));
    type_text(&mut app, "c");
    assert_eq!(app.composer.text(), "a\nb\nc");
}

#[test]
fn up_and_down_browse_the_history() {
    let mut app = app();
    submit(&mut app, "first");
    submit(&mut app, "!second");
    type_text(&mut app, "dra");
    app.update(key(KeyCode::Up));
    assert_eq!(app.composer.text(), "!second");
    app.update(key(KeyCode::Up));
    assert_eq!(app.composer.text(), "first");
    app.update(key(KeyCode::Down));
    app.update(key(KeyCode::Down));
    assert_eq!(app.composer.text(), "dra");
}

#[test]
fn key_releases_are_ignored() {
    let mut app = app();
    let mut release = KeyEvent::new(KeyCode::Char('a'), KeyModifiers::NONE);
    release.kind = KeyEventKind::Release;
    release.state = KeyEventState::NONE;
    app.update(Msg::Key(release));
    assert!(app.composer.is_empty());
}

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
        RoomOp::Message("what is here?".into()),
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
    }));
    assert!(
        app.chat.turn.is_none(),
        "the stored system message says why"
    );
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
    }));
    app.update(frame(ServerFrame::Typing {
        id: "c-ada".into(),
        name: "ada".into(),
    }));
    assert_eq!(app.typing.len(), 1);
    assert_eq!(app.next_wake(), Some(T0 + TYPING_MS));
    app.now_ms += TYPING_MS;
    app.update(Msg::Tick);
    assert!(app.typing.is_empty());
}

#[test]
fn typing_frames_are_sent_at_most_every_two_seconds() {
    let mut app = app();
    let first = type_text(&mut app, "ab");
    assert_eq!(first, vec![Effect::Typing]);
    app.now_ms += 2_000;
    assert_eq!(type_text(&mut app, "c"), vec![Effect::Typing]);
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
fn a_failed_message_is_shown_whole_and_the_text_comes_back() {
    let mut app = app();
    submit(&mut app, "hello");
    app.update(answer(
        RoomOp::Message("hello".into()),
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
fn scrolling_up_keeps_the_view_and_marks_new_lines_below() {
    let mut app = app();
    let messages: Vec<_> = (1..=60)
        .map(|i| user_msg(i, "bob", &format!("m{i}")))
        .collect();
    app.update(state(messages.clone(), vec![]));
    app.update(key(KeyCode::PageUp));
    let offset = app.chat_scroll.offset;
    assert!(offset > 0);
    let mut more = messages.clone();
    more.push(user_msg(61, "ada", "new one"));
    app.update(state(more, vec![]));
    assert!(app.chat_scroll.new_below);
    assert!(
        app.chat_scroll.offset > offset,
        "the view stays where it was"
    );
    app.update(Msg::Key(KeyEvent::new(KeyCode::End, KeyModifiers::CONTROL)));
    assert_eq!(app.chat_scroll.offset, 0);
    assert!(!app.chat_scroll.new_below);
}

#[test]
fn page_up_at_the_top_loads_older_messages() {
    let mut app = app();
    let messages: Vec<_> = (101..=200).map(|i| user_msg(i, "bob", "x")).collect();
    app.update(state(messages, vec![]));
    assert!(app.chat.has_more);
    let mut asked = None;
    for _ in 0..200 {
        for effect in app.update(key(KeyCode::PageUp)) {
            if let Effect::LoadOlder { before } = effect {
                asked = Some(before);
            }
        }
        if asked.is_some() {
            break;
        }
    }
    assert_eq!(asked, Some(Some("101".to_string())));
    assert!(
        app.update(key(KeyCode::PageUp)).is_empty(),
        "one page at a time"
    );
    app.update(Msg::OlderLoaded(Ok(MessagesPage {
        messages: (51..=100).map(|i| user_msg(i, "bob", "old")).collect(),
        has_more: false,
    })));
    assert_eq!(app.chat.oldest_id(), Some("51"));
    assert!(!app.chat.has_more);
}

#[test]
fn the_mouse_wheel_scrolls_the_pane_under_it() {
    let mut app = app();
    for i in 0..30 {
        let id = format!("e{i}");
        app.update(exec_start(&id, "seq 5", "bob"));
        app.update(exec_out(&id, "1\n2\n3\n4\n5\n"));
        app.update(exec_done(&id, 0, 1));
    }
    let (w, _) = app.size;
    app.update(Msg::Mouse(MouseEvent {
        kind: MouseEventKind::ScrollUp,
        column: w / 2 + 5,
        row: 10,
        modifiers: KeyModifiers::NONE,
    }));
    assert_eq!(app.output_scroll.offset, 3);
    assert_eq!(app.chat_scroll.offset, 0);
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
fn a_too_long_message_stays_on_the_line() {
    let mut app = app();
    app.update(Msg::Paste("x".repeat(MAX_TEXT_CHARS + 1)));
    assert!(app.update(key(KeyCode::Enter)).is_empty());
    assert_eq!(app.composer.text().len(), MAX_TEXT_CHARS + 1);
}

#[test]
fn the_hidden_pane_says_when_it_has_something_new() {
    let mut app = app();
    app.update(Msg::Resize(80, 24));
    app.update(exec_start("e1", "ls", "bob"));
    assert!(app.unseen.1, "output is hidden behind the chat");
    app.update(key(KeyCode::Tab));
    assert!(!app.unseen.1);
    app.update(state(vec![user_msg(1, "bob", "hi")], vec![]));
    app.update(state(
        vec![user_msg(1, "bob", "hi"), user_msg(2, "bob", "yo")],
        vec![],
    ));
    assert!(app.unseen.0);
}

#[test]
fn put_and_get_move_files_and_say_how() {
    let mut app = app();
    assert_eq!(
        submit(&mut app, "/put notes.txt docs/"),
        vec![Effect::Put {
            local: "notes.txt".into(),
            remote: "docs/".into()
        }]
    );
    assert_eq!(
        submit(&mut app, "/get out/report.csv"),
        vec![Effect::Get {
            remote: "out/report.csv".into(),
            local: String::new()
        }]
    );
    assert!(submit(&mut app, "/put").is_empty());
    assert_eq!(app.composer.text(), "/put", "a refused line stays");
    assert!(
        app.toasts
            .last()
            .unwrap()
            .text
            .contains("usage: /put FILE [PATH]")
    );
    app.composer.clear();
    app.update(Msg::TransferDone(Err(
        "/get x: 404 Not Found: not found".into()
    )));
    let toast = app.toasts.last().unwrap();
    assert!(toast.error && toast.text.contains("404 Not Found"));
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
fn a_message_sent_while_offline_comes_back_to_the_line() {
    let mut app = app();
    submit(&mut app, "are you there?");
    app.update(answer(
        RoomOp::Message("are you there?".into()),
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
        RoomOp::Message("run the tests".into()),
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
    assert_eq!(app.chat.len(), 1);
    // A field of the wrong shape changes nothing.
    app.update(patch(serde_json::json!({"execs": "not a list"})));
    assert_eq!(app.execs.runs().len(), 1);
}

#[test]
fn a_delta_while_scrolled_up_keeps_the_view_and_marks_it() {
    let mut app = app();
    let messages: Vec<_> = (1..=60)
        .map(|i| user_msg(i, "bob", &format!("m{i}")))
        .collect();
    app.update(state(messages, vec![]));
    app.update(key(KeyCode::PageUp));
    let offset = app.chat_scroll.offset;
    app.update(delta(user_msg(61, "ada", "new one")));
    assert!(app.chat_scroll.new_below);
    assert!(app.chat_scroll.offset > offset);
}

#[test]
fn f2_toggles_mouse_capture_and_says_so() {
    let mut app = app();
    assert!(app.mouse_capture);
    assert_eq!(
        app.update(key(KeyCode::F(2))),
        vec![Effect::SetMouse(false)]
    );
    assert!(!app.mouse_capture);
    assert!(app.toasts.last().unwrap().text.contains("select text"));
    assert_eq!(app.update(key(KeyCode::F(2))), vec![Effect::SetMouse(true)]);
    assert!(app.toasts.last().unwrap().text.contains("wheel scrolls"));
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
