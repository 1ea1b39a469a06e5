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

mod code;
mod plain;
mod table;

pub use code::{behind_gutter, code_block};
pub use plain::{plain, plain_code_blocks};

use crate::tui::text::{Spans, width, wrap_words};
use crate::tui::theme::Theme;
use code::strip_newline;
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use table::{Table, table_lines};

/// Bullets of nested lists, by depth.
const BULLETS: &[&str] = &["• ", "◦ ", "▪ "];

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

/// A block that holds others.
enum Container {
    Quote,
    /// A list item: its marker, shown on its first line only.
    Item {
        marker: String,
        first: bool,
    },
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
                let span = plain::code_span(&code, self.theme);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines as text, trailing blanks trimmed (also for table.rs).
    pub(super) fn text(lines: &[Line]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.to_string().trim_end().to_string())
            .collect()
    }

    pub(super) const COLOR: Theme = Theme::DARK;

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
}
