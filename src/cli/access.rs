//! `duet invite`, `duet policy`, `duet approve` and `duet deny`: who may
//! do what in a room, and the agent's commands that wait for a person,
//! from the command line (the bodies, the expiry's spelling and the
//! tables: `client::access`). Over HTTP, but the policy's show: no route
//! reads the state, so it is read from a socket's first state.

use super::ClientArgs;
use crate::client::access::{self, InviteRequest, policy_words};
use crate::client::commands::{client_for, socket_params};
use crate::client::explain;
use crate::client::ps::said;
use crate::client::socket::state_once;
use crate::protocol::{InviteCreated, InvitesResponse, now_ms};
use clap::Args;
use std::io::Write;
use std::process::ExitCode;

#[derive(Debug, Clone, Args)]
pub struct InviteArgs {
    /// Backend URL, e.g. http://127.0.0.1:8787
    #[arg(long, env = "DUET_SERVER")]
    pub server: Option<String>,
    /// Room id (1–63 of A-Z a-z 0-9 _ -)
    #[arg(long, env = "DUET_ROOM")]
    pub room: Option<String>,
    /// Bearer token: the server's (an owner's everywhere) or an owner's
    /// invite
    #[arg(long, env = "DUET_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Your name in the room, as the invite's maker (`--name` after
    /// `invite` is the invited person's; `duet --name NAME invite` is yours)
    #[arg(long = "by", id = "name", env = "DUET_NAME", value_name = "NAME")]
    pub by: Option<String>,
    /// What they may do: viewer (watch and chat), writer (also ask the
    /// agent, run commands), owner (everything)
    #[arg(long, value_parser = parse_role, required_unless_present_any = ["list", "revoke"])]
    pub role: Option<crate::protocol::RoomRole>,
    /// How long it lasts: 90s, 30m, 24h, 7d, or seconds (default: 24h)
    #[arg(long, value_name = "TIME", value_parser = crate::client::access::parse_expires)]
    pub expires: Option<u64>,
    /// Fixes the name of whoever joins with it (records and approvals
    /// then name them truly)
    #[arg(long = "name", id = "invitee", value_name = "NAME")]
    pub name: Option<String>,
    /// Print a browser link (URL/r/ROOM#token=TOKEN: nothing to install,
    /// the page opens the room) instead of `duet join`'s
    #[arg(long, conflicts_with_all = ["list", "revoke"])]
    pub web: bool,
    /// List the room's invites (id, role, name, expiry) instead
    #[arg(long, conflicts_with_all = ["role", "expires", "invitee", "revoke"])]
    pub list: bool,
    /// With --list: print `{invites}` as JSON
    #[arg(long, requires = "list")]
    pub json: bool,
    /// Revoke invite ID: its token stops working, its people are
    /// disconnected
    #[arg(long, value_name = "ID", conflicts_with_all = ["role", "expires", "invitee"])]
    pub revoke: Option<String>,
}

impl InviteArgs {
    /// Where the client finds its room, and as whom.
    pub fn client(&self) -> ClientArgs {
        ClientArgs {
            server: self.server.clone(),
            room: self.room.clone(),
            token: self.token.clone(),
            name: self.by.clone(),
        }
    }
}

/// A role as written on the command line.
fn parse_role(text: &str) -> Result<crate::protocol::RoomRole, String> {
    crate::protocol::RoomRole::parse(text)
        .ok_or_else(|| format!("{text:?} is not a role: viewer, writer or owner"))
}

#[derive(Debug, Clone, Args)]
pub struct PolicyArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The new policy: auto, ask or off (absent: shows it)
    #[arg(value_parser = parse_policy)]
    pub policy: Option<crate::protocol::Policy>,
    /// The room's own commands that never ask, comma-separated
    /// ("ls,cat,git status"; "" empties it); needs a policy
    #[arg(long, value_name = "LIST", requires = "policy")]
    pub allow: Option<String>,
}

/// A policy as written on the command line.
fn parse_policy(text: &str) -> Result<crate::protocol::Policy, String> {
    crate::protocol::Policy::parse(text)
        .ok_or_else(|| format!("{text:?} is not a policy: auto, ask or off"))
}

#[derive(Debug, Clone, Args)]
pub struct ApproveArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The waiting command's id (`a1`; `duet policy` lists them)
    #[arg(value_name = "ID")]
    pub approval: String,
}

/// `duet invite --role ROLE [--expires T] [--name N]`, `--list`,
/// `--revoke ID`.
pub async fn invite(args: InviteArgs) -> anyhow::Result<ExitCode> {
    if let Some(name) = &args.name
        && let Some(problem) = crate::protocol::name_problem(name)
    {
        return said(&format!("--name {name:?}: a person's name {problem}"));
    }
    let settings = super::settings(&args.client())?;
    let client = client_for(&settings)?;
    let now = u64::try_from(now_ms()).unwrap_or_default();
    let tz = super::local_offset();
    if args.list {
        let list = match client.invites().await {
            Ok(list) => list,
            Err(err) => return said(&explain::http(&err)),
        };
        let mut out = std::io::stdout().lock();
        if args.json {
            let answer = InvitesResponse { invites: list };
            writeln!(out, "{}", serde_json::to_string_pretty(&answer)?)?;
        } else if list.is_empty() {
            writeln!(
                out,
                "no invites in room {} (`duet invite --role viewer` makes one)",
                client.room()
            )?;
        } else {
            out.write_all(access::invite_table(&list, now, tz).as_bytes())?;
        }
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(id) = &args.revoke {
        return match client.revoke_invite(id).await {
            Ok(_) => {
                println!(
                    "revoked invite {id}: its link no longer works, and whoever joined with it \
                     was disconnected"
                );
                Ok(ExitCode::SUCCESS)
            }
            Err(err) => said(&explain::http(&err)),
        };
    }
    let Some(role) = args.role else {
        return said("say --role viewer, writer or owner (or --list, or --revoke ID)");
    };
    let request = InviteRequest {
        role,
        expires_in: args.expires,
        name: args.name.clone(),
        user_id: None,
        web: args.web,
    };
    match client.create_invite(request).await {
        Ok(created) if args.web => {
            print!("{}", created_web_text(&created, client.room(), now, tz));
            Ok(ExitCode::SUCCESS)
        }
        Ok(created) => {
            print!("{}", created_text(&created, client.room(), now, tz));
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => said(&explain::http(&err)),
    }
}

/// What `duet invite` prints once the invite is made: who it is for, when
/// it expires, the command to join with and the link.
pub fn created_text(created: &InviteCreated, room: &str, now: u64, tz: time::UtcOffset) -> String {
    let invite = &created.invite;
    let named = invite
        .name
        .as_ref()
        .map(|n| format!(" named {n}"))
        .unwrap_or_default();
    format!(
        "Invite {id}: {role}{named} in room {room}, expires {expires}.\n\
         They join with:\n\n  duet join {url}\n\n\
         Link: {url}\n\
         (`duet invite --revoke {id}` ends it and disconnects them)\n",
        id = invite.id,
        role = invite.role.with_article(),
        expires = access::expires(invite.expires_at, now, tz),
        url = created.url,
    )
}

/// What `duet invite --web` prints: who it is for, when it expires, and
/// the browser link (the token in its fragment, which browsers never send).
pub fn created_web_text(
    created: &InviteCreated,
    room: &str,
    now: u64,
    tz: time::UtcOffset,
) -> String {
    let invite = &created.invite;
    let web = crate::protocol::link::web_link(&created.url).unwrap_or_else(|| created.url.clone());
    format!(
        "Invite {id}: {role} in room {room}, expires {expires}.\n\
         They open in a browser:\n\n  {web}\n\n\
         (`duet invite --revoke {id}` ends it and closes their page)\n",
        id = invite.id,
        role = invite.role.with_article(),
        expires = access::expires(invite.expires_at, now, tz),
    )
}

/// `duet policy [auto|ask|off] [--allow LIST]`: shows it (with the
/// commands waiting), or sets it.
pub async fn policy(args: PolicyArgs) -> anyhow::Result<ExitCode> {
    let settings = super::settings(&args.client)?;
    let client = client_for(&settings)?;
    if let Some(policy) = args.policy {
        let allow = args.allow.as_deref().map(crate::protocol::parse_allow_list);
        return match client.set_policy(policy, allow).await {
            Ok(policy) => {
                println!("policy: {} ({})", policy.as_str(), policy_words(policy));
                Ok(ExitCode::SUCCESS)
            }
            Err(err) => said(&explain::http(&err)),
        };
    }
    let params = socket_params(&settings, &client, "policy", true)?;
    match state_once(&params).await {
        Ok(state) => {
            print!(
                "{}",
                access::policy_text(state.policy, &state.allow, &state.approvals)
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(why) => said(&why),
    }
}

/// `duet approve ID`, `duet deny ID`.
pub async fn decide(args: ApproveArgs, approved: bool) -> anyhow::Result<ExitCode> {
    let settings = super::settings(&args.client)?;
    let client = client_for(&settings)?;
    match client.approve(&args.approval, approved).await {
        Ok(_) if approved => {
            println!("approved {}: the agent's command runs", args.approval);
            Ok(ExitCode::SUCCESS)
        }
        Ok(_) => {
            println!(
                "denied {}: the agent's command does not run, and its reply says so",
                args.approval
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => said(&explain::http(&err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Invite, RoomRole};

    #[test]
    fn a_new_invite_says_how_to_join_and_when_it_ends() {
        let created = InviteCreated {
            invite: Invite {
                id: "i1".into(),
                role: RoomRole::Viewer,
                name: Some("bob".into()),
                expires_at: 1_767_348_000_000 + 86_400_000,
                created_at: 1_767_348_000_000,
                by: "ada".into(),
            },
            token: "duet_inv_0123".into(),
            url: "http://duet_inv_0123@127.0.0.1:8787/r1".into(),
        };
        let text = created_text(&created, "r1", 1_767_348_000_000, time::UtcOffset::UTC);
        assert_eq!(
            text,
            "Invite i1: a viewer named bob in room r1, expires 2026-01-03 10:00 (in 1d00h).\n\
             They join with:\n\n  duet join http://duet_inv_0123@127.0.0.1:8787/r1\n\n\
             Link: http://duet_inv_0123@127.0.0.1:8787/r1\n\
             (`duet invite --revoke i1` ends it and disconnects them)\n"
        );
        let web = created_web_text(&created, "r1", 1_767_348_000_000, time::UtcOffset::UTC);
        assert!(
            web.contains("\n  http://127.0.0.1:8787/r/r1#token=duet_inv_0123\n"),
            "{web}"
        );
    }
}
