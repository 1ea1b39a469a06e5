//! Markdown drawn as terminal lines, for the agent's replies: headings,
//! emphasis, inline code, lists with hanging indents, block quotes, tables
//! (aligned, bordered; one too wide for the pane becomes one record per
//! row), links (the text, then the address, dim), rules, and code blocks
//! with syntax colour whose long lines continue behind a `↪` mark.
//! pulldown-cmark parses (CommonMark with GitHub's tables, strikethrough
//! and task lists); a single line break stays a line break, as in a chat.
//! Links are plain text: ratatui has no clean way to draw OSC 8 hyperlinks
//! (an escape inside a cell breaks its width).
//! People's messages are not documents: `plain` draws them with inline
//! code and fenced code blocks only.

use crate::tui::highlight;
use crate::tui::text::{CONTINUED, Spans, spans_width, width, wrap_marked, wrap_words};
use crate::tui::theme::Theme;
use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

/// A table's column is at least this wide, and wide enough for its
/// longest word up to `LONG_WORD` (a longer word is cut); a table that
/// cannot give every column that much becomes records.
const MIN_COLUMN: usize = 5;
const LONG_WORD: usize = 16;
/// Bullets of nested lists, by depth.
const BULLETS: &[&str] = &["• ", "◦ ", "▪ "];
/// What code lines stand behind.
const GUTTER: &str = "│ ";
/// Tabs in code take this many cells.
const TAB: &str = "    ";

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// Markdown `text` as lines of at most `width` cells.
pub fn render(text: &str, width: usize, theme: Theme) -> Vec<Line<'static>> {
    let mut r = Renderer::new(width, theme);
    for event in Parser::new_ext(text, options()) {
        r.event(event);
    }
    r.flush_inline();
    r.out
}

/// The code of each code block of markdown `text`, in order.
pub fn code_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for event in Parser::new_ext(text, options()) {
        match event {
            Event::Start(Tag::CodeBlock(_)) => current = Some(String::new()),
            Event::Text(t) => {
                if let Some(code) = current.as_mut() {
                    code.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some(code) = current.take() {
                    blocks.push(strip_newline(code));
                }
            }
            _ => {}
        }
    }
    blocks
}

/// A person's message: lines as typed (wrapped at spaces), inline code
/// set apart, and fenced code blocks drawn as code.
pub fn plain(text: &str, width: usize, style: Style, theme: Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for piece in split_fences(text) {
        match piece {
            Piece::Text(line) => {
                let spans = inline_code(line, style, theme);
                out.extend(wrap_words(&spans, width, width).into_iter().map(Line::from));
            }
            Piece::Code { lang, code } => {
                out.extend(
                    code_block(lang, &code, width, theme)
                        .into_iter()
                        .map(Line::from),
                );
            }
        }
    }
    out
}

/// The code of each fenced block of a person's message, in order.
pub fn plain_code_blocks(text: &str) -> Vec<String> {
    split_fences(text)
        .into_iter()
        .filter_map(|piece| match piece {
            Piece::Code { code, .. } => Some(code),
            Piece::Text(_) => None,
        })
        .collect()
}

/// A line of a person's message, or one of its fenced blocks.
enum Piece<'a> {
    Text(&'a str),
    Code { lang: &'a str, code: String },
}

/// A message's lines, its ``` fences (an unclosed one runs to the end)
/// made blocks.
fn split_fences(text: &str) -> Vec<Piece<'_>> {
    let mut pieces = Vec::new();
    let mut open: Option<(&str, Vec<&str>)> = None;
    for line in text.split('\n') {
        let fence = line.trim_start().strip_prefix("```");
        match (open.take(), fence) {
            (None, Some(lang)) => open = Some((lang.trim(), Vec::new())),
            (None, None) => pieces.push(Piece::Text(line)),
            (Some((lang, lines)), Some(_)) => pieces.push(Piece::Code {
                lang,
                code: lines.join("\n"),
            }),
            (Some((lang, mut lines)), None) => {
                lines.push(line);
                open = Some((lang, lines));
            }
        }
    }
    if let Some((lang, lines)) = open {
        pieces.push(Piece::Code {
            lang,
            code: lines.join("\n"),
        });
    }
    pieces
}

/// `text` with its `` `code` `` spans in the code style (without colour,
/// the backticks stay to show them).
fn inline_code(text: &str, style: Style, theme: Theme) -> Spans {
    let mut spans = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        let Some(len) = rest[open + 1..].find('`') else {
            break;
        };
        let code = &rest[open + 1..open + 1 + len];
        if !rest[..open].is_empty() {
            spans.push(Span::styled(rest[..open].to_string(), style));
        }
        spans.push(code_span(code, theme));
        rest = &rest[open + 2 + len..];
    }
    if !rest.is_empty() || spans.is_empty() {
        spans.push(Span::styled(rest.to_string(), style));
    }
    spans
}

fn code_span(code: &str, theme: Theme) -> Span<'static> {
    if theme.color {
        Span::styled(code.to_string(), theme.code())
    } else {
        Span::raw(format!("`{code}`"))
    }
}

/// A code block of `cells` cells: `╭─ lang`, its lines behind `│` with
/// syntax colour (a long line continues on the next behind `↪`), `╰─`.
pub fn code_block(lang: &str, code: &str, cells: usize, theme: Theme) -> Vec<Spans> {
    let gutter = || Span::styled(GUTTER, theme.gutter());
    let title = if lang.is_empty() {
        "╭─".to_string()
    } else {
        crate::tui::text::truncate(&format!("╭─ {lang}"), cells.max(2))
    };
    let mut out = vec![vec![Span::styled(title, theme.gutter())]];
    let code = code.replace('\t', TAB);
    let avail = cells.saturating_sub(width(GUTTER)).max(1);
    for line in highlight::highlight(lang, &code).iter() {
        let spans: Spans = line
            .iter()
            .map(|(token, text)| Span::styled(text.clone(), theme.syntax(*token)))
            .collect();
        let pieces = wrap_marked(&spans, avail, avail.saturating_sub(width(CONTINUED)).max(1));
        for (i, piece) in pieces.into_iter().enumerate() {
            let mut row = vec![gutter()];
            if i > 0 {
                row.push(Span::styled(CONTINUED, theme.dim()));
            }
            row.extend(piece);
            out.push(row);
        }
    }
    out.push(vec![Span::styled("╰─", theme.gutter())]);
    out
}

fn strip_newline(mut code: String) -> String {
    if code.ends_with('\n') {
        code.pop();
    }
    code
}

/// A block that holds others.
enum Container {
    Quote,
    /// A list item: its marker, shown on its first line only.
    Item {
        marker: String,
        first: bool,
    },
}

/// A table being read.
struct Table {
    aligns: Vec<Alignment>,
    /// The header row first.
    rows: Vec<Vec<Spans>>,
}

/// The state of one walk over a document's events.
struct Renderer {
    theme: Theme,
    width: usize,
    out: Vec<Line<'static>>,
    containers: Vec<Container>,
    /// Open lists: the next number of an ordered one.
    lists: Vec<Option<u64>>,
    /// The inline text being read, in lines (a line break starts one).
    inline: Vec<Spans>,
    /// Styles of the open inline elements, innermost last.
    styles: Vec<Style>,
    /// Open links: their address and their text so far.
    links: Vec<(String, String)>,
    code: Option<(String, String)>,
    table: Option<Table>,
    /// A blank line goes before the next block.
    gap: bool,
}

impl Renderer {
    fn new(width: usize, theme: Theme) -> Renderer {
        Renderer {
            theme,
            width: width.max(1),
            out: Vec::new(),
            containers: Vec::new(),
            lists: Vec::new(),
            inline: Vec::new(),
            styles: Vec::new(),
            links: Vec::new(),
            code: None,
            table: None,
            gap: false,
        }
    }

    fn style(&self) -> Style {
        self.styles
            .iter()
            .fold(Style::default(), |acc, s| acc.patch(*s))
    }

    fn event(&mut self, event: Event) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => {
                if let Some((_, code)) = self.code.as_mut() {
                    code.push_str(&text);
                    return;
                }
                for (i, line) in text.split('\n').enumerate() {
                    if i > 0 {
                        self.line_break();
                    }
                    self.push_text(line);
                }
            }
            Event::Code(code) => {
                let span = code_span(&code, self.theme);
                if let Some((_, text)) = self.links.last_mut() {
                    text.push_str(&code);
                }
                self.push(span);
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                let style = self.style();
                for (i, line) in html.trim_end_matches('\n').split('\n').enumerate() {
                    if i > 0 {
                        self.line_break();
                    }
                    self.push(Span::styled(line.to_string(), style));
                }
            }
            Event::SoftBreak | Event::HardBreak => self.line_break(),
            Event::Rule => {
                self.start_block();
                let avail = self.avail();
                self.emit(vec![Span::styled("─".repeat(avail), self.theme.dim())]);
                self.gap = true;
            }
            Event::TaskListMarker(done) => {
                self.push(Span::raw(if done { "[x] " } else { "[ ] " }));
            }
            Event::FootnoteReference(name) => self.push_text(&format!("[{name}]")),
            Event::InlineMath(math) | Event::DisplayMath(math) => self.push_text(&math),
        }
    }

    fn start(&mut self, tag: Tag) {
        let theme = self.theme;
        match tag {
            Tag::Paragraph | Tag::HtmlBlock => self.start_block(),
            Tag::Heading { level, .. } => {
                self.start_block();
                self.styles.push(theme.heading(heading_level(level)));
            }
            Tag::BlockQuote(_) => {
                self.start_block();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => {
                self.start_block();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_string()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(first) => {
                if self.in_item() {
                    // A list inside an item follows its text directly.
                    self.flush_inline();
                    self.gap = false;
                } else {
                    self.start_block();
                }
                self.lists.push(first);
            }
            Tag::Item => {
                self.flush_inline();
                self.gap = false;
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        *n += 1;
                        format!("{}. ", *n - 1)
                    }
                    _ => BULLETS[depth % BULLETS.len()].to_string(),
                };
                self.containers.push(Container::Item {
                    marker,
                    first: true,
                });
            }
            Tag::Table(aligns) => {
                self.start_block();
                self.table = Some(Table {
                    aligns,
                    rows: Vec::new(),
                });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(table) = self.table.as_mut() {
                    table.rows.push(Vec::new());
                }
            }
            Tag::TableCell => self.inline.clear(),
            Tag::Emphasis => self
                .styles
                .push(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self
                .styles
                .push(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.styles.push(theme.link());
                self.links.push((dest_url.to_string(), String::new()));
            }
            Tag::Image { dest_url, .. } => {
                self.push_text("[image: ");
                self.links.push((dest_url.to_string(), String::new()));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock => self.end_block(),
            TagEnd::Heading(_) => {
                self.flush_inline();
                self.styles.pop();
                self.gap = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush_inline();
                self.containers.pop();
                self.gap = true;
            }
            TagEnd::CodeBlock => {
                if let Some((lang, code)) = self.code.take() {
                    let code = strip_newline(code);
                    let lines = code_block(&lang, &code, self.avail(), self.theme);
                    for line in lines {
                        self.emit(line);
                    }
                }
                self.gap = true;
            }
            TagEnd::List(_) => {
                self.flush_inline();
                self.lists.pop();
                self.gap = true;
            }
            TagEnd::Item => {
                self.flush_inline();
                if let Some(Container::Item { first: true, .. }) = self.containers.last() {
                    // An empty item still shows its marker.
                    self.emit(Vec::new());
                }
                self.containers.pop();
                self.gap = false;
            }
            TagEnd::TableCell => {
                let cell: Spans = std::mem::take(&mut self.inline)
                    .into_iter()
                    .flatten()
                    .collect();
                if let Some(row) = self.table.as_mut().and_then(|t| t.rows.last_mut()) {
                    row.push(cell);
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    for line in table_lines(&table, self.avail(), self.theme) {
                        self.emit(line);
                    }
                }
                self.gap = true;
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                self.link_address();
            }
            TagEnd::Image => {
                self.push_text("]");
                self.link_address();
            }
            _ => {}
        }
    }

    /// After a link's text: its address, dim, unless the text says it.
    fn link_address(&mut self) {
        let Some((url, text)) = self.links.pop() else {
            return;
        };
        let text = text.trim();
        let said = url.is_empty()
            || text == url
            || url.strip_prefix("mailto:") == Some(text)
            || url.starts_with('#');
        if !said {
            self.push(Span::styled(format!(" ({url})"), self.theme.dim()));
        }
    }

    fn in_item(&self) -> bool {
        matches!(self.containers.last(), Some(Container::Item { .. }))
    }

    fn push_text(&mut self, text: &str) {
        if let Some((_, link_text)) = self.links.last_mut() {
            link_text.push_str(text);
        }
        let span = Span::styled(text.to_string(), self.style());
        self.push(span);
    }

    fn push(&mut self, span: Span<'static>) {
        if span.content.is_empty() {
            return;
        }
        match self.inline.last_mut() {
            Some(line) => line.push(span),
            None => self.inline.push(vec![span]),
        }
    }

    fn line_break(&mut self) {
        if self.inline.is_empty() {
            self.inline.push(Vec::new());
        }
        self.inline.push(Vec::new());
    }

    /// Before a block: what is pending is drawn, and a blank line if due.
    fn start_block(&mut self) {
        self.flush_inline();
        if self.gap && !self.out.is_empty() {
            self.blank();
        }
        self.gap = false;
    }

    fn end_block(&mut self) {
        self.flush_inline();
        self.gap = true;
    }

    /// Draws the inline text read so far, wrapped inside the containers.
    fn flush_inline(&mut self) {
        if self.table.is_some() || self.inline.is_empty() {
            return;
        }
        let avail = self.avail();
        for line in std::mem::take(&mut self.inline) {
            for piece in wrap_words(&line, avail, avail) {
                self.emit(piece);
            }
        }
    }

    /// Cells left inside the containers' marks.
    fn avail(&self) -> usize {
        let marks: usize = self
            .containers
            .iter()
            .map(|c| match c {
                Container::Quote => 2,
                Container::Item { marker, .. } => width(marker),
            })
            .sum();
        self.width.saturating_sub(marks).max(1)
    }

    /// One line behind the containers' marks: quote bars, and an item's
    /// marker on its first line (its indent after).
    fn emit(&mut self, content: Spans) {
        let mut line = Vec::with_capacity(content.len() + self.containers.len());
        for container in &mut self.containers {
            match container {
                Container::Quote => line.push(Span::styled("▎ ", self.theme.quote())),
                Container::Item { marker, first } => {
                    if std::mem::take(first) {
                        line.push(Span::styled(marker.clone(), self.theme.agent()));
                    } else {
                        line.push(Span::raw(" ".repeat(width(marker))));
                    }
                }
            }
        }
        line.extend(content);
        self.out.push(Line::from(line));
    }

    /// A blank line: only the quote bars.
    fn blank(&mut self) {
        let bars: Spans = self
            .containers
            .iter()
            .filter(|c| matches!(c, Container::Quote))
            .map(|_| Span::styled("▎ ", self.theme.quote()))
            .collect();
        self.out.push(Line::from(bars));
    }
}

fn heading_level(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// A table in `avail` cells: bordered with aligned columns, the columns
/// that do not fit wrapped in their cells; with no room for that, one
/// record (`Header: value` lines) per row.
fn table_lines(table: &Table, avail: usize, theme: Theme) -> Vec<Spans> {
    let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
    if columns == 0 {
        return Vec::new();
    }
    let cells = |c: usize| table.rows.iter().filter_map(move |row| row.get(c));
    let natural: Vec<usize> = (0..columns)
        .map(|c| {
            cells(c)
                .map(|cell| spans_width(cell))
                .max()
                .unwrap_or(0)
                .max(1)
        })
        .collect();
    let words: Vec<usize> = (0..columns)
        .map(|c| cells(c).map(|cell| longest_word(cell)).max().unwrap_or(0))
        .collect();
    // `│ ` before each column, ` ` after, and the last `│`.
    let borders = 3 * columns + 1;
    match fit(&natural, &words, avail.saturating_sub(borders)) {
        Some(widths) => bordered(table, &widths, theme),
        None => records(table, avail, theme),
    }
}

/// The widest word of a cell.
fn longest_word(cell: &[Span]) -> usize {
    let text: String = cell.iter().map(|s| s.content.as_ref()).collect();
    text.split_whitespace().map(width).max().unwrap_or(0)
}

/// Column widths within `room`: the natural ones when they fit; else each
/// column holds its longest word (up to `LONG_WORD`, at least
/// `MIN_COLUMN`) and what is left goes, a cell at a time, to the narrowest
/// column still short of its natural width; `None` when not even the words fit.
fn fit(natural: &[usize], words: &[usize], room: usize) -> Option<Vec<usize>> {
    if natural.iter().sum::<usize>() <= room {
        return Some(natural.to_vec());
    }
    let mut widths: Vec<usize> = natural
        .iter()
        .zip(words)
        .map(|(&n, &w)| n.min(w.clamp(MIN_COLUMN, LONG_WORD)))
        .collect();
    let left = room.checked_sub(widths.iter().sum())?;
    for _ in 0..left {
        // The narrowest column still short of its natural width grows.
        let short = (0..widths.len())
            .filter(|&c| widths[c] < natural[c])
            .min_by_key(|&c| widths[c]);
        match short {
            Some(c) => widths[c] += 1,
            None => break,
        }
    }
    Some(widths)
}

fn bordered(table: &Table, widths: &[usize], theme: Theme) -> Vec<Spans> {
    let border = theme.gutter();
    let rule = |left: &str, mid: &str, right: &str| {
        let inner: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
        vec![Span::styled(
            format!("{left}{}{right}", inner.join(mid)),
            border,
        )]
    };
    let wrapped: Vec<Vec<Vec<Spans>>> = table
        .rows
        .iter()
        .map(|row| {
            widths
                .iter()
                .enumerate()
                .map(|(c, &w)| {
                    let cell = row.get(c).cloned().unwrap_or_default();
                    wrap_words(&cell, w, w)
                })
                .collect()
        })
        .collect();
    let tall = wrapped
        .iter()
        .skip(1)
        .any(|row| row.iter().any(|cell| cell.len() > 1));
    let mut out = vec![rule("┌", "┬", "┐")];
    for (r, row) in wrapped.iter().enumerate() {
        // Under the header; between rows too when some row wraps.
        if r == 1 || (r > 1 && tall) {
            out.push(rule("├", "┼", "┤"));
        }
        let height = row.iter().map(Vec::len).max().unwrap_or(1);
        for i in 0..height {
            let mut line = vec![Span::styled("│", border)];
            for (c, cell) in row.iter().enumerate() {
                let content = cell.get(i).cloned().unwrap_or_default();
                let pad = widths[c].saturating_sub(spans_width(&content));
                let (before, after) = match table.aligns.get(c) {
                    Some(Alignment::Right) => (pad, 0),
                    Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                    _ => (0, pad),
                };
                line.push(Span::raw(" ".repeat(before + 1)));
                let header = r == 0;
                line.extend(content.into_iter().map(|s| {
                    if header {
                        let style = s.style.add_modifier(Modifier::BOLD);
                        s.style(style)
                    } else {
                        s
                    }
                }));
                line.push(Span::raw(" ".repeat(after + 1)));
                line.push(Span::styled("│", border));
            }
            out.push(line);
        }
    }
    out.push(rule("└", "┴", "┘"));
    out
}

/// Each row as `Header: value` lines, a blank line between rows.
fn records(table: &Table, avail: usize, theme: Theme) -> Vec<Spans> {
    let header = table.rows.first().cloned().unwrap_or_default();
    let mut out: Vec<Spans> = Vec::new();
    for (r, row) in table.rows.iter().enumerate().skip(1) {
        if r > 1 {
            out.push(Vec::new());
        }
        for (c, cell) in row.iter().enumerate() {
            let name: String = header
                .get(c)
                .map(|h| h.iter().map(|s| s.content.as_ref()).collect())
                .unwrap_or_default();
            let mut spans = vec![Span::styled(
                format!("{name}: "),
                theme.dim().add_modifier(Modifier::BOLD),
            )];
            spans.extend(cell.iter().cloned());
            for (i, piece) in wrap_words(&spans, avail, avail.saturating_sub(2).max(1))
                .into_iter()
                .enumerate()
            {
                let mut line = if i > 0 {
                    vec![Span::raw("  ")]
                } else {
                    Vec::new()
                };
                line.extend(piece);
                out.push(line);
            }
        }
    }
    if table.rows.len() == 1 {
        // Only a header: its names in a line.
        let mut line = Vec::new();
        for (i, cell) in header.into_iter().enumerate() {
            if i > 0 {
                line.push(Span::raw("  "));
            }
            line.extend(cell);
        }
        out.push(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.to_string().trim_end().to_string())
            .collect()
    }

    const COLOR: Theme = Theme { color: true };

    #[test]
    fn code_blocks_are_found_in_order() {
        let md = "a\n```rust\nfn a() {}\n```\n\n    indented\n\n```\nlast\n```\n";
        assert_eq!(code_blocks(md), ["fn a() {}", "indented", "last"]);
        assert_eq!(
            plain_code_blocks("see\n```sh\nls\npwd\n```\nand\n```\nopen"),
            ["ls\npwd", "open"]
        );
    }

    #[test]
    fn a_list_item_hangs_under_its_text() {
        let lines = render("- one two three four five", 12, COLOR);
        assert_eq!(text(&lines), ["• one two", "  three four", "  five"]);
        let lines = render("1. first\n2. second\n   - inner item here", 14, COLOR);
        assert_eq!(
            text(&lines),
            ["1. first", "2. second", "   ◦ inner", "     item here"]
        );
    }

    #[test]
    fn tables_fit_or_become_records() {
        let md = "| name | n |\n|:--|--:|\n| ada | 1 |\n| bob | 22 |\n";
        let lines = render(md, 40, COLOR);
        assert_eq!(
            text(&lines),
            [
                "┌──────┬────┐",
                "│ name │  n │",
                "├──────┼────┤",
                "│ ada  │  1 │",
                "│ bob  │ 22 │",
                "└──────┴────┘",
            ]
        );
        let lines = render(md, 10, COLOR);
        assert_eq!(
            text(&lines),
            ["name: ada", "n: 1", "", "name: bob", "n: 22"]
        );
    }

    #[test]
    fn column_widths_share_what_is_left() {
        assert_eq!(fit(&[3, 4], &[3, 4], 10), Some(vec![3, 4]));
        assert_eq!(fit(&[3, 40, 30], &[3, 8, 6], 33), Some(vec![3, 15, 15]));
        assert_eq!(fit(&[3, 40, 12], &[3, 8, 12], 30), Some(vec![3, 15, 12]));
        assert_eq!(fit(&[30, 40], &[12, 10], 21), None, "the words do not fit");
    }
}
