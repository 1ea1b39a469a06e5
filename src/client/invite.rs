//! `duet invite`, `duet policy`, `duet approve` and `duet deny`: who may
//! do what in a room, and the agent's commands that wait for a person,
//! from the command line (the bodies, the expiry's spelling and the
//! tables: `client::access`). Over HTTP, but the policy's show: no route
//! reads the state, so it is read from a socket's first state.

use crate::cli::{ApproveArgs, InviteArgs, PolicyArgs};
use crate::client::access::{self, InviteRequest, a_role, policy_words};
use crate::client::commands::{client_for, data_dir_from_env, server_url, token_for};
use crate::client::explain;
use crate::client::ps::said;
use crate::client::socket::{SocketParams, state_once};
use crate::config;
use crate::protocol::{InviteCreated, InvitesResponse, now_ms};
use std::io::Write;
use std::process::ExitCode;

/// `duet invite --role ROLE [--expires T] [--name N]`, `--list`,
/// `--revoke ID`.
pub async fn invite(args: InviteArgs) -> anyhow::Result<ExitCode> {
    if let Some(name) = &args.name
        && let Some(problem) = crate::protocol::name_problem(name)
    {
        return said(&format!("--name {name:?}: a person's name {problem}"));
    }
    let settings = config::load(&args.client(), data_dir_from_env())?;
    let client = client_for(&settings)?;
    let now = u64::try_from(now_ms()).unwrap_or_default();
    let tz = crate::cli::local_offset();
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
    };
    match client.create_invite(request).await {
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
        role = a_role(invite.role),
        expires = access::expires(invite.expires_at, now, tz),
        url = created.url,
    )
}

/// `duet policy [auto|ask|off] [--allow LIST]`: shows it (with the
/// commands waiting), or sets it.
pub async fn policy(args: PolicyArgs) -> anyhow::Result<ExitCode> {
    let settings = config::load(&args.client, data_dir_from_env())?;
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
    let params = SocketParams {
        base: server_url(&settings)?,
        room: client.room().to_string(),
        name: settings.name.clone(),
        token: token_for(&settings),
        connection_id: format!("policy-{:016x}", rand::random::<u64>()),
        deltas: true,
    };
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
    let settings = config::load(&args.client, data_dir_from_env())?;
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
    }
}
