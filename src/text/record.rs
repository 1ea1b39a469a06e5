//! What a record of the room's timeline says, in words: the same whichever
//! backend wrote it (the chat, `duet export`).

use super::one_line;
use crate::protocol::Event;

/// What a record says, from its event where this client knows the kind
/// (the same words whichever backend wrote it), else its `text`.
pub fn record_text(event: &Event, text: &str) -> String {
    match event {
        Event::Cleanup { by } => format!("{by} cleaned up the room (history and sandbox)"),
        Event::Cancel { by, .. } => format!("{by} cancelled the agent's turn"),
        Event::Interrupt { by, cmd, .. } => format!("{by} interrupted `{}`", one_line(cmd)),
        Event::Upload { by, path, size } => format!("{by} uploaded {path} ({})", bytes(*size)),
        Event::Rename { from, to, .. } => format!("{from} is now {to}"),
        Event::Shell {
            by,
            reason,
            cwd,
            reset,
            ..
        } => {
            let what = match reason.as_str() {
                "exit" => format!("the shell exited after {by}'s command"),
                "timeout" => format!("{by}'s command timed out"),
                "stopped" => format!("{by}'s command stopped the shell"),
                other => format!("the shell was replaced after {by}'s command ({other})"),
            };
            let next = if *reset {
                format!("a fresh shell in {cwd}, directory and variables reset")
            } else {
                format!("a new shell goes on in {cwd}, variables kept")
            };
            format!("{what}: {next}")
        }
        Event::Delete { by, path } => format!("{by} deleted /workspace/{path}"),
        Event::Checkpoint { by, name, .. } => format!("{by} saved checkpoint {name}"),
        Event::Restore { by, name, .. } => {
            format!("{by} restored checkpoint {name}: /workspace is as it was then")
        }
        // Said the same in both rooms, so it names both.
        Event::Fork {
            by,
            from,
            to,
            checkpoint_id,
        } => {
            let from_checkpoint = checkpoint_id
                .as_deref()
                .map(|id| format!(" (from checkpoint {id})"))
                .unwrap_or_default();
            format!("{by} forked room {from} into room {to}{from_checkpoint}")
        }
        Event::Policy { by, policy } => {
            format!("{by} set the agent's commands to {}", policy.as_str())
        }
        Event::Model { by, model } => format!("{by} set the agent's model to {model}"),
        Event::Process { by, name, cmd, .. } => {
            format!("{by} started {name} in the background: `{}`", one_line(cmd))
        }
        Event::Push {
            by,
            path,
            files,
            bytes: size,
            ..
        } => format!(
            "{by} pushed {} ({}) into /workspace{}",
            super::files(*files),
            bytes(*size),
            folder_suffix(path)
        ),
        Event::Edit {
            path,
            added,
            removed,
            ..
        } => format!("the agent edited /workspace/{path} (+{added} -{removed} lines)"),
        Event::Other => text.split_whitespace().collect::<Vec<_>>().join(" "),
    }
}

/// `/src` for a folder of the workspace, nothing for the workspace itself.
fn folder_suffix(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("/{path}")
    }
}

/// `812 bytes`, `2.1 KB`, `3.4 MB`.
pub fn bytes(size: u64) -> String {
    match size {
        0..1_000 => format!("{size} bytes"),
        1_000..1_000_000 => format!("{:.1} KB", size as f64 / 1e3),
        _ => format!("{:.1} MB", size as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(bytes(12), "12 bytes");
        assert_eq!(bytes(2_100), "2.1 KB");
        assert_eq!(bytes(3_400_000), "3.4 MB");
    }

    #[test]
    fn records_of_unknown_kinds_say_their_text_on_one_line() {
        assert_eq!(
            record_text(&Event::Other, "a\n  new   thing"),
            "a new thing"
        );
        let interrupt = Event::Interrupt {
            by: "ann".into(),
            exec_id: "e1".into(),
            cmd: "sleep 1\necho done".into(),
        };
        assert_eq!(record_text(&interrupt, ""), "ann interrupted `sleep 1 …`");
        let push = |files| Event::Push {
            by: "ann".into(),
            path: String::new(),
            files,
            bytes: 12,
            deleted: 0,
            checkpoint_id: None,
        };
        let said = |files| record_text(&push(files), "");
        assert_eq!(said(1), "ann pushed 1 file (12 bytes) into /workspace");
        assert_eq!(
            said(2_006),
            "ann pushed 2,006 files (12 bytes) into /workspace"
        );
    }
}
