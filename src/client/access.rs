//! Invites, roles and the approval policy from a client's side
//! (docs/protocol.md "Invites, roles and approvals"): the request bodies,
//! how a person writes how long an invite lasts (`24h`), and how the
//! invites and the policy read (`duet invite --list`, `duet policy`). The
//! answers are `protocol::access`'s.

use crate::protocol::{Approval, Invite, MAX_INVITE_SECS, Policy, RoomRole};
use serde::{Deserialize, Serialize};

/// How an invite's token starts (`duet_inv_` and 40 hex digits): a
/// refusal of one says the invite ended, not that a token is wrong.
pub const INVITE_TOKEN_PREFIX: &str = "duet_inv_";

/// `POST …/invites` and rpc `invite_create`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InviteRequest {
    pub role: RoomRole,
    /// Seconds it lasts (the server's default, a day, when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in: Option<u64>,
    /// The name it fixes for whoever uses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// The client's alone (never sent): show the browser link
    /// (`URL/r/ROOM#token=TOKEN`) rather than `duet join`'s.
    #[serde(skip)]
    pub web: bool,
}

/// `POST …/policy` and rpc `set_policy`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyRequest {
    pub policy: Policy,
    /// Replaces the room's own allow list; absent, it stays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<String>>,
}

/// `POST …/approve` and rpc `approve`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApproveRequest {
    pub approval_id: String,
    pub approved: bool,
}

/// How long an invite lasts, as a person writes it: `90s`, `30m`, `24h`,
/// `7d`, or plain seconds; 1 s to a year. `Err` says what it takes.
pub fn parse_expires(text: &str) -> Result<u64, String> {
    let text = text.trim().to_ascii_lowercase();
    let bad = || {
        format!(
            "{text:?} is not a time: write seconds or a number with s, m, h or d \
             (90s, 30m, 24h, 7d)"
        )
    };
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text.as_str(), ""),
    };
    let per: u64 = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let secs = n.saturating_mul(per);
    if secs == 0 || secs > MAX_INVITE_SECS {
        return Err(format!(
            "{text:?}: an invite lasts from 1 second to 365 days"
        ));
    }
    Ok(secs)
}

/// What a policy means, in a few words.
pub fn policy_words(policy: Policy) -> &'static str {
    match policy {
        Policy::Auto => "the agent's commands run by themselves",
        Policy::Ask => "each agent's command waits for a writer or owner to approve it",
        Policy::Off => "the agent's commands do not run",
    }
}

/// When an invite expires: `2026-01-03 10:00 (in 23h59m)`, or
/// `… (expired)` once past.
pub fn expires(at_ms: u64, now_ms: u64, tz: time::UtcOffset) -> String {
    let when = crate::client::checkpoints::when(at_ms, tz);
    match at_ms.checked_sub(now_ms) {
        Some(left) if left > 0 => {
            let secs = i64::try_from(left.div_ceil(1000)).unwrap_or(i64::MAX);
            format!("{when} (in {})", crate::client::processes::duration(secs))
        }
        _ => format!("{when} (expired)"),
    }
}

/// The invites as columns under a header line: id, role, name, expires.
pub fn invite_table(list: &[Invite], now_ms: u64, tz: time::UtcOffset) -> String {
    let head = ["ID", "ROLE", "NAME", "EXPIRES"].map(String::from);
    let rows: Vec<[String; 4]> = list
        .iter()
        .map(|i| {
            [
                i.id.clone(),
                i.role.to_string(),
                i.name.clone().unwrap_or_else(|| "-".into()),
                expires(i.expires_at, now_ms, tz),
            ]
        })
        .collect();
    crate::client::ps::columns(std::iter::once(&head).chain(&rows))
}

/// What `duet policy` prints: the policy, what it means, the allow list
/// and the commands waiting for a person.
pub fn policy_text(policy: Policy, allow: &[String], approvals: &[Approval]) -> String {
    let mut text = format!("policy: {} ({})\n", policy.as_str(), policy_words(policy));
    if allow.is_empty() {
        text.push_str("allow: none (every agent's command asks under `ask`)\n");
    } else {
        text.push_str(&format!("allow: {}\n", allow.join(", ")));
    }
    if !approvals.is_empty() {
        text.push_str("waiting for approval (`duet approve ID` or `duet deny ID`):\n");
        let head = ["ID", "CMD"].map(String::from);
        let rows: Vec<[String; 2]> = approvals
            .iter()
            .map(|a| [a.approval_id.clone(), crate::text::one_line(&a.cmd)])
            .collect();
        text.push_str(&crate::client::ps::columns(
            std::iter::once(&head).chain(&rows),
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_written_with_a_unit_or_in_seconds() {
        assert_eq!(parse_expires("90s"), Ok(90));
        assert_eq!(parse_expires("30m"), Ok(1_800));
        assert_eq!(parse_expires("24h"), Ok(86_400));
        assert_eq!(parse_expires("7D"), Ok(604_800));
        assert_eq!(parse_expires("3600"), Ok(3_600));
        assert_eq!(parse_expires("365d"), Ok(MAX_INVITE_SECS));
        for bad in [
            "",
            "h",
            "1w",
            "1.5h",
            "-3",
            "24 h x",
            "99999999999999999999d",
        ] {
            assert!(parse_expires(bad).is_err(), "{bad:?}");
        }
        assert!(
            parse_expires("0")
                .unwrap_err()
                .contains("1 second to 365 days")
        );
        assert!(parse_expires("366d").unwrap_err().contains("365 days"));
        assert!(
            parse_expires("1w")
                .unwrap_err()
                .contains("90s, 30m, 24h, 7d")
        );
    }

    #[test]
    fn bodies_have_the_contract_s_shape() {
        let body = InviteRequest {
            role: RoomRole::Viewer,
            expires_in: Some(60),
            name: None,
            user_id: Some("ada".into()),
            web: true,
        };
        assert_eq!(
            serde_json::to_value(&body).unwrap(),
            serde_json::json!({"role":"viewer","expiresIn":60,"userId":"ada"})
        );
        let approve = ApproveRequest {
            approval_id: "a1".into(),
            approved: false,
        };
        assert_eq!(
            serde_json::to_value(&approve).unwrap(),
            serde_json::json!({"approvalId":"a1","approved":false})
        );
    }

    #[test]
    fn invites_read_as_a_table() {
        let invite = |id: &str, role, name: Option<&str>, expires_at| Invite {
            id: id.into(),
            role,
            name: name.map(String::from),
            expires_at,
            created_at: 0,
            by: "ada".into(),
        };
        let now = 1_767_348_000_000;
        let list = vec![
            invite("i1", RoomRole::Viewer, None, now + 86_400_000),
            invite("i2", RoomRole::Writer, Some("bob"), now + 90_000),
        ];
        assert_eq!(
            invite_table(&list, now, time::UtcOffset::UTC),
            "ID  ROLE    NAME  EXPIRES\n\
             i1  viewer  -     2026-01-03 10:00 (in 1d00h)\n\
             i2  writer  bob   2026-01-02 10:01 (in 1m30s)\n"
        );
    }
}
