//! The output pane: every command of the room with its output, colours
//! kept, exit badge and duration.

use crate::protocol::ExecSource;
use crate::tui::app::{App, Pane};
use crate::tui::chat::{SPINNER, elapsed};
use crate::tui::execs::ExecRun;
use crate::tui::termtext::{OutLine, Stream};
use crate::tui::text::{truncate, width};
use crate::tui::view::chat::{new_below, other_pane, title_style};
use crate::tui::view::layout::pane_inner;
use ansi_to_tui::IntoText;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

/// Draws the output pane in `area`.
pub fn draw(frame: &mut Frame, app: &App, area: Rect, wide: bool) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let theme = app.theme;
    let count = app.execs.runs().len();
    let mut title = vec![
        Span::styled(" Output ", title_style(app, Pane::Output)),
        Span::styled(
            match count {
                0 => String::new(),
                1 => "1 command ".to_string(),
                n => format!("{n} commands "),
            },
            theme.dim(),
        ),
    ];
    title.extend(other_pane(app, area, Pane::Chat));
    let title = Line::from(title);
    let borders = if wide {
        Borders::TOP | Borders::LEFT
    } else {
        Borders::TOP
    };
    let border = if app.focus == Pane::Output {
        theme.focused()
    } else {
        theme.border()
    };
    frame.render_widget(
        Block::default()
            .borders(borders)
            .border_style(border)
            .title(title),
        area,
    );
    let inner = pane_inner(Pane::Output, area, wide);
    if inner.height == 0 || inner.width == 0 {
        return;
    }
    if count == 0 {
        frame.render_widget(
            Paragraph::new(Line::styled("No commands yet: !cmd runs one.", theme.dim()))
                .wrap(ratatui::widgets::Wrap { trim: true }),
            inner,
        );
        return;
    }
    let lines = visible_lines(app, inner.width, usize::from(inner.height));
    frame.render_widget(Paragraph::new(lines), inner);
    if app.output_scroll.new_below {
        new_below(frame, app, inner);
    }
}

fn visible_lines(app: &App, width: u16, height: usize) -> Vec<Line<'static>> {
    let mut skip = app.output_scroll.offset;
    let mut out = Vec::with_capacity(height);
    'runs: for run in app.execs.runs().iter().rev() {
        let total = run.height();
        if skip >= total {
            skip -= total;
            continue;
        }
        // Lines of this run, bottom up, rendered one by one.
        for index in (0..total).rev() {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            out.push(run_line(app, run, index, width));
            if out.len() == height {
                break 'runs;
            }
        }
    }
    out.reverse();
    out
}

/// Line `index` of a run: 0 is the header, then head, fold, tail.
fn run_line(app: &App, run: &ExecRun, index: usize, width: u16) -> Line<'static> {
    if index == 0 {
        return header(app, run, width);
    }
    let head = run.output.head();
    let i = index - 1;
    if i < head.len() {
        return output_line(app, &head[i]);
    }
    let mut i = i - head.len();
    if run.output.folded() > 0 {
        if i == 0 {
            return Line::styled(
                format!("… {} lines hidden", run.output.folded()),
                app.theme.dim(),
            );
        }
        i -= 1;
    }
    match run.output.tail().nth(i) {
        Some(line) => output_line(app, &line),
        None => match run.error() {
            Some(error) => Line::styled(format!("error: {error}"), app.theme.error()),
            None => Line::default(),
        },
    }
}

fn output_line(app: &App, line: &OutLine) -> Line<'static> {
    let has_sgr = line.text.contains('\u{1b}');
    let parsed = if has_sgr && app.theme.color {
        line.text
            .as_bytes()
            .into_text()
            .ok()
            .and_then(|t| t.lines.into_iter().next())
    } else {
        None
    };
    let mut rendered = parsed.unwrap_or_else(|| {
        Line::raw(if has_sgr {
            crate::tui::termtext::strip_sgr(&line.text)
        } else {
            line.text.clone()
        })
    });
    if line.stream == Stream::Stderr && !has_sgr {
        rendered = rendered.style(app.theme.error());
    }
    rendered
}

/// `● ada $ cmd …… ✓ 0 · 12ms`
fn header(app: &App, run: &ExecRun, cells: u16) -> Line<'static> {
    let theme = app.theme;
    let (badge, badge_style) = badge(app, run);
    let who_style = match run.source {
        ExecSource::Agent => theme.agent(),
        ExecSource::User => theme.person(&run.by),
    };
    let who = match run.source {
        ExecSource::Agent => format!("✦ {}", run.by),
        ExecSource::User => run.by.clone(),
    };
    let cmd = run.cmd.lines().next().unwrap_or("");
    let cmd = if run.cmd.lines().nth(1).is_some() {
        format!("{cmd} …")
    } else {
        cmd.to_string()
    };
    let total = usize::from(cells);
    let fixed = width(&who) + 3 + width(&badge) + 1;
    let cmd = truncate(&cmd, total.saturating_sub(fixed).max(1));
    let pad = total.saturating_sub(fixed + width(&cmd));
    Line::from(vec![
        Span::styled(who, who_style),
        Span::styled(" $ ", theme.dim()),
        Span::styled(cmd, theme.command()),
        Span::raw(" ".repeat(pad + 1)),
        Span::styled(badge, badge_style),
    ])
}

fn badge(app: &App, run: &ExecRun) -> (String, ratatui::style::Style) {
    let theme = app.theme;
    let Some(done) = &run.done else {
        let frame = SPINNER[((app.now_ms / 100).rem_euclid(SPINNER.len() as i64)) as usize];
        return (
            format!("{frame} {}", elapsed(app.now_ms - run.started_ms)),
            theme.warn(),
        );
    };
    let took = duration(done.duration_ms);
    if done.error.is_some() {
        return (format!("✗ error · {took}"), theme.error());
    }
    if done.timed_out {
        return (format!("⏱ timed out · {took}"), theme.warn());
    }
    if done.interrupted {
        return (format!("■ interrupted · {took}"), theme.warn());
    }
    match done.exit_code {
        Some(0) => (format!("✓ 0 · {took}"), theme.ok()),
        Some(code) => (format!("✗ {code} · {took}"), theme.error()),
        None => (format!("✗ killed · {took}"), theme.error()),
    }
}

/// `12ms`, `1.2s`, `3m04s`.
pub fn duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        elapsed(ms as i64)
    }
}
