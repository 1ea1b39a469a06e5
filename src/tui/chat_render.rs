//! How chat cells look: a message (header, then its body: the agent's
//! markdown and command blocks, a person's plain text) and the agent's
//! reply while it streams.

use crate::blocks::{self, Block};
use crate::protocol::{DuetMessage, Role};
use crate::text::termtext;
use crate::tui::cell::{RenderCtx, clock, elapsed, spinner};
use crate::tui::chat::LiveTurn;
use crate::tui::markdown;
use crate::tui::text::truncate;
use crate::tui::theme::Theme;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// Output lines of a block shown in the chat before folding.
const BLOCK_LINES: usize = 12;
/// What a message's body stands behind, under its header.
const INDENT: &str = "  ";

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
    out.extend(indent(body(msg, body_width(width), ctx.theme)));
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
        let mut body = Vec::new();
        for block in blocks::parse_streaming(&turn.text) {
            if !body.is_empty() {
                body.push(Line::default());
            }
            render_block(&block, body_width(width), theme, &mut body);
        }
        out.extend(indent(body));
    }
    out.push(Line::default());
    out
}

/// The body of a message as drawn in `width` cells (no header, no
/// indent): the agent's reply as markdown with its commands as command
/// blocks; a person's message or a record as plain text (see
/// `markdown::plain`). `duet ask` prints the same.
pub fn body(msg: &DuetMessage, width: usize, theme: Theme) -> Vec<Line<'static>> {
    match msg.role {
        Role::Agent => {
            let mut out = Vec::new();
            for block in blocks::parse(&msg.text, msg.runs.as_deref()) {
                if !out.is_empty() {
                    out.push(Line::default());
                }
                render_block(&block, width, theme, &mut out);
            }
            out
        }
        Role::System => markdown::plain(&msg.text, width, theme.dim(), theme),
        Role::User => markdown::plain(&msg.text, width, Style::default(), theme),
    }
}

/// The code of each code block a message shows, in order (what the copy
/// key copies); command blocks are not code.
pub fn code_blocks(msg: &DuetMessage) -> Vec<String> {
    match msg.role {
        Role::Agent => blocks::parse(&msg.text, msg.runs.as_deref())
            .iter()
            .flat_map(|block| match block {
                Block::Prose(text) => markdown::code_blocks(text),
                Block::Output { .. } | Block::Error { .. } => Vec::new(),
            })
            .collect(),
        Role::System | Role::User => markdown::plain_code_blocks(&msg.text),
    }
}

/// The cells a message's body gets: the pane's, less its indent.
fn body_width(width: u16) -> usize {
    usize::from(width).saturating_sub(INDENT.len()).max(1)
}

/// Body lines moved in under the header.
fn indent(lines: Vec<Line<'static>>) -> impl Iterator<Item = Line<'static>> {
    lines.into_iter().map(|mut line| {
        line.spans.insert(0, Span::raw(INDENT));
        line
    })
}

/// One block of a reply: prose, or a command with its output or error.
fn render_block(block: &Block, width: usize, theme: Theme, out: &mut Vec<Line<'static>>) {
    match block {
        Block::Prose(text) => out.extend(markdown::render(text, width, theme)),
        Block::Output { cmd, output } => {
            render_command(cmd, width, theme, out);
            let lines: Vec<String> = termtext::clean(output)
                .iter()
                .map(|l| termtext::strip_sgr(l))
                .collect();
            let shown = lines.len().min(BLOCK_LINES);
            for line in &lines[..shown] {
                marked_lines("│ ", line, width, theme, theme.dim(), out);
            }
            if lines.len() > shown {
                let more = format!("… {} more lines", lines.len() - shown);
                marked_lines("│ ", &more, width, theme, theme.dim(), out);
            }
        }
        Block::Error { cmd, message } => {
            render_command(cmd, width, theme, out);
            for line in message.lines() {
                marked_lines("│ ", line, width, theme, theme.error(), out);
            }
        }
    }
}

/// `╭ $ cmd`, each line of a multi-line command behind the gutter.
fn render_command(cmd: &str, width: usize, theme: Theme, out: &mut Vec<Line<'static>>) {
    for (i, part) in cmd.lines().enumerate() {
        let mark = if i == 0 { "╭ $ " } else { "│   " };
        marked_lines(mark, part, width, theme, theme.command(), out);
    }
}

/// `text` behind `mark` (the gutter of command blocks), a long line going
/// on behind the continuation mark.
fn marked_lines(
    mark: &'static str,
    text: &str,
    width: usize,
    theme: Theme,
    style: Style,
    out: &mut Vec<Line<'static>>,
) {
    let spans = [Span::styled(text.to_string(), style)];
    out.extend(
        markdown::behind_gutter(mark, &spans, width, theme)
            .into_iter()
            .map(Line::from),
    );
}
