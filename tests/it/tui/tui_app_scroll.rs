//! Scrolling without a terminal: each pane's view stays where the person
//! put it or follows the latest, the wheel scrolls the pane under it, the
//! top of the chat loads older pages, and a hidden pane says it has news.

use crate::common::tui_fixtures::*;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};
use duet::protocol::*;
use duet::tui::app::{Effect, Msg};

/// Presses PgUp until the App asks for an older page; answers the
/// `before` it asked with (`None`: it never asked).
fn page_up_until_older(app: &mut duet::tui::app::App) -> Option<Option<String>> {
    for _ in 0..500 {
        for effect in app.update(key(KeyCode::PageUp)) {
            if let Effect::LoadOlder { before } = effect {
                return Some(before);
            }
        }
    }
    None
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
fn page_up_at_the_top_loads_older_messages() {
    let mut app = app();
    let messages: Vec<_> = (101..=200).map(|i| user_msg(i, "bob", "x")).collect();
    app.update(state(messages, vec![]));
    assert!(app.chat.has_more);
    let asked = page_up_until_older(&mut app);
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
    let (w, h) = app.size;
    let output =
        duet::tui::view::layout::areas(&app, ratatui::layout::Rect::new(0, 0, w, h)).output;
    app.update(Msg::Mouse(MouseEvent {
        kind: MouseEventKind::ScrollUp,
        column: output.x + output.width / 2,
        row: 10,
        modifiers: KeyModifiers::NONE,
    }));
    assert_eq!(app.output_scroll.offset, 3);
    assert_eq!(app.chat_scroll.offset, 0);
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
fn deltas_keep_the_latest_hundred_and_older_ones_load_again() {
    let mut app = app();
    app.update(state(vec![user_msg(1, "bob", "first")], vec![]));
    for i in 2..=150 {
        app.update(delta(user_msg(i, "bob", &format!("m{i}"))));
    }
    assert_eq!(app.chat.messages().count(), 100);
    assert_eq!(app.chat.oldest_id(), Some("51"));
    assert!(app.chat.has_more, "the dropped ones are an older page");
    let asked = page_up_until_older(&mut app);
    assert_eq!(asked, Some(Some("51".to_string())));
    // Scrolled up, nothing is dropped from under the person.
    app.update(delta(user_msg(151, "ada", "while reading")));
    assert_eq!(app.chat.messages().count(), 101);
}
