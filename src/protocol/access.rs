//! Wire types of invites, roles and the agent's approval policy
//! (docs/protocol.md "Invites, roles and approvals").

use serde::{Deserialize, Serialize};

/// How long an invite lasts unless its request says (`expiresIn`), in s.
pub const DEFAULT_INVITE_SECS: u64 = 86_400;
/// The longest an invite may last, in seconds (a year).
pub const MAX_INVITE_SECS: u64 = 365 * 86_400;
/// How long an agent's command waits for an answer by default
/// (`--approval-timeout-secs`).
pub const DEFAULT_APPROVAL_TIMEOUT_SECS: u64 = 300;
/// The WebSocket close code of a socket whose invite was revoked or expired.
pub const CLOSE_UNAUTHORIZED: u16 = 4401;

/// What a person may do in a room. Ordered: each role may do what the
/// ones below it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RoomRole {
    Viewer,
    Writer,
    Owner,
}

impl RoomRole {
    pub const ALL: [RoomRole; 3] = [RoomRole::Owner, RoomRole::Writer, RoomRole::Viewer];

    pub fn as_str(self) -> &'static str {
        match self {
            RoomRole::Owner => "owner",
            RoomRole::Writer => "writer",
            RoomRole::Viewer => "viewer",
        }
    }

    pub fn parse(s: &str) -> Option<RoomRole> {
        RoomRole::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// "a viewer", "a writer", "an owner".
    pub fn with_article(self) -> String {
        let article = if self == RoomRole::Owner { "an" } else { "a" };
        format!("{article} {self}")
    }
}

impl std::fmt::Display for RoomRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Declares the role table: `Variant, "wire_name", least role, "refusal
/// words";` gives the `Action` enum, its rows in order and their lookups.
macro_rules! actions {
    ($($(#[$doc:meta])* $variant:ident, $name:literal, $least:ident, $refusal:literal;)*) => {
        /// Something a caller asks to do in a room: one row of the role
        /// table of docs/protocol.md ("Who may do what"), which the
        /// server's check and the TUI's greying and refusals both read.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Action {
            $($(#[$doc])* $variant),*
        }

        impl Action {
            /// Every action, in the table's order.
            pub const ALL: &[Action] = &[$(Action::$variant),*];

            /// Its name in docs/operations.json (snake_case).
            pub fn name(self) -> &'static str {
                match self {
                    $(Action::$variant => $name),*
                }
            }

            /// The least role that may do it.
            pub fn least(self) -> RoomRole {
                match self {
                    $(Action::$variant => RoomRole::$least),*
                }
            }

            /// How a refusal names it: "a viewer may not <refusal>".
            pub fn refusal(self) -> &'static str {
                match self {
                    $(Action::$variant => $refusal),*
                }
            }
        }
    };
}

actions! {
    /// A message to the people of the room.
    ChatToRoom, "chat_to_room", Viewer, "talk to the room";
    Rename, "rename", Viewer, "change their name";
    /// Watching the running terminal, following a process's output.
    Watch, "watch", Viewer, "watch";
    /// A port's preview, `GET` or `HEAD`.
    PreviewRead, "preview_read", Viewer, "open a preview";
    AskAgent, "ask_agent", Writer, "ask the agent";
    RunCommand, "run_command", Writer, "run commands";
    Interrupt, "interrupt", Writer, "interrupt commands";
    Cancel, "cancel", Writer, "cancel the agent's turn";
    /// `PUT` and `DELETE` of files.
    WriteFiles, "write_files", Writer, "change files";
    StartProcess, "start_process", Writer, "start background processes";
    KillProcess, "kill_process", Writer, "stop background processes";
    /// A port's preview with another method or a WebSocket, or a tunnel.
    UsePort, "use_port", Writer, "send requests to the sandbox's ports";
    /// `term_open` when no terminal runs.
    OpenTerminal, "open_terminal", Writer, "open the terminal";
    /// `duet_term_input`.
    TypeIntoTerminal, "type_into_terminal", Writer, "type into the terminal";
    /// `duet_term_resize` (a watcher's size never counts).
    ResizeTerminal, "resize_terminal", Writer, "size the terminal";
    CloseTerminal, "close_terminal", Writer, "close the terminal";
    TakeCheckpoint, "take_checkpoint", Writer, "take checkpoints";
    RestoreCheckpoint, "restore_checkpoint", Writer, "restore checkpoints";
    DeleteCheckpoint, "delete_checkpoint", Writer, "delete checkpoints";
    SetPolicy, "set_policy", Writer, "change the policy";
    /// Answer an agent's command waiting for a person.
    Approve, "approve", Writer, "answer approvals";
    Cleanup, "cleanup", Owner, "clean the room up";
    Fork, "fork", Owner, "fork the room";
    SetRole, "set_role", Owner, "change roles";
    /// Create, list and revoke invites.
    ManageInvites, "manage_invites", Owner, "manage invites";
    /// Choose the model of the room's agent.
    SetModel, "set_model", Owner, "choose the model";
}

impl Action {
    /// Whether `role` may do it.
    pub fn allows(self, role: RoomRole) -> bool {
        role >= self.least()
    }

    /// `Ok` when `role` may do it; otherwise the refusal's words, as the
    /// 403's `details.role` says them ("a viewer may not run commands").
    pub fn check(self, role: RoomRole) -> Result<(), String> {
        if self.allows(role) {
            return Ok(());
        }
        Err(format!(
            "{} may not {}",
            role.with_article(),
            self.refusal()
        ))
    }
}

/// An invite of a room, as listed (its token is never shown again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Invite {
    pub id: String,
    pub role: RoomRole,
    /// The name it fixes for whoever uses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// ms since the epoch.
    pub expires_at: u64,
    #[serde(default)]
    pub created_at: u64,
    /// Who made it.
    #[serde(default)]
    pub by: String,
}

/// `POST /invites`' answer: the only time the token is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InviteCreated {
    pub invite: Invite,
    pub token: String,
    /// The room's link with the token, as `duet join` takes it.
    pub url: String,
}

/// `GET /invites`' answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvitesResponse {
    pub invites: Vec<Invite>,
}

/// `set_role`'s answer (and `POST /invites/{id}/role`'s).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InviteResponse {
    pub invite: Invite,
}

/// `DELETE /invites/{id}`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevokeResponse {
    pub revoked: bool,
}

/// Whether the agent's commands run by themselves, wait for a person, or
/// do not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    #[default]
    Auto,
    Ask,
    Off,
}

impl Policy {
    pub const ALL: [Policy; 3] = [Policy::Auto, Policy::Ask, Policy::Off];

    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Auto => "auto",
            Policy::Ask => "ask",
            Policy::Off => "off",
        }
    }

    pub fn parse(s: &str) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// `set_policy`'s answer (and `POST /policy`'s).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyResponse {
    pub policy: Policy,
}

/// An agent's command waiting for a person (`approvals` of the state).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    pub approval_id: String,
    pub turn_id: String,
    pub cmd: String,
}

/// `approve`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecidedResponse {
    pub decided: bool,
}

/// `duet_approval`, by phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "lowercase")]
pub enum ApprovalFrame {
    /// An agent's command waits for a writer or owner.
    #[serde(rename_all = "camelCase")]
    Request {
        approval_id: String,
        turn_id: String,
        cmd: String,
    },
    /// It was answered (`by` "duet" when nobody answered in time).
    #[serde(rename_all = "camelCase")]
    Decided {
        approval_id: String,
        approved: bool,
        by: String,
    },
    /// Its turn was cancelled: nobody need answer.
    #[serde(rename_all = "camelCase")]
    Withdrawn { approval_id: String },
}

/// The block text of an agent's command that was not run.
pub fn denied_by(name: &str) -> String {
    format!("denied by {name}")
}
/// The block text of an agent's command nobody answered in time.
pub const NOT_APPROVED_IN_TIME: &str = "not approved in time";
/// The block text of an agent's command under the policy `off`.
pub const POLICY_OFF: &str = "not run: the room's policy is off";

/// Characters that make a command ask even when an allow-list entry
/// starts it: they chain, redirect or substitute.
const SHELL_SPECIALS: &[char] = &[';', '&', '|', '<', '>', '$', '`', '(', ')', '\n'];

/// Whether `cmd` never needs asking under `allow`: it holds none of the
/// shell's chaining, redirecting or substituting characters, and its
/// first words are those of an entry.
pub fn allowed_without_asking(cmd: &str, allow: &[String]) -> bool {
    if cmd.contains(SHELL_SPECIALS) {
        return false;
    }
    let words: Vec<&str> = cmd.split_whitespace().collect();
    allow.iter().any(|entry| {
        let entry: Vec<&str> = entry.split_whitespace().collect();
        !entry.is_empty() && words.len() >= entry.len() && words[..entry.len()] == entry[..]
    })
}

/// An allow list as flags and bodies give it: comma-separated entries,
/// each trimmed, empty ones dropped.
pub fn parse_allow_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(|e| e.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|e| !e.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &str) -> Vec<String> {
        parse_allow_list(entries)
    }

    #[test]
    fn a_command_is_allowed_by_its_first_words_only_when_it_chains_nothing() {
        let allow = list("ls, cat ,git status");
        assert_eq!(allow, ["ls", "cat", "git status"]);
        assert!(allowed_without_asking("ls", &allow));
        assert!(allowed_without_asking("ls -la src", &allow));
        assert!(allowed_without_asking("git   status --short", &allow));
        assert!(!allowed_without_asking("git push", &allow));
        assert!(!allowed_without_asking("lsblk", &allow));
        for cmd in [
            "ls; rm -rf /workspace",
            "ls && rm x",
            "ls | sh",
            "ls > f",
            "cat < f",
            "ls $(rm x)",
            "ls `rm x`",
            "ls (x)",
            "ls\nrm x",
            "cat $HOME",
        ] {
            assert!(!allowed_without_asking(cmd, &allow), "{cmd:?}");
        }
        assert!(!allowed_without_asking("ls", &[]));
    }

    #[test]
    fn frames_and_roles_have_the_contract_s_shape() {
        let f = ApprovalFrame::Request {
            approval_id: "a1".into(),
            turn_id: "t1".into(),
            cmd: "ls".into(),
        };
        assert_eq!(
            serde_json::to_value(&f).unwrap(),
            serde_json::json!({"phase":"request","approvalId":"a1","turnId":"t1","cmd":"ls"})
        );
        let d = ApprovalFrame::Decided {
            approval_id: "a1".into(),
            approved: false,
            by: "ann".into(),
        };
        assert_eq!(
            serde_json::to_value(&d).unwrap(),
            serde_json::json!({"phase":"decided","approvalId":"a1","approved":false,"by":"ann"})
        );
        assert!(RoomRole::Owner > RoomRole::Writer && RoomRole::Writer > RoomRole::Viewer);
        assert_eq!(RoomRole::parse("writer"), Some(RoomRole::Writer));
        assert_eq!(Policy::parse("ask"), Some(Policy::Ask));
        assert_eq!(Policy::parse("maybe"), None);
    }
}
