//! How chat cells look: a message (header, prose, code, command blocks)
//! and the agent's reply while it streams.

use crate::blocks::{self, Block};
use crate::protocol::{DuetMessage, Role};
use crate::tui::cell::{RenderCtx, clock, elapsed, spinner};
use crate::tui::chat::LiveTurn;
use crate::tui::termtext;
use crate::tui::text::{truncate, wrap};
use ratatui::text::{Line, Span};

/// Output lines of a block shown in the chat before folding.
const BLOCK_LINES: usize = 12;

fn header(msg: &DuetMessage, width: u16, ctx: &RenderCtx) -> Line<'static> {
    let theme = ctx.theme;
    let time = Span::styled(format!("{} ", clock(msg.ts, ctx.tz)), theme.dim());
    let room = usize::from(width).saturating_sub(6);
    let who = match msg.role {
        Role::Agent => Span::styled(truncate("✦ agent", room), theme.agent()),
        Role::System => Span::styled(truncate("· system", room), theme.dim()),
        Role::User => {
            let name = msg.user_id.as_deref().unwrap_or("someone");
            Span::styled(truncate(name, room), theme.person(name))
        }
    };
    Line::from(vec![time, who])
}

/// A message's lines: header, body (prose, code, command blocks), a blank.
pub fn render_message(msg: &DuetMessage, width: u16, ctx: &RenderCtx) -> Vec<Line<'static>> {
    let mut out = vec![header(msg, width, ctx)];
    let body_style = match msg.role {
        Role::System => ctx.theme.dim(),
        _ => ratatui::style::Style::default(),
    };
    if msg.role == Role::Agent {
        for block in blocks::parse(&msg.text, msg.runs.as_deref()) {
            render_block(&block, width, ctx, body_style, &mut out);
        }
    } else {
        render_prose(&msg.text, width, ctx, body_style, &mut out);
    }
    out.push(Line::default());
    out
}

pub fn render_turn(turn: &LiveTurn, width: u16, ctx: &RenderCtx) -> Vec<Line<'static>> {
    let theme = ctx.theme;
    let frame = spinner(ctx.now_ms);
    let mut out = vec![Line::from(vec![
        Span::styled(format!("{} ", clock(turn.started_ms, ctx.tz)), theme.dim()),
        Span::styled("✦ agent ", theme.agent()),
        Span::styled(
            format!("{frame} {}", elapsed(ctx.now_ms - turn.started_ms)),
            theme.warn(),
        ),
    ])];
    if turn.text.trim().is_empty() {
        out.push(Line::styled("  thinking…", theme.dim()));
    } else {
        // Commands the model asks for show as commands while it streams;
        // the stored reply has them as blocks.
        let text = turn.text.replace("<run>", "`$ ").replace("</run>", "`");
        render_prose(&text, width, ctx, Default::default(), &mut out);
    }
    out.push(Line::default());
    out
}

/// One block of a reply: prose, or a command with its output or error.
fn render_block(
    block: &Block,
    width: u16,
    ctx: &RenderCtx,
    style: ratatui::style::Style,
    out: &mut Vec<Line<'static>>,
) {
    match block {
        Block::Prose(text) => render_prose(text, width, ctx, style, out),
        Block::Output { cmd, output } => {
            render_command(cmd, width, ctx, out);
            let lines: Vec<String> = termtext::clean(output)
                .iter()
                .map(|l| termtext::strip_sgr(l))
                .collect();
            let shown = lines.len().min(BLOCK_LINES);
            for line in &lines[..shown] {
                gutter_lines(line, width, ctx, ctx.theme.dim(), out);
            }
            if lines.len() > shown {
                let more = format!("… {} more lines", lines.len() - shown);
                gutter_lines(&more, width, ctx, ctx.theme.dim(), out);
            }
        }
        Block::Error { cmd, message } => {
            render_command(cmd, width, ctx, out);
            for line in message.lines() {
                gutter_lines(line, width, ctx, ctx.theme.error(), out);
            }
        }
    }
}

fn render_command(cmd: &str, width: u16, ctx: &RenderCtx, out: &mut Vec<Line<'static>>) {
    let avail = usize::from(width).saturating_sub(4).max(1);
    for (i, part) in cmd.lines().enumerate() {
        let mark = if i == 0 { "  ╭ $ " } else { "  │   " };
        for piece in wrap(part, avail.saturating_sub(2).max(1)) {
            out.push(Line::from(vec![
                Span::styled(mark, ctx.theme.gutter()),
                Span::styled(piece, ctx.theme.command()),
            ]));
        }
    }
}

/// `text` wrapped behind the `│` gutter of code and command blocks.
fn gutter_lines(
    text: &str,
    width: u16,
    ctx: &RenderCtx,
    style: ratatui::style::Style,
    out: &mut Vec<Line<'static>>,
) {
    let avail = usize::from(width).saturating_sub(4).max(1);
    for piece in wrap(text, avail) {
        out.push(Line::from(vec![
            Span::styled("  │ ", ctx.theme.gutter()),
            Span::styled(piece, style),
        ]));
    }
}

/// Prose with fenced code set apart (gutter, code colour, no reflow).
fn render_prose(
    text: &str,
    width: u16,
    ctx: &RenderCtx,
    style: ratatui::style::Style,
    out: &mut Vec<Line<'static>>,
) {
    let avail = usize::from(width).saturating_sub(2).max(1);
    let mut in_code = false;
    for line in text.split('\n') {
        let trimmed = line.trim_start();
        if let Some(lang) = trimmed.strip_prefix("```") {
            let mark = if in_code {
                "  ╰─".to_string()
            } else {
                format!("  ╭─ {}", lang.trim())
            };
            in_code = !in_code;
            out.push(Line::styled(
                truncate(mark.trim_end(), usize::from(width)),
                ctx.theme.gutter(),
            ));
            continue;
        }
        if in_code {
            let expanded = line.replace('\t', "    ");
            gutter_lines(&expanded, width, ctx, ctx.theme.code(), out);
        } else {
            for piece in wrap(line, avail) {
                out.push(Line::from(vec![
                    Span::raw("  "),
                    Span::styled(piece, style),
                ]));
            }
        }
    }
}
