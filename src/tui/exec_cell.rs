//! A command run as a cell of the output pane: a header (who, the
//! command, exit badge and duration: the badge is never cut), the output
//! with colours kept and long lines continued behind `↪`, the fold marker,
//! a mark where the backend cut the output, and the error when the sandbox
//! could not run it.

use crate::protocol::ExecSource;
use crate::text::termtext::{OutLine, Stream};
use crate::tui::cell::{Cell, Lines, RenderCtx, elapsed, spinner};
use crate::tui::execs::ExecRun;
use crate::tui::text::{self, CONTINUED, truncate, width, wrap_marked};
use ansi_to_tui::IntoText;
use ratatui::text::{Line, Span};
use std::cell::RefCell;
use std::rc::Rc;

/// The output's lines (all but the header) as last rendered, with the
/// width and revision they were rendered for.
#[derive(Debug, Clone, Default)]
pub struct RenderCache(RefCell<Option<(u16, u64, Lines)>>);

impl Cell for ExecRun {
    fn lines(&self, width: u16, ctx: &RenderCtx) -> Lines {
        let body = self.body(width, ctx);
        let mut lines = Vec::with_capacity(body.len() + 1);
        // The header is fresh each time: a running command's spinner moves.
        lines.push(header(ctx, self, width));
        lines.extend(body.iter().cloned());
        Rc::new(lines)
    }

    fn height(&self, width: u16, ctx: &RenderCtx) -> usize {
        1 + self.body(width, ctx).len()
    }
}

impl ExecRun {
    /// The lines below the header, rendered once per width and revision:
    /// each output line cut to the width, its rest on the next lines
    /// behind the continuation mark.
    fn body(&self, width: u16, ctx: &RenderCtx) -> Lines {
        if let Some((w, rev, lines)) = &*self.cache.0.borrow()
            && (*w, *rev) == (width, self.revision)
        {
            return lines.clone();
        }
        let cells = usize::from(width).max(1);
        let rest = cells.saturating_sub(text::width(CONTINUED)).max(1);
        let mut lines: Vec<Line<'static>> = Vec::new();
        for index in 1..self.line_count() {
            let line = run_line(ctx, self, index);
            let style = line.style;
            for (i, piece) in wrap_marked(&line.spans, cells, rest)
                .into_iter()
                .enumerate()
            {
                let mut spans = Vec::with_capacity(piece.len() + 1);
                if i > 0 {
                    spans.push(Span::styled(CONTINUED, ctx.theme.dim()));
                }
                spans.extend(piece);
                lines.push(Line::from(spans).style(style));
            }
        }
        let lines = Rc::new(lines);
        *self.cache.0.borrow_mut() = Some((width, self.revision, lines.clone()));
        lines
    }
}

/// Line `index` of a run below its header (1 on): head, fold, tail, error.
fn run_line(ctx: &RenderCtx, run: &ExecRun, index: usize) -> Line<'static> {
    let head = run.output.head();
    let i = index - 1;
    if i < head.len() {
        return output_line(ctx, &head[i]);
    }
    let mut i = i - head.len();
    if run.output.folded() > 0 {
        if i == 0 {
            return Line::styled(
                format!("… {} lines hidden", run.output.folded()),
                ctx.theme.dim(),
            );
        }
        i -= 1;
    }
    if let Some(line) = run.output.tail().nth(i) {
        return output_line(ctx, &line);
    }
    let i = i - run.output.tail().count();
    if run.cut() && i == 0 {
        return Line::styled(CUT, ctx.theme.dim());
    }
    match run.error() {
        Some(error) => Line::styled(format!("error: {error}"), ctx.theme.error()),
        None => Line::default(),
    }
}

/// Below an output the backend cut.
const CUT: &str = "… output cut (over the limit)";

fn output_line(ctx: &RenderCtx, line: &OutLine) -> Line<'static> {
    let has_sgr = line.text.contains('\u{1b}');
    let parsed = if has_sgr && ctx.theme.color {
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
            crate::text::termtext::strip_sgr(&line.text)
        } else {
            line.text.clone()
        })
    });
    if line.stream == Stream::Stderr && !has_sgr {
        rendered = rendered.style(ctx.theme.error());
    }
    rendered
}

/// `ada $ cmd …… ✓ 0 · 12ms`: the badge always shows whole, then who
/// ran it, then as much of the command as fits (cut with `…`).
fn header(ctx: &RenderCtx, run: &ExecRun, cells: u16) -> Line<'static> {
    let theme = ctx.theme;
    let (badge, badge_style) = badge(ctx, run);
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
    // One space before the badge.
    let room = total.saturating_sub(width(&badge) + 1);
    let who = truncate(&who, room);
    let mut spans = vec![Span::styled(who.clone(), who_style)];
    let mut used = width(&who);
    // ` $ ` and at least two cells of the command, or none of it.
    let cmd_room = room.saturating_sub(used + 3);
    if cmd_room >= 2 {
        let cmd = truncate(&cmd, cmd_room);
        used += 3 + width(&cmd);
        spans.push(Span::styled(" $ ", theme.dim()));
        spans.push(Span::styled(cmd, theme.command()));
    }
    spans.push(Span::raw(
        " ".repeat(total.saturating_sub(used + width(&badge)).max(1)),
    ));
    spans.push(Span::styled(badge, badge_style));
    Line::from(spans)
}

fn badge(ctx: &RenderCtx, run: &ExecRun) -> (String, ratatui::style::Style) {
    let theme = ctx.theme;
    let Some(done) = &run.done else {
        if run.waiting {
            return ("… waiting".to_string(), theme.dim());
        }
        let frame = spinner(ctx.now_ms);
        return (
            format!("{frame} {}", elapsed(ctx.now_ms - run.started_ms)),
            theme.warn(),
        );
    };
    let took = duration(done.duration_ms);
    // Why it ended first: a timed-out or interrupted command also says its
    // shell was restarted (in `error`, shown below the header).
    if done.timed_out {
        return (format!("⏱ timed out · {took}"), theme.warn());
    }
    if done.interrupted {
        return (format!("■ interrupted · {took}"), theme.warn());
    }
    if done.error.is_some() {
        return (format!("✗ error · {took}"), theme.error());
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
