//! What a user installs beside the binary, as they use it: the completion
//! scripts load in their shells, the manual renders with `man`, and
//! `duet serve --help` names each flag's variable under its heading.

use std::process::{Command, Output, Stdio};

fn duet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_duet"))
        .args(args)
        .output()
        .expect("duet runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `sh_line` run by bash with `duet`'s folder first on PATH.
fn bash(sh_line: &str) -> Output {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_duet"));
    let dir = bin.parent().expect("the binary has a folder");
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("bash")
        .args(["--norc", "--noprofile", "-c", sh_line])
        .env("PATH", path)
        .stdin(Stdio::null())
        .output()
        .expect("bash runs")
}

#[test]
fn the_bash_completion_parses_and_completes_duet() {
    let out = duet(&["completions", "bash"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("duet.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let parsed = bash(&format!("bash -n {}", script.display()));
    assert!(parsed.status.success(), "{}", text(&parsed.stderr));
    // Sourced, it defines duet's completion, and completing `duet se`
    // offers serve.
    let line = format!(
        "source {}; complete -p duet; COMP_WORDS=(duet se); COMP_CWORD=1; \
         COMP_LINE='duet se'; COMP_POINT=7; _duet duet se duet; echo \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let sourced = bash(&line);
    let said = text(&sourced.stdout);
    assert!(sourced.status.success(), "{}", text(&sourced.stderr));
    assert!(said.contains("-F _duet duet"), "{said}");
    assert!(
        said.lines().any(|l| l.split(' ').any(|w| w == "serve")),
        "{said}"
    );
}

#[test]
fn every_shell_gets_a_script() {
    for (shell, mark) in [
        ("zsh", "#compdef duet"),
        ("fish", "complete -c duet"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let out = duet(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains(mark), "{shell}");
    }
    let out = duet(&["completions", "tcsh"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
}

#[test]
fn the_manual_renders_with_man() {
    let out = duet(&["man"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = text(&out.stdout);
    assert!(page.contains(".TH DUET 1"), "{page}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("duet.1");
    std::fs::write(&file, &out.stdout).unwrap();
    let shown = Command::new("man")
        .arg("-l")
        .arg(&file)
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
        .expect("man runs (man-db; scripts/test installs it)");
    let shown_text = text(&shown.stdout);
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    assert!(shown_text.starts_with("DUET(1)"), "{shown_text}");
    for words in ["SYNOPSIS", "serve", "completions", "DUET_LOG", "duet.toml"] {
        assert!(shown_text.contains(words), "{words}: {shown_text}");
    }
    assert!(
        !shown_text.contains("\\f"),
        "no roff left raw: {shown_text}"
    );
}

#[test]
fn every_serve_flag_names_its_variable_under_a_heading() {
    let out = duet(&["serve", "--help"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let help = text(&out.stdout);
    for heading in ["Network:", "Limits:", "Sandbox:", "Agent:", "Storage:"] {
        assert!(help.lines().any(|l| l == heading), "{heading}: {help}");
    }
    // Each flag's block: its line and the indented lines under it.
    let mut flags = Vec::new();
    for line in help.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with('-') && line.starts_with("  ") && !line.starts_with("          ") {
            flags.push((trimmed.to_string(), String::new()));
        } else if let Some((_, block)) = flags.last_mut() {
            block.push_str(line);
            block.push('\n');
        }
    }
    assert!(flags.len() >= 35, "{} flags: {help}", flags.len());
    for (flag, block) in &flags {
        if flag.contains("--help") {
            continue;
        }
        let name = flag
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .trim_start_matches("--");
        let variable = format!("[env: DUET_{}", name.to_uppercase().replace('-', "_"));
        assert!(block.contains(&variable), "{flag}: {block}");
    }
}
