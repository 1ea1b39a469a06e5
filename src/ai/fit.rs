//! What is sent to the model, bounded (docs/protocol.md "What the model is
//! sent"): the system prompt, AGENTS.md and the question always; then this
//! turn's rounds and the newest of the room's history that fit in the
//! context's tokens, counted at 4 bytes a token; what is left out is said
//! in one line.

use super::provider::{ChatMessage, ChatRole};

/// Tokens a message costs besides its text (its role, the framing).
const MESSAGE_TOKENS: u64 = 4;

/// Tokens of `text`, counted roughly: 4 bytes a token.
pub(crate) fn tokens(text: &str) -> u64 {
    u64::try_from(text.len().div_ceil(4)).unwrap_or(u64::MAX)
}

/// Tokens of a message.
fn cost(message: &ChatMessage) -> u64 {
    tokens(&message.content) + MESSAGE_TOKENS
}

fn total(messages: &[ChatMessage]) -> u64 {
    messages.iter().map(cost).sum()
}

/// The parts of a turn's conversation.
#[derive(Debug, Clone, Default)]
pub(crate) struct Context {
    /// The system prompt and AGENTS.md: always sent.
    pub(crate) head: Vec<ChatMessage>,
    /// The room's messages before the question, oldest first.
    pub(crate) history: Vec<ChatMessage>,
    /// The terminal's screen and the question: always sent, last but for
    /// the rounds.
    pub(crate) question: Vec<ChatMessage>,
    /// This turn's rounds: the model's answer and its results, in turn.
    pub(crate) rounds: Vec<ChatMessage>,
}

impl Context {
    /// A conversation as `prompt::conversation` builds it: the system
    /// prompt first, the question last.
    pub(crate) fn new(mut conversation: Vec<ChatMessage>) -> Context {
        let question = conversation.pop().into_iter().collect();
        let head = if conversation.is_empty() {
            Vec::new()
        } else {
            vec![conversation.remove(0)]
        };
        Context {
            head,
            history: conversation,
            question,
            rounds: Vec::new(),
        }
    }

    /// The messages to send within `budget` tokens: the head, the
    /// question and the last round always; the older rounds and the
    /// history newest first as long as they fit, a note saying what was
    /// left out.
    pub(crate) fn messages(&self, budget: u64) -> Vec<ChatMessage> {
        let note_cost = tokens(&left_out_note(usize::MAX, usize::MAX)) + MESSAGE_TOKENS;
        let fixed = total(&self.head) + total(&self.question) + note_cost;
        // The newest round (an answer and its results) always goes.
        let last_round = self.rounds.len().saturating_sub(2);
        let mut room = budget.saturating_sub(fixed + total(&self.rounds[last_round..]));
        let mut rounds_from = last_round;
        while rounds_from >= 2 {
            let pair = total(&self.rounds[rounds_from - 2..rounds_from]);
            if pair > room {
                break;
            }
            room -= pair;
            rounds_from -= 2;
        }
        let mut history_from = self.history.len();
        if rounds_from == 0 {
            while history_from > 0 {
                let one = cost(&self.history[history_from - 1]);
                if one > room {
                    break;
                }
                room -= one;
                history_from -= 1;
            }
        }
        let mut out = self.head.clone();
        let (history_left, rounds_left) = (history_from, rounds_from / 2);
        if history_left > 0 || rounds_left > 0 {
            out.push(ChatMessage::new(
                ChatRole::User,
                left_out_note(history_left, rounds_left),
            ));
        }
        out.extend_from_slice(&self.history[history_from..]);
        out.extend_from_slice(&self.question);
        out.extend_from_slice(&self.rounds[rounds_from..]);
        out
    }
}

/// The one line that says what was left out to fit the context.
fn left_out_note(messages: usize, rounds: usize) -> String {
    let mut parts = Vec::new();
    if messages > 0 {
        parts.push(format!("the room's {messages} oldest messages"));
    }
    if rounds > 0 {
        parts.push(format!("this turn's first {rounds} rounds"));
    }
    format!(
        "[left out to fit the model's context: {}]",
        parts.join(" and ")
    )
}

/// An output cut to its first and last `keep` characters each, saying
/// how much was cut between them.
pub(crate) fn head_and_tail(output: &str, keep: usize) -> String {
    let chars = output.chars().count();
    if chars <= keep * 2 {
        return output.to_string();
    }
    let head_end = output.char_indices().nth(keep).map_or(0, |(i, _)| i);
    let tail_start = output
        .char_indices()
        .nth(chars - keep)
        .map_or(output.len(), |(i, _)| i);
    let cut = chars - 2 * keep;
    format!(
        "{}\n[… {cut} characters cut …]\n{}",
        &output[..head_end],
        &output[tail_start..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> ChatMessage {
        ChatMessage::new(ChatRole::User, text)
    }

    #[test]
    fn history_beyond_the_budget_is_left_out_oldest_first_with_a_note() {
        let mut conversation = vec![ChatMessage::new(ChatRole::System, "s")];
        conversation.extend((0..100).map(|i| user(&format!("{i:04}{}", "x".repeat(396)))));
        conversation.push(user("the question"));
        let context = Context::new(conversation);
        let sent = context.messages(1_000);
        let cost: u64 = sent.iter().map(super::cost).sum();
        assert!(cost <= 1_000, "{cost}");
        assert_eq!(sent[0].content, "s");
        assert!(
            sent[1]
                .content
                .starts_with("[left out to fit the model's context: the room's ")
        );
        assert!(sent[2].content.starts_with("00"), "{}", sent[2].content);
        assert_eq!(sent.last().unwrap().content, "the question");
        assert!(sent[sent.len() - 2].content.starts_with("0099"));
        // Within the budget, everything goes and nothing is said.
        assert_eq!(context.messages(1_000_000).len(), 102);
    }

    #[test]
    fn a_long_output_keeps_its_head_and_tail() {
        let output = format!("{}{}{}", "a".repeat(10), "b".repeat(100), "c".repeat(10));
        assert_eq!(
            head_and_tail(&output, 10),
            format!(
                "{}\n[… 100 characters cut …]\n{}",
                "a".repeat(10),
                "c".repeat(10)
            )
        );
        assert_eq!(head_and_tail("short", 10), "short");
    }
}
