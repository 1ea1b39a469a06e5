//! The tables: which key does what, outside dialogs and in each dialog.
//! The help overlay and the footer hints are drawn from `BINDINGS`.

use super::{Action, Binding, Key, ctrl, k, with};
use crossterm::event::{KeyCode, KeyModifiers};

/// Every binding outside dialogs. The first key of a row is the one shown.
pub const BINDINGS: &[Binding] = &[
    Binding {
        keys: &[k(KeyCode::Enter)],
        action: Action::Submit,
        help: "send: to whom the mode says; `!cmd` runs cmd, `/help` lists commands",
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
        help: "mode: ask the agent (the mode Duet starts in)",
        hint: Some("agent"),
        edit: false,
    },
    Binding {
        keys: &[ctrl('t')],
        action: Action::ModeRoom,
        help: "mode: talk to the room, no agent turn (`@agent …` still asks it)",
        hint: Some("room"),
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
        help: "stop your command, else your agent turn (anyone else's: asks first)",
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
        keys: &[k(KeyCode::F(3))],
        action: Action::Terminal,
        help: "the room's shared terminal in the output pane: shows it and gives it your keys \
               (Ctrl+] gives them back; Tab to it again), or hides it",
        hint: Some("terminal"),
        edit: false,
    },
    Binding {
        keys: &[k(KeyCode::F(4))],
        action: Action::Processes,
        help: "background processes and listening ports: follow a log, stop one",
        hint: None,
        edit: false,
    },
    Binding {
        keys: &[k(KeyCode::F(5))],
        action: Action::Approvals,
        help: "the agent's commands waiting for approval: ask again (y approves, n denies)",
        hint: None,
        edit: false,
    },
    Binding {
        keys: &[k(KeyCode::F(6))],
        action: Action::ShareLink,
        help: "a link for someone else: a fresh writer invite where the backend takes a token \
               (shown until Esc, c copies it); no token is ever shown",
        hint: None,
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
        keys: &[ctrl('y')],
        action: Action::Copy,
        help: "copy the last code block (else command output) to the clipboard",
        hint: Some("copy"),
        edit: false,
    },
    edit(&[k(KeyCode::Left)], Action::Left, "cursor left"),
    edit(&[k(KeyCode::Right)], Action::Right, "cursor right"),
    edit(
        &[alt('b'), with(KeyCode::Left, KeyModifiers::CONTROL)],
        Action::WordLeft,
        "a word left",
    ),
    edit(
        &[alt('f'), with(KeyCode::Right, KeyModifiers::CONTROL)],
        Action::WordRight,
        "a word right",
    ),
    edit(
        &[k(KeyCode::Home), ctrl('a')],
        Action::Home,
        "start of the line",
    ),
    edit(
        &[k(KeyCode::End), ctrl('e')],
        Action::End,
        "end of the line",
    ),
    edit(
        &[with(KeyCode::Left, KeyModifiers::SHIFT)],
        Action::SelectLeft,
        "select left (typing replaces the selection, Backspace deletes it)",
    ),
    edit(
        &[with(KeyCode::Right, KeyModifiers::SHIFT)],
        Action::SelectRight,
        "select right",
    ),
    edit(
        &[with(
            KeyCode::Left,
            KeyModifiers::CONTROL.union(KeyModifiers::SHIFT),
        )],
        Action::SelectWordLeft,
        "select a word left",
    ),
    edit(
        &[with(
            KeyCode::Right,
            KeyModifiers::CONTROL.union(KeyModifiers::SHIFT),
        )],
        Action::SelectWordRight,
        "select a word right",
    ),
    edit(
        &[with(KeyCode::Up, KeyModifiers::SHIFT)],
        Action::SelectUp,
        "select a line up",
    ),
    edit(
        &[with(KeyCode::Down, KeyModifiers::SHIFT)],
        Action::SelectDown,
        "select a line down",
    ),
    edit(
        &[with(KeyCode::Home, KeyModifiers::SHIFT)],
        Action::SelectHome,
        "select to the start of the line",
    ),
    edit(
        &[with(KeyCode::End, KeyModifiers::SHIFT)],
        Action::SelectEnd,
        "select to the end of the line",
    ),
    edit(&[k(KeyCode::Backspace)], Action::Backspace, "delete back"),
    edit(&[k(KeyCode::Delete)], Action::Delete, "delete forward"),
    edit(
        &[ctrl('w'), with(KeyCode::Backspace, KeyModifiers::ALT)],
        Action::DeleteWord,
        "delete the word before the cursor",
    ),
    edit(
        &[alt('d')],
        Action::DeleteNextWord,
        "delete the word after the cursor",
    ),
    edit(
        &[ctrl('u')],
        Action::DeleteToStart,
        "delete to the start of the line",
    ),
    edit(
        &[ctrl('k')],
        Action::DeleteToEnd,
        "delete to the end of the line",
    ),
    // Ctrl+_ and Ctrl+/ reach a terminal without keyboard enhancements as
    // Ctrl+7 (the same byte); Ctrl+Z suspends.
    edit(
        &[ctrl('_'), alt('u'), ctrl('/'), ctrl('7')],
        Action::Undo,
        "undo (Ctrl+/ too; Ctrl+C's clearing too)",
    ),
    edit(&[alt('r')], Action::Redo, "redo"),
];

/// An editing key's row (listed together in the help).
const fn edit(keys: &'static [Key], action: Action, help: &'static str) -> Binding {
    Binding {
        keys,
        action,
        help,
        hint: None,
        edit: true,
    }
}

/// Alt and a letter.
const fn alt(c: char) -> Key {
    with(KeyCode::Char(c), KeyModifiers::ALT)
}

/// A dialog's row: no footer hint, no editing key.
const fn dialog(keys: &'static [Key], action: Action, help: &'static str) -> Binding {
    Binding {
        keys,
        action,
        help,
        hint: None,
        edit: false,
    }
}

/// Keys of the help overlay.
pub const HELP_KEYS: &[Binding] = &[
    dialog(&[k(KeyCode::Up)], Action::Up, "scroll up"),
    dialog(&[k(KeyCode::Down)], Action::Down, "scroll down"),
    dialog(&[k(KeyCode::PageUp)], Action::PageUp, "scroll a page up"),
    dialog(
        &[k(KeyCode::PageDown)],
        Action::PageDown,
        "scroll a page down",
    ),
    dialog(
        &[
            k(KeyCode::Esc),
            k(KeyCode::Char('q')),
            k(KeyCode::Char('?')),
            k(KeyCode::Enter),
            k(KeyCode::F(1)),
            ctrl('c'),
        ],
        Action::Close,
        "close",
    ),
];

/// Keys of the `/diff` view: only these do anything.
pub const DIFF_KEYS: &[Binding] = &[
    dialog(&[k(KeyCode::Up)], Action::Up, "scroll up"),
    dialog(&[k(KeyCode::Down)], Action::Down, "scroll down"),
    dialog(&[k(KeyCode::PageUp)], Action::PageUp, "scroll a page up"),
    dialog(
        &[k(KeyCode::PageDown)],
        Action::PageDown,
        "scroll a page down",
    ),
    dialog(&[k(KeyCode::Home)], Action::ScrollTop, "to the first line"),
    dialog(&[k(KeyCode::End)], Action::ScrollBottom, "to the last line"),
    dialog(
        &[
            k(KeyCode::Esc),
            k(KeyCode::Char('q')),
            k(KeyCode::Enter),
            ctrl('c'),
        ],
        Action::Close,
        "close the view",
    ),
];

/// Keys of a yes/no dialog (cleanup, stopping someone's command): only
/// these do anything.
pub const CONFIRM_KEYS: &[Binding] = &[
    dialog(
        &[k(KeyCode::Char('y')), k(KeyCode::Char('Y'))],
        Action::Confirm,
        "yes, do it",
    ),
    dialog(
        &[
            k(KeyCode::Char('n')),
            k(KeyCode::Char('N')),
            k(KeyCode::Esc),
            k(KeyCode::Enter),
            ctrl('c'),
        ],
        Action::Close,
        "no, keep it",
    ),
];

/// Keys of the terminal view while it has the keys: every other key goes
/// to the terminal. Ctrl+] arrives as Ctrl+5 from terminals without
/// keyboard enhancements (the same byte, 0x1d).
pub const TERMINAL_KEYS: &[Binding] = &[dialog(
    &[ctrl(']'), ctrl('5')],
    Action::TermBack,
    "give the keys back to the input (every other key goes to the terminal)",
)];

/// Keys of the processes view: only these do anything.
pub const PROCESS_KEYS: &[Binding] = &[
    dialog(&[k(KeyCode::Up)], Action::Up, "select the process above"),
    dialog(
        &[k(KeyCode::Down)],
        Action::Down,
        "select the process below",
    ),
    dialog(
        &[k(KeyCode::Enter), k(KeyCode::Char('f'))],
        Action::Follow,
        "follow its log live, or stop following",
    ),
    dialog(
        &[k(KeyCode::Char('k')), k(KeyCode::Delete)],
        Action::Kill,
        "stop it (someone else's: asks first)",
    ),
    dialog(
        &[
            k(KeyCode::Esc),
            k(KeyCode::Char('q')),
            k(KeyCode::F(4)),
            ctrl('c'),
        ],
        Action::Close,
        "close the view",
    ),
];

/// Keys of the approval dialog: only these do anything (Enter does
/// nothing, so that a line typed in haste does not answer).
pub const APPROVAL_KEYS: &[Binding] = &[
    dialog(
        &[k(KeyCode::Char('y')), k(KeyCode::Char('Y'))],
        Action::Confirm,
        "approve: the command runs",
    ),
    dialog(
        &[k(KeyCode::Char('n')), k(KeyCode::Char('N'))],
        Action::Deny,
        "deny: it does not run, and the agent is told who denied it",
    ),
    dialog(
        &[k(KeyCode::Esc), ctrl('c')],
        Action::Close,
        "answer later (F5 or /approvals asks again)",
    ),
];

/// Keys of the link dialog: only these do anything.
pub const LINK_KEYS: &[Binding] = &[
    dialog(
        &[k(KeyCode::Char('c')), ctrl('y')],
        Action::Copy,
        "copy the link (OSC 52)",
    ),
    dialog(
        &[
            k(KeyCode::Esc),
            k(KeyCode::Char('q')),
            k(KeyCode::Enter),
            k(KeyCode::F(6)),
            ctrl('c'),
        ],
        Action::Close,
        "close",
    ),
];
