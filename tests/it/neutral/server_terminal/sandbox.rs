//! The terminal and the room: inside the sandbox, untypable from inside,
//! read by the agent, ended when unattached and silent.

use super::*;

#[tokio::test]
async fn the_terminal_is_inside_the_sandbox() {
    let (server, _dir) = Server::fresh().await;
    let (_, exec) = server
        .post(
            "/api/rooms/term-iso/sandbox/exec",
            json!({"cmd": "echo uid=$(id -u)"}),
        )
        .await;
    let uid = exec["result"]["stdout"]
        .as_str()
        .unwrap()
        .trim()
        .to_string();
    let mut ada = Viewer::attach(&server, "term-iso", "ada", Some((120, 40))).await;
    ada.until_prompt().await;
    // Markers are split in the command, so the echoed line never matches.
    ada.type_in("echo uid=$(id -u) pwd=$PWD; cat /etc/shadow; echo pro''cs=$(ls /proc | grep -c '^[0-9]')\r")
        .await;
    ada.until_screen("\nprocs=").await;
    let text = ada.text();
    assert!(text.contains(&format!("{uid} pwd=/workspace")), "{text}");
    assert!(
        text.contains("/etc/shadow: No such file or directory"),
        "{text}"
    );
    let procs: usize = text
        .split("procs=")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(procs < 20, "only the sandbox's own processes: {procs}");
    // Files made in the terminal are the room's.
    ada.type_in("echo made-here > from-term.txt\r").await;
    ada.until_prompt().await;
    let got = tokio::time::timeout(SCREEN_WAIT, async {
        loop {
            let (_, read) = server
                .post(
                    "/api/rooms/term-iso/sandbox/exec",
                    json!({"cmd": "cat from-term.txt"}),
                )
                .await;
            if read["result"]["stdout"] == "made-here\n" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(got.is_ok(), "the file is in /workspace for commands too");
}

#[tokio::test]
async fn nothing_types_into_the_terminal_from_inside() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = Viewer::attach(&server, "term-sti", "ada", Some((120, 30))).await;
    ada.until_prompt().await;
    // TIOCSTI (0x5412) would push "id" into the shell's input; TIOCLINUX
    // (0x541C) reaches the console. Both are refused.
    // (The markers are built by perl, so the echoed command never matches.)
    ada.type_in(
        "perl -e 'my $c=\"X\"; print \"T\", \"STI=\", (ioctl(STDIN,0x5412,$c) ? \"allowed\" : \"refused $!\"), \"\\n\"; \
         my $l=\"\\x{6}\"; print \"T\", \"LINUX=\", (ioctl(STDIN,0x541C,$l) ? \"allowed\" : \"refused\"), \"\\n\"'\r",
    )
    .await;
    ada.until_screen("TLINUX=").await;
    let text = ada.text();
    assert!(text.contains("TSTI=refused"), "{text}");
    assert!(text.contains("TLINUX=refused"), "{text}");
    assert!(!text.contains("=allowed"), "{text}");
    // Nor can a one-shot command (the agent's, say) open the terminal and
    // type into it.
    let (_, exec) = server
        .post(
            "/api/rooms/term-sti/sandbox/exec",
            json!({"cmd": "for t in /dev/pts/[0-9]*; do perl -e 'open(my $t, \"+<\", $ARGV[0]) or die \"open: $!\"; my $c=\"X\"; print ioctl($t,0x5412,$c) ? \"allowed\" : \"refused $!\"' \"$t\"; done"}),
        )
        .await;
    let out = exec["result"]["stdout"].as_str().unwrap();
    assert!(out.starts_with("refused"), "{exec}");
    assert!(!out.contains("allowed"), "{exec}");
}

#[tokio::test]
async fn the_agent_reads_the_terminal_s_screen() {
    let model = FakeModel::start(vec![Script::Stream(vec!["I see it.".into()])]).await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &model.one_round_args()).await;
    let mut ada = Viewer::attach(&server, "term-agent", "ada", Some((80, 24))).await;
    ada.until_prompt().await;
    ada.type_in("ls /nowhere-at-all\r").await;
    ada.until_screen("No such file").await;
    let (status, body) = server
        .post(
            "/api/rooms/term-agent/message",
            json!({"text": "what went wrong in the terminal?", "userId": "ada"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let requests = model.requests();
    let sent = requests.last().unwrap().1.to_string();
    assert!(sent.contains("the room's terminal"), "{sent}");
    assert!(sent.contains("ls /nowhere-at-all"), "{sent}");
    assert!(sent.contains("No such file or directory"), "{sent}");
}

#[tokio::test]
async fn an_unattached_silent_terminal_ends_and_an_attached_one_keeps_the_sandbox() {
    if common::only_duet_serve("--terminal-idle-secs and --sandbox-idle-secs are duet serve flags")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        dir.path(),
        &["--terminal-idle-secs", "2", "--sandbox-idle-secs", "1"],
    )
    .await;
    let mut ada = Viewer::attach(&server, "term-idle", "ada", Some((80, 24))).await;
    ada.until_prompt().await;
    ada.type_in("kept=still-here\r").await;
    ada.until_prompt().await;
    // Well past the sandbox's idle stop: the terminal (and its shell) run on.
    tokio::time::sleep(Duration::from_secs(3)).await;
    ada.type_in("echo \"$kept\"-$((2*2))\r").await;
    ada.until_screen("still-here-4").await;
    // Unattached and silent: it ends by itself.
    let term_id = ada.term_id.clone();
    let answer = ada
        .ws
        .rpc(9, "term_detach", json!([{"termId": term_id}]))
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    let exit = ada
        .ws
        .until(|f| f["type"] == "duet_term" && f["phase"] == "exit")
        .await;
    assert_eq!(exit["termId"], term_id.as_str());
}

#[tokio::test]
async fn the_terminal_s_history_stays_out_of_the_workspace() {
    let (server, _dir) = Server::fresh().await;
    let room = "term-history";
    let mut ada = Viewer::attach(&server, room, "ada", Some((100, 30))).await;
    ada.until_prompt().await;
    ada.type_in("echo remembered-line\r").await;
    ada.until_prompt().await;
    // Programs keep sessions too: Python's history, less's, vim's viminfo.
    ada.type_in("python3 -q\r").await;
    ada.until_screen(">>> ").await;
    ada.type_in("print(6*7, 'py' 'thon')\r").await;
    ada.until_screen("42 python").await;
    ada.type_in("exit()\r").await;
    ada.until_prompt().await;
    ada.type_in("less /etc/hostname; echo less-''done\r").await;
    ada.until_screen("sandbox").await;
    ada.type_in("q").await;
    ada.until_screen("less-done").await;
    // (A marker after each program: keys typed while one starts are its.)
    ada.type_in("vim -c 'normal ihello' -c 'wq! /tmp/v.txt'; echo vim-''done\r")
        .await;
    ada.until_screen("vim-done").await;
    // bash writes its history file as it exits.
    ada.type_in("exit\r").await;
    let term_id = ada.term_id.clone();
    ada.until_frame(term_frame("exit", &term_id)).await;
    // No history or state is a file of the project (`duet pull` would
    // bring it home).
    let (_, listed) = server
        .post(
            &format!("/api/rooms/{room}/sandbox/exec"),
            json!({"cmd": "ls -A /workspace; grep -rl remembered-line /workspace"}),
        )
        .await;
    assert_eq!(listed["result"]["stdout"], "", "{listed}");
    // A new terminal still has it: ↑ brings the line back.
    let mut again = Viewer::attach(&server, room, "ada", Some((100, 30))).await;
    again.until_prompt().await;
    again.type_in("history | grep -c remem''bered-line\r").await;
    again.until_screen("\n1").await;
    // Python's history went to /tmp.
    again
        .type_in("grep -c 6.7 /tmp/.python_history; cat /tmp/v.txt\r")
        .await;
    again.until_screen("\n1\nhello").await;
}
