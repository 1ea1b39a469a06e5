//! What is drawn over the panes: toasts, the help overlay (from the
//! keymap), the cleanup confirmation, the question before stopping
//! someone else's command or turn, `/get`'s "overwrite?", the question
//! before a restore (what is lost), `/fork`'s "switch to it?" and the
//! agent's command waiting for approval.

use crate::tui::app::App;
use crate::tui::keymap::{self, BINDINGS};
use crate::tui::slash::{PREFIXES, SLASH_COMMANDS};
use crate::tui::stop::Stop;
use crate::tui::text::{width, wrap};
use crate::tui::undo::Restore;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

/// A rectangle of at most `w`×`h` centred in `area`.
pub(crate) fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

/// Toasts, newest at the bottom, at the top right.
pub fn draw_toasts(frame: &mut Frame, app: &App, area: Rect) {
    let w = area.width.min(60);
    if w < 4 {
        return;
    }
    let mut y = area.y;
    for toast in &app.toasts {
        let style = if toast.error {
            app.theme.error()
        } else {
            app.theme.ok()
        };
        let lines: Vec<Line> = toast
            .shown()
            .lines()
            .flat_map(|l| wrap(l, usize::from(w - 2)))
            .map(Line::raw)
            .collect();
        let h = (lines.len() as u16 + 2).min(area.y + area.height - y);
        if h < 3 {
            break;
        }
        let rect = Rect {
            x: area.x + area.width - w,
            y,
            width: w,
            height: h,
        };
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(lines).block(Block::default().borders(Borders::ALL).border_style(style)),
            rect,
        );
        y += h;
    }
}

/// The help's lines, generated from the keymap and the slash commands.
pub fn help_lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let theme = app.theme;
    let key_w = BINDINGS
        .iter()
        .filter(|b| !b.edit)
        .map(|b| width_of(&keymap::keys_label(&keymap::keys_of(b))))
        .chain(SLASH_COMMANDS.iter().map(|c| width_of(c.usage)))
        .chain(PREFIXES.iter().map(|(usage, _)| width_of(usage)))
        .max()
        .unwrap_or(10);
    let row = |key: String, what: &str| {
        let pad = key_w.saturating_sub(width_of(&key));
        Line::from(vec![
            Span::styled(format!("{key}{}  ", " ".repeat(pad)), theme.command()),
            Span::raw(what.to_string()),
        ])
    };
    // What this role may not do is there, greyed out.
    let greyed = |line: Line<'static>, may: bool| {
        if may {
            line
        } else {
            line.patch_style(theme.dim())
        }
    };
    let mut lines = vec![Line::styled("Commands", theme.agent())];
    for command in SLASH_COMMANDS {
        let may = command.deed.is_none_or(|deed| app.may(deed).is_ok());
        lines.push(greyed(row(command.usage.to_string(), command.help), may));
    }
    for (usage, what) in PREFIXES {
        lines.push(row(usage.to_string(), what));
    }
    lines.push(Line::default());
    lines.push(Line::styled("Keys", theme.agent()));
    for binding in BINDINGS.iter().filter(|b| !b.edit) {
        let may = app.may_key(binding.action);
        let keys = keymap::keys_label(&keymap::keys_of(binding));
        lines.push(greyed(row(keys, binding.help), may));
    }
    if app.role() != crate::protocol::RoomRole::Owner {
        lines.push(Line::styled(
            format!(
                "(greyed out: what {} may not do)",
                app.role().with_article()
            ),
            theme.dim(),
        ));
    }
    lines.push(Line::default());
    lines.push(Line::styled(
        format!(
            "In the terminal view ({})",
            crate::tui::term_view::toggle_key()
        ),
        theme.agent(),
    ));
    for binding in keymap::TERMINAL_KEYS {
        let first = keymap::keys_of(binding)
            .first()
            .map(keymap::label)
            .unwrap_or_default();
        lines.push(row(first, binding.help));
    }
    // The diff view's keys in a line or two: they scroll and close, as
    // the other views' do.
    lines.push(Line::default());
    let (close, scroll): (Vec<_>, Vec<_>) = keymap::DIFF_KEYS
        .iter()
        .partition(|b| b.action == keymap::Action::Close);
    let labels = |bindings: &[&keymap::Binding], sep: &str| {
        bindings
            .iter()
            .map(|b| keymap::keys_label(b.keys))
            .collect::<Vec<_>>()
            .join(sep)
    };
    let head = "In the diff view (/diff):";
    let diff_keys = format!(
        "{head} {} scroll · {} close",
        labels(&scroll, "/"),
        labels(&close, ", ")
    );
    for piece in wrap(&diff_keys, usize::from(width.saturating_sub(2)).max(1)) {
        lines.push(match piece.strip_prefix(head) {
            Some(rest) => Line::from(vec![
                Span::styled(head, theme.agent()),
                Span::raw(rest.to_string()),
            ]),
            None => Line::raw(piece),
        });
    }
    lines.push(Line::default());
    lines.push(Line::styled(
        format!("In the processes view ({})", crate::tui::procs::view_key()),
        theme.agent(),
    ));
    for binding in keymap::PROCESS_KEYS {
        lines.push(row(keymap::keys_label(binding.keys), binding.help));
    }
    lines.push(Line::default());
    lines.push(Line::styled("Editing the input", theme.agent()));
    let edits: Vec<String> = BINDINGS
        .iter()
        .filter(|b| b.edit)
        .map(|b| (keymap::keys_label(&keymap::keys_of(b)), b.help))
        .filter(|(keys, _)| !keys.is_empty())
        .map(|(keys, help)| format!("{keys}: {help}"))
        .collect();
    for piece in wrap(
        &edits.join(" · "),
        usize::from(width.saturating_sub(2)).max(1),
    ) {
        lines.push(Line::raw(piece));
    }
    lines.push(Line::default());
    lines.push(Line::styled(
        "Up/Down/PgUp/PgDn scroll · Esc, q or ? close",
        theme.dim(),
    ));
    lines
}

fn width_of(s: &str) -> usize {
    width(s)
}

/// The help overlay, scrolled by `app.help_scroll`. Its lines are wrapped
/// here, so the scroll reaches the last of them.
pub fn draw_help(frame: &mut Frame, app: &App, area: Rect) {
    let outer_w = area.width.min(100);
    let inner_w = usize::from(outer_w.saturating_sub(2)).max(1);
    let lines: Vec<Line> = help_lines(app, outer_w.saturating_sub(2))
        .into_iter()
        .flat_map(|line| wrap_line(line, inner_w))
        .collect();
    let rect = centered(area, outer_w, lines.len() as u16 + 2);
    draw_scrolled(frame, app, rect, " Help ", lines);
}

/// `lines` framed in `rect` under `title`, scrolled by the help's scroll
/// (kept within them), with a mark when not all of them show.
pub(crate) fn draw_scrolled(
    frame: &mut Frame,
    app: &App,
    rect: Rect,
    title: &str,
    lines: Vec<Line<'_>>,
) {
    let shown = rect.height.saturating_sub(2);
    let max_scroll = (lines.len() as u16).saturating_sub(shown);
    let scroll = app.help_scroll.min(max_scroll);
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(app.theme.focused())
        .title(title.to_string());
    if let Some(mark) = scroll_mark(scroll, shown, lines.len() as u16) {
        block = block.title_bottom(mark.right_aligned());
    }
    frame.render_widget(Clear, rect);
    frame.render_widget(Paragraph::new(lines).scroll((scroll, 0)).block(block), rect);
}

/// A styled line word-wrapped to `cells`, keeping its style.
fn wrap_line(line: Line<'static>, cells: usize) -> Vec<Line<'static>> {
    let pieces = crate::tui::text::wrap_words(&line.spans, cells, cells);
    if pieces.is_empty() {
        return vec![line];
    }
    pieces
        .into_iter()
        .map(|spans| Line::from(spans).style(line.style))
        .collect()
}

/// ` ↓ more · 1-22/64 `: where a scrolled overlay is, when it does not
/// show all of its `total` lines (`↑` at the end).
pub(crate) fn scroll_mark(scroll: u16, shown: u16, total: u16) -> Option<Line<'static>> {
    if total <= shown || shown == 0 {
        return None;
    }
    let last = (scroll + shown).min(total);
    let arrow = if last < total { "↓ more" } else { "↑ more" };
    Some(Line::from(format!(
        " {arrow} · {}-{last}/{total} ",
        scroll + 1
    )))
}

/// "Clean up room X? y/N"
pub fn draw_confirm(frame: &mut Frame, app: &App, area: Rect) {
    const WIDTH: u16 = 54;
    let theme = app.theme;
    let what = match &app.session.folder {
        // A host folder is the person's own: a cleanup never deletes it.
        Some(folder) => format!(
            "The chat is cleared for everyone and the sandbox is stopped; the files in {folder} stay."
        ),
        None => "The chat is cleared for everyone and the sandbox is destroyed with all its files."
            .to_string(),
    };
    let rows = wrap(&what, usize::from(WIDTH - 2)).len() as u16;
    let lines = vec![
        Line::from(vec![
            Span::raw("Clean up room "),
            Span::styled(app.session.room.clone(), theme.command()),
            Span::raw("?"),
        ]),
        answers(app, "clean up", "keep"),
        Line::default(),
        Line::raw(what),
    ];
    let rect = centered(area, WIDTH, rows + 5);
    draw_question(frame, lines, rect, " Cleanup ", theme.error());
}

/// "Stop bob's `sleep 100`? y/n": Esc on someone else's command or turn.
pub fn draw_stop(frame: &mut Frame, app: &App, stop: &Stop, area: Rect) {
    let lines = vec![
        Line::raw(stop.question()),
        answers(app, "stop it", "let it run"),
        Line::default(),
        Line::raw("It is not yours: the room will see that you stopped it."),
    ];
    let w = lines.iter().map(|l| l.width()).max().unwrap_or(0) as u16 + 4;
    let rect = centered(area, w.clamp(40, 70), lines.len() as u16 + 3);
    draw_question(frame, lines, rect, " Stop? ", app.theme.warn());
}

/// "report.txt exists here (2.1 KB). Overwrite? y/n"
pub fn draw_overwrite(frame: &mut Frame, app: &App, area: Rect) {
    let Some(file) = &app.overwrite else {
        return;
    };
    let theme = app.theme;
    let lines = vec![
        Line::from(vec![
            Span::styled(file.name(), theme.command()),
            Span::raw(format!(
                " exists here ({}). Overwrite?",
                crate::tui::files::human_size(file.size)
            )),
        ]),
        answers(app, "overwrite", "keep it"),
        Line::default(),
        Line::raw(format!(
            "y replaces it with {} from the room's workspace.",
            crate::client::cp::shown(&file.remote)
        )),
    ];
    let rect = centered(area, 60, lines.len() as u16 + 3);
    draw_question(frame, lines, rect, " /get ", theme.warn());
}

/// "Restore checkpoint auto-3? y/n", and what it loses.
pub fn draw_restore(frame: &mut Frame, app: &App, restore: &Restore, area: Rect) {
    let theme = app.theme;
    let what = if restore.undo {
        "Undo: restore checkpoint "
    } else {
        "Restore checkpoint "
    };
    let mut lines = vec![
        Line::from(vec![
            Span::raw(what),
            Span::styled(restore.name.clone(), theme.command()),
            Span::raw(format!(" ({})?", restore.id)),
        ]),
        answers(app, "restore", "keep things as they are"),
        Line::default(),
        Line::raw("/workspace becomes the checkpoint again, for everyone. Lost:"),
    ];
    for lost in app.restore_losses(restore) {
        lines.push(Line::raw(format!("  • {lost}")));
    }
    let w = area.width.saturating_sub(4).min(80);
    let inner = usize::from(w.saturating_sub(2)).max(1);
    let h: usize = lines.iter().map(|l| l.width().div_ceil(inner).max(1)).sum();
    let rect = centered(area, w, h as u16 + 2);
    draw_question(frame, lines, rect, " Restore? ", theme.error());
}

/// "Room b is ready. Switch to it? y/n" after `/fork`.
pub fn draw_switch(frame: &mut Frame, app: &App, room: &str, area: Rect) {
    let theme = app.theme;
    let lines = vec![
        Line::from(vec![
            Span::raw("Room "),
            Span::styled(room.to_string(), theme.command()),
            Span::raw(" is ready. Switch to it?"),
        ]),
        answers(app, "switch", "stay here"),
        Line::default(),
        Line::raw(format!(
            "It starts with this room's files and an empty chat; room {} stays as it is.",
            app.session.room
        )),
    ];
    let rect = centered(area, 60, lines.len() as u16 + 4);
    draw_question(frame, lines, rect, " /fork ", theme.warn());
}

/// "The agent asks to run `CMD`. y approve   n deny   Esc later": the
/// command in full, however long.
pub fn draw_approval(frame: &mut Frame, app: &App, approval_id: &str, area: Rect) {
    let Some(approval) = app.approval(approval_id) else {
        return;
    };
    let theme = app.theme;
    let w = area.width.saturating_sub(4).min(90);
    let inner = usize::from(w.saturating_sub(2)).max(1);
    let mut lines = vec![
        Line::raw("The agent asks to run this command in the room's sandbox:"),
        Line::default(),
    ];
    for line in approval.cmd.lines() {
        for piece in wrap(line, inner.saturating_sub(2).max(1)) {
            lines.push(Line::styled(format!("  {piece}"), theme.command()));
        }
    }
    lines.push(Line::default());
    lines.push(Line::from(vec![
        Span::styled("y", theme.ok()),
        Span::raw(" approve: it runs   "),
        Span::styled("n", theme.error()),
        Span::raw(" deny   "),
        Span::styled("Esc", theme.command()),
        Span::raw(" answer later (F5)"),
    ]));
    let more = app.approvals.open.len().saturating_sub(1);
    let note = match more {
        0 => "The agent's turn waits for the first answer from anyone who may give one.".into(),
        n => format!("{n} more after this one wait too."),
    };
    lines.push(Line::styled(note, theme.dim()));
    let h: usize = lines.iter().map(|l| l.width().div_ceil(inner).max(1)).sum();
    let rect = centered(area, w, h as u16 + 2);
    draw_question(frame, lines, rect, " Approve? ", theme.warn());
}

/// The answers line of a y/n question: `y YES   n / Esc NO`.
fn answers(app: &App, yes: &str, no: &str) -> Line<'static> {
    let theme = app.theme;
    Line::from(vec![
        Span::styled("y", theme.error()),
        Span::raw(format!(" {yes}   ")),
        Span::styled("n", theme.ok()),
        Span::raw(format!(" / Esc {no}")),
    ])
}

/// A y/n question in a box of its own over the screen.
fn draw_question(frame: &mut Frame, lines: Vec<Line>, rect: Rect, title: &str, border: Style) {
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(ratatui::widgets::Wrap { trim: false })
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(border)
                    .title(title.to_string()),
            ),
        rect,
    );
}

/// The link dialog: what the link is, the command on one unbroken line
/// (cut, never wrapped, on a screen too narrow for it), what a copy did.
pub fn draw_link(frame: &mut Frame, app: &App, area: Rect) {
    let Some(shared) = &app.shared else {
        return;
    };
    let theme = app.theme;
    let w = (width(&shared.command) as u16 + 4).max(60).min(area.width);
    let inner = usize::from(w.saturating_sub(2)).max(1);
    let mut lines: Vec<Line> = wrap(&shared.about, inner)
        .into_iter()
        .map(Line::raw)
        .collect();
    if !shared.command.is_empty() {
        lines.push(Line::default());
        // Too wide for one line: the link on a line of its own, whole
        // where it fits (a selection then takes it in one piece).
        let command = shared.command.as_str();
        let pieces = match command.strip_prefix("duet join ") {
            Some(link) if width(command) > inner => vec!["duet join", link],
            _ => vec![command],
        };
        for piece in pieces {
            lines.push(Line::styled(
                crate::tui::text::truncate(piece, inner),
                theme.command(),
            ));
        }
        lines.push(Line::default());
        if let Some(copied) = &shared.copied {
            lines.extend(
                wrap(copied, inner)
                    .into_iter()
                    .map(|l| Line::styled(l, theme.dim())),
            );
        }
    }
    let keys = if shared.command.is_empty() {
        "Esc close"
    } else {
        "c copy again   Esc close"
    };
    lines.push(Line::styled(keys, theme.dim()));
    let rect = centered(area, w, lines.len() as u16 + 2);
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(theme.focused())
                .title(" Link "),
        ),
        rect,
    );
}
