//! Keybindings as data: one table says which key does what, and both the
//! help overlay and the footer hints are generated from it.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a key asks for. The App decides what it means in its state
/// (e.g. Esc interrupts a command, else cancels the agent's turn).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Submit,
    Newline,
    ModeAsk,
    ModeRun,
    Up,
    Down,
    Left,
    Right,
    Home,
    End,
    Backspace,
    Delete,
    DeleteWord,
    DeleteToStart,
    DeleteToEnd,
    Escape,
    ClearOrQuit,
    Cleanup,
    Help,
    PageUp,
    PageDown,
    ScrollTop,
    ScrollBottom,
    SwitchPane,
    ToggleMouse,
    Redraw,
}

/// One key with its modifiers (Ctrl and Alt; Shift only where it matters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

/// A key without modifiers.
const fn k(code: KeyCode) -> Key {
    Key {
        code,
        mods: KeyModifiers::NONE,
    }
}

/// Ctrl and a letter.
const fn ctrl(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        mods: KeyModifiers::CONTROL,
    }
}

/// A key with these modifiers.
const fn with(code: KeyCode, mods: KeyModifiers) -> Key {
    Key { code, mods }
}

/// A row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub keys: &'static [Key],
    pub action: Action,
    /// What the help overlay says it does.
    pub help: &'static str,
    /// A short label for the footer, for the few bindings shown there.
    pub hint: Option<&'static str>,
    /// Line editing keys are listed together, compactly, in the help.
    pub edit: bool,
}

/// Every binding outside dialogs. The first key of a row is the one shown.
pub const BINDINGS: &[Binding] = &[
    Binding {
        keys: &[k(KeyCode::Enter)],
        action: Action::Submit,
        help: "send: a message to the agent, `!cmd` runs cmd, `/help` lists commands",
        hint: None,
        edit: false,
    },
    Binding {
        keys: &[
            with(KeyCode::Enter, KeyModifiers::ALT),
            ctrl('j'),
            with(KeyCode::Enter, KeyModifiers::SHIFT),
        ],
        action: Action::Newline,
        help: "new line in the input",
        hint: None,
        edit: false,
    },
    Binding {
        keys: &[ctrl('g')],
        action: Action::ModeAsk,
        help: "mode: ask the agent",
        hint: Some("ask"),
        edit: false,
    },
    Binding {
        keys: &[ctrl('r')],
        action: Action::ModeRun,
        help: "mode: run a command in the sandbox",
        hint: Some("run"),
        edit: false,
    },
    Binding {
        keys: &[k(KeyCode::Esc)],
        action: Action::Escape,
        help: "interrupt the running command, else cancel the agent's turn; close a dialog",
        hint: Some("stop"),
        edit: false,
    },
    Binding {
        keys: &[ctrl('x')],
        action: Action::Cleanup,
        help: "clean the room up (asks first)",
        hint: Some("cleanup"),
        edit: false,
    },
    Binding {
        keys: &[k(KeyCode::F(1))],
        action: Action::Help,
        help: "this help (also `?` on an empty line)",
        hint: Some("help"),
        edit: false,
    },
    Binding {
        keys: &[ctrl('c')],
        action: Action::ClearOrQuit,
        help: "clear the input; twice to quit",
        hint: None,
        edit: false,
    },
    Binding {
        keys: &[k(KeyCode::Up)],
        action: Action::Up,
        help: "previous input (history) / line up",
        hint: None,
        edit: true,
    },
    Binding {
        keys: &[k(KeyCode::Down)],
        action: Action::Down,
        help: "next input (history) / line down",
        hint: None,
        edit: true,
    },
    Binding {
        keys: &[k(KeyCode::PageUp)],
        action: Action::PageUp,
        help: "scroll up (at the top: load older messages)",
        hint: None,
        edit: false,
    },
    Binding {
        keys: &[k(KeyCode::PageDown)],
        action: Action::PageDown,
        help: "scroll down",
        hint: None,
        edit: false,
    },
    Binding {
        keys: &[with(KeyCode::Home, KeyModifiers::CONTROL)],
        action: Action::ScrollTop,
        help: "scroll to the top (Home on an empty line too)",
        hint: None,
        edit: false,
    },
    Binding {
        keys: &[with(KeyCode::End, KeyModifiers::CONTROL)],
        action: Action::ScrollBottom,
        help: "follow the latest (End on an empty line too)",
        hint: None,
        edit: false,
    },
    Binding {
        keys: &[k(KeyCode::Tab)],
        action: Action::SwitchPane,
        help: "switch between chat and output",
        hint: Some("pane"),
        edit: false,
    },
    Binding {
        keys: &[k(KeyCode::F(2))],
        action: Action::ToggleMouse,
        help: "mouse: wheel scrolling, or selecting text to copy",
        hint: Some("mouse"),
        edit: false,
    },
    Binding {
        keys: &[ctrl('l')],
        action: Action::Redraw,
        help: "redraw the whole screen",
        hint: None,
        edit: false,
    },
    Binding {
        keys: &[k(KeyCode::Left)],
        action: Action::Left,
        help: "cursor left",
        hint: None,
        edit: true,
    },
    Binding {
        keys: &[k(KeyCode::Right)],
        action: Action::Right,
        help: "cursor right",
        hint: None,
        edit: true,
    },
    Binding {
        keys: &[k(KeyCode::Home), ctrl('a')],
        action: Action::Home,
        help: "start of the line",
        hint: None,
        edit: true,
    },
    Binding {
        keys: &[k(KeyCode::End), ctrl('e')],
        action: Action::End,
        help: "end of the line",
        hint: None,
        edit: true,
    },
    Binding {
        keys: &[k(KeyCode::Backspace)],
        action: Action::Backspace,
        help: "delete back",
        hint: None,
        edit: true,
    },
    Binding {
        keys: &[k(KeyCode::Delete)],
        action: Action::Delete,
        help: "delete forward",
        hint: None,
        edit: true,
    },
    Binding {
        keys: &[ctrl('w'), with(KeyCode::Backspace, KeyModifiers::ALT)],
        action: Action::DeleteWord,
        help: "delete the word before the cursor",
        hint: None,
        edit: true,
    },
    Binding {
        keys: &[ctrl('u')],
        action: Action::DeleteToStart,
        help: "delete to the start of the line",
        hint: None,
        edit: true,
    },
    Binding {
        keys: &[ctrl('k')],
        action: Action::DeleteToEnd,
        help: "delete to the end of the line",
        hint: None,
        edit: true,
    },
];

/// The slash commands, for the help overlay and `/help`.
pub const SLASH_COMMANDS: &[(&str, &str)] = &[
    ("/help", "show this help"),
    (
        "/cleanup",
        "clean the room up: history and sandbox (asks first)",
    ),
    ("/name NAME", "rejoin under another name"),
    (
        "/put FILE [PATH]",
        "copy a file of yours into the workspace",
    ),
    ("/get PATH [FILE]", "copy a workspace file here"),
    ("/clear", "clear this screen only (nobody else's)"),
    ("/quit", "leave"),
    ("!cmd", "run cmd in the room's sandbox"),
];

/// The action bound to `event`, if any.
pub fn lookup(event: &KeyEvent) -> Option<Action> {
    let mods = event.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
    let code = match event.code {
        KeyCode::Char(c) if mods.contains(KeyModifiers::CONTROL) => {
            KeyCode::Char(c.to_ascii_lowercase())
        }
        other => other,
    };
    let wanted = |key: &Key| {
        key.code == code
            && match code {
                // Shift is part of a character, and ignored on plain keys
                // unless the binding names it.
                KeyCode::Char(_) => key.mods == mods - KeyModifiers::SHIFT,
                _ => key.mods == mods || key.mods == mods - KeyModifiers::SHIFT,
            }
    };
    let exact = |key: &Key| key.code == code && key.mods == mods;
    BINDINGS
        .iter()
        .find(|b| b.keys.iter().any(exact))
        .or_else(|| BINDINGS.iter().find(|b| b.keys.iter().any(wanted)))
        .map(|b| b.action)
}

/// How a key is written in the help: `Ctrl+G`, `Alt+Enter`, `PgUp`.
pub fn label(key: &Key) -> String {
    let mut out = String::new();
    if key.mods.contains(KeyModifiers::CONTROL) {
        out.push_str("Ctrl+");
    }
    if key.mods.contains(KeyModifiers::ALT) {
        out.push_str("Alt+");
    }
    if key.mods.contains(KeyModifiers::SHIFT) {
        out.push_str("Shift+");
    }
    let name = match key.code {
        KeyCode::Char(c) => c.to_ascii_uppercase().to_string(),
        KeyCode::F(n) => format!("F{n}"),
        KeyCode::Enter => "Enter".into(),
        KeyCode::Esc => "Esc".into(),
        KeyCode::Tab => "Tab".into(),
        KeyCode::Up => "Up".into(),
        KeyCode::Down => "Down".into(),
        KeyCode::Left => "Left".into(),
        KeyCode::Right => "Right".into(),
        KeyCode::Home => "Home".into(),
        KeyCode::End => "End".into(),
        KeyCode::PageUp => "PgUp".into(),
        KeyCode::PageDown => "PgDn".into(),
        KeyCode::Backspace => "Backspace".into(),
        KeyCode::Delete => "Del".into(),
        other => format!("{other:?}"),
    };
    out.push_str(&name);
    out
}

/// The keys of a row, as the help shows them (the first two): `Alt+Enter, Ctrl+J`.
pub fn keys_label(binding: &Binding) -> String {
    binding
        .keys
        .iter()
        .take(2)
        .map(label)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The footer hints: `^G ask  ^R run …`, from the table.
pub fn hints() -> Vec<(String, &'static str)> {
    BINDINGS
        .iter()
        .filter_map(|b| {
            let hint = b.hint?;
            let key = b.keys.first()?;
            let short = label(key).replace("Ctrl+", "^");
            Some((short, hint))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    #[test]
    fn keys_find_their_actions() {
        assert_eq!(
            lookup(&ev(KeyCode::Char('g'), KeyModifiers::CONTROL)),
            Some(Action::ModeAsk)
        );
        assert_eq!(
            lookup(&ev(
                KeyCode::Char('G'),
                KeyModifiers::CONTROL | KeyModifiers::SHIFT
            )),
            Some(Action::ModeAsk)
        );
        assert_eq!(
            lookup(&ev(KeyCode::Enter, KeyModifiers::ALT)),
            Some(Action::Newline)
        );
        assert_eq!(
            lookup(&ev(KeyCode::Enter, KeyModifiers::NONE)),
            Some(Action::Submit)
        );
        assert_eq!(
            lookup(&ev(KeyCode::Home, KeyModifiers::CONTROL)),
            Some(Action::ScrollTop)
        );
        assert_eq!(lookup(&ev(KeyCode::Char('x'), KeyModifiers::NONE)), None);
        assert_eq!(lookup(&ev(KeyCode::Char('X'), KeyModifiers::SHIFT)), None);
    }

    #[test]
    fn every_key_is_bound_once() {
        let mut seen = Vec::new();
        for b in BINDINGS {
            for key in b.keys {
                assert!(!seen.contains(key), "{} bound twice", label(key));
                seen.push(*key);
            }
        }
    }

    #[test]
    fn hints_come_from_the_table() {
        let hints = hints();
        assert!(hints.contains(&("^X".to_string(), "cleanup")));
        assert!(hints.contains(&("F1".to_string(), "help")));
    }
}
