//! Slash commands as one table: name, usage, help and handler. The help
//! overlay is drawn from it, and a new command is one row.

use crate::tui::app::{App, Effect, Modal};
use crate::tui::composer::Mode;
use crate::tui::roles::Deed;

/// What a handler makes of the rest of the line: `Err` says why it is
/// refused (the line stays for the person to fix).
type Handler = fn(&mut App, &str, &mut Vec<Effect>) -> Result<(), String>;

/// One slash command.
pub struct SlashCommand {
    /// `/NAME`.
    pub name: &'static str,
    /// Other names for it.
    pub aliases: &'static [&'static str],
    /// How it is written, as the help shows it.
    pub usage: &'static str,
    /// What it does.
    pub help: &'static str,
    /// What it does that not every role may (`tui::roles`): refused
    /// before it runs, greyed out in the help.
    pub deed: Option<Deed>,
    run: Handler,
}

/// Every slash command, in the order the help lists them.
pub const SLASH_COMMANDS: &[SlashCommand] = &[
    SlashCommand {
        name: "help",
        aliases: &[],
        usage: "/help",
        help: "show this help",
        deed: None,
        run: |app, _, _| {
            app.modals.push(Modal::Help);
            Ok(())
        },
    },
    SlashCommand {
        name: "cleanup",
        aliases: &[],
        usage: "/cleanup",
        help: "clean the room up: history and sandbox (asks first)",
        deed: Some(Deed::Cleanup),
        run: |app, _, _| {
            app.modals.push(Modal::ConfirmCleanup);
            Ok(())
        },
    },
    SlashCommand {
        name: "name",
        aliases: &[],
        usage: "/name NAME",
        help: "change your name in the room (everyone sees it)",
        deed: None,
        run: |app, arg, effects| app.rename(arg, effects),
    },
    SlashCommand {
        name: "put",
        aliases: &[],
        usage: "/put FILE [PATH]",
        help: "copy a file of yours into the workspace",
        deed: Some(Deed::WriteFiles),
        run: |app, arg, effects| {
            let (local, remote) = one_or_two(arg).ok_or("usage: /put FILE [PATH]")?;
            app.put_file(local, &remote, effects)
        },
    },
    SlashCommand {
        name: "get",
        aliases: &[],
        usage: "/get PATH [FILE]",
        help: "copy a workspace file here (asks before replacing one)",
        deed: None,
        run: |app, arg, effects| {
            let (remote, local) = one_or_two(arg).ok_or("usage: /get PATH [FILE]")?;
            app.get_file(&remote, local, effects)
        },
    },
    SlashCommand {
        name: "export",
        aliases: &[],
        usage: "/export FILE",
        help: "save the room's whole history (FILE.md, .json or .cast)",
        deed: None,
        run: |_, arg, effects| {
            if arg.is_empty() {
                return Err("usage: /export FILE (FILE.md, FILE.json or FILE.cast)".into());
            }
            effects.push(Effect::Export(arg.to_string()));
            Ok(())
        },
    },
    SlashCommand {
        name: "ls",
        aliases: &[],
        usage: "/ls [DIR]",
        help: "list a folder of the workspace (default: /workspace)",
        deed: None,
        run: |app, arg, effects| app.list_dir(arg, effects),
    },
    SlashCommand {
        name: "undo",
        aliases: &[],
        usage: "/undo",
        help: "undo the agent's last turn: restores the checkpoint before it (asks first)",
        deed: Some(Deed::RestoreCheckpoint),
        run: |app, arg, _| {
            if !arg.is_empty() {
                return Err(
                    "usage: /undo (it takes no argument; /restore NAME restores a checkpoint)"
                        .into(),
                );
            }
            app.ask_undo()
        },
    },
    SlashCommand {
        name: "diff",
        aliases: &[],
        usage: "/diff [NAME]",
        help: "what changed since the agent's last turn began (or since checkpoint NAME)",
        deed: None,
        run: |app, arg, effects| app.diff_command(arg, effects),
    },
    SlashCommand {
        name: "checkpoint",
        aliases: &[],
        usage: "/checkpoint [NAME]",
        help: "save a copy of /workspace now, to restore later",
        deed: Some(Deed::TakeCheckpoint),
        run: |app, arg, effects| app.take_checkpoint(arg, effects),
    },
    SlashCommand {
        name: "checkpoints",
        aliases: &[],
        usage: "/checkpoints",
        help: "the room's checkpoints: name, when, by, size, automatic or not",
        deed: None,
        run: |app, _, _| {
            app.open_checkpoints();
            Ok(())
        },
    },
    SlashCommand {
        name: "restore",
        aliases: &[],
        usage: "/restore NAME",
        help: "make /workspace a checkpoint again, by name or id (asks first)",
        deed: Some(Deed::RestoreCheckpoint),
        run: |app, arg, _| app.ask_restore(arg),
    },
    SlashCommand {
        name: "fork",
        aliases: &[],
        usage: "/fork ROOM [NAME]",
        help: "start room ROOM from these files (or checkpoint NAME); offers to switch",
        deed: Some(Deed::Fork),
        run: |app, arg, effects| {
            let (to, from) = one_or_two(arg).ok_or("usage: /fork ROOM [NAME]")?;
            app.fork(to, &from, effects)
        },
    },
    SlashCommand {
        name: "bg",
        aliases: &[],
        usage: "/bg CMD",
        help: "start CMD in the background in the sandbox (a dev server, a watcher)",
        deed: Some(Deed::StartProcess),
        run: |app, arg, effects| app.start_process(arg, effects),
    },
    SlashCommand {
        name: "ps",
        aliases: &["procs"],
        usage: "/ps",
        help: "the background processes and listening ports, with the URL to open",
        deed: None,
        run: |app, _, _| {
            app.open_processes();
            Ok(())
        },
    },
    SlashCommand {
        name: "logs",
        aliases: &[],
        usage: "/logs ID",
        help: "follow a background process's log (its id, or its name)",
        deed: None,
        run: |app, arg, effects| app.show_log(arg, effects),
    },
    SlashCommand {
        name: "kill",
        aliases: &[],
        usage: "/kill ID",
        help: "stop a background process (someone else's: asks first)",
        deed: Some(Deed::KillProcess),
        run: |app, arg, effects| app.kill_named(arg, effects),
    },
    SlashCommand {
        name: "policy",
        aliases: &[],
        usage: "/policy [MODE]",
        help: "auto: the agent's commands run; ask: each waits for a yes; off: none run",
        // Showing it is for everyone; setting it is checked by the handler.
        deed: None,
        run: |app, arg, effects| app.policy_command(arg, effects),
    },
    SlashCommand {
        name: "approvals",
        aliases: &[],
        usage: "/approvals",
        help: "the agent's commands waiting for approval: ask again (as F5)",
        deed: Some(Deed::Approve),
        run: |app, _, _| {
            app.reopen_approvals();
            Ok(())
        },
    },
    SlashCommand {
        name: "invite",
        aliases: &[],
        usage: "/invite ROLE",
        help: "a link as viewer, writer or owner (a NAME fixes theirs; `web` for a browser)",
        deed: Some(Deed::ManageInvites),
        run: |app, arg, effects| {
            let (arg, web) = match arg.trim_end().strip_suffix("web") {
                Some(rest) if rest.is_empty() || rest.ends_with(char::is_whitespace) => {
                    (rest, true)
                }
                _ => (arg, false),
            };
            let (role, name) =
                one_or_two(arg).ok_or("usage: /invite viewer|writer|owner [NAME] [web]")?;
            app.invite_command(&role, name, web, effects)
        },
    },
    SlashCommand {
        name: "clear",
        aliases: &[],
        usage: "/clear",
        help: "clear this screen only (nobody else's)",
        deed: None,
        run: |app, _, _| {
            app.chat.clear_local();
            app.execs.clear_local();
            app.chat_scroll.follow();
            app.output_scroll.follow();
            Ok(())
        },
    },
    SlashCommand {
        name: "quit",
        aliases: &["exit"],
        usage: "/quit",
        help: "leave",
        deed: None,
        run: |app, _, effects| {
            app.quit = true;
            effects.push(Effect::Quit);
            Ok(())
        },
    },
];

/// The rows the help adds after the slash commands: what a line's first
/// characters do in any chat mode.
pub const PREFIXES: &[(&str, &str)] = &[
    ("!cmd", "run cmd in the room's sandbox"),
    ("@agent TEXT", "ask the agent, whatever the mode"),
];

/// One word, or two (the second empty when absent); more is refused.
fn one_or_two(arg: &str) -> Option<(String, String)> {
    let mut words = arg.split_whitespace().map(str::to_string);
    match (words.next(), words.next(), words.next()) {
        (Some(first), second, None) => Some((first, second.unwrap_or_default())),
        _ => None,
    }
}

/// What became of a line that starts with `/`.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Not a slash command (in run mode, `/bin/ls` is a path to run).
    NotOne,
    Done,
    /// Refused: the line stays.
    Refused,
}

impl App {
    /// Runs `line` if it is a slash command.
    pub(crate) fn slash(&mut self, line: &str, effects: &mut Vec<Effect>) -> Outcome {
        let Some(rest) = line.strip_prefix('/') else {
            return Outcome::NotOne;
        };
        let (word, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let found = SLASH_COMMANDS
            .iter()
            .find(|c| c.name == word || c.aliases.contains(&word));
        let Some(command) = found else {
            if self.composer.mode == Mode::Run {
                return Outcome::NotOne;
            }
            self.toast(format!("unknown command /{word} (see /help)"), true);
            return Outcome::Refused;
        };
        if let Some(deed) = command.deed
            && self.refused(deed)
        {
            return Outcome::Refused;
        }
        match (command.run)(self, arg.trim(), effects) {
            Ok(()) => Outcome::Done,
            Err(why) => {
                self.toast(why, true);
                Outcome::Refused
            }
        }
    }
}
