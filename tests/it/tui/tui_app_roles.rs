//! Roles and approvals in the TUI as people meet them: a viewer chats to
//! the room and is told, before anything is sent, what a viewer may not
//! do (in the server's words), and sees it greyed out; a role that
//! changes applies at once; an agent's command waiting for a person opens
//! a dialog (from its frame, or from the state after a reconnect) for
//! whoever may answer, `y` approves and `n` denies it, Esc closes it until
//! F5, and the room's decision closes it everywhere with a toast that says
//! who decided; `/policy` shows and sets the policy.

use crate::common::tui_fixtures;
use crate::common::tui_fixtures::*;
use crossterm::event::KeyCode;
use duet::client::http::StatusError;
use duet::client::rpc::{RoomOp, RpcError};
use duet::protocol::*;
use duet::tui::app::{App, Effect, Modal, Msg};
use duet::tui::composer::Mode;
use serde_json::json;

fn last_toast(app: &App) -> String {
    app.toasts
        .last()
        .map(|t| t.text.clone())
        .unwrap_or_default()
}

fn calls(effects: &[Effect]) -> Vec<RoomOp> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Call(op) => Some(op.clone()),
            _ => None,
        })
        .collect()
}

fn viewer() -> App {
    let mut app = app();
    app.update(you("ada", RoomRole::Viewer));
    app
}

/// The status bar: the screen's last line.
fn bar(app: &mut App) -> String {
    render(app, 120, 40)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string()
}

fn decided(id: &str, approved: bool, by: &str) -> Msg {
    frame(ServerFrame::Approval(ApprovalFrame::Decided {
        approval_id: id.into(),
        approved,
        by: by.into(),
    }))
}

#[test]
fn a_viewer_chats_to_the_room_and_asking_the_agent_is_refused_before_sending() {
    let mut app = viewer();
    assert_eq!(
        app.composer.mode,
        Mode::Room,
        "a viewer's line goes to the room"
    );
    assert!(bar(&mut app).contains(" · viewer"), "{}", bar(&mut app));

    let effects = submit(&mut app, "hello all");
    assert_eq!(calls(&effects), vec![RoomOp::to_room("hello all")]);

    let effects = submit(&mut app, "@agent what is here?");
    assert!(calls(&effects).is_empty(), "{effects:?}");
    assert_eq!(
        last_toast(&app),
        "You are a viewer: a viewer may not ask the agent"
    );
    assert_eq!(
        app.composer.text(),
        "@agent what is here?",
        "the line stays"
    );
    app.update(ctrl('u'));

    let effects = submit(&mut app, "!rm -rf build");
    assert!(calls(&effects).is_empty());
    assert_eq!(
        last_toast(&app),
        "You are a viewer: a viewer may not run commands"
    );
    app.update(ctrl('u'));

    // The modes it cannot send in are refused too.
    app.update(ctrl('g'));
    assert_eq!(app.composer.mode, Mode::Room);
    assert_eq!(
        last_toast(&app),
        "You are a viewer: a viewer may not ask the agent"
    );
    app.update(ctrl('r'));
    assert_eq!(app.composer.mode, Mode::Room);
}

#[test]
fn a_viewer_is_refused_each_action_its_role_may_not_take() {
    let mut app = viewer();
    app.update(state(Vec::new(), Vec::new()));
    for (line, said) in [
        ("/undo", "a viewer may not restore checkpoints"),
        ("/checkpoint before", "a viewer may not take checkpoints"),
        ("/restore before", "a viewer may not restore checkpoints"),
        (
            "/bg python3 -m http.server",
            "a viewer may not start background processes",
        ),
        ("/fork other", "a viewer may not fork the room"),
        ("/cleanup", "a viewer may not clean the room up"),
        ("/put notes.txt", "a viewer may not change files"),
        ("/policy ask", "a viewer may not change the policy"),
        ("/invite writer", "a viewer may not manage invites"),
        ("/model b", "a viewer may not choose the model"),
    ] {
        let effects = submit(&mut app, line);
        assert!(effects.is_empty(), "{line}: {effects:?}");
        assert!(app.modals.is_empty(), "{line}: no question asked");
        assert_eq!(
            last_toast(&app),
            format!("You are a viewer: {said}"),
            "{line}"
        );
        app.update(ctrl('u'));
    }
    // The cleanup key, and Esc on someone's running command.
    app.update(ctrl('x'));
    assert!(app.modals.is_empty());
    assert_eq!(
        last_toast(&app),
        "You are a viewer: a viewer may not clean the room up"
    );
    app.update(exec_start_by("e1", "sleep 100", "bob", "c-bob"));
    let effects = app.update(key(KeyCode::Esc));
    assert!(effects.is_empty() && app.modals.is_empty());
    assert_eq!(
        last_toast(&app),
        "You are a viewer: a viewer may not interrupt commands"
    );
    // Reading is for everyone: the help, the lists, the policy.
    assert!(submit(&mut app, "/policy").is_empty());
    assert!(last_toast(&app).starts_with("The room's policy is auto"));
    submit(&mut app, "/help");
    assert_eq!(app.modals.last(), Some(&Modal::Help));
    let screen = render(&mut app, 120, 80);
    assert!(
        screen.contains("(greyed out: what a viewer may not do)"),
        "{screen}"
    );
}

#[test]
fn a_viewer_watches_the_terminal_but_does_not_open_it_or_type_into_it() {
    let mut app = viewer();
    let effects = app.update(key(KeyCode::F(3)));
    assert!(
        calls(&effects).is_empty(),
        "no terminal runs: none is opened"
    );
    assert_eq!(
        last_toast(&app),
        "You are a viewer: a viewer may not open the terminal"
    );
    app.update(frame(ServerFrame::Term(TermFrame::Open {
        term_id: "t1".into(),
        by: "bob".into(),
        cols: 80,
        rows: 24,
    })));
    let effects = app.update(key(KeyCode::F(3)));
    assert!(
        matches!(calls(&effects).as_slice(), [RoomOp::TermOpen(_)]),
        "watching one that runs: {effects:?}"
    );
    app.update(answer(
        RoomOp::TermOpen(None),
        Ok(json!({"termId":"t1","cols":80,"rows":24})),
    ));
    let effects = type_text(&mut app, "ls");
    assert!(
        !effects
            .iter()
            .any(|e| matches!(e, Effect::TermInput { .. } | Effect::TermResize { .. })),
        "{effects:?}"
    );
    assert_eq!(
        last_toast(&app),
        "You are a viewer: a viewer may not type into the terminal"
    );
    // A new size is not sent: a watcher's does not count.
    let effects = app.update(Msg::Resize(150, 50));
    assert!(
        !effects
            .iter()
            .any(|e| matches!(e, Effect::TermResize { .. })),
        "{effects:?}"
    );
}

#[test]
fn a_viewers_keys_into_the_terminal_make_one_toast_that_counts_and_the_footer_says_view_only() {
    let mut app = viewer();
    app.update(frame(ServerFrame::Term(TermFrame::Open {
        term_id: "t1".into(),
        by: "bob".into(),
        cols: 80,
        rows: 24,
    })));
    app.update(key(KeyCode::F(3)));
    app.update(answer(
        RoomOp::TermOpen(None),
        Ok(json!({"termId":"t1","cols":80,"rows":24})),
    ));
    type_text(&mut app, "twelve keys");
    app.update(key(KeyCode::Enter));
    let refusals = app
        .toasts
        .iter()
        .filter(|t| t.text.contains("may not type"));
    assert_eq!(refusals.count(), 1, "{:?}", app.toasts);
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("×12"), "{screen}");
    assert!(
        screen.contains("the terminal is view-only for a viewer"),
        "{screen}"
    );
    assert!(
        !screen.contains("keys go to the room's terminal"),
        "{screen}"
    );
    // A dialog is never under a toast.
    app.update(key(KeyCode::Char(']')));
    app.update(ctrl(']'));
    app.update(key(KeyCode::F(1)));
    let screen = render(&mut app, 120, 40);
    assert!(!screen.contains("×12"), "{screen}");
}

#[test]
fn the_servers_refusal_is_said_whole() {
    let mut app = app();
    let refused = StatusError::from_body(
        403,
        r#"{"error":"forbidden","details":{"role":["a viewer may not run commands"]}}"#,
    );
    app.update(answer(
        RoomOp::Exec("ls".into()),
        Err(RpcError::Failed(refused)),
    ));
    assert!(
        last_toast(&app)
            .contains("You are a viewer: a viewer may not run commands (403 forbidden)"),
        "{}",
        last_toast(&app)
    );
}

#[test]
fn a_role_change_applies_at_once() {
    let mut app = app();
    app.update(you("ada", RoomRole::Writer));
    assert!(bar(&mut app).contains(" · writer"));
    app.update(approval_request("a1", "ls -la"));
    assert_eq!(app.modals.last(), Some(&Modal::Approval("a1".into())));

    // The owner makes ada a viewer: the question goes, her mode is the room's.
    app.update(you("ada", RoomRole::Viewer));
    assert!(app.modals.is_empty(), "a viewer answers nothing");
    assert_eq!(app.composer.mode, Mode::Room);
    assert!(bar(&mut app).contains(" · viewer"));
    assert!(last_toast(&app).starts_with("You are now a viewer in room demo-room"));
    assert!(calls(&submit(&mut app, "!ls")).is_empty());
    app.update(ctrl('u'));

    // And a writer again: the question that still waits is asked again.
    app.update(you("ada", RoomRole::Writer));
    assert_eq!(app.modals.last(), Some(&Modal::Approval("a1".into())));
    app.update(key(KeyCode::Esc));
    assert_eq!(
        calls(&submit(&mut app, "!ls")),
        vec![RoomOp::Exec("ls".into())]
    );
    app.update(you("ada", RoomRole::Owner));
    assert!(
        !bar(&mut app).contains("owner"),
        "an owner's bar says nothing of it"
    );
}

#[test]
fn presence_names_are_never_cut_in_the_middle_of_you() {
    let mut app = app();
    app.update(frame(ServerFrame::Presence {
        users: vec![
            PresenceUser {
                role: RoomRole::Owner,
                id: "c-ada".into(),
                name: "alice".into(),
                since: T0,
            },
            PresenceUser {
                role: RoomRole::Viewer,
                id: "c-bob".into(),
                name: "bob".into(),
                since: T0,
            },
        ],
    }));
    let screen = render(&mut app, 120, 40);
    assert!(!screen.contains("(…"), "{screen}");
    assert!(screen.contains("● alice owner"), "{screen}");
    assert!(screen.contains("● bob viewer"), "{screen}");
}

#[test]
fn an_invite_that_fixes_the_name_renames_this_client() {
    let mut app = app();
    let effects = app.update(you("Ada Lovelace", RoomRole::Writer));
    assert_eq!(app.session.name, "Ada Lovelace");
    assert!(effects.contains(&Effect::NameChanged("Ada Lovelace".into())));
}

#[test]
fn presence_shows_each_persons_role_once_they_differ() {
    let mut app = app();
    app.update(frame(ServerFrame::Presence {
        users: vec![
            PresenceUser {
                id: "c-ada".into(),
                name: "ada".into(),
                since: T0,
                role: RoomRole::Owner,
            },
            PresenceUser {
                id: "c-bob".into(),
                name: "bob".into(),
                since: T0,
                role: RoomRole::Viewer,
            },
        ],
    }));
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("● ada owner"), "{screen}");
    assert!(screen.contains("● bob viewer"), "{screen}");
    // A room of owners shows no roles.
    app.update(presence(&[("c-ada", "ada"), ("c-bob", "bob")]));
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("● bob\n") || screen.contains("● bob "),
        "{screen}"
    );
    assert!(!screen.contains("owner"), "{screen}");
}

#[test]
fn a_request_opens_the_dialog_with_the_command_in_full_and_y_approves() {
    let mut app = app();
    let cmd =
        "find . -name '*.tmp' -delete && echo cleaned every temporary file in the tree\ngit status";
    app.update(approval_request("a1", cmd));
    assert_eq!(app.modals.last(), Some(&Modal::Approval("a1".into())));
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("The agent asks to run"), "{screen}");
    assert!(
        screen.contains(
            "find . -name '*.tmp' -delete && echo cleaned every temporary file in the tree"
        ),
        "{screen}"
    );
    assert!(screen.contains("git status"), "{screen}");
    assert!(screen.contains("y approve"), "{screen}");

    // Enter does not answer: only y or n do.
    assert!(app.update(key(KeyCode::Enter)).is_empty());
    let effects = app.update(key(KeyCode::Char('y')));
    assert_eq!(
        calls(&effects),
        vec![RoomOp::Approve {
            approval_id: "a1".into(),
            approved: true
        }]
    );
    assert!(app.modals.is_empty());
    app.update(decided("a1", true, "ada"));
    assert_eq!(
        last_toast(&app),
        "ada approved `find . -name '*.tmp' -delete && echo cl…`"
    );
    assert!(app.approvals.open.is_empty());
}

#[test]
fn after_a_reconnect_the_state_opens_the_dialog_and_n_denies() {
    let mut app = app();
    app.update(frame(ServerFrame::State {
        state: RoomState {
            policy: Policy::Ask,
            approvals: vec![Approval {
                approval_id: "a7".into(),
                turn_id: "t3".into(),
                cmd: "rm -rf node_modules".into(),
            }],
            ..RoomState::default()
        },
    }));
    assert_eq!(app.modals.last(), Some(&Modal::Approval("a7".into())));
    assert!(
        bar(&mut app).contains("policy ask (1 waiting)"),
        "{}",
        bar(&mut app)
    );
    let effects = app.update(key(KeyCode::Char('n')));
    assert_eq!(
        calls(&effects),
        vec![RoomOp::Approve {
            approval_id: "a7".into(),
            approved: false
        }]
    );
    app.update(decided("a7", false, "ada"));
    assert_eq!(last_toast(&app), "`rm -rf node_modules` denied by ada");
    // The next state has none: nothing opens again.
    app.update(patch(json!({ "approvals": [] })));
    assert!(app.modals.is_empty());
    assert!(bar(&mut app).contains("policy ask"));
}

#[test]
fn someone_elses_decision_closes_the_dialog_and_says_who() {
    let mut app = app();
    app.update(approval_request("a1", "ls"));
    app.update(decided("a1", true, "bob"));
    assert!(app.modals.is_empty());
    assert_eq!(last_toast(&app), "bob approved `ls`");

    app.update(approval_request("a2", "make deploy"));
    app.update(decided("a2", false, "duet"));
    assert!(app.modals.is_empty());
    assert_eq!(last_toast(&app), "`make deploy` was not approved in time");

    app.update(approval_request("a3", "cargo test"));
    app.update(frame(ServerFrame::Approval(ApprovalFrame::Withdrawn {
        approval_id: "a3".into(),
    })));
    assert!(app.modals.is_empty());
    assert_eq!(
        last_toast(&app),
        "`cargo test` needs no answer: its turn ended"
    );
}

#[test]
fn esc_closes_the_dialog_unanswered_and_f5_asks_again() {
    let mut app = app();
    app.update(approval_request("a1", "ls"));
    let effects = app.update(key(KeyCode::Esc));
    assert!(effects.is_empty(), "Esc answers nothing");
    assert!(app.modals.is_empty());
    // A state that still lists it does not reopen it by itself.
    app.update(patch(
        json!({ "approvals": [{"approvalId":"a1","turnId":"t1","cmd":"ls"}] }),
    ));
    assert!(app.modals.is_empty());
    app.update(key(KeyCode::F(5)));
    assert_eq!(app.modals.last(), Some(&Modal::Approval("a1".into())));
    app.update(key(KeyCode::Esc));
    submit(&mut app, "/approvals");
    assert_eq!(app.modals.last(), Some(&Modal::Approval("a1".into())));
}

#[test]
fn a_viewer_sees_no_dialog_and_a_refused_answer_asks_again() {
    let mut watcher = viewer();
    watcher.update(approval_request("a1", "ls"));
    assert!(watcher.modals.is_empty());
    assert_eq!(
        last_toast(&watcher),
        "The agent waits for a writer or owner to approve `ls`"
    );
    assert_eq!(watcher.approvals.open.len(), 1);

    let mut app = app();
    app.update(approval_request("a1", "ls"));
    app.update(key(KeyCode::Char('y')));
    app.update(answer(
        RoomOp::Approve {
            approval_id: "a1".into(),
            approved: true,
        },
        Err(RpcError::NotSent("offline".into())),
    ));
    assert!(last_toast(&app).starts_with("Your answer to `ls` was not taken"));
    assert_eq!(app.modals.last(), Some(&Modal::Approval("a1".into())));
}

#[test]
fn policy_is_shown_and_set() {
    let mut app = app();
    assert_eq!(
        calls(&submit(&mut app, "/policy ask")),
        vec![RoomOp::SetPolicy(Policy::Ask)]
    );
    app.update(answer(
        RoomOp::SetPolicy(Policy::Ask),
        Ok(json!({"policy":"ask"})),
    ));
    assert!(last_toast(&app).starts_with("The room's policy is now ask"));
    app.update(patch(
        json!({ "policy": "ask", "allow": ["ls", "git status"] }),
    ));
    assert!(bar(&mut app).contains("policy ask"));
    submit(&mut app, "/policy");
    assert_eq!(
        last_toast(&app),
        "The room's policy is ask: each agent's command waits for a writer or owner to approve \
         it; never asking: ls, git status"
    );
    assert!(submit(&mut app, "/policy sometimes").is_empty());
    assert!(last_toast(&app).starts_with("usage: /policy auto|ask|off"));
}

/// The answer of an `invite_create` that made `token`'s invite.
fn invite_made(request: duet::client::access::InviteRequest, token: &str) -> Msg {
    let role = request.role;
    answer(
        RoomOp::InviteCreate(request),
        Ok(json!({
            "invite": {"id":"i1","role": role,"expiresAt": T0 + 86_400_000,
                       "createdAt": T0, "by":"ada"},
            "token": token,
            "url": format!("http://{token}@127.0.0.1:8787/demo-room"),
        })),
    )
}

#[test]
fn an_invite_stays_on_screen_on_one_line_until_dismissed() {
    let mut app = app();
    let effects = submit(&mut app, "/invite viewer bob");
    let Some(RoomOp::InviteCreate(request)) = calls(&effects).pop() else {
        panic!("{effects:?}")
    };
    assert_eq!(request.role, RoomRole::Viewer);
    assert_eq!(request.name.as_deref(), Some("bob"));
    let token = format!("duet_inv_{}", "0a".repeat(20));
    let command = format!("duet join {token}@127.0.0.1:8787/demo-room");
    let effects = app.update(invite_made(request, &token));
    assert!(effects.contains(&Effect::Clipboard(command.clone())));
    assert_eq!(app.modals.last(), Some(&Modal::Link));
    // A minute later it is still there, the command on one line.
    app.now_ms += 60_000;
    app.update(Msg::Tick);
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.lines().any(|l| l.contains(&command)),
        "one unbroken line:\n{screen}"
    );
    assert!(
        screen.contains("OSC 52; your terminal may ignore it"),
        "{screen}"
    );
    // On 80 columns the link has a line of its own, whole.
    let narrow = render(&mut app, 80, 24);
    let link = format!("{token}@127.0.0.1:8787/demo-room");
    assert!(narrow.lines().any(|l| l.contains(&link)), "{narrow}");
    // Under tmux without set-clipboard on, a copy says it cannot work.
    app.clipboard = duet::tui::share::ClipboardPath::TmuxOff;
    let effects = app.update(key(KeyCode::Char('c')));
    assert!(effects.contains(&Effect::Clipboard(command.clone())));
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("not copied: tmux drops OSC 52"), "{screen}");
    app.update(key(KeyCode::Esc));
    assert!(app.modals.is_empty());
    assert!(!render(&mut app, 120, 40).contains(&token));
    assert!(submit(&mut app, "/invite boss").is_empty());
    assert!(last_toast(&app).starts_with("usage: /invite"));
}

#[test]
fn a_web_invite_shows_the_browser_link() {
    let mut app = app();
    let effects = submit(&mut app, "/invite writer web");
    let Some(RoomOp::InviteCreate(request)) = calls(&effects).pop() else {
        panic!("{effects:?}")
    };
    assert_eq!(
        (request.role, request.name.as_deref(), request.web),
        (RoomRole::Writer, None, true)
    );
    let token = format!("duet_inv_{}", "2c".repeat(20));
    let link = format!("http://127.0.0.1:8787/r/demo-room#token={token}");
    let effects = app.update(invite_made(request, &token));
    assert!(effects.contains(&Effect::Clipboard(link.clone())));
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains(&link), "{screen}");
    assert!(screen.contains("They open in a browser"), "{screen}");
    // A name and `web` together; `web` alone is no name.
    app.update(key(KeyCode::Esc));
    let effects = submit(&mut app, "/invite viewer bob web");
    let Some(RoomOp::InviteCreate(request)) = calls(&effects).pop() else {
        panic!("{effects:?}")
    };
    assert_eq!((request.name.as_deref(), request.web), (Some("bob"), true));
}

#[test]
fn the_link_key_makes_a_writer_invite_and_never_shows_the_token() {
    use duet::client::join::Backend;
    // A backend with a token, an owner: a fresh writer invite.
    let mut app = app();
    app.session.backend = Backend::Server { token: true };
    let effects = app.update(key(KeyCode::F(6)));
    let Some(RoomOp::InviteCreate(request)) = calls(&effects).pop() else {
        panic!("{effects:?}")
    };
    assert_eq!(request.role, RoomRole::Writer);
    assert_eq!(request.name, None);
    let token = format!("duet_inv_{}", "1b".repeat(20));
    app.update(invite_made(request, &token));
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("for a writer"), "{screen}");
    assert!(screen.contains(&format!("duet join {token}@127.0.0.1:8787/demo-room")));
    app.update(key(KeyCode::Esc));
    // The bar shows the address, never a token.
    assert!(bar(&mut app).contains("join: 127.0.0.1:8787/demo-room"));
    // F6 again: the same invite, shown and copied again; no new one.
    let effects = app.update(key(KeyCode::F(6)));
    assert!(calls(&effects).is_empty(), "{effects:?}");
    let link = format!("duet join {token}@127.0.0.1:8787/demo-room");
    assert!(effects.contains(&Effect::Clipboard(link.clone())));
    assert!(render(&mut app, 120, 40).contains(&link));
    app.update(key(KeyCode::Esc));
    // Near its end it is not given out again: a fresh one is made.
    app.now_ms = T0 + 86_400_000 - 60_000;
    let effects = app.update(key(KeyCode::F(6)));
    assert!(
        matches!(calls(&effects).pop(), Some(RoomOp::InviteCreate(_))),
        "{effects:?}"
    );

    // A viewer may not invite: told to ask an owner, nothing sent.
    let mut app = viewer();
    app.session.backend = Backend::Server { token: true };
    let effects = app.update(key(KeyCode::F(6)));
    assert!(calls(&effects).is_empty(), "{effects:?}");
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("ask an owner"), "{screen}");
    assert!(!effects.iter().any(|e| matches!(e, Effect::Clipboard(_))));

    // A backend without a token: the room's link as it is, copied.
    let mut app = tui_fixtures::app();
    let effects = app.update(key(KeyCode::F(6)));
    assert!(calls(&effects).is_empty(), "{effects:?}");
    assert!(effects.contains(&Effect::Clipboard(
        "duet join 127.0.0.1:8787/demo-room".into()
    )));
    assert!(render(&mut app, 120, 40).contains("this backend takes no token"));
}
