//! The TUI's terminal view as a person uses it: F3 attaches with the
//! pane's size, keys and pastes go to the terminal as the bytes a terminal
//! sends, Ctrl+] gives the keys back, the screen is drawn from the frames
//! (letterboxed), who types shows, the size follows the layout, and a
//! command that needs a terminal names the key instead of running.

use crate::common::tui_fixtures;
use crate::common::tui_fixtures::*;
use base64::Engine;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use duet::client::rpc::RoomOp;
use duet::protocol::*;
use duet::tui::app::{App, Effect, Msg, Pane};
use serde_json::json;

fn term(frame: TermFrame) -> Msg {
    tui_fixtures::frame(ServerFrame::Term(frame))
}

fn output(bytes: &[u8]) -> Msg {
    term(TermFrame::Data {
        term_id: "t1".into(),
        data: base64::engine::general_purpose::STANDARD.encode(bytes),
        snapshot: false,
    })
}

fn snapshot(bytes: &[u8]) -> Msg {
    term(TermFrame::Data {
        term_id: "t1".into(),
        data: base64::engine::general_purpose::STANDARD.encode(bytes),
        snapshot: true,
    })
}

/// The size F3 asks for: the output pane's inside.
fn pane_term_size(app: &App) -> TermSize {
    let (cols, rows) = app.pane_size(Pane::Output);
    TermSize { cols, rows }
}

/// F3 in `app`, answered by the backend at `answered` (the "smallest"
/// rule may make it smaller than the pane).
fn attached(app: &mut App, answered: Option<TermSize>) -> TermSize {
    let effects = app.update(key(KeyCode::F(3)));
    let asked = pane_term_size(app);
    assert_eq!(effects, vec![Effect::Call(RoomOp::TermOpen(Some(asked)))]);
    let size = answered.unwrap_or(asked);
    app.update(answer(
        RoomOp::TermOpen(Some(asked)),
        Ok(json!({"termId": "t1", "cols": size.cols, "rows": size.rows})),
    ));
    asked
}

/// The bytes of the terminal input effects.
fn typed(effects: &[Effect]) -> Vec<u8> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::TermInput { term_id, data } => {
                assert_eq!(term_id, "t1");
                Some(data.clone())
            }
            _ => None,
        })
        .flatten()
        .collect()
}

#[test]
fn f3_attaches_and_every_key_goes_to_the_terminal_until_ctrl_bracket() {
    let mut app = app();
    attached(&mut app, None);
    assert!(app.terminal_focused());
    assert!(app.term.attached);

    let mut effects = type_text(&mut app, "ls");
    effects.extend(app.update(key(KeyCode::Enter)));
    assert_eq!(typed(&effects), b"ls\r");
    assert!(app.composer.is_empty(), "nothing went to the input");
    // Keys the TUI binds are the terminal's now: Ctrl+C, Esc, Tab, F1, F3.
    let effects: Vec<Effect> = [
        ctrl('c'),
        key(KeyCode::Esc),
        key(KeyCode::Tab),
        key(KeyCode::F(1)),
        key(KeyCode::F(3)),
    ]
    .into_iter()
    .flat_map(|msg| app.update(msg))
    .collect();
    assert_eq!(typed(&effects), b"\x03\x1b\t\x1bOP\x1bOR");
    assert!(app.modals.is_empty() && !app.quit && app.term.shown);

    // Cursor keys follow the program's application-cursor mode.
    assert_eq!(typed(&app.update(key(KeyCode::Up))), b"\x1b[A");
    app.update(output(b"\x1b[?1h"));
    assert_eq!(typed(&app.update(key(KeyCode::Up))), b"\x1bOA");

    // Ctrl+] (Ctrl+5 from terminals without keyboard enhancements) gives
    // the keys back to the input; the terminal stays in view.
    let back = app.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('5'),
        KeyModifiers::CONTROL,
    )));
    assert!(typed(&back).is_empty());
    assert!(!app.terminal_focused() && app.term.shown);
    assert!(typed(&type_text(&mut app, "hi")).is_empty());
    assert_eq!(app.composer.text(), "hi");
    // Tab gives the keys to the terminal again.
    app.update(ctrl('u'));
    app.update(key(KeyCode::Tab));
    assert!(app.terminal_focused());
    app.update(Msg::Key(KeyEvent::new(
        KeyCode::Char(']'),
        KeyModifiers::CONTROL,
    )));
    assert!(!app.terminal_focused());
}

#[test]
fn a_paste_is_bracketed_when_the_program_asked() {
    let mut app = app();
    attached(&mut app, None);
    assert_eq!(
        typed(&app.update(Msg::Paste("echo a\necho b".into()))),
        b"echo a\recho b"
    );
    app.update(output(b"\x1b[?2004h"));
    assert_eq!(
        typed(&app.update(Msg::Paste("echo a\n".into()))),
        b"\x1b[200~echo a\n\x1b[201~"
    );
}

#[test]
fn the_screen_is_drawn_from_the_frames_letterboxed() {
    let mut app = app();
    app.update(presence(&[("c-ada", "ada"), ("c-bob", "bob")]));
    // bob's window is smaller: the terminal is 30×6, in the top-left.
    attached(&mut app, Some(TermSize { cols: 30, rows: 6 }));
    app.update(snapshot(b"$ echo hi\r\nhi\r\n$ "));
    app.update(output(b"\x1b[31mvim\x1b[0m notes.txt"));
    app.update(tui_fixtures::frame(ServerFrame::Typing {
        id: "c-bob".into(),
        name: "bob".into(),
        term_id: Some("t1".into()),
    }));
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("$ echo hi"), "{screen}");
    assert!(screen.contains("$ vim notes.txt"), "{screen}");
    assert!(screen.contains("bob is typing"), "{screen}");
    assert!(screen.contains("Ctrl+] gives the keys back"), "{screen}");
    insta::assert_snapshot!("terminal_view_120x40", screen);
    // A typist in the terminal is not typing in the chat.
    assert!(app.typing.is_empty());
    let narrow = render(&mut app, 80, 24);
    insta::assert_snapshot!("terminal_view_80x24", narrow);
}

#[test]
fn a_pane_smaller_than_the_terminal_keeps_the_prompt_row_in_sight() {
    let mut app = app();
    // The terminal is 30×8 (another window's size); this pane shows fewer
    // rows (a tiny window): the cursor's row, the prompt, must show.
    attached(&mut app, Some(TermSize { cols: 30, rows: 8 }));
    app.update(snapshot(
        b"line1\r\nline2\r\nline3\r\nline4\r\nline5\r\nline6\r\nline7\r\n~ $ echo typed-here",
    ));
    let screen = render(&mut app, 40, 9);
    assert!(screen.contains("~ $ echo typed-here"), "{screen}");
    assert!(!screen.contains("line1"), "{screen}");
    // With room for it all, it is drawn from the top as before.
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("line1") && screen.contains("typed-here"),
        "{screen}"
    );
}

#[test]
fn the_panes_size_follows_the_window_and_the_terminals_size_shows() {
    let mut app = app();
    let asked = attached(&mut app, None);
    let effects = app.update(Msg::Resize(100, 30));
    let now = pane_term_size(&app);
    assert_ne!(now, asked);
    assert_eq!(
        effects,
        vec![Effect::TermResize {
            term_id: "t1".into(),
            size: now
        }]
    );
    // The same size again sends nothing.
    assert!(app.update(Msg::Resize(100, 30)).is_empty());
    // Moving the keys to the chat keeps the pane's size (the view keeps
    // its share of the width).
    app.update(ctrl(']'));
    assert_eq!(pane_term_size(&app), now);

    app.update(term(TermFrame::Resize {
        term_id: "t1".into(),
        cols: 77,
        rows: 20,
    }));
    assert_eq!(app.term.screen.size(), TermSize { cols: 77, rows: 20 });
    let bar = render(&mut app, 100, 30);
    assert!(
        bar.lines().last().unwrap().contains("terminal 77×20"),
        "{bar}"
    );
}

#[test]
fn f3_while_shown_detaches_and_the_terminals_end_hides_it() {
    let mut app = app();
    attached(&mut app, None);
    app.update(ctrl(']'));
    assert_eq!(
        app.update(key(KeyCode::F(3))),
        vec![Effect::Call(RoomOp::TermDetach(Some("t1".into())))]
    );
    assert!(!app.term.shown && !app.term.attached);
    // The output pane shows the commands again.
    assert!(render(&mut app, 120, 40).contains("No commands yet"));

    attached(&mut app, None);
    app.update(term(TermFrame::Exit {
        term_id: "t1".into(),
        exit_code: Some(0),
        reason: None,
    }));
    assert!(!app.term.shown && !app.term.attached && app.term.running.is_none());
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("the room's terminal exited (code 0)"),
        "{screen}"
    );
    // Keys go to the input again.
    type_text(&mut app, "x");
    assert_eq!(app.composer.text(), "x");
}

#[test]
fn whether_a_terminal_runs_shows_in_the_status_bar() {
    let mut app = app();
    let bar = |app: &mut App| render(app, 120, 40).lines().last().unwrap().to_string();
    assert!(!bar(&mut app).contains("terminal"));
    app.update(tui_fixtures::frame(ServerFrame::State {
        state: RoomState {
            terminal: Some(TerminalState {
                term_id: "t1".into(),
                cols: 80,
                rows: 24,
            }),
            ..RoomState::default()
        },
    }));
    assert!(
        bar(&mut app).contains("terminal 80×24"),
        "{}",
        bar(&mut app)
    );
    app.update(patch(json!({"terminal": null})));
    assert!(!bar(&mut app).contains("terminal"));
    app.update(term(TermFrame::Open {
        term_id: "t2".into(),
        by: "bob".into(),
        cols: 100,
        rows: 30,
    }));
    let screen = render(&mut app, 120, 40);
    assert!(screen.lines().last().unwrap().contains("terminal 100×30"));
    assert!(
        screen.contains("bob opened the room's terminal: F3 shows it"),
        "{screen}"
    );
}

#[test]
fn an_attachment_the_backend_refuses_says_why_and_hides_the_view() {
    let mut app = app();
    app.update(key(KeyCode::F(3)));
    app.update(answer(
        RoomOp::TermOpen(None),
        Err(duet::client::rpc::RpcError::Refused(
            "unknown method \"term_open\"".into(),
        )),
    ));
    assert!(!app.term.shown);
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("the room's terminal:"), "{screen}");
}

#[test]
fn a_command_that_needs_a_terminal_names_the_key_instead_of_running() {
    let mut app = app();
    let effects = submit(&mut app, "!top");
    assert!(
        !effects
            .iter()
            .any(|e| matches!(e, Effect::Call(RoomOp::Exec(_)))),
        "{effects:?}"
    );
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("`top` needs a terminal"), "{screen}");
    assert!(screen.contains("press F3"), "{screen}");
    assert!(screen.contains("duet term"), "{screen}");
    insta::assert_snapshot!("needs_a_terminal_120x40", screen);
    // The line stays, to edit or to type into the terminal.
    assert_eq!(app.composer.text(), "!top");
    app.update(ctrl('u'));
    // Run mode too; a command that prints and exits is sent.
    app.update(ctrl('r'));
    let effects = submit(&mut app, "python3");
    assert!(!effects.iter().any(|e| matches!(e, Effect::Call(_))));
    app.update(ctrl('u'));
    let effects = submit(&mut app, "python3 -c 'print(1)'");
    assert!(
        effects.iter().any(
            |e| matches!(e, Effect::Call(RoomOp::Exec(cmd)) if cmd == "python3 -c 'print(1)'")
        ),
        "{effects:?}"
    );
}

#[test]
fn a_click_in_the_view_goes_to_a_program_that_asked_for_the_mouse() {
    use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    let mut app = app();
    attached(&mut app, None);
    app.update(snapshot(b"$ "));
    // Where the terminal's top-left cell is drawn: inside the output pane.
    let inner = app.pane_inner(Pane::Output);
    let click = |col: u16, row: u16| {
        Msg::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: inner.x + col,
            row: inner.y + row,
            modifiers: KeyModifiers::NONE,
        })
    };
    // The shell did not ask for the mouse: nothing is typed.
    assert!(typed(&app.update(click(3, 1))).is_empty());
    // A program that asks (htop, vim's mouse=a) gets xterm's SGR bytes,
    // at the cell clicked.
    app.update(output(b"\x1b[?1000h\x1b[?1006h"));
    assert_eq!(typed(&app.update(click(3, 1))), b"\x1b[<0;4;2M");
    assert_eq!(typed(&app.update(click(0, 0))), b"\x1b[<0;1;1M");
    // Outside the terminal's cells (the screen's corner): not its click.
    let outside = Msg::Mouse(MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: 0,
        row: 0,
        modifiers: KeyModifiers::NONE,
    });
    assert!(typed(&app.update(outside)).is_empty());
}

/// Issue 23: bob (90x28, the one-pane layout) pressed Ctrl+] while the
/// terminal was shown; the hidden output pane was sent as a 1×1 window and
/// squeezed the terminal for everyone. A hidden pane keeps the size it
/// had; a sliver of a pane asks for the smallest terminal, 20×5.
#[test]
fn a_hidden_or_narrow_pane_never_shrinks_the_terminal() {
    let mut app = app();
    app.update(Msg::Resize(90, 28));
    let asked = attached(&mut app, None);
    assert!(asked.cols > 80 && asked.rows > 20, "{asked:?}");
    let back = app.update(ctrl(']'));
    assert!(!app.terminal_focused());
    assert_eq!(
        app.pane_size(Pane::Output),
        (0, 0),
        "the one-pane layout hides it"
    );
    assert!(
        !back.iter().any(|e| matches!(e, Effect::TermResize { .. })),
        "a hidden pane sends no size: {back:?}"
    );
    // Nor does anything that follows while it is hidden.
    assert!(
        app.update(Msg::Resize(90, 27))
            .iter()
            .all(|e| !matches!(e, Effect::TermResize { .. }))
    );
    // Shown again: its size.
    let shown = app.update(key(KeyCode::Tab));
    assert!(app.terminal_focused());
    assert!(
        shown.iter().all(|e| match e {
            Effect::TermResize { size, .. } => size.cols >= 20 && size.rows >= 5,
            _ => true,
        }),
        "{shown:?}"
    );
    // A window smaller than the smallest terminal asks for 20×5.
    let tiny = app.update(Msg::Resize(12, 4));
    let sizes: Vec<TermSize> = tiny
        .iter()
        .filter_map(|e| match e {
            Effect::TermResize { size, .. } => Some(*size),
            _ => None,
        })
        .collect();
    assert_eq!(sizes, vec![TermSize { cols: 20, rows: 5 }]);
}

/// Issue 23 item 9: after a restore (which ends the terminal) the pane
/// showed `Terminal 1x1` until F3 twice. The pane follows the room's
/// terminal: the state saying none runs ends the view (even when the
/// `exit` was missed), and F3 opens a new one at once.
#[test]
fn the_view_follows_the_rooms_terminal_and_f3_opens_a_new_one_at_once() {
    let mut app = app();
    attached(&mut app, None);
    app.update(snapshot(b"$ vim notes.txt"));
    assert!(app.term.shown && app.term.attached);
    // The restore's patch, without an `exit` frame on this socket.
    app.update(patch(json!({"terminal": null})));
    assert!(!app.term.shown && !app.term.attached && app.term.running.is_none());
    assert!(!app.terminal_focused());
    let screen = render(&mut app, 120, 40);
    assert!(!screen.contains("Tab: keys to it"), "{screen}");
    // Keys go to the input again, not to a terminal that is gone.
    assert!(typed(&type_text(&mut app, "x")).is_empty());
    assert_eq!(app.composer.text(), "x");
    app.update(ctrl('u'));
    // One F3: a new terminal.
    let asked = pane_term_size(&app);
    let effects = app.update(key(KeyCode::F(3)));
    assert!(
        matches!(
            effects.as_slice(),
            [Effect::Call(RoomOp::TermOpen(Some(_)))]
        ),
        "{effects:?} (pane {asked:?})"
    );

    // A new terminal in the state while an old one is shown: the old one
    // ended too.
    let mut app = tui_fixtures::app();
    attached(&mut app, None);
    app.update(patch(
        json!({"terminal": {"termId": "t9", "cols": 80, "rows": 24}}),
    ));
    assert!(!app.term.shown && !app.term.attached);
    assert_eq!(
        app.term.running.as_ref().map(|t| t.term_id.as_str()),
        Some("t9")
    );
}

/// The backend restarted while the terminal was shown: the state after
/// the reconnect has none, and the socket's `term_open` (it attaches again
/// after every reconnect) opens a new one, which the pane shows at once.
#[test]
fn after_a_backend_restart_the_pane_shows_the_terminal_the_socket_opens_again() {
    use duet::client::socket::{ConnState, SocketEvent};
    let mut app = app();
    let asked = attached(&mut app, None);
    app.update(snapshot(b"$ echo an old shell's first row; ZZTAIL"));
    app.update(Msg::Socket(SocketEvent::State(ConnState::Reconnecting {
        in_secs: 1,
        reason: "The connection broke".into(),
    })));
    // The old screen's first row does not show beside the line that says so.
    let screen = render(&mut app, 240, 40);
    assert!(
        screen.contains("attaching to the room's terminal…"),
        "{screen}"
    );
    assert!(!screen.contains("ZZTAIL"), "{screen}");
    app.update(Msg::Socket(SocketEvent::State(ConnState::Connected {
        rtt_ms: None,
    })));
    app.update(patch(json!({"terminal": null})));
    assert!(app.term.shown && !app.term.attached);
    // The new terminal is ours: no toast that someone opened one.
    app.update(term(TermFrame::Open {
        term_id: "t2".into(),
        by: "ada".into(),
        cols: asked.cols,
        rows: asked.rows,
    }));
    assert!(app.toasts.is_empty(), "{:?}", app.toasts);
    app.update(answer(
        RoomOp::TermOpen(Some(asked)),
        Ok(json!({"termId": "t2", "cols": asked.cols, "rows": asked.rows})),
    ));
    assert!(app.term.shown && app.term.attached && app.terminal_focused());
    assert_eq!(app.term.screen.term_id(), Some("t2"));
}

/// Keys typed while the backend is out of reach are not kept for later:
/// they would run in whatever shell is there once it is back.
#[test]
fn keys_typed_while_offline_are_not_sent_later() {
    use duet::client::socket::{ConnState, SocketEvent};
    let mut app = app();
    let asked = attached(&mut app, None);
    app.update(Msg::Socket(SocketEvent::State(ConnState::Reconnecting {
        in_secs: 1,
        reason: "The connection broke".into(),
    })));
    let mut effects = Vec::new();
    for c in "rm -rf build".chars() {
        effects.extend(app.update(key(KeyCode::Char(c))));
    }
    effects.extend(app.update(key(KeyCode::Enter)));
    assert!(typed(&effects).is_empty());
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("offline: your keys were not sent to the terminal"),
        "{screen}"
    );
    app.update(Msg::Socket(SocketEvent::State(ConnState::Connected {
        rtt_ms: None,
    })));
    let effects = app.update(answer(
        RoomOp::TermOpen(Some(asked)),
        Ok(json!({"termId": "t2", "cols": asked.cols, "rows": asked.rows})),
    ));
    assert!(app.term.attached);
    assert!(typed(&effects).is_empty(), "nothing replayed");
}

/// An `exit` that says why (the terminal failed) shows it.
#[test]
fn an_unexpected_end_says_why() {
    let mut app = app();
    attached(&mut app, None);
    app.update(term(TermFrame::Exit {
        term_id: "t1".into(),
        exit_code: None,
        reason: Some("the terminal's connection to the sandbox was lost".into()),
    }));
    assert!(!app.term.shown && !app.term.attached && app.term.running.is_none());
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("the room's terminal ended: the terminal's connection"),
        "{screen}"
    );
    let effects = app.update(key(KeyCode::F(3)));
    assert!(
        matches!(effects.as_slice(), [Effect::Call(RoomOp::TermOpen(_))]),
        "{effects:?}"
    );
}

/// Issue 23: after the terminal died unseen, every key alice typed drew
/// a `not attached ... (term_open first)` toast. The first refusal ends
/// the view: the keys that follow go to the input, and F3 opens it again.
#[test]
fn a_refused_keystroke_ends_the_view_instead_of_a_toast_per_key() {
    let mut app = app();
    attached(&mut app, None);
    let refusal =
        "duet_term_input: this socket is not attached to terminal \"t1\" (term_open first)";
    for _ in 0..3 {
        app.update(tui_fixtures::frame(ServerFrame::Error {
            error: refusal.into(),
            retry_after_ms: None,
        }));
    }
    assert!(!app.term.shown && !app.term.attached);
    assert!(typed(&type_text(&mut app, "ab")).is_empty());
    assert_eq!(app.composer.text(), "ab");
    let screen = render(&mut app, 120, 40);
    assert!(!screen.contains("term_open first"), "{screen}");
    assert_eq!(
        screen.matches("not attached any more").count(),
        1,
        "{screen}"
    );
}
