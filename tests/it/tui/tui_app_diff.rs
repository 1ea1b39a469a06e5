//! What the agent's turns changed, as a person sees it in the TUI: the
//! reply of a turn that changed files ends with `changed N files (+A −R)
//! · /diff` (asked once per turn, when its reply is stored; nothing when
//! the turn changed nothing), and `/diff` opens a view of the diff
//! against the newest turn's automatic checkpoint (or a named one) that
//! scrolls and closes; at every size, without panicking.

use crate::common::tui_fixtures::*;
use crossterm::event::KeyCode;
use duet::protocol::*;
use duet::tui::app::{App, Effect, Modal, Msg};
use duet::tui::diff::DiffFor;
use serde_json::json;

const ONE_FILE: &str = "diff --git a/a.txt b/a.txt\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..45b983be36b73c0788dc9cbcb76cbb80fc7bb057\n--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+hi\n";

/// A room where bob asked (minute 1), the turn took checkpoint c2 (at
/// minute 1) and the agent answered (minute 2).
fn room_after_a_turn() -> (App, Vec<Effect>) {
    let mut app = app();
    let effects = app.update(frame(ServerFrame::State {
        state: RoomState {
            messages: vec![
                user_msg(1, "bob", "make a.txt"),
                agent_msg(2, "Done.", None),
            ],
            checkpoints: vec![checkpoint("c2", "auto-2", true, 1)],
            ..RoomState::default()
        },
    }));
    (app, effects)
}

fn diffs_asked(effects: &[Effect]) -> Vec<(String, DiffFor)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Diff { from, purpose } => Some((from.clone(), purpose.clone())),
            _ => None,
        })
        .collect()
}

fn diffed(from: &str, purpose: DiffFor, text: &str) -> Msg {
    Msg::Diffed {
        from: from.into(),
        purpose,
        result: Ok(text.into()),
    }
}

fn last_toast(app: &App) -> String {
    app.toasts
        .last()
        .map(|t| t.text.clone())
        .unwrap_or_default()
}

#[test]
fn the_newest_turns_reply_says_what_it_changed() {
    let (mut app, effects) = room_after_a_turn();
    assert_eq!(diffs_asked(&effects), [("c2".to_string(), DiffFor::Turn)]);
    // Asked once, not again on every message.
    assert!(diffs_asked(&type_text(&mut app, "hello")).is_empty());
    app.update(diffed("c2", DiffFor::Turn, ONE_FILE));
    let screen = render(&mut app, 80, 24);
    let lines: Vec<&str> = screen.lines().collect();
    let done = lines.iter().position(|l| l.contains("Done.")).unwrap();
    assert!(
        lines[done + 1].contains("  changed 1 file (+1 −0) · /diff"),
        "{screen}"
    );
    // It stays when the state comes again (a reconnect).
    app.update(state(
        vec![
            user_msg(1, "bob", "make a.txt"),
            agent_msg(2, "Done.", None),
        ],
        Vec::new(),
    ));
    assert!(render(&mut app, 80, 24).contains("changed 1 file (+1 −0) · /diff"));
    // And at 40 columns it is cut, not wrapped.
    let narrow = render(&mut app, 40, 12);
    assert!(narrow.contains("changed 1 file"), "{narrow}");
}

#[test]
fn a_turn_that_changed_nothing_gets_no_line() {
    let (mut app, _) = room_after_a_turn();
    app.update(diffed("c2", DiffFor::Turn, ""));
    assert!(!render(&mut app, 80, 24).contains("changed"));
    // A failed fetch says nothing either (no toast for a nicety).
    let (mut app, _) = room_after_a_turn();
    app.update(Msg::Diffed {
        from: "c2".into(),
        purpose: DiffFor::Turn,
        result: Err("the backend has no /diff".into()),
    });
    assert!(app.toasts.is_empty());
    assert!(!render(&mut app, 80, 24).contains("changed"));
}

#[test]
fn a_live_turn_is_asked_about_once_its_reply_is_stored() {
    let mut app = app();
    app.update(state(vec![user_msg(1, "bob", "make a.txt")], Vec::new()));
    app.update(ai(AiPhase::Start, "t-c2", None));
    app.update(ai(AiPhase::Delta, "t-c2", Some("Done.")));
    // A state in the middle of the turn may hold its checkpoint already.
    let effects = app.update(patch(
        json!({"checkpoints": [checkpoint("c2", "auto-2", true, 1)]}),
    ));
    assert!(diffs_asked(&effects).is_empty(), "the reply is not stored");
    app.update(ai(AiPhase::End, "t-c2", None));
    let effects = app.update(delta(agent_msg(2, "Done.", None)));
    assert_eq!(diffs_asked(&effects), [("c2".to_string(), DiffFor::Turn)]);
    app.update(diffed(
        "c2",
        DiffFor::Turn,
        &format!("{ONE_FILE}diff --git a/logo.png b/logo.png\nnew file mode 100644\nGIT binary patch\nliteral 1\nIcmZ?d00001\n\n"),
    ));
    assert!(
        render(&mut app, 100, 30).contains("changed 2 files (+1 −0) · /diff"),
        "a binary file counts, with no lines"
    );
    // The next turn's reply gets its own line; the first keeps its own.
    app.update(delta(user_msg(3, "ada", "and b.txt")));
    app.update(patch(json!({"checkpoints": [
        checkpoint("c2", "auto-2", true, 1),
        checkpoint("c4", "auto-4", true, 3),
    ]})));
    let effects = app.update(delta(agent_msg(4, "Also done.", None)));
    assert_eq!(diffs_asked(&effects), [("c4".to_string(), DiffFor::Turn)]);
    app.update(diffed(
        "c4",
        DiffFor::Turn,
        &ONE_FILE.replace("a.txt", "b.txt"),
    ));
    let screen = render(&mut app, 100, 30);
    assert_eq!(screen.matches("changed ").count(), 2, "{screen}");
    assert!(screen.contains("changed 2 files"), "{screen}");
}

#[test]
fn diff_opens_the_view_of_the_newest_turn_and_scrolls_and_closes() {
    let (mut app, _) = room_after_a_turn();
    let effects = submit(&mut app, "/diff");
    assert_eq!(
        diffs_asked(&effects),
        [("c2".to_string(), DiffFor::View("auto-2".into()))]
    );
    assert!(app.composer.is_empty());
    // A long diff: 200 added lines of Rust.
    let body: String = (0..200).map(|i| format!("+let x{i} = {i};\n")).collect();
    let text = format!(
        "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -0,0 +1,200 @@\n{body}"
    );
    app.update(diffed("c2", DiffFor::View("auto-2".into()), &text));
    assert_eq!(app.modals.last(), Some(&Modal::Diff));
    let screen = render(&mut app, 80, 24);
    assert!(
        screen.contains("since auto-2 · 1 file (+200 −0)"),
        "{screen}"
    );
    assert!(screen.contains("+let x0 = 0;"), "{screen}");
    assert!(!screen.contains("+let x50 = 50;"), "{screen}");
    app.update(key(KeyCode::PageDown));
    let screen = render(&mut app, 80, 24);
    assert!(!screen.contains("+let x0 = 0;"), "{screen}");
    app.update(key(KeyCode::End));
    let screen = render(&mut app, 80, 24);
    assert!(screen.contains("+let x199 = 199;"), "{screen}");
    assert!(screen.contains("/204"), "where it is: {screen}");
    // Up from the end goes up one line at once (the end is not beyond).
    app.update(key(KeyCode::Up));
    assert!(!render(&mut app, 80, 24).contains("+let x199 = 199;"));
    app.update(key(KeyCode::Home));
    assert!(render(&mut app, 80, 24).contains("diff --git a/src/lib.rs"));
    // The wheel scrolls it too.
    let wheel = |kind| {
        Msg::Mouse(crossterm::event::MouseEvent {
            kind,
            column: 10,
            row: 10,
            modifiers: crossterm::event::KeyModifiers::NONE,
        })
    };
    app.update(wheel(crossterm::event::MouseEventKind::ScrollDown));
    assert!(!render(&mut app, 80, 24).contains("diff --git a/src/lib.rs"));
    app.update(wheel(crossterm::event::MouseEventKind::ScrollUp));
    assert!(render(&mut app, 80, 24).contains("diff --git a/src/lib.rs"));
    // Keys go to the view, not the input.
    app.update(key(KeyCode::Char('x')));
    assert!(app.composer.is_empty());
    app.update(key(KeyCode::Esc));
    assert!(app.modals.is_empty());
    assert!(app.diffs.view.is_none());
}

#[test]
fn diff_names_a_checkpoint_or_says_why_not() {
    let mut app = app();
    assert!(submit(&mut app, "/diff").is_empty());
    assert!(
        last_toast(&app).contains("no agent turn to compare with"),
        "{}",
        last_toast(&app)
    );
    app.composer = Default::default();
    app.update(patch(json!({"checkpoints": [
        checkpoint("c1", "before", false, 1),
    ]})));
    assert!(
        submit(&mut app, "/diff").is_empty(),
        "a person's is no turn's"
    );
    app.composer = Default::default();
    assert_eq!(
        diffs_asked(&submit(&mut app, "/diff before")),
        [("c1".to_string(), DiffFor::View("before".into()))]
    );
    assert!(submit(&mut app, "/diff nope").is_empty());
    assert!(
        last_toast(&app).contains("no checkpoint \"nope\""),
        "{}",
        last_toast(&app)
    );
    app.composer = Default::default();
    // An empty diff says so in the view; a failure in a toast.
    app.update(diffed("c1", DiffFor::View("before".into()), ""));
    assert!(render(&mut app, 80, 24).contains("Nothing changed since checkpoint before."));
    app.update(key(KeyCode::Esc));
    app.update(Msg::Diffed {
        from: "c1".into(),
        purpose: DiffFor::View("before".into()),
        result: Err("no such checkpoint".into()),
    });
    assert!(app.modals.is_empty());
    assert_eq!(last_toast(&app), "/diff before: no such checkpoint");
}

#[test]
fn the_view_never_panics_at_any_size_and_cuts_long_lines() {
    let (mut app, _) = room_after_a_turn();
    submit(&mut app, "/diff");
    let long = format!(
        "diff --git a/wide.py b/wide.py\n@@ -1 +1 @@\n-x = '{}'\n+x = '李小龍 👋 {}'\n",
        "a".repeat(300),
        "b".repeat(300)
    );
    app.update(diffed("c2", DiffFor::View("auto-2".into()), &long));
    for w in [20, 25, 40, 80, 200] {
        for h in [5, 8, 12, 24] {
            let screen = render(&mut app, w, h);
            for key_code in [KeyCode::PageDown, KeyCode::End, KeyCode::Up, KeyCode::Home] {
                app.update(key(key_code));
            }
            assert!(
                screen
                    .lines()
                    .all(|l| duet::tui::text::width(l) <= usize::from(w))
            );
        }
    }
    let screen = render(&mut app, 40, 12);
    assert!(screen.contains("+x = '李小龍 👋 bbb"), "{screen}");
    assert!(screen.contains("…"), "{screen}");
    insta::assert_snapshot!("diff_view_40x12", screen);
    let mut app = room_after_a_turn().0;
    submit(&mut app, "/diff");
    app.update(diffed(
        "c2",
        DiffFor::View("auto-2".into()),
        &format!("{ONE_FILE}diff --git a/src/main.rs b/src/main.rs\n--- a/src/main.rs\n+++ b/src/main.rs\n@@ -1,3 +1,3 @@\n fn main() {{\n-    println!(\"hi\");\n+    println!(\"hello\");\n }}\n"),
    ));
    insta::assert_snapshot!("diff_view_80x24", render(&mut app, 80, 24));
}

#[test]
fn help_lists_diff() {
    let mut app = app();
    app.update(key(KeyCode::F(1)));
    let lines = duet::tui::view::overlay::help_lines(&app, 100);
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    assert!(
        text.iter()
            .any(|l| l.starts_with("/diff [NAME]")
                && l.contains("since the agent's last turn began")),
        "{text:#?}"
    );
    assert!(
        text.iter()
            .any(|l| l
                .starts_with("In the diff view (/diff): Up/Down/PgUp/PgDn/Home/End scroll · Esc")),
        "{text:#?}"
    );
}
