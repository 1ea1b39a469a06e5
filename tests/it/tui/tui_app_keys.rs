//! The person's side of the App, without a terminal: keys, the input
//! line, slash commands and dialogs, and what each asks the loop to do.

use crate::common::tui_fixtures;
use crate::common::tui_fixtures::*;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyEventState, KeyModifiers};
use duet::client::rpc::RoomOp;
use duet::protocol::*;
use duet::tui::app::{Effect, Modal, Msg};
use duet::tui::composer::Mode;

#[test]
fn plain_text_is_a_message_to_the_agent() {
    let mut app = app();
    assert_eq!(
        submit(&mut app, "hello agent")[0],
        Effect::Call(RoomOp::to_agent("hello agent"))
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
fn name_renames_in_place_and_refuses_a_bad_one() {
    let mut app = app();
    assert_eq!(
        submit(&mut app, "/name bob"),
        vec![Effect::Call(RoomOp::Rename("bob".into()))]
    );
    assert_eq!(app.session.name, "ada", "until the backend says so");
    let effects = app.update(answer(
        RoomOp::Rename("bob".into()),
        Ok(serde_json::json!({"name": "bob"})),
    ));
    assert_eq!(effects, vec![Effect::NameChanged("bob".into())]);
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
fn esc_interrupts_your_running_command_else_cancels_your_turn() {
    let mut app = app();
    assert!(app.update(key(KeyCode::Esc)).is_empty(), "nothing to stop");
    app.update(ai_start_by("t1", "c-ada"));
    assert_eq!(
        app.update(key(KeyCode::Esc)),
        vec![Effect::Call(RoomOp::Cancel(Some("t1".into())))]
    );
    app.update(exec_start_by("e1", "sleep 100", "ada", "c-ada"));
    assert_eq!(
        app.update(key(KeyCode::Esc)),
        vec![Effect::Call(RoomOp::Interrupt(Some("e1".into())))]
    );
    assert!(
        app.toasts.last().unwrap().text.contains("turn goes on"),
        "it says which is stopped: {}",
        app.toasts.last().unwrap().text
    );
    app.update(exec_done("e1", 130, 10));
    assert_eq!(
        app.update(key(KeyCode::Esc)),
        vec![Effect::Call(RoomOp::Cancel(Some("t1".into())))]
    );
    assert!(app.modals.is_empty(), "nothing asked: all of it was ada's");
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
            .any(|e| matches!(e, Effect::Call(RoomOp::Message { .. })))
    );
    assert_eq!(app.composer.text(), "line one\nline two\nthree");
    assert_eq!(
        app.update(key(KeyCode::Enter))[0],
        Effect::Call(RoomOp::to_agent("line one\nline two\nthree"))
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
fn typing_frames_are_sent_at_most_every_two_seconds() {
    let mut app = app();
    let first = type_text(&mut app, "ab");
    assert_eq!(first, vec![Effect::Typing]);
    app.now_ms += 2_000;
    assert_eq!(type_text(&mut app, "c"), vec![Effect::Typing]);
}

#[test]
fn a_too_long_message_stays_on_the_line() {
    let mut app = app();
    app.update(Msg::Paste("x".repeat(MAX_TEXT_CHARS + 1)));
    assert!(app.update(key(KeyCode::Enter)).is_empty());
    assert_eq!(app.composer.text().len(), MAX_TEXT_CHARS + 1);
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
            local: String::new(),
            replace: false,
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
fn help_says_there_is_more_and_scrolls_to_the_processes_keys() {
    let mut app = app();
    app.update(key(KeyCode::F(1)));
    let screen = render(&mut app, 80, 24);
    assert!(screen.contains("↓ more"), "{screen}");
    assert!(!screen.contains("select the process below"), "{screen}");
    // PgDn until the end: F4's keys and the last line are there, and
    // nothing says there is more.
    for _ in 0..30 {
        app.update(key(KeyCode::PageDown));
    }
    let screen = render(&mut app, 80, 24);
    assert!(screen.contains("select the process below"), "{screen}");
    assert!(screen.contains("Esc, q or ? close"), "{screen}");
    assert!(!screen.contains("↓ more"), "{screen}");
}
