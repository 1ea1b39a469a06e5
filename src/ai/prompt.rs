//! What the model is told: the system prompt, the room's messages and,
//! between rounds, the results of the commands and file tools it ran
//! (`fit` bounds what is sent).

use super::provider::{ChatMessage, ChatRole};
use crate::blocks::{self, Block};
use crate::protocol::{Addressee, DuetMessage, Role, Run};

/// The system prompt (assets/system_prompt.md).
pub(crate) const SYSTEM_PROMPT: &str = include_str!("../../assets/system_prompt.md");
/// Characters of one command's output given back to the model: its first
/// and its last this many.
const RESULT_CHARS: usize = 2_000;

/// What marks a message people wrote to each other, not to the model.
const TO_THE_ROOM: &str = "[to the room, not to you]";
/// What marks a record of what someone did in the room.
const IN_THE_ROOM: &str = "[in the room]";

/// The conversation for the first round: the system prompt and the
/// messages of the room: people as `user` with their names (what they said
/// to each other marked so), the agent as `assistant`, the room's records
/// as marked `user` notes. Other `system` notes (errors) are the room's,
/// not the model's, and are left out.
pub(crate) fn conversation(history: &[DuetMessage]) -> Vec<ChatMessage> {
    let mut out = vec![ChatMessage::new(ChatRole::System, SYSTEM_PROMPT.trim())];
    for message in history {
        match message.role {
            Role::User => {
                let said = match &message.user_id {
                    Some(name) => format!("{name}: {}", message.text),
                    None => message.text.clone(),
                };
                let text = match message.to {
                    Some(Addressee::Room) => format!("{TO_THE_ROOM} {said}"),
                    _ => said,
                };
                out.push(ChatMessage::new(ChatRole::User, text));
            }
            Role::Agent => out.extend(agent_turn(message)),
            Role::System if message.event.is_some() => {
                let text = format!("{IN_THE_ROOM} {}", message.text);
                out.push(ChatMessage::new(ChatRole::User, text));
            }
            Role::System => {}
        }
    }
    out
}

/// An earlier agent reply as the model wrote it (commands back in `<run>`
/// tags; a cancelled one says so), then its commands' outputs as a note.
fn agent_turn(message: &DuetMessage) -> Vec<ChatMessage> {
    let mut said = Vec::new();
    let mut results = Vec::new();
    for block in blocks::parse(&message.text, message.runs.as_deref()) {
        match block {
            Block::Prose(text) => said.push(text.trim().to_string()),
            Block::Output { cmd, output } => {
                said.push(format!("<run>{cmd}</run>"));
                results.push(format!("Output ({cmd}):\n{}", cut(&output)));
            }
            Block::Error { cmd, message } => {
                said.push(format!("<run>{cmd}</run>"));
                results.push(format!("Error ({cmd}):\n{message}"));
            }
        }
    }
    if let Some(by) = &message.cancelled_by {
        said.push(format!(
            "[{by} cancelled this reply before it was finished]"
        ));
    }
    let mut out = vec![ChatMessage::new(ChatRole::Assistant, said.join("\n"))];
    if !results.is_empty() {
        out.push(ChatMessage::new(
            ChatRole::User,
            format!(
                "[outputs of the commands above]\n\n{}",
                results.join("\n\n")
            ),
        ));
    }
    out
}

/// The note of the room's terminal screen, put before the question, so
/// that "what went wrong in the terminal?" can be answered.
pub(crate) fn terminal_note(size: crate::protocol::TermSize, screen: &str) -> String {
    let shown = if screen.trim().is_empty() {
        "(the screen is empty)"
    } else {
        screen
    };
    format!(
        "[the room's terminal, {}x{}: its screen now, as text]\n{shown}",
        size.cols, size.rows
    )
}

/// What one action of a round did.
pub(crate) enum Outcome {
    Run(Run),
    File(super::tools::FileOutcome),
}

/// What the model is told after a round: each command's exit code and
/// output, each file tool's result, and that it may go on.
pub(crate) fn results_note(outcomes: &[Outcome]) -> String {
    let mut note = String::from("The commands ran. Their results:");
    for outcome in outcomes {
        note.push_str("\n\n");
        let run = match outcome {
            Outcome::Run(run) => run,
            Outcome::File(file) => {
                let kind = if file.failed { "Error" } else { "Result" };
                note.push_str(&format!("{kind} ({}):\n{}", file.label, file.result));
                continue;
            }
        };
        if blocks::is_error_run(run) {
            let message = run.error.as_deref().unwrap_or_default();
            note.push_str(&format!("Error ({}):\n{message}", run.cmd));
            continue;
        }
        let code = run
            .exit_code
            .map_or_else(|| "none".to_string(), |c| c.to_string());
        note.push_str(&format!("Output ({}) [exit code {code}]:\n", run.cmd));
        let mut output = String::new();
        if !run.stdout.is_empty() {
            output.push_str(&run.stdout);
        }
        if !run.stderr.is_empty() {
            if !output.is_empty() && !output.ends_with('\n') {
                output.push('\n');
            }
            output.push_str("[stderr]\n");
            output.push_str(&run.stderr);
        }
        if output.is_empty() {
            output.push_str(blocks::NO_OUTPUT);
        }
        note.push_str(&cut(&output));
    }
    note.push_str("\n\nContinue: run more commands in <run> tags if needed, or give your answer.");
    note
}

/// An output's first and last `RESULT_CHARS` characters, saying what
/// was cut between them.
fn cut(output: &str) -> String {
    super::fit::head_and_tail(output, RESULT_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(role: Role, user: Option<&str>, text: &str, runs: Option<Vec<Run>>) -> DuetMessage {
        DuetMessage {
            client_id: None,
            id: "m".into(),
            role,
            user_id: user.map(str::to_string),
            text: text.into(),
            ts: 0,
            runs,
            ..DuetMessage::default()
        }
    }

    #[test]
    fn the_model_sees_the_messages_with_names() {
        let mut history: Vec<DuetMessage> = (0..12)
            .map(|i| message(Role::User, Some("ada"), &format!("m{i}"), None))
            .collect();
        history.push(message(Role::System, None, "cancelled", None));
        let chat = conversation(&history);
        assert_eq!(chat[0].role, ChatRole::System);
        assert_eq!(chat.len(), 1 + 12);
        assert_eq!(chat[1].content, "ada: m0");
        assert_eq!(chat[12].content, "ada: m11");
    }

    #[test]
    fn room_messages_and_records_are_marked_and_notes_left_out() {
        use crate::protocol::Event;
        let chat_to_room = DuetMessage {
            to: Some(Addressee::Room),
            ..message(Role::User, Some("bob"), "ok thanks", None)
        };
        let record = DuetMessage {
            event: Some(Event::Cleanup { by: "ann".into() }),
            ..message(Role::System, Some("ann"), "ann cleaned up the room", None)
        };
        let note = message(Role::System, Some("ann"), "Model error: 500", None);
        let cancelled = DuetMessage {
            cancelled_by: Some("ann".into()),
            ..message(Role::Agent, None, "Let me", None)
        };
        let question = DuetMessage {
            to: Some(Addressee::Agent),
            ..message(Role::User, Some("ann"), "what now?", None)
        };
        let chat = conversation(&[chat_to_room, record, note, cancelled, question]);
        let contents: Vec<&str> = chat[1..].iter().map(|m| m.content.as_str()).collect();
        assert_eq!(
            contents,
            [
                "[to the room, not to you] bob: ok thanks",
                "[in the room] ann cleaned up the room",
                "Let me\n[ann cancelled this reply before it was finished]",
                "ann: what now?",
            ]
        );
        assert_eq!(chat[2].role, ChatRole::User);
        assert_eq!(chat[3].role, ChatRole::Assistant);
    }

    #[test]
    fn earlier_replies_come_back_as_tags_and_outputs() {
        let run = Run {
            cmd: "ls".into(),
            stdout: "a\n".into(),
            stderr: String::new(),
            exit_code: Some(0),
            error: None,
            truncated: false,
            at: None,
        };
        let text = blocks::render_reply("Listing.", std::slice::from_ref(&run));
        let chat = conversation(&[message(Role::Agent, None, &text, Some(vec![run]))]);
        assert_eq!(chat[1].role, ChatRole::Assistant);
        assert_eq!(chat[1].content, "Listing.\n<run>ls</run>");
        assert_eq!(chat[2].role, ChatRole::User);
        assert!(chat[2].content.ends_with("Output (ls):\na\n"));
    }
}
