//! Read-only list views over the panes: the room's checkpoints
//! (`/checkpoints`, live from the state) and a folder of the workspace
//! (`/ls`), each the table its CLI command prints, scrolled like the help.

use crate::protocol::{Addressee, Checkpoint, Role};
use crate::tui::app::App;
use crate::tui::text::truncate;
use crate::tui::timeline::one_line;
use crate::tui::view::overlay::{centered, draw_scrolled};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;

/// Widest a list view gets.
const MAX_WIDTH: u16 = 110;

/// `/checkpoints`: the table, then how to use it.
pub fn draw_checkpoints(frame: &mut Frame, app: &App, area: Rect) {
    let theme = app.theme;
    let list = &app.checkpoints.list;
    let mut lines: Vec<Line> = Vec::new();
    if list.is_empty() {
        lines.push(Line::styled(
            "No checkpoints yet: /checkpoint NAME saves one; the agent's turns that run \
             commands save one each.",
            theme.dim(),
        ));
    } else {
        let table = crate::client::checkpoints::table(list, app.tz);
        for (i, row) in table.lines().enumerate() {
            if i == 0 {
                lines.push(Line::styled(row.to_string(), theme.dim()));
                continue;
            }
            lines.push(Line::raw(row.to_string()));
            // Row i is the list's checkpoint i - 1 (one line each).
            if let Some(question) = list.get(i - 1).and_then(|c| question_before(app, c)) {
                lines.push(Line::styled(format!("  ↳ before {question}"), theme.dim()));
            }
        }
    }
    lines.push(Line::default());
    lines.push(Line::styled(
        "/restore NAME restores one · /undo the agent's last turn · /fork ROOM [NAME] starts a room from one",
        theme.dim(),
    ));
    draw_list(frame, app, area, " Checkpoints ", lines);
}

/// `bob's question: fix the build`: the question whose turn an automatic
/// checkpoint was taken in (before its first command): the newest message
/// to the agent stored before it, when the chat holds it.
fn question_before(app: &App, checkpoint: &Checkpoint) -> Option<String> {
    checkpoint.turn_id.as_ref()?;
    let ts = i64::try_from(checkpoint.ts).ok()?;
    let msg = app
        .chat
        .messages()
        .rev()
        .filter(|m| m.ts <= ts)
        .find(|m| m.role == Role::User && m.to.unwrap_or_default() == Addressee::Agent)?;
    let who = msg.user_id.as_deref().unwrap_or("someone");
    let text = truncate(&one_line(&msg.text), 60);
    Some(format!("{who}'s question: {text}"))
}

/// `/ls`: the folder's table.
pub fn draw_listing(frame: &mut Frame, app: &App, area: Rect) {
    let Some(listing) = &app.listing else {
        return;
    };
    let theme = app.theme;
    let mut lines: Vec<Line> = Vec::new();
    if listing.entries.is_empty() {
        lines.push(Line::styled("(empty)", theme.dim()));
    } else {
        let table = crate::client::ls::table(&listing.entries, app.tz);
        for (i, row) in table.lines().enumerate() {
            lines.push(if i == 0 {
                Line::styled(row.to_string(), theme.dim())
            } else {
                Line::raw(row.to_string())
            });
        }
    }
    let title = format!(" {} ", crate::client::ls::shown_dir(&listing.dir));
    draw_list(frame, app, area, &title, lines);
}

/// A boxed list over `area`, scrolled by `app.help_scroll`, with the
/// keys that scroll and close it at the bottom.
fn draw_list(frame: &mut Frame, app: &App, area: Rect, title: &str, mut lines: Vec<Line>) {
    lines.push(Line::default());
    lines.push(Line::styled(
        "Up/Down/PgUp/PgDn scroll · Esc or q close",
        app.theme.dim(),
    ));
    let w = area.width.saturating_sub(4).min(MAX_WIDTH);
    let rect = centered(area, w, lines.len() as u16 + 2);
    if rect.width < 10 || rect.height < 3 {
        return;
    }
    draw_scrolled(frame, app, rect, title, lines);
}
