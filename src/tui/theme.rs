//! Colours and styles in one place; `NO_COLOR` turns colours off and keeps
//! only text attributes (bold, dim, italic, underline, strikethrough,
//! reverse).

use crate::tui::highlight::Token;
use ratatui::style::{Color, Modifier, Style};

/// Colours people get, picked by a stable hash of the name. Magenta is the
/// agent's, red is for errors: neither is in here.
const PEOPLE: &[Color] = &[
    Color::Cyan,
    Color::Green,
    Color::Yellow,
    Color::Blue,
    Color::LightCyan,
    Color::LightGreen,
    Color::LightBlue,
    Color::LightYellow,
];

/// The styles of the whole UI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
}

impl Theme {
    /// Colour unless `NO_COLOR` is set to anything non-empty.
    pub fn from_env() -> Theme {
        Theme {
            color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }

    fn fg(&self, color: Color) -> Style {
        if self.color {
            Style::default().fg(color)
        } else {
            Style::default()
        }
    }

    /// A person's name: a stable colour per name.
    pub fn person(&self, name: &str) -> Style {
        self.fg(person_color(name)).add_modifier(Modifier::BOLD)
    }

    /// The agent's name and marks.
    pub fn agent(&self) -> Style {
        self.fg(Color::Magenta).add_modifier(Modifier::BOLD)
    }

    /// System notes and other quiet text.
    pub fn dim(&self) -> Style {
        self.fg(Color::DarkGray).add_modifier(Modifier::DIM)
    }

    /// Errors.
    pub fn error(&self) -> Style {
        self.fg(Color::Red)
    }

    /// Success marks.
    pub fn ok(&self) -> Style {
        self.fg(Color::Green)
    }

    /// Warnings (timed out, interrupted, reconnecting).
    pub fn warn(&self) -> Style {
        self.fg(Color::Yellow)
    }

    /// A command line (`$ cmd`).
    pub fn command(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    /// The gutter of code and output blocks in the chat.
    pub fn gutter(&self) -> Style {
        self.fg(Color::DarkGray)
    }

    /// Inline code in prose (without colour the backticks stay instead).
    pub fn code(&self) -> Style {
        self.fg(Color::LightYellow)
    }

    /// A piece of code in a block, by what it is; without colour only
    /// comments stand back.
    pub fn syntax(&self, token: Token) -> Style {
        match token {
            Token::Plain => Style::default(),
            Token::Comment => self.dim().add_modifier(Modifier::ITALIC),
            Token::String => self.fg(Color::Green),
            Token::Number | Token::Constant => self.fg(Color::LightRed),
            Token::Keyword => self.fg(Color::Magenta),
            Token::Type => self.fg(Color::Cyan),
            Token::Function => self.fg(Color::LightBlue),
        }
    }

    /// A heading: level 1 underlined, all bold.
    pub fn heading(&self, level: u8) -> Style {
        let style = self.fg(Color::LightMagenta).add_modifier(Modifier::BOLD);
        if level <= 1 {
            style.add_modifier(Modifier::UNDERLINED)
        } else {
            style
        }
    }

    /// A link's text (its address follows, dim).
    pub fn link(&self) -> Style {
        self.fg(Color::LightBlue).add_modifier(Modifier::UNDERLINED)
    }

    /// The bar of a block quote.
    pub fn quote(&self) -> Style {
        self.fg(Color::DarkGray)
    }

    /// Borders of the focused pane.
    pub fn focused(&self) -> Style {
        self.fg(Color::Cyan)
    }

    /// Borders of other panes.
    pub fn border(&self) -> Style {
        self.fg(Color::DarkGray)
    }

    /// The status bar.
    pub fn status(&self) -> Style {
        if self.color {
            Style::default().bg(Color::Indexed(236)).fg(Color::Gray)
        } else {
            Style::default().add_modifier(Modifier::REVERSED)
        }
    }

    /// Markers that ask for attention ("new below", the cursor line).
    pub fn marker(&self) -> Style {
        if self.color {
            Style::default().bg(Color::Blue).fg(Color::White)
        } else {
            Style::default().add_modifier(Modifier::REVERSED)
        }
    }
}

/// A stable colour for a name (FNV-1a; the same in every client).
pub fn person_color(name: &str) -> Color {
    let mut hash: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    PEOPLE[hash as usize % PEOPLE.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_are_stable_per_name() {
        assert_eq!(person_color("ada"), person_color("ada"));
        let names = ["ada", "bob", "carol", "dan", "eve", "fay"];
        let distinct: std::collections::HashSet<_> = names
            .iter()
            .map(|n| format!("{:?}", person_color(n)))
            .collect();
        assert!(distinct.len() >= 3);
        let plain = Theme { color: false };
        assert_eq!(plain.person("ada").fg, None);
    }
}
