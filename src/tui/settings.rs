//! What the config file says about the terminal client: its colours and
//! its keys. Read from the same text as the rest of the file
//! (`config::load_with`), so that mistakes are located the same way.

use crate::tui::keymap::KeyConfig;
use crate::tui::theme::Palette;
use serde::Deserialize;

/// The terminal client's part of `duet.toml` (the other keys are the
/// config's, which refuses unknown ones).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct UiSettings {
    /// `dark` or `light` (`DUET_THEME` beats it).
    pub theme: Option<Palette>,
    /// `[keys]`: action = key(s).
    pub keys: Option<KeyConfig>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_as;
    use std::path::Path;

    #[test]
    fn keys_and_theme_are_read_and_mistakes_located() {
        use crate::tui::keymap::{Action, ctrl};
        let parse = |text: &str, path: &str| parse_as::<UiSettings>(text, Path::new(path));
        let text = "theme = \"light\"\n[keys]\nsend = \"ctrl+s\"\nnewline = [\"enter\", \"alt+enter\"]\ncopy = []\n";
        let file = parse(text, "duet.toml").unwrap();
        assert_eq!(file.theme, Some(Palette::Light));
        let keys = file.keys.unwrap().0;
        let of = |action| {
            keys.iter()
                .find(|(a, _)| *a == action)
                .map(|(_, k)| k.len())
        };
        assert!(
            keys.contains(&(Action::Submit, vec![ctrl('s')])),
            "{keys:?}"
        );
        assert_eq!(of(Action::Newline), Some(2));
        assert_eq!(of(Action::Copy), Some(0));
        for (text, at, says) in [
            (
                "name = \"ada\"\n[keys]\nsend = \"ctrl+enterr\"\n",
                "line 3, column 8",
                "\"enterr\" is not a key's name",
            ),
            (
                "[keys]\nundo = \"alt+u\"\nsned = \"f9\"\n",
                "line 3, column 1",
                "no action is called \"sned\"",
            ),
            (
                "[keys]\nnewline = [\"alt+enter\", \"x\"]\n",
                "line 2, column 11",
                "types a character",
            ),
            ("theme = \"sepia\"\n", "line 1, column 9", "sepia"),
        ] {
            let err = parse(text, "/c/duet.toml").unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("/c/duet.toml at {at} is not valid: ")),
                "{err}"
            );
            assert!(err.contains(says), "{err}");
        }
        let twice = "[keys]\nsend = \"f9\"\nhelp = \"f9\"\n";
        let err = parse(twice, "/c/duet.toml").unwrap_err().to_string();
        assert!(err.contains("F9 is given to both help and send"), "{err}");
        assert!(err.starts_with("/c/duet.toml at line "), "{err}");
    }

    #[test]
    fn the_example_config_parses() {
        let text = include_str!("../../assets/duet.toml");
        parse_as::<UiSettings>(text, Path::new("assets/duet.toml")).unwrap();
    }
}
