//! Colours and styles in one place, for a dark terminal or a light one
//! (`theme = "light"` in duet.toml, or `DUET_THEME=light`); `NO_COLOR`
//! turns colours off and keeps only text attributes (bold, dim, italic,
//! underline, strikethrough, reverse).

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

/// The people's colours on a light background: dark enough on white.
const PEOPLE_LIGHT: &[Color] = &[
    Color::Indexed(25),
    Color::Indexed(28),
    Color::Indexed(130),
    Color::Indexed(30),
    Color::Indexed(19),
    Color::Indexed(22),
    Color::Indexed(94),
    Color::Indexed(24),
];

/// Which background the colours are for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Palette {
    #[default]
    Dark,
    Light,
}

impl Palette {
    /// `dark` or `light` (any case).
    pub fn parse(text: &str) -> Option<Palette> {
        match text.trim().to_ascii_lowercase().as_str() {
            "dark" => Some(Palette::Dark),
            "light" => Some(Palette::Light),
            _ => None,
        }
    }
}

/// The styles of the whole UI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
    pub palette: Palette,
}

impl Theme {
    /// Colours for a dark background.
    pub const DARK: Theme = Theme {
        color: true,
        palette: Palette::Dark,
    };
    /// No colour at all (NO_COLOR).
    pub const PLAIN: Theme = Theme {
        color: false,
        palette: Palette::Dark,
    };

    /// Colour unless `NO_COLOR` is set to anything non-empty; the palette
    /// of `DUET_THEME` (`dark` or `light`), else the dark one.
    pub fn from_env() -> Theme {
        Theme::with_palette(None)
    }

    /// As `from_env`, with `configured` (duet.toml's `theme`) where
    /// `DUET_THEME` names none.
    pub fn with_palette(configured: Option<Palette>) -> Theme {
        let env = std::env::var("DUET_THEME").ok();
        Theme {
            color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
            palette: env
                .as_deref()
                .and_then(Palette::parse)
                .or(configured)
                .unwrap_or_default(),
        }
    }

    fn fg(&self, color: Color) -> Style {
        if self.color {
            Style::default().fg(color)
        } else {
            Style::default()
        }
    }

    /// `dark` on a dark background, `light` on a light one.
    fn pick(&self, dark: Color, light: Color) -> Style {
        self.fg(match self.palette {
            Palette::Dark => dark,
            Palette::Light => light,
        })
    }

    /// A person's name: a stable colour per name.
    pub fn person(&self, name: &str) -> Style {
        let color = match self.palette {
            Palette::Dark => person_color(name),
            Palette::Light => PEOPLE_LIGHT[name_hash(name) as usize % PEOPLE_LIGHT.len()],
        };
        self.fg(color).add_modifier(Modifier::BOLD)
    }

    /// The agent's name and marks.
    pub fn agent(&self) -> Style {
        self.pick(Color::Magenta, Color::Indexed(127))
            .add_modifier(Modifier::BOLD)
    }

    /// System notes and other quiet text.
    pub fn dim(&self) -> Style {
        self.pick(Color::DarkGray, Color::Indexed(244))
            .add_modifier(Modifier::DIM)
    }

    /// Errors.
    pub fn error(&self) -> Style {
        self.pick(Color::Red, Color::Indexed(160))
    }

    /// Success marks.
    pub fn ok(&self) -> Style {
        self.pick(Color::Green, Color::Indexed(28))
    }

    /// Warnings (timed out, interrupted, reconnecting).
    pub fn warn(&self) -> Style {
        self.pick(Color::Yellow, Color::Indexed(130))
    }

    /// A command line (`$ cmd`).
    pub fn command(&self) -> Style {
        self.pick(Color::Cyan, Color::Indexed(24))
            .add_modifier(Modifier::BOLD)
    }

    /// The gutter of code and output blocks in the chat.
    pub fn gutter(&self) -> Style {
        self.pick(Color::DarkGray, Color::Indexed(246))
    }

    /// Inline code in prose (without colour the backticks stay instead).
    pub fn code(&self) -> Style {
        self.pick(Color::LightYellow, Color::Indexed(94))
    }

    /// A piece of code in a block, by what it is; without colour only
    /// comments stand back.
    pub fn syntax(&self, token: Token) -> Style {
        match token {
            Token::Plain => Style::default(),
            Token::Comment => self.dim().add_modifier(Modifier::ITALIC),
            Token::String => self.pick(Color::Green, Color::Indexed(28)),
            Token::Number | Token::Constant => self.pick(Color::LightRed, Color::Indexed(124)),
            Token::Keyword => self.pick(Color::Magenta, Color::Indexed(90)),
            Token::Type => self.pick(Color::Cyan, Color::Indexed(30)),
            Token::Function => self.pick(Color::LightBlue, Color::Indexed(25)),
        }
    }

    /// What stands behind the code of a diff's added (or removed) line:
    /// a dark green (red) tint; nothing without colour, where the `+`
    /// and `-` say it.
    pub fn diff_tint(&self, added: bool) -> Style {
        if !self.color {
            return Style::default();
        }
        let bg = match (self.palette, added) {
            (Palette::Dark, true) => Color::Indexed(22),
            (Palette::Dark, false) => Color::Indexed(52),
            (Palette::Light, true) => Color::Indexed(194),
            (Palette::Light, false) => Color::Indexed(224),
        };
        Style::default().bg(bg)
    }

    /// A heading: level 1 underlined, all bold.
    pub fn heading(&self, level: u8) -> Style {
        let style = self
            .pick(Color::LightMagenta, Color::Indexed(90))
            .add_modifier(Modifier::BOLD);
        if level <= 1 {
            style.add_modifier(Modifier::UNDERLINED)
        } else {
            style
        }
    }

    /// A link's text (its address follows, dim).
    pub fn link(&self) -> Style {
        self.pick(Color::LightBlue, Color::Indexed(25))
            .add_modifier(Modifier::UNDERLINED)
    }

    /// The bar of a block quote.
    pub fn quote(&self) -> Style {
        self.pick(Color::DarkGray, Color::Indexed(246))
    }

    /// Borders of the focused pane.
    pub fn focused(&self) -> Style {
        self.pick(Color::Cyan, Color::Indexed(25))
    }

    /// Borders of other panes.
    pub fn border(&self) -> Style {
        self.pick(Color::DarkGray, Color::Indexed(248))
    }

    /// The status bar.
    pub fn status(&self) -> Style {
        match (self.color, self.palette) {
            (true, Palette::Dark) => Style::default().bg(Color::Indexed(236)).fg(Color::Gray),
            (true, Palette::Light) => Style::default()
                .bg(Color::Indexed(254))
                .fg(Color::Indexed(236)),
            (false, _) => Style::default().add_modifier(Modifier::REVERSED),
        }
    }

    /// Selected text in the input.
    pub fn selection(&self) -> Style {
        match (self.color, self.palette) {
            (true, Palette::Dark) => Style::default().bg(Color::Indexed(24)).fg(Color::White),
            (true, Palette::Light) => Style::default().bg(Color::Indexed(153)).fg(Color::Black),
            (false, _) => Style::default().add_modifier(Modifier::REVERSED),
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
    PEOPLE[name_hash(name) as usize % PEOPLE.len()]
}

/// FNV-1a of a name.
fn name_hash(name: &str) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
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
        assert_eq!(Theme::PLAIN.person("ada").fg, None);
    }

    #[test]
    fn the_light_palette_avoids_colours_unreadable_on_white() {
        let light = Theme {
            color: true,
            palette: Palette::Light,
        };
        // Yellow, white and the light colours vanish on a white background.
        let faint = [
            Color::Yellow,
            Color::LightYellow,
            Color::White,
            Color::Gray,
            Color::LightCyan,
            Color::LightGreen,
            Color::LightBlue,
            Color::LightMagenta,
        ];
        let tokens = [
            Token::String,
            Token::Number,
            Token::Keyword,
            Token::Type,
            Token::Function,
        ];
        let styles = [
            light.agent(),
            light.warn(),
            light.code(),
            light.command(),
            light.link(),
            light.heading(1),
            light.focused(),
            light.status(),
        ]
        .into_iter()
        .chain(tokens.map(|t| light.syntax(t)))
        .chain(["ada", "bob", "carol", "dan", "eve"].map(|n| light.person(n)));
        for style in styles {
            assert!(!style.fg.is_some_and(|c| faint.contains(&c)), "{style:?}");
        }
        assert_ne!(
            light.syntax(Token::String),
            Theme::DARK.syntax(Token::String)
        );
        assert_eq!(Palette::parse(" Light "), Some(Palette::Light));
        assert_eq!(Palette::parse("solarized"), None);
    }
}
