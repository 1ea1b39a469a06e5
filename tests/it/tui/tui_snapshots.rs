//! Every view at 120×40, 80×24 and 40×12, as text, with insta; and no
//! panic at any size down to 20×5. Times are a fixed clock (UTC), ids fixed.

use crate::common::tui_fixtures::*;
use crossterm::event::KeyCode;
use duet::protocol::*;
use duet::tui::app::{App, Msg};

const SIZES: &[(u16, u16)] = &[(120, 40), (80, 24), (40, 12)];

fn snap_all(name: &str, app: &mut App) {
    for &(w, h) in SIZES {
        let screen = render(app, w, h);
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), screen);
    }
}

/// A room with a conversation, commands and people.
fn busy_room() -> App {
    let mut app = app();
    app.update(presence(&[
        ("c-ada", "ada"),
        ("c-bob", "bob"),
        ("c-li", "李小龍"),
    ]));
    let runs = vec![Run {
        cmd: "ls -la".into(),
        stdout: "total 8\ndrwxr-xr-x 2 root root 4096 .\n-rw-r--r-- 1 root root   12 notes.txt\n"
            .into(),
        stderr: String::new(),
        exit_code: Some(0),
        error: None,
        truncated: false,
        at: None,
    }];
    app.update(state(
        vec![
            user_msg(1, "bob", "can you list the workspace?"),
            agent_msg(
                2,
                "Sure, here it is. Then a snippet:\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\nOutput (ls -la):\ntotal 8",
                Some(runs),
            ),
            user_msg(3, "李小龍", "你好 👋 nice — wide characters line up"),
            user_msg(4, "ada", "a long line that has to wrap because it is longer than the narrowest pane can show in one go"),
            DuetMessage {
                client_id: None,
                id: "5".into(),
                role: Role::System,
                user_id: Some("ada".into()),
                text: "No model is configured: set --ai-url and --ai-model.".into(),
                ts: T0 + 5 * 60_000,
                runs: None,
                ..DuetMessage::default()
            },
        ],
        vec![record("e1", "cat notes.txt", "remember the milk\n")],
    ));
    app.update(exec_start(
        "e2",
        "printf '\\033[32mgreen\\033[0m\\n'; false",
        "ada",
    ));
    app.update(exec_out(
        "e2",
        "\x1b[32mgreen\x1b[0m\n10%\r50%\r100%\n\tindented\n",
    ));
    app.update(exec_err("e2", "oops\n"));
    app.update(exec_done("e2", 1, 1234));
    app.update(exec_start("e3", "make test", "agent"));
    app.update(exec_out("e3", "running 3 tests\n"));
    app
}

#[test]
fn an_empty_room() {
    let mut app = app();
    snap_all("empty", &mut app);
}

#[test]
fn a_busy_room() {
    let mut app = busy_room();
    snap_all("busy", &mut app);
}

#[test]
fn the_output_pane_when_narrow() {
    let mut app = busy_room();
    app.update(key(KeyCode::Tab));
    snap_all("output_focused", &mut app);
}

#[test]
fn the_agent_streaming_with_someone_typing() {
    let mut app = app();
    app.update(state(vec![user_msg(1, "ada", "explain this")], vec![]));
    app.update(ai(AiPhase::Start, "t1", None));
    app.update(ai(AiPhase::Delta, "t1", Some("It works like this: ")));
    app.now_ms += 4_200;
    app.update(frame(ServerFrame::Typing {
        id: "c-bob".into(),
        name: "bob".into(),
        term_id: None,
    }));
    snap_all("streaming", &mut app);
}

#[test]
fn the_help_overlay() {
    let mut app = app();
    app.update(key(KeyCode::F(1)));
    snap_all("help", &mut app);
}

#[test]
fn the_cleanup_dialog() {
    let mut app = busy_room();
    app.update(ctrl('x'));
    snap_all("confirm", &mut app);
}

#[test]
fn a_toast_and_a_multiline_input_in_run_mode() {
    let mut app = app();
    app.update(ctrl('r'));
    app.update(Msg::Paste("for i in 1 2 3; do\n  echo $i\ndone".into()));
    // Any error the App reports whole shows as this toast.
    app.update(Msg::TransferDone(Err(
        "exec failed: 400 Bad Request: invalid request; cmd: must not be empty".into(),
    )));
    snap_all("toast_multiline", &mut app);
}

#[test]
fn scrolled_up_with_new_lines_below() {
    let mut app = app();
    let mut messages: Vec<_> = (1..=40)
        .map(|i| user_msg(i, "bob", &format!("message {i}")))
        .collect();
    app.update(state(messages.clone(), vec![]));
    app.update(Msg::Resize(80, 24));
    app.update(key(KeyCode::PageUp));
    messages.push(user_msg(41, "ada", "new"));
    app.update(state(messages, vec![]));
    let screen = render(&mut app, 80, 24);
    assert!(screen.contains("new below"), "{screen}");
    insta::assert_snapshot!("scrolled_80x24", screen);
}

#[test]
fn offline_and_reconnecting_in_the_status_bar() {
    use duet::client::socket::{ConnState, SocketEvent};
    let mut app = app();
    app.update(Msg::Socket(SocketEvent::State(ConnState::Reconnecting {
        in_secs: 4,
        reason: "dropped".into(),
    })));
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("reconnecting in 4 s"), "{screen}");
    assert!(
        screen.contains("join: duet join 127.0.0.1:8787/demo-room"),
        "{screen}"
    );
}

#[test]
fn wide_characters_take_two_cells() {
    let mut app = app();
    app.update(state(
        vec![user_msg(1, "李小龍", "漢字漢字漢字漢字漢字漢字")],
        vec![],
    ));
    let screen = render(&mut app, 40, 12);
    // 12 wide characters at 2 cells each wrap in a 38-cell body (40 - indent).
    assert!(screen.contains("  漢字漢字漢字漢字漢字漢字"), "{screen}");
    let screen = render(&mut app, 20, 8);
    assert!(screen.contains("漢字漢字漢字漢字漢"), "{screen}");
}

#[test]
fn no_panic_at_any_size_down_to_20_by_5() {
    let mut app = busy_room();
    type_text(&mut app, "some input 漢字");
    for w in (1..=130).step_by(7).chain(20..=24) {
        for h in (1..=45).step_by(4).chain(5..=7) {
            render(&mut app, w, h);
            app.update(key(KeyCode::F(1)));
            render(&mut app, w, h);
            app.update(key(KeyCode::Esc));
            app.update(ctrl('x'));
            render(&mut app, w, h);
            app.update(key(KeyCode::Esc));
            app.update(key(KeyCode::Tab));
            render(&mut app, w, h);
            app.update(key(KeyCode::PageUp));
        }
    }
}

#[test]
fn a_command_the_sandbox_could_not_run_says_why() {
    let mut app = app();
    app.update(exec_start("e1", "exit 4", "ada"));
    app.update(frame(ServerFrame::Exec(ExecFrame::Complete {
        exec_id: "e1".into(),
        exit_code: None,
        duration: 20,
        timed_out: false,
        truncated: false,
        interrupted: false,
        error: Some("the shell was restarted".into()),
        cwd: None,
    })));
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("✗ error · 20ms"), "{screen}");
    assert!(
        screen.contains("error: the shell was restarted"),
        "{screen}"
    );
}

#[test]
fn no_color_draws_without_colours() {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::style::Color;
    let mut app = busy_room();
    app.theme = duet::tui::theme::Theme::PLAIN;
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    terminal.draw(|f| duet::tui::view::draw(f, &app)).unwrap();
    let buffer = terminal.backend().buffer();
    for cell in buffer.content() {
        assert_eq!(cell.fg, Color::Reset, "{cell:?}");
        assert_eq!(cell.bg, Color::Reset, "{cell:?}");
    }
}

#[test]
fn the_light_theme_draws_dark_text_for_a_white_background() {
    use duet::tui::theme::{Palette, Theme};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::style::Color;
    let mut app = busy_room();
    app.theme = Theme {
        color: true,
        palette: Palette::Light,
    };
    for c in "select me".chars() {
        app.update(key(KeyCode::Char(c)));
    }
    // Shift+Left twice: the selection shows.
    for _ in 0..2 {
        app.update(Msg::Key(crossterm::event::KeyEvent::new(
            KeyCode::Left,
            crossterm::event::KeyModifiers::SHIFT,
        )));
    }
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    terminal.draw(|f| duet::tui::view::draw(f, &app)).unwrap();
    let buffer = terminal.backend().buffer();
    // Colours that fade into white: none is a text colour here.
    let faint = [
        Color::White,
        Color::Gray,
        Color::Yellow,
        Color::LightYellow,
        Color::LightCyan,
        Color::LightGreen,
        Color::LightBlue,
        Color::LightMagenta,
    ];
    let mut coloured = 0;
    for cell in buffer.content() {
        assert!(!faint.contains(&cell.fg), "{cell:?}");
        coloured += usize::from(cell.fg != Color::Reset);
    }
    assert!(coloured > 100, "the light theme has colours: {coloured}");
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("› select me"), "{screen}");
    // The selected "me" stands out from the rest of the line.
    let (x, y) = (0..40u16)
        .find_map(|y| {
            let row: String = (0..120u16).map(|x| buffer[(x, y)].symbol()).collect();
            row.find("› select me")
                .map(|at| (row[..at].chars().count() as u16, y))
        })
        .unwrap();
    let me = &buffer[(x + 9, y)];
    let plain = &buffer[(x + 4, y)];
    assert_eq!(me.symbol(), "m");
    assert_ne!(me.bg, plain.bg, "the selection has its own background");
}
