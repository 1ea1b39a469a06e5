//! The room's records (docs/protocol.md "Talking to each other, and the
//! room's records"): what people did to the room, kept as `system`
//! messages with an `event` and a text a person reads, so that whoever
//! joins later reads what happened.

use super::RoomActor;
use crate::protocol::{DuetMessage, Event, Role};
use crate::sandbox::{RestartReason, ShellRestart};
use crate::server::errors::ApiError;

impl RoomActor {
    /// Stores the record of `event` and publishes it.
    pub(super) async fn record(&mut self, event: Event) -> Result<DuetMessage, ApiError> {
        self.store(draft(event)).await
    }

    /// Stores a record, or logs why it could not be: what it records has
    /// happened either way, and its answer stands.
    pub(crate) async fn record_or_log(&mut self, event: Event) {
        if let Err(e) = self.record(event).await {
            tracing::warn!(room = %self.id, "storing a record failed: {}", e.body.error);
        }
    }
}

/// A record of `event`, by whoever did it.
pub(in crate::server) fn draft(event: Event) -> DuetMessage {
    let text = text(&event);
    saying(event, text)
}

/// A record of `event` saying `text`.
fn saying(event: Event, text: String) -> DuetMessage {
    DuetMessage {
        role: Role::System,
        user_id: event.by().map(str::to_string),
        text,
        event: Some(event),
        ..Default::default()
    }
}

/// What a record says.
fn text(event: &Event) -> String {
    match event {
        Event::Cleanup { by } => format!("{by} cleaned up the room"),
        Event::Cancel { by, .. } => format!("{by} cancelled the agent's turn"),
        Event::Interrupt { by, cmd, .. } => format!("{by} interrupted {}", code(cmd)),
        Event::Upload { by, path, size } => format!("{by} uploaded {path} ({})", bytes(*size)),
        Event::Rename { from, to, .. } => format!("{from} is now {to}"),
        Event::Shell { cwd, reset, .. } => {
            format!("The shell was restarted: {}", next_command(cwd, *reset))
        }
        Event::Delete { by, path } => format!("{by} deleted {path}"),
        Event::Checkpoint { by, name, .. } => format!("{by} saved checkpoint {name}"),
        Event::Restore { by, name, .. } => {
            format!("{by} restored checkpoint {name}: /workspace is as it was then")
        }
        Event::Fork { by, from, to, .. } => format!("{by} forked room {from} into room {to}"),
        Event::Policy { by, policy } => {
            format!("{by} set the agent's commands to {}", policy.as_str())
        }
        Event::Model { by, model } => format!("{by} set the agent's model to {model}"),
        Event::Process { by, name, cmd, .. } => {
            format!("{by} started {name} in the background: {}", code(cmd))
        }
        Event::Push {
            by,
            path,
            files,
            bytes: size,
            ..
        } => {
            let folder = if path.is_empty() {
                String::new()
            } else {
                format!("/{path}")
            };
            let s = if *files == 1 { "" } else { "s" };
            format!(
                "{by} pushed {files} file{s} ({}) into /workspace{folder}",
                bytes(*size)
            )
        }
        Event::Edit {
            path,
            added,
            removed,
            ..
        } => format!("the agent edited {path} (+{added} -{removed} lines)"),
        Event::Other => "Something happened in the room.".to_string(),
    }
}

/// The `shell` record of command `cmd` (`exec_id`, by `by`) after which
/// the shell was replaced; `cwd` is where the next command runs. `None`
/// for an interrupt, which has its own record (or its turn's cancel).
pub(super) fn shell_record(
    exec_id: &str,
    cmd: &str,
    by: &str,
    restart: ShellRestart,
    cwd: &str,
) -> Option<DuetMessage> {
    let what = match restart.reason {
        RestartReason::Interrupt => return None,
        RestartReason::Exit => format!("{} ended the shell", code(cmd)),
        RestartReason::Timeout => format!("{} ran out of time", code(cmd)),
        RestartReason::Stopped => format!("The shell was stopped while running {}", code(cmd)),
    };
    let event = Event::Shell {
        by: by.to_string(),
        reason: restart.reason.as_str().to_string(),
        cwd: cwd.to_string(),
        reset: restart.reset,
        exec_id: Some(exec_id.to_string()),
    };
    let text = format!("{what}: {}", next_command(cwd, restart.reset));
    Some(saying(event, text))
}

/// Where the next command runs, after the shell was replaced.
fn next_command(cwd: &str, reset: bool) -> String {
    if reset {
        format!("the next command runs in a fresh shell in {cwd}")
    } else {
        format!("the next command runs in {cwd}, with the exported variables kept")
    }
}

/// A command as a record shows it: in backticks, its first line, cut short.
fn code(cmd: &str) -> String {
    const SHOWN: usize = 60;
    let cmd = cmd.trim();
    let line = cmd.lines().next().unwrap_or_default().trim_end();
    let mut shown: String = line.chars().take(SHOWN).collect();
    if shown.len() < cmd.len() {
        shown.push('…');
    }
    format!("`{shown}`")
}

/// A size as people say it.
fn bytes(size: u64) -> String {
    const KIB: u64 = 1024;
    match size {
        1 => "1 byte".to_string(),
        n if n < KIB => format!("{n} bytes"),
        n if n < KIB * KIB => format!("{:.1} KiB", n as f64 / KIB as f64),
        n => format!("{:.1} MiB", n as f64 / (KIB * KIB) as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_as_sentences() {
        let by = || "bob".to_string();
        assert_eq!(
            text(&Event::Cleanup { by: by() }),
            "bob cleaned up the room"
        );
        let interrupt = Event::Interrupt {
            by: by(),
            exec_id: "x1".into(),
            cmd: "sleep 100".into(),
        };
        assert_eq!(text(&interrupt), "bob interrupted `sleep 100`");
        let upload = |size| Event::Upload {
            by: "ann".into(),
            path: "notes.txt".into(),
            size,
        };
        assert_eq!(text(&upload(12)), "ann uploaded notes.txt (12 bytes)");
        assert_eq!(text(&upload(1)), "ann uploaded notes.txt (1 byte)");
        assert_eq!(
            text(&upload(3 * 1024 * 1024)),
            "ann uploaded notes.txt (3.0 MiB)"
        );
        let rename = Event::Rename {
            by: by(),
            from: by(),
            to: "ann".into(),
        };
        assert_eq!(text(&rename), "bob is now ann");
        let push = |files| Event::Push {
            by: by(),
            path: "app".into(),
            files,
            bytes: 2048,
            deleted: 0,
            checkpoint_id: None,
        };
        assert_eq!(
            text(&push(1)),
            "bob pushed 1 file (2.0 KiB) into /workspace/app"
        );
        assert_eq!(
            text(&push(3)),
            "bob pushed 3 files (2.0 KiB) into /workspace/app"
        );
        let long = format!("echo {}\necho two", "x".repeat(80));
        assert!(code(&long).ends_with("…`"), "{}", code(&long));
        assert_eq!(code("ls  "), "`ls`");
    }

    #[test]
    fn shell_records_say_what_the_next_command_finds() {
        let exit = ShellRestart {
            reason: RestartReason::Exit,
            reset: true,
        };
        let record = shell_record("x1", "exit", "bob", exit, "/workspace").unwrap();
        assert_eq!(
            record.text,
            "`exit` ended the shell: the next command runs in a fresh shell in /workspace"
        );
        assert_eq!(record.user_id.as_deref(), Some("bob"));
        assert_eq!(
            serde_json::to_value(record.event.unwrap()).unwrap(),
            serde_json::json!({"kind":"shell","by":"bob","reason":"exit","cwd":"/workspace",
                "reset":true,"execId":"x1"})
        );
        let timeout = ShellRestart {
            reason: RestartReason::Timeout,
            reset: false,
        };
        let record = shell_record("x2", "sleep 9", "ann", timeout, "/tmp").unwrap();
        assert_eq!(
            record.text,
            "`sleep 9` ran out of time: the next command runs in /tmp, with the exported variables kept"
        );
        let interrupt = ShellRestart {
            reason: RestartReason::Interrupt,
            reset: false,
        };
        assert!(shell_record("x3", "sleep 9", "ann", interrupt, "/tmp").is_none());
    }
}
