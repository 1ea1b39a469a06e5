//! Keybindings as data: one table says which key does what, and both the
//! help overlay and the footer hints are generated from it. `duet.toml`'s
//! `[keys]` table binds other keys to the actions outside dialogs
//! (`configure`, once at start).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::sync::OnceLock;

/// What a key asks for. The App decides what it means in its state
/// (e.g. Esc interrupts a command, else cancels the agent's turn).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Submit,
    Newline,
    ModeAsk,
    ModeRoom,
    ModeRun,
    Up,
    Down,
    Left,
    Right,
    Home,
    End,
    /// A word back or forward.
    WordLeft,
    WordRight,
    /// The cursor's moves with Shift: they select.
    SelectLeft,
    SelectRight,
    SelectWordLeft,
    SelectWordRight,
    SelectUp,
    SelectDown,
    SelectHome,
    SelectEnd,
    Backspace,
    Delete,
    DeleteWord,
    DeleteNextWord,
    DeleteToStart,
    DeleteToEnd,
    /// Take back the last edit of the input, or do it again.
    Undo,
    Redo,
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
    /// Copy the last code block (else command output) to the clipboard.
    Copy,
    /// A working link for someone else (an invite on a token backend).
    ShareLink,
    /// Show the room's shared terminal in the output pane (attached, with
    /// the keys), or hide it (detached).
    Terminal,
    /// In the terminal view: give the keys back to the input.
    TermBack,
    /// The room's background processes and ports (a view over the panes).
    Processes,
    /// In the processes view: follow the selected one's log, or stop.
    Follow,
    /// In the processes view: stop the selected process.
    Kill,
    /// The agent's commands waiting for approval: their dialog again.
    Approvals,
    /// In a dialog: do what it asks.
    Confirm,
    /// In the approval dialog: deny the command.
    Deny,
    /// In a dialog: close it (and do nothing).
    Close,
}

mod bindings;
pub mod names;

pub use bindings::{
    APPROVAL_KEYS, BINDINGS, CONFIRM_KEYS, DIFF_KEYS, HELP_KEYS, LINK_KEYS, PROCESS_KEYS,
    TERMINAL_KEYS,
};

/// One key with its modifiers (Ctrl and Alt; Shift only where it matters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

/// A key without modifiers.
pub(crate) const fn k(code: KeyCode) -> Key {
    Key {
        code,
        mods: KeyModifiers::NONE,
    }
}

/// Ctrl and a letter.
pub(crate) const fn ctrl(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        mods: KeyModifiers::CONTROL,
    }
}

/// A key with these modifiers.
pub(crate) const fn with(code: KeyCode, mods: KeyModifiers) -> Key {
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

/// Keys `[keys]` gives actions, in place of their own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeyConfig(pub Vec<(Action, Vec<Key>)>);

static CONFIGURED: OnceLock<KeyConfig> = OnceLock::new();

/// Binds the keys of `config` for the rest of the process (the first
/// call wins: the config is read once, at start). A process-wide table,
/// as the defaults are, so that help, hints and lookups agree.
pub fn configure(config: KeyConfig) {
    let _ = CONFIGURED.set(config);
}

fn configured() -> &'static [(Action, Vec<Key>)] {
    CONFIGURED.get().map_or(&[], |c| c.0.as_slice())
}

/// The keys of a row of `BINDINGS` or `TERMINAL_KEYS` now: the ones
/// `[keys]` gives its action, else its own less those `[keys]` gives
/// another action.
pub fn keys_of(binding: &Binding) -> Vec<Key> {
    let config = configured();
    if let Some((_, keys)) = config.iter().find(|(a, _)| *a == binding.action) {
        return keys.clone();
    }
    binding
        .keys
        .iter()
        .filter(|key| !config.iter().any(|(_, keys)| keys.contains(key)))
        .copied()
        .collect()
}

/// The action bound to `event` outside dialogs, if any.
pub fn lookup(event: &KeyEvent) -> Option<Action> {
    find(BINDINGS, event, keys_of)
}

/// The terminal view's action for `event` (Ctrl+] gives the keys back).
pub fn lookup_terminal(event: &KeyEvent) -> Option<Action> {
    find(TERMINAL_KEYS, event, keys_of)
}

/// The action a dialog's `table` binds to `event`, if any.
pub fn lookup_in(table: &[Binding], event: &KeyEvent) -> Option<Action> {
    find(table, event, |b| b.keys.to_vec())
}

/// The action of the row whose keys (as `keys` gives them) have `event`.
fn find(
    table: &[Binding],
    event: &KeyEvent,
    keys: impl Fn(&Binding) -> Vec<Key>,
) -> Option<Action> {
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
    let rows: Vec<(Action, Vec<Key>)> = table.iter().map(|b| (b.action, keys(b))).collect();
    rows.iter()
        .find(|(_, keys)| keys.iter().any(exact))
        .or_else(|| rows.iter().find(|(_, keys)| keys.iter().any(wanted)))
        .map(|(action, _)| *action)
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
        KeyCode::Char(' ') => "Space".into(),
        KeyCode::Char(c) if c.is_ascii_uppercase() => format!("Shift+{c}"),
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

/// Keys as the help shows them (the first two): `Alt+Enter, Ctrl+J`.
pub fn keys_label(keys: &[Key]) -> String {
    keys.iter()
        .take(2)
        .map(label)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The footer hints: `^G agent  ^T room  ^R run …`, from the table,
/// with the action of each.
pub fn hints() -> Vec<(String, &'static str, Action)> {
    BINDINGS
        .iter()
        .filter_map(|b| {
            let hint = b.hint?;
            let key = *keys_of(b).first()?;
            let short = label(&key).replace("Ctrl+", "^");
            Some((short, hint, b.action))
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
            lookup(&ev(KeyCode::Char('t'), KeyModifiers::CONTROL)),
            Some(Action::ModeRoom)
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
        for table in [
            BINDINGS,
            HELP_KEYS,
            DIFF_KEYS,
            CONFIRM_KEYS,
            TERMINAL_KEYS,
            PROCESS_KEYS,
            APPROVAL_KEYS,
        ] {
            let mut seen = Vec::new();
            for b in table {
                for key in b.keys {
                    assert!(!seen.contains(key), "{} bound twice", label(key));
                    seen.push(*key);
                }
            }
        }
    }

    #[test]
    fn dialogs_have_their_own_keys() {
        let y = ev(KeyCode::Char('Y'), KeyModifiers::SHIFT);
        assert_eq!(lookup_in(CONFIRM_KEYS, &y), Some(Action::Confirm));
        assert_eq!(lookup(&y), None);
        let ctrl_c = ev(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(lookup_in(HELP_KEYS, &ctrl_c), Some(Action::Close));
        assert_eq!(lookup_in(CONFIRM_KEYS, &ctrl_c), Some(Action::Close));
        let ctrl_y = ev(KeyCode::Char('y'), KeyModifiers::CONTROL);
        assert_eq!(lookup_in(CONFIRM_KEYS, &ctrl_y), None);
    }

    #[test]
    fn hints_come_from_the_table() {
        let hints: Vec<(String, &str)> = hints().into_iter().map(|(k, h, _)| (k, h)).collect();
        assert!(hints.contains(&("^X".to_string(), "cleanup")));
        assert!(hints.contains(&("F1".to_string(), "help")));
        assert!(hints.contains(&("F3".to_string(), "terminal")));
        for mode in ["^G", "^T", "^R"] {
            assert!(hints.iter().any(|(k, _)| k == mode), "{mode} in the footer");
        }
    }
}
