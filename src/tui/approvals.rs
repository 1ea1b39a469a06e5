//! Who you are in the room, its approval policy and the agent's commands
//! waiting for a person (docs/protocol.md "Invites, roles and approvals"):
//! `duet_you` sets this connection's role and name; a `duet_approval`
//! request (or `approvals` in a state, after a reconnect) opens a dialog
//! with the command in full for whoever may answer it (y approves, n
//! denies, Esc closes it unanswered: F5 or `/approvals` opens it again);
//! `decided` and `withdrawn` close it and a toast says who decided.
//! `/policy auto|ask|off` sets the policy (`/policy` shows it), `/invite
//! ROLE [NAME]` makes a link for someone else.

use crate::client::access::{InviteRequest, policy_words};
use crate::client::explain;
use crate::client::rpc::{Answer, RoomOp};
use crate::protocol::{Approval, ApprovalFrame, InviteCreated, Policy, RoomRole};
use crate::tui::app::{App, Effect, Modal};
use crate::tui::roles::Deed;
use crate::tui::share::MadeInvite;
use std::collections::BTreeSet;

/// How much of a command a toast quotes.
const QUOTED_CMD: usize = 40;

/// This connection as the room knows it (`duet_you`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct You {
    pub id: String,
    pub name: String,
    pub role: RoomRole,
    /// The invite it came with (none: the server's token).
    pub invite_id: Option<String>,
}

/// The room's policy for the agent's commands and those that wait.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Approvals {
    pub policy: Policy,
    /// The commands that never ask.
    pub allow: Vec<String>,
    /// The agent's commands waiting for a person, oldest first.
    pub open: Vec<Approval>,
    /// Closed with Esc, unanswered: not opened again by themselves.
    dismissed: BTreeSet<String>,
}

impl App {
    /// `duet_you`: this connection's role and name (an invite may fix
    /// the name).
    pub(crate) fn on_you(&mut self, you: You, effects: &mut Vec<Effect>) -> bool {
        let first = self.you.is_none();
        let was = self.role();
        if you.name != self.session.name {
            self.session.name = you.name.clone();
            effects.push(Effect::NameChanged(you.name.clone()));
        }
        let role = you.role;
        self.you = Some(you);
        if role != was || first {
            self.role_changed();
        }
        if role != was {
            self.toast(
                format!(
                    "You are now {} in room {}: {}",
                    role.with_article(),
                    self.session.room,
                    role_words(role)
                ),
                false,
            );
        }
        true
    }

    /// A `duet_approval` frame.
    pub(crate) fn on_approval_frame(&mut self, frame: ApprovalFrame) -> bool {
        match frame {
            ApprovalFrame::Request {
                approval_id,
                turn_id,
                cmd,
            } => {
                if self
                    .approvals
                    .open
                    .iter()
                    .any(|a| a.approval_id == approval_id)
                {
                    return false;
                }
                // Those who may not answer know why the agent waits.
                if self.may(Deed::Approve).is_err() {
                    self.toast(
                        format!(
                            "The agent waits for a writer or owner to approve {}",
                            quoted(&cmd)
                        ),
                        false,
                    );
                }
                self.approvals.open.push(Approval {
                    approval_id,
                    turn_id,
                    cmd,
                });
                self.offer_approval();
            }
            ApprovalFrame::Decided {
                approval_id,
                approved,
                by,
            } => {
                let cmd = self.close_approval(&approval_id);
                let cmd = quoted(cmd.as_deref().unwrap_or(&approval_id));
                let said = match (approved, by.as_str()) {
                    (true, _) => format!("{by} approved {cmd}"),
                    (false, "duet") => format!("{cmd} was not approved in time"),
                    (false, _) => format!("{cmd} denied by {by}"),
                };
                self.toast(said, false);
            }
            ApprovalFrame::Withdrawn { approval_id } => {
                if let Some(cmd) = self.close_approval(&approval_id) {
                    self.toast(
                        format!("{} needs no answer: its turn ended", quoted(&cmd)),
                        false,
                    );
                }
            }
        }
        true
    }

    /// The state's `approvals`: those open now (a reconnect sees them).
    pub(crate) fn set_approvals(&mut self, open: Vec<Approval>) -> bool {
        if self.approvals.open == open {
            return false;
        }
        let ids: Vec<&str> = open.iter().map(|a| a.approval_id.as_str()).collect();
        self.modals
            .retain(|m| !matches!(m, Modal::Approval(id) if !ids.contains(&id.as_str())));
        self.approvals
            .dismissed
            .retain(|id| ids.contains(&id.as_str()));
        self.approvals.open = open;
        self.offer_approval();
        true
    }

    /// The state's `policy`.
    pub(crate) fn set_policy(&mut self, policy: Policy) -> bool {
        let changed = self.approvals.policy != policy;
        self.approvals.policy = policy;
        changed
    }

    /// The state's `allow`.
    pub(crate) fn set_allow(&mut self, allow: Vec<String>) -> bool {
        let changed = self.approvals.allow != allow;
        self.approvals.allow = allow;
        changed
    }

    /// Opens the dialog for the oldest request not closed unanswered,
    /// when this person may answer and no such dialog shows.
    pub(crate) fn offer_approval(&mut self) {
        if self.may(Deed::Approve).is_err()
            || self.modals.iter().any(|m| matches!(m, Modal::Approval(_)))
        {
            return;
        }
        let next = self
            .approvals
            .open
            .iter()
            .find(|a| !self.approvals.dismissed.contains(&a.approval_id));
        if let Some(next) = next {
            self.modals.push(Modal::Approval(next.approval_id.clone()));
        }
    }

    /// A request left (decided or withdrawn): its dialog closes and the
    /// next one opens. Answers its command, if it was known.
    fn close_approval(&mut self, approval_id: &str) -> Option<String> {
        self.modals
            .retain(|m| !matches!(m, Modal::Approval(id) if id == approval_id));
        self.approvals.dismissed.remove(approval_id);
        let at = self
            .approvals
            .open
            .iter()
            .position(|a| a.approval_id == approval_id);
        let cmd = at.map(|i| self.approvals.open.remove(i).cmd);
        self.offer_approval();
        cmd
    }

    /// The request a dialog asks about.
    pub fn approval(&self, approval_id: &str) -> Option<&Approval> {
        self.approvals
            .open
            .iter()
            .find(|a| a.approval_id == approval_id)
    }

    /// y or n in the dialog.
    pub(crate) fn answer_approval(
        &mut self,
        approval_id: String,
        approved: bool,
        effects: &mut Vec<Effect>,
    ) {
        self.modals
            .retain(|m| !matches!(m, Modal::Approval(id) if *id == approval_id));
        // The next dialog waits for this answer's `decided`.
        self.approvals.dismissed.insert(approval_id.clone());
        effects.push(Effect::Call(RoomOp::Approve {
            approval_id,
            approved,
        }));
    }

    /// Esc in the dialog: closed unanswered, until asked for again.
    pub(crate) fn dismiss_approval(&mut self, approval_id: String) {
        self.modals
            .retain(|m| !matches!(m, Modal::Approval(id) if *id == approval_id));
        self.approvals.dismissed.insert(approval_id);
        self.toast(
            "the agent waits for an answer: F5 or /approvals shows the question again",
            false,
        );
    }

    /// F5, `/approvals`: the requests closed unanswered open again.
    pub(crate) fn reopen_approvals(&mut self) {
        if self.approvals.open.is_empty() {
            self.toast("nothing waits for approval", false);
            return;
        }
        self.approvals.dismissed.clear();
        self.offer_approval();
    }

    /// `/policy [auto|ask|off]`: shows the policy, or sets it.
    pub(crate) fn policy_command(
        &mut self,
        arg: &str,
        effects: &mut Vec<Effect>,
    ) -> Result<(), String> {
        if arg.is_empty() {
            let policy = self.approvals.policy;
            let allow = match self.approvals.allow.as_slice() {
                [] => String::new(),
                list => format!("; never asking: {}", list.join(", ")),
            };
            self.toast(
                format!(
                    "The room's policy is {}: {}{allow}",
                    policy.as_str(),
                    policy_words(policy)
                ),
                false,
            );
            return Ok(());
        }
        let policy = Policy::parse(arg).ok_or("usage: /policy auto|ask|off (alone: shows it)")?;
        self.may(Deed::SetPolicy)?;
        effects.push(Effect::Call(RoomOp::SetPolicy(policy)));
        Ok(())
    }

    /// `/invite ROLE [NAME] [web]`: a link for someone else (`web`: a
    /// browser's).
    pub(crate) fn invite_command(
        &mut self,
        role: &str,
        name: String,
        web: bool,
        effects: &mut Vec<Effect>,
    ) -> Result<(), String> {
        let usage = "usage: /invite viewer|writer|owner [NAME] [web] (NAME: the name it fixes; \
                     web: a browser link)";
        let role = RoomRole::parse(role).ok_or(usage)?;
        if let Some(problem) = crate::protocol::name_problem(&name).filter(|_| !name.is_empty()) {
            return Err(format!("/invite: the name {name:?} {problem}"));
        }
        effects.push(Effect::Call(RoomOp::InviteCreate(InviteRequest {
            role,
            expires_in: None,
            name: (!name.is_empty()).then_some(name),
            user_id: None,
            web,
        })));
        Ok(())
    }

    /// The answers of `approve`, `set_policy` and `invite_create`.
    pub(crate) fn on_access_answer(&mut self, answer: &Answer, effects: &mut Vec<Effect>) {
        match (&answer.op, &answer.result) {
            (RoomOp::Approve { approval_id, .. }, Err(err)) => {
                let cmd = self.approval(approval_id).map(|a| quoted(&a.cmd));
                let what = cmd.unwrap_or_else(|| approval_id.clone());
                self.toast(
                    format!("Your answer to {what} was not taken: {}", explain::rpc(err)),
                    true,
                );
                // Still open: ask again.
                self.approvals.dismissed.remove(approval_id);
                self.offer_approval();
            }
            (RoomOp::SetPolicy(policy), Ok(_)) => self.toast(
                format!(
                    "The room's policy is now {}: {}",
                    policy.as_str(),
                    policy_words(*policy)
                ),
                false,
            ),
            (RoomOp::SetPolicy(policy), Err(err)) => self.toast(
                format!(
                    "The policy was not set to {}: {}",
                    policy.as_str(),
                    explain::rpc(err)
                ),
                true,
            ),
            (RoomOp::InviteCreate(asked), Ok(_)) => match answer.decode::<InviteCreated>() {
                Ok(created) => {
                    // `http://` is the default: a shorter line fits more screens.
                    let url = created.url.strip_prefix("http://").unwrap_or(&created.url);
                    let web = asked
                        .web
                        .then(|| crate::protocol::link::web_link(&created.url))
                        .flatten();
                    let (command, how) = match web {
                        Some(web) => (web, "They open in a browser:"),
                        None => (format!("duet join {url}"), "They join with:"),
                    };
                    let invite = &created.invite;
                    let expires = crate::client::access::expires(
                        invite.expires_at,
                        u64::try_from(self.now_ms).unwrap_or_default(),
                        self.tz,
                    );
                    self.show_link(
                        command,
                        format!(
                            "Invite {} for {}, expires {expires} (`duet invite --revoke {}` \
                             ends it). {how}",
                            invite.id,
                            invite.role.with_article(),
                            invite.id
                        ),
                    );
                    // F6 shows a plain writer invite again rather than making more.
                    if invite.role == RoomRole::Writer && !asked.web && asked.name.is_none() {
                        self.writer_invite = self.shared.clone().map(|link| MadeInvite {
                            link,
                            expires_at: invite.expires_at,
                        });
                    }
                    self.copy_link(effects);
                }
                Err(err) => self.toast(format!("the invite: {err}"), true),
            },
            (RoomOp::InviteCreate(_), Err(err)) => {
                self.toast(format!("No invite was made: {}", explain::rpc(err)), true)
            }
            _ => {}
        }
    }
}

/// What a role may do, as the toast of a change says it.
fn role_words(role: RoomRole) -> &'static str {
    match role {
        RoomRole::Viewer => "you see everything and can chat to the room, and change nothing",
        RoomRole::Writer => "you can ask the agent, run commands and answer its approvals",
        RoomRole::Owner => "you can do everything, invites and roles too",
    }
}

/// `` `rm -rf build` ``: a command's first line, cut to fit a sentence.
fn quoted(cmd: &str) -> String {
    format!(
        "`{}`",
        crate::tui::text::truncate(&crate::tui::timeline::one_line(cmd), QUOTED_CMD)
    )
}
