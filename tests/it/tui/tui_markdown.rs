//! How a reply reads: each markdown element of an agent's reply in the
//! chat at 120×40 and 80×24 (insta snapshots of the chat pane, plus what a
//! person relies on: the heading's text, the hanging indent, aligned
//! columns, code lines intact behind the continuation mark, colours only
//! with colour on), people's messages kept plain, the output pane's long
//! lines and headers, and the copy key's OSC 52 bytes.

use crate::common::tui_fixtures::*;
use duet::protocol::*;
use duet::tui::app::{App, Effect, Msg, Pane};
use duet::tui::theme::Theme;
use duet::tui::view::layout;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};

const SIZES: &[(u16, u16)] = &[(120, 40), (80, 24)];

/// An App showing one agent reply.
fn reply(text: &str) -> App {
    reply_with(text, Theme::DARK)
}

/// An App showing one agent reply, with or without colour.
fn reply_with(text: &str, theme: Theme) -> App {
    let mut app = app();
    app.theme = theme;
    app.update(state(
        vec![user_msg(1, "ada", "show me"), agent_msg(2, text, None)],
        vec![],
    ));
    app
}

/// Draws the App at `w`×`h`.
fn draw(app: &mut App, w: u16, h: u16) -> Buffer {
    app.update(Msg::Resize(w, h));
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| duet::tui::view::draw(f, app)).unwrap();
    terminal.backend().buffer().clone()
}

/// The chat pane's inside as text, one string per row (right-trimmed).
fn chat_rows(app: &mut App, w: u16, h: u16) -> Vec<String> {
    pane_rows(app, Pane::Chat, w, h)
}

/// A pane's inside as text, one string per row (right-trimmed).
fn pane_rows(app: &mut App, pane: Pane, w: u16, h: u16) -> Vec<String> {
    let buffer = draw(app, w, h);
    let area = layout::areas(app, ratatui::layout::Rect::new(0, 0, w, h)).pane(pane);
    let inner = layout::pane_inner(pane, area, w >= layout::WIDE);
    (inner.y..inner.y + inner.height)
        .map(|y| row_text(&buffer, y, inner.x, inner.x + inner.width))
        .collect()
}

/// The rows of the reply's body (after the agent's header), no trailing
/// blank rows.
fn body_rows(app: &mut App, w: u16, h: u16) -> Vec<String> {
    let rows = chat_rows(app, w, h);
    let start = rows
        .iter()
        .position(|r| r.contains("✦ agent"))
        .expect("the agent's header shows");
    let mut body: Vec<String> = rows[start + 1..].to_vec();
    while body.last().is_some_and(|r| r.is_empty()) {
        body.pop();
    }
    body
}

/// The cell where `needle` first shows on screen.
fn find(buffer: &Buffer, needle: &str) -> Option<(u16, u16)> {
    let area = buffer.area;
    for y in 0..area.height {
        let row = row_text(buffer, y, 0, area.width);
        if let Some(at) = row.find(needle) {
            let x = duet::tui::text::width(&row[..at]) as u16;
            return Some((x, y));
        }
    }
    None
}

/// Snapshots the body at every size, and answers them.
fn snap(name: &str, app: &mut App) -> Vec<Vec<String>> {
    SIZES
        .iter()
        .map(|&(w, h)| {
            let body = body_rows(app, w, h);
            insta::assert_snapshot!(format!("{name}_{w}x{h}"), body.join("\n"));
            body
        })
        .collect()
}

#[test]
fn headings_and_emphasis_lose_their_marks_and_keep_their_styles() {
    let mut app = reply(
        "# Release notes\n\nSome **bold**, *italic*, ~~old~~ and `inline code`.\n\n## Next steps\nmore",
    );
    for body in snap("md_heading", &mut app) {
        assert_eq!(body[0].trim(), "Release notes", "{body:#?}");
        assert!(
            body.contains(&"  Some bold, italic, old and inline code.".to_string()),
            "{body:#?}"
        );
        assert!(body.iter().any(|r| r.trim() == "Next steps"), "{body:#?}");
        assert!(!body.iter().any(|r| r.contains('#') || r.contains("**")));
    }
    let buffer = draw(&mut app, 120, 40);
    let cell = |text: &str| {
        let (x, y) = find(&buffer, text).unwrap_or_else(|| panic!("{text} shows"));
        buffer[(x, y)].clone()
    };
    assert!(cell("Release").modifier.contains(Modifier::BOLD));
    assert!(cell("bold,").modifier.contains(Modifier::BOLD));
    assert!(cell("italic").modifier.contains(Modifier::ITALIC));
    assert!(cell("old and").modifier.contains(Modifier::CROSSED_OUT));
    assert_ne!(
        cell("inline code").fg,
        Color::Reset,
        "inline code has a colour"
    );

    let mut app = reply_with("Some `inline code`.", Theme::PLAIN);
    let rows = chat_rows(&mut app, 120, 40);
    assert!(
        rows.iter().any(|r| r.contains("Some `inline code`.")),
        "without colour the backticks show the code: {rows:#?}"
    );
}

#[test]
fn list_items_hang_under_their_text() {
    let mut app = reply(
        "Steps:\n\n1. Build it with `cargo build --release`, which takes a good while on a small machine with two cores and little else to do.\n2. Run the tests:\n   - the unit tests, quickly\n   - the end-to-end tests in tmux, which start real servers and real terminals and so take longer\n\n- [x] done\n- [ ] to do",
    );
    for body in snap("md_list", &mut app) {
        let first = body
            .iter()
            .position(|r| r.starts_with("  1. Build it"))
            .unwrap_or_else(|| panic!("the first item: {body:#?}"));
        // Its wrapped text starts under its first word, not under `1.`.
        assert!(body[first + 1].starts_with("     ") && !body[first + 1].starts_with("      "));
        let nested = body
            .iter()
            .position(|r| r.contains("◦ the end-to-end tests"))
            .unwrap_or_else(|| panic!("the nested item: {body:#?}"));
        let indent = body[nested].chars().position(|c| c == '◦').unwrap() + 2;
        let next = &body[nested + 1];
        assert_eq!(
            next.chars().take_while(|c| *c == ' ').count(),
            indent,
            "the nested item hangs: {body:#?}"
        );
        assert!(body.iter().any(|r| r.contains("• [x] done")), "{body:#?}");
        assert!(body.iter().any(|r| r.contains("• [ ] to do")), "{body:#?}");
    }
}

#[test]
fn a_block_quote_has_its_bar_on_every_line() {
    let mut app = reply(
        "> Quoted advice, long enough to wrap across the pane when the pane is as narrow as eighty columns or less.\n>\n> A second paragraph.",
    );
    for body in snap("md_quote", &mut app) {
        assert!(body.len() >= 4, "{body:#?}");
        assert!(body.iter().all(|r| r.starts_with("  ▎")), "{body:#?}");
        assert!(!body.iter().any(|r| r.contains('>')), "{body:#?}");
    }
}

#[test]
fn table_columns_line_up_and_a_narrow_pane_gets_records() {
    let md = "| Command | What it does | Time |\n|:--|:--|--:|\n| `cargo build` | compiles everything | 40 s |\n| `cargo test` | runs every test | 3 min |\n";
    let mut app = reply(md);
    for body in snap("md_table", &mut app) {
        let rows: Vec<&String> = body.iter().filter(|r| r.contains('│')).collect();
        assert_eq!(rows.len(), 3, "header and two rows: {body:#?}");
        let bars = |r: &str| -> Vec<usize> {
            r.chars()
                .enumerate()
                .filter(|(_, c)| *c == '│' || *c == '┼' || *c == '┬')
                .map(|(i, _)| i)
                .collect()
        };
        let columns = bars(rows[0]);
        assert_eq!(columns.len(), 4, "{body:#?}");
        for row in &rows {
            assert_eq!(bars(row), columns, "aligned columns: {body:#?}");
        }
        assert!(rows[0].contains("Command") && rows[0].contains("What it does"));
        // The right-aligned column ends at its border.
        assert!(rows[2].contains("3 min │"), "{body:#?}");
        assert!(!body.iter().any(|r| r.contains("|--") || r.contains(":--")));
    }
    // Wider than the pane: the long column wraps inside its cells.
    let wide = "| File | Purpose | Owner |\n|--|--|--|\n| src/tui/markdown.rs | draws the agent's markdown replies as terminal lines, tables and code included | render |\n| src/tui/app.rs | the client's state and its pure update | flow |\n";
    let mut wrapped = reply(wide);
    for body in snap("md_table_wrapped", &mut wrapped) {
        let columns: Vec<Vec<usize>> = body
            .iter()
            .filter(|r| r.contains('│'))
            .map(|r| {
                r.chars()
                    .enumerate()
                    .filter(|(_, c)| *c == '│')
                    .map(|(i, _)| i)
                    .collect()
            })
            .collect();
        assert!(columns.len() > 3, "rows wrap: {body:#?}");
        assert!(columns.iter().all(|c| *c == columns[0]), "{body:#?}");
        let words: Vec<&str> = body
            .iter()
            .flat_map(|r| r.split(|c: char| c == '│' || c.is_whitespace()))
            .filter(|w| !w.is_empty())
            .collect();
        for word in wide.split(|c: char| c == '|' || c.is_whitespace()) {
            if !word.is_empty() && !word.starts_with("--") {
                assert!(words.contains(&word), "{word} is whole: {body:#?}");
            }
        }
    }
    // Too narrow for three columns: one record per row, nothing lost.
    app.update(Msg::Resize(40, 30));
    let rows = chat_rows(&mut app, 30, 30);
    let text = rows.join("\n");
    for word in [
        "Command: cargo build",
        "What it does:",
        "compiles",
        "Time: 3 min",
    ] {
        assert!(text.contains(word), "{word}: {text}");
    }
}

#[test]
fn a_link_shows_its_text_then_its_address_dim() {
    let mut app = reply("See [the docs](https://example.com/docs) or <https://example.com/x>.");
    for body in snap("md_link", &mut app) {
        assert_eq!(
            body,
            ["  See the docs (https://example.com/docs) or https://example.com/x."]
        );
    }
    let buffer = draw(&mut app, 120, 40);
    let (x, y) = find(&buffer, "(https://example.com/docs)").unwrap();
    assert!(buffer[(x, y)].modifier.contains(Modifier::DIM));
    let (x, y) = find(&buffer, "the docs").unwrap();
    assert!(buffer[(x, y)].modifier.contains(Modifier::UNDERLINED));
}

const CODE: &str = "fn main() {\n    let greeting = \"hello\"; // a comment that makes this line long enough for the continuation mark\n    println!(\"{greeting}\");\n}";

#[test]
fn a_code_block_keeps_its_lines_marks_its_wraps_and_has_colour() {
    let mut app = reply(&format!("Here:\n\n```rust\n{CODE}\n```\n\nDone."));
    for body in snap("md_code", &mut app) {
        let open = body
            .iter()
            .position(|r| r.trim() == "╭─ rust")
            .expect("fence");
        let close = body
            .iter()
            .position(|r| r.trim() == "╰─")
            .expect("fence end");
        let code: Vec<&str> = body[open + 1..close]
            .iter()
            .map(|r| r.trim_start().strip_prefix("│ ").expect("a gutter"))
            .collect();
        // A source line goes on behind the mark; the space it broke at is
        // the end of the row above (not on screen), nothing else is lost.
        let joined: Vec<String> = code.iter().fold(Vec::new(), |mut lines, row| {
            match row.strip_prefix("↪ ") {
                Some(rest) => lines.last_mut().unwrap().push_str(&format!(" {rest}")),
                None => lines.push(row.to_string()),
            }
            lines
        });
        assert_eq!(joined.join("\n"), CODE, "{body:#?}");
        assert!(
            code.iter().any(|r| r.starts_with("↪ ")),
            "the long line wraps"
        );
        assert!(!body.iter().any(|r| r.contains("```")));
    }
    let buffer = draw(&mut app, 120, 40);
    let (x, y) = find(&buffer, "fn main").unwrap();
    let keyword = buffer[(x, y)].fg;
    let (x, y) = find(&buffer, "\"hello\"").unwrap();
    let string = buffer[(x, y)].fg;
    assert!(
        keyword != Color::Reset && string != Color::Reset && keyword != string,
        "syntax colours: {keyword:?} {string:?}"
    );
    let (x, y) = find(&buffer, "↪").unwrap();
    assert!(buffer[(x, y)].modifier.contains(Modifier::DIM));

    let mut app = reply_with(&format!("Here:\n\n```rust\n{CODE}\n```"), Theme::PLAIN);
    let buffer = draw(&mut app, 120, 40);
    assert!(
        buffer
            .content()
            .iter()
            .all(|c| c.fg == Color::Reset && c.bg == Color::Reset),
        "NO_COLOR: no colour anywhere"
    );
    let rows = chat_rows(&mut app, 120, 40);
    assert!(
        rows.iter().any(|r| r.contains("│ fn main() {")),
        "{rows:#?}"
    );
}

#[test]
fn a_rule_and_an_html_tag_read_as_text() {
    let mut app = reply("Above\n\n---\n\nBelow <b>bold?</b>");
    for body in snap("md_rule", &mut app) {
        assert_eq!(body[0], "  Above");
        assert!(
            body[2].trim().chars().all(|c| c == '─') && body[2].len() > 40,
            "{body:#?}"
        );
        assert_eq!(body[4], "  Below <b>bold?</b>");
    }
}

#[test]
fn a_persons_message_is_not_a_document() {
    let mut app = app();
    app.update(state(
        vec![user_msg(
            1,
            "bob",
            "# not a heading\n* not a list, but `code` is code\n```\nls -la\n```",
        )],
        vec![],
    ));
    let rows = chat_rows(&mut app, 120, 40);
    let text = rows.join("\n");
    assert!(text.contains("  # not a heading"), "{text}");
    assert!(text.contains("  * not a list, but code is code"), "{text}");
    assert!(text.contains("  │ ls -la"), "{text}");
}

#[test]
fn the_streaming_reply_is_markdown_too_and_hides_its_tags() {
    let mut app = app();
    app.update(state(vec![user_msg(1, "ada", "go")], vec![]));
    app.update(ai(AiPhase::Start, "t1", None));
    app.update(ai(
        AiPhase::Delta,
        "t1",
        Some("**Checking** the room.\n<run>ls -la</run>\n<run>cat READ"),
    ));
    let text = chat_rows(&mut app, 120, 40).join("\n");
    assert!(text.contains("Checking the room."), "{text}");
    assert!(text.contains("$ ls -la"), "{text}");
    assert!(text.contains("$ cat READ"), "{text}");
    assert!(!text.contains("<run>") && !text.contains("**"), "{text}");
}

#[test]
fn the_output_pane_wraps_long_lines_and_keeps_their_end() {
    let mut app = app();
    app.update(exec_start("e1", "ls -la", "ada"));
    app.update(exec_out(
        "e1",
        "total 8\n-rw-r--r-- 1 root root 1234 Jan  2 10:00 a-file-with-a-rather-long-name-at-the-end.txt\n",
    ));
    app.update(exec_done("e1", 0, 12));
    app.focus = Pane::Output;
    for &(w, h) in SIZES {
        let rows = pane_rows(&mut app, Pane::Output, w, h);
        let name = rows
            .iter()
            .position(|r| r.starts_with("-rw-r--r--"))
            .unwrap_or_else(|| panic!("{rows:#?}"));
        // What does not fit goes on behind the mark (after the space it
        // broke at), the name whole.
        let mut line = rows[name].clone();
        for row in &rows[name + 1..] {
            match row.strip_prefix("↪ ") {
                Some(rest) => line.push_str(&format!(" {rest}")),
                None => break,
            }
        }
        assert_eq!(
            line,
            "-rw-r--r-- 1 root root 1234 Jan  2 10:00 a-file-with-a-rather-long-name-at-the-end.txt",
            "{w}x{h}: {rows:#?}"
        );
        assert!(rows[name + 1].starts_with("↪ "), "{w}x{h}: {rows:#?}");
        insta::assert_snapshot!(format!("output_wrap_{w}x{h}"), rows.join("\n").trim_end());
    }
}

#[test]
fn a_long_command_never_hides_the_badge() {
    let mut app = app();
    let cmd = format!("echo {}; sleep 1 && make all", "x".repeat(200));
    app.update(exec_start("e1", &cmd, "a-person-with-a-long-name"));
    app.update(exec_done("e1", 2, 1234));
    for &(w, h) in &[(120, 40), (80, 24), (40, 12), (24, 8)] {
        app.focus = Pane::Output;
        let rows = pane_rows(&mut app, Pane::Output, w, h);
        let header = rows
            .iter()
            .find(|l| l.contains("a-person"))
            .unwrap_or_else(|| panic!("{w}x{h}: {rows:#?}"));
        assert!(header.contains("✗ 2 · 1.2s"), "{w}x{h}: {header}");
        assert!(header.starts_with("a-person"), "who ran it: {header}");
        if w >= 80 {
            assert!(
                header.contains("$ echo xx") && header.contains('…'),
                "{header}"
            );
        }
    }
}

#[test]
fn the_copy_key_sends_the_last_code_block_then_the_output() {
    let mut app = app();
    app.update(exec_start("e1", "ls", "ada"));
    app.update(exec_out("e1", "a.txt\nb.txt\n"));
    app.update(exec_done("e1", 0, 3));
    let copied = |app: &mut App| -> Option<String> {
        app.update(ctrl('y')).into_iter().find_map(|e| match e {
            Effect::Clipboard(text) => Some(text),
            _ => None,
        })
    };
    assert_eq!(copied(&mut app).as_deref(), Some("a.txt\nb.txt"));
    assert!(
        app.toasts
            .last()
            .unwrap()
            .text
            .contains("copied 2 lines of the output of `ls`"),
        "{:?}",
        app.toasts
    );
    app.update(state(
        vec![
            agent_msg(
                1,
                &format!("First:\n```rust\n{CODE}\n```\nthen\n```sh\nmake\n```"),
                None,
            ),
            user_msg(2, "bob", "thanks"),
        ],
        vec![],
    ));
    assert_eq!(copied(&mut app).as_deref(), Some("make"));
    assert_eq!(
        app.toasts.last().unwrap().text,
        "copied 1 line of the code block"
    );
    app.update(delta(agent_msg(3, &format!("```rust\n{CODE}\n```"), None)));
    assert_eq!(copied(&mut app).as_deref(), Some(CODE));
    assert_eq!(
        app.toasts.last().unwrap().text,
        "copied 4 lines of the code block"
    );
}

#[test]
fn the_copy_reaches_the_terminal_as_osc_52() {
    use base64::Engine;
    /// A terminal's input, as bytes.
    #[derive(Clone, Default)]
    struct Tty(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);
    impl std::io::Write for Tty {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    // What the event loop does with the effect: write it to the backend.
    let tty = Tty::default();
    let mut backend = ratatui::backend::CrosstermBackend::new(tty.clone());
    duet::tui::clipboard::write_osc52(&mut backend, CODE).unwrap();
    let written = String::from_utf8(tty.0.borrow().clone()).unwrap();
    let payload = written
        .strip_prefix("\x1b]52;c;")
        .and_then(|rest| rest.strip_suffix('\x07'))
        .unwrap_or_else(|| panic!("an OSC 52 sequence: {written:?}"));
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .unwrap();
    assert_eq!(String::from_utf8(decoded).unwrap(), CODE);
}

#[test]
fn the_chat_gets_most_of_a_wide_screen() {
    let mut app = app();
    let area = ratatui::layout::Rect::new(0, 0, 120, 40);
    let areas = layout::areas(&app, area);
    assert!(areas.chat.width >= 70, "{areas:?}");
    assert!(areas.output.width >= layout::SIDE_MIN, "{areas:?}");
    app.focus = Pane::Output;
    let areas = layout::areas(&app, area);
    assert!(
        areas.output.width >= 70,
        "Tab gives the output the room: {areas:?}"
    );
    for w in layout::WIDE..200 {
        app.focus = Pane::Chat;
        let areas = layout::areas(&app, ratatui::layout::Rect::new(0, 0, w, 40));
        assert_eq!(
            areas.chat.width + areas.output.width + areas.presence.width,
            w
        );
        assert!(areas.output.width >= layout::SIDE_MIN, "{w}: {areas:?}");
    }
}
