//! Keys and actions as `duet.toml`'s `[keys]` table writes them:
//! `send = "enter"`, `newline = ["alt+enter", "ctrl+j"]`, `copy = []`.

use super::{Action, Key, KeyConfig};
use crossterm::event::{KeyCode, KeyModifiers};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// The actions `[keys]` may bind, by name: those outside dialogs, and
/// the terminal view's key.
pub const ACTION_NAMES: &[(&str, Action)] = &[
    ("send", Action::Submit),
    ("newline", Action::Newline),
    ("mode_ask", Action::ModeAsk),
    ("mode_room", Action::ModeRoom),
    ("mode_run", Action::ModeRun),
    ("stop", Action::Escape),
    ("clear", Action::ClearOrQuit),
    ("cleanup", Action::Cleanup),
    ("help", Action::Help),
    ("up", Action::Up),
    ("down", Action::Down),
    ("left", Action::Left),
    ("right", Action::Right),
    ("word_left", Action::WordLeft),
    ("word_right", Action::WordRight),
    ("home", Action::Home),
    ("end", Action::End),
    ("select_left", Action::SelectLeft),
    ("select_right", Action::SelectRight),
    ("select_word_left", Action::SelectWordLeft),
    ("select_word_right", Action::SelectWordRight),
    ("select_up", Action::SelectUp),
    ("select_down", Action::SelectDown),
    ("select_home", Action::SelectHome),
    ("select_end", Action::SelectEnd),
    ("backspace", Action::Backspace),
    ("delete", Action::Delete),
    ("delete_word", Action::DeleteWord),
    ("delete_next_word", Action::DeleteNextWord),
    ("delete_to_start", Action::DeleteToStart),
    ("delete_to_end", Action::DeleteToEnd),
    ("undo", Action::Undo),
    ("redo", Action::Redo),
    ("page_up", Action::PageUp),
    ("page_down", Action::PageDown),
    ("scroll_top", Action::ScrollTop),
    ("scroll_bottom", Action::ScrollBottom),
    ("pane", Action::SwitchPane),
    ("mouse", Action::ToggleMouse),
    ("redraw", Action::Redraw),
    ("copy", Action::Copy),
    ("share", Action::ShareLink),
    ("terminal", Action::Terminal),
    ("terminal_back", Action::TermBack),
    ("processes", Action::Processes),
    ("approvals", Action::Approvals),
];

/// The action `[keys]` calls `name`.
pub fn action(name: &str) -> Result<Action, String> {
    ACTION_NAMES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, a)| *a)
        .ok_or_else(|| {
            let names: Vec<&str> = ACTION_NAMES.iter().map(|(n, _)| *n).collect();
            format!(
                "no action is called {name:?}; the actions: {}",
                names.join(", ")
            )
        })
}

/// A key as written in `[keys]`: modifiers (`ctrl+`, `alt+`, `shift+`)
/// then a key (`enter`, `f3`, `left`, `w`, `]`…), any case. Some come as
/// two keys: Ctrl with `]`, `\`, `^` or `_` reaches a terminal without
/// keyboard enhancements as Ctrl with 5, 4, 6 or 7 (the same byte).
pub fn keys(text: &str) -> Result<Vec<Key>, String> {
    let bad = |why: &str| format!("{text:?} is not a key: {why}");
    let lower = text.trim().to_ascii_lowercase();
    if lower.is_empty() {
        return Err(bad("it is empty"));
    }
    let mut parts: Vec<&str> = lower.split('+').collect();
    // `ctrl++` is Ctrl and `+`.
    let name = match parts.pop() {
        Some("") if parts.last() == Some(&"") => {
            parts.pop();
            "+"
        }
        Some(name) => name,
        None => return Err(bad("it is empty")),
    };
    let mut mods = KeyModifiers::NONE;
    for part in parts {
        mods |= match part {
            "ctrl" | "control" | "c" => KeyModifiers::CONTROL,
            "alt" | "meta" | "option" | "m" => KeyModifiers::ALT,
            "shift" | "s" => KeyModifiers::SHIFT,
            other => return Err(bad(&format!("{other:?} is not ctrl, alt or shift"))),
        };
    }
    let code = match name {
        "enter" | "return" => KeyCode::Enter,
        "esc" | "escape" => KeyCode::Esc,
        "tab" => KeyCode::Tab,
        "backspace" => KeyCode::Backspace,
        "delete" | "del" => KeyCode::Delete,
        "insert" | "ins" => KeyCode::Insert,
        "up" => KeyCode::Up,
        "down" => KeyCode::Down,
        "left" => KeyCode::Left,
        "right" => KeyCode::Right,
        "home" => KeyCode::Home,
        "end" => KeyCode::End,
        "pageup" | "pgup" => KeyCode::PageUp,
        "pagedown" | "pgdn" => KeyCode::PageDown,
        "space" => KeyCode::Char(' '),
        f if f.starts_with('f') && f.len() > 1 => match f[1..].parse::<u8>() {
            Ok(n @ 1..=24) => KeyCode::F(n),
            _ => return Err(bad(&format!("{name:?} is not a key's name"))),
        },
        other => {
            let mut chars = other.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => KeyCode::Char(c),
                _ => return Err(bad(&format!("{name:?} is not a key's name"))),
            }
        }
    };
    if let KeyCode::Char(c) = code {
        if !mods.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) {
            return Err(bad(
                "without ctrl or alt it types a character; write ctrl+ or alt+ before it",
            ));
        }
        // Shift and a letter arrive as the capital letter.
        if mods.contains(KeyModifiers::SHIFT) {
            mods -= KeyModifiers::SHIFT;
            return Ok(vec![Key {
                code: KeyCode::Char(c.to_ascii_uppercase()),
                mods,
            }]);
        }
    }
    let key = Key { code, mods };
    let twin = match code {
        KeyCode::Char(']') => Some('5'),
        KeyCode::Char('\\') => Some('4'),
        KeyCode::Char('^') => Some('6'),
        KeyCode::Char('_' | '/') => Some('7'),
        _ => None,
    }
    .filter(|_| mods == KeyModifiers::CONTROL);
    Ok(match twin {
        Some(c) => vec![
            key,
            Key {
                code: KeyCode::Char(c),
                mods,
            },
        ],
        None => vec![key],
    })
}

/// `[keys]`: each action's keys. An unknown action, a bad key or a key
/// given to two actions is an error (the parser says where).
impl<'de> Deserialize<'de> for KeyConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(TableVisitor)
    }
}

struct TableVisitor;

impl<'de> Visitor<'de> for TableVisitor {
    type Value = KeyConfig;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a table of action = \"key\" or [\"key\", …]")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<KeyConfig, A::Error> {
        let mut out: Vec<(Action, Vec<Key>)> = Vec::new();
        while let Some(ActionName(name, action)) = map.next_key()? {
            let KeyList(keys) = map.next_value()?;
            for key in &keys {
                if let Some((other, _)) = out.iter().find(|(_, ks)| ks.contains(key)) {
                    let other = ACTION_NAMES
                        .iter()
                        .find(|(_, a)| a == other)
                        .map_or("another action", |(n, _)| n);
                    return Err(de::Error::custom(format!(
                        "{} is given to both {other} and {name}",
                        super::label(key)
                    )));
                }
            }
            out.push((action, keys));
        }
        Ok(KeyConfig(out))
    }
}

/// A key of `[keys]`: an action's name.
struct ActionName(String, Action);

impl<'de> Deserialize<'de> for ActionName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        let found = action(&name).map_err(de::Error::custom)?;
        Ok(ActionName(name, found))
    }
}

/// A value of `[keys]`: one key string or a list of them (`[]` unbinds).
struct KeyList(Vec<Key>);

impl<'de> Deserialize<'de> for KeyList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(KeyListVisitor)
    }
}

struct KeyListVisitor;

impl<'de> Visitor<'de> for KeyListVisitor {
    type Value = KeyList;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key such as \"ctrl+w\", or a list of keys")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<KeyList, E> {
        keys(text).map(KeyList).map_err(E::custom)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<KeyList, A::Error> {
        let mut out = Vec::new();
        while let Some(text) = seq.next_element::<String>()? {
            out.extend(keys(&text).map_err(de::Error::custom)?);
        }
        Ok(KeyList(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Key {
        let keys = keys(text).unwrap();
        assert_eq!(keys.len(), 1, "{text}");
        keys[0]
    }

    #[test]
    fn key_strings_parse() {
        assert_eq!(one("enter"), super::super::k(KeyCode::Enter));
        assert_eq!(
            one("Alt+Enter"),
            super::super::with(KeyCode::Enter, KeyModifiers::ALT)
        );
        assert_eq!(one("ctrl+w"), super::super::ctrl('w'));
        assert_eq!(one("CTRL+W"), super::super::ctrl('w'));
        assert_eq!(one("f3"), super::super::k(KeyCode::F(3)));
        assert_eq!(
            one("shift+left"),
            super::super::with(KeyCode::Left, KeyModifiers::SHIFT)
        );
        assert_eq!(
            one("ctrl+shift+right"),
            super::super::with(KeyCode::Right, KeyModifiers::CONTROL | KeyModifiers::SHIFT)
        );
        assert_eq!(
            one("alt+shift+u"),
            super::super::with(KeyCode::Char('U'), KeyModifiers::ALT)
        );
        assert_eq!(one("ctrl++"), super::super::ctrl('+'));
        assert_eq!(
            keys("ctrl+_").unwrap(),
            [super::super::ctrl('_'), super::super::ctrl('7')]
        );
        assert_eq!(
            keys("ctrl+]").unwrap(),
            [super::super::ctrl(']'), super::super::ctrl('5')]
        );
    }

    #[test]
    fn bad_key_strings_say_why() {
        for (text, why) in [
            ("", "empty"),
            ("hyper+x", "\"hyper\" is not ctrl, alt or shift"),
            ("ctrl+enterr", "\"enterr\" is not a key's name"),
            ("f99", "\"f99\" is not a key's name"),
            ("x", "types a character"),
            ("shift+x", "types a character"),
        ] {
            let err = keys(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
        assert_eq!(action("send"), Ok(Action::Submit));
        let err = action("sned").unwrap_err();
        assert!(err.contains("\"sned\"") && err.contains("newline"), "{err}");
    }

    #[test]
    fn the_example_config_documents_every_action_and_its_example_parses() {
        let example = include_str!("../../../assets/duet.toml");
        for (name, _) in ACTION_NAMES {
            assert!(example.contains(&format!(" {name} (")), "{name}");
        }
        // Its commented `[keys]` example, uncommented.
        let keys: String = example
            .lines()
            .skip_while(|l| *l != "# [keys]")
            .map(|l| l.trim_start_matches("# ").to_string() + "\n")
            .collect();
        let config: KeyConfig = toml::from_str::<toml::Table>(&keys)
            .ok()
            .and_then(|t| t.get("keys").cloned())
            .and_then(|v| v.try_into().ok())
            .unwrap_or_default();
        assert_eq!(config.0.len(), 4, "{keys}");
    }
}
