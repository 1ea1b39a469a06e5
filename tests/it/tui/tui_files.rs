//! `/put` and `/get` in the App: the same path rules as `duet cp`
//! (refused here with the reason, the line kept to fix), and `/get` asks
//! before it replaces a file here. Update and snapshot tests.

use crate::common::tui_fixtures::*;
use crossterm::event::KeyCode;
use duet::tui::app::{App, Effect, Modal, Msg};
use duet::tui::files::Overwrite;

fn last_toast(app: &App) -> &str {
    app.toasts
        .last()
        .map(|t| t.text.as_str())
        .unwrap_or_default()
}

#[test]
fn workspace_paths_follow_the_rules_of_duet_cp() {
    let mut app = app();
    assert_eq!(
        submit(&mut app, "/get /workspace/out/report.csv"),
        vec![Effect::Get {
            remote: "out/report.csv".into(),
            local: String::new(),
            replace: false,
        }]
    );
    assert_eq!(
        submit(&mut app, "/put notes.txt /workspace/docs/"),
        vec![Effect::Put {
            local: "notes.txt".into(),
            remote: "docs/".into(),
        }]
    );
    assert!(submit(&mut app, "/put notes.txt /tmp/x").is_empty());
    assert_eq!(
        last_toast(&app),
        "/tmp/x is outside /workspace: only files in the room's /workspace can be copied"
    );
    assert_eq!(app.composer.text(), "/put notes.txt /tmp/x", "kept to fix");
    app.composer.take();
    assert!(submit(&mut app, "/get ../secret").is_empty());
    assert!(
        last_toast(&app).contains("outside /workspace"),
        "{}",
        last_toast(&app)
    );
    app.composer.take();
    assert!(submit(&mut app, "/get /workspace/docs/").is_empty());
    assert!(
        last_toast(&app).contains("is a folder"),
        "{}",
        last_toast(&app)
    );
}

fn report() -> Overwrite {
    Overwrite {
        remote: "report.txt".into(),
        to: "./report.txt".into(),
        size: 2150,
    }
}

#[test]
fn get_asks_before_it_replaces_a_file_here() {
    let mut app = app();
    app.update(Msg::WouldOverwrite(report()));
    assert_eq!(app.modals, [Modal::ConfirmOverwrite]);
    let screen = render(&mut app, 80, 24);
    assert!(
        screen.contains("report.txt exists here (2.1 KB). Overwrite?"),
        "{screen}"
    );
    insta::assert_snapshot!("overwrite_80x24", screen);
    // Typing goes to the question, not the input.
    assert!(app.update(key(KeyCode::Char('x'))).is_empty());
    assert!(app.composer.is_empty());
    // n keeps the file, and says so.
    assert!(app.update(key(KeyCode::Char('n'))).is_empty());
    assert!(app.modals.is_empty());
    assert_eq!(
        last_toast(&app),
        "kept report.txt: /workspace/report.txt was not downloaded"
    );
    // Esc and Enter keep it too.
    for keep in [KeyCode::Esc, KeyCode::Enter] {
        app.update(Msg::WouldOverwrite(report()));
        assert!(app.update(key(keep)).is_empty());
        assert!(app.modals.is_empty());
    }
    // y replaces that very file.
    app.update(Msg::WouldOverwrite(report()));
    assert_eq!(
        app.update(key(KeyCode::Char('y'))),
        vec![Effect::Get {
            remote: "report.txt".into(),
            local: "./report.txt".into(),
            replace: true,
        }]
    );
    assert!(app.modals.is_empty());
    assert!(app.overwrite.is_none());
}
