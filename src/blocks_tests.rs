//! The block format, byte for byte, and the parser's promises.

use super::*;
use proptest::prelude::*;

fn run(cmd: &str, stdout: &str, stderr: &str, exit: Option<i32>) -> Run {
    Run {
        cmd: cmd.into(),
        stdout: stdout.into(),
        stderr: stderr.into(),
        exit_code: exit,
        error: None,
        truncated: false,
        at: None,
    }
}

fn failed_to_start(cmd: &str, message: &str) -> Run {
    Run {
        error: Some(message.into()),
        ..run(cmd, "", "", None)
    }
}

fn output(cmd: &str, output: &str) -> Block {
    Block::Output {
        cmd: cmd.into(),
        output: output.into(),
    }
}

#[test]
fn commands_come_out_in_order_and_the_prose_is_trimmed() {
    let (prose, cmds) = extract_commands(
        "  Let me look.\n<run>ls -la</run>\nThen <run>  cat a.txt \n</run> and <run> </run>done.\n",
    );
    assert_eq!(prose, "Let me look.\n\nThen  and done.");
    assert_eq!(cmds, vec!["ls -la", "cat a.txt"]);
}

#[test]
fn commands_keep_parentheses_and_newlines() {
    let (prose, cmds) = extract_commands(
        "<run>echo $(date) (now): ok</run><run>for i in 1 2\ndo echo $i\ndone</run>",
    );
    assert_eq!(prose, "");
    assert_eq!(
        cmds,
        vec!["echo $(date) (now): ok", "for i in 1 2\ndo echo $i\ndone"]
    );
}

#[test]
fn an_unclosed_tag_stays_prose() {
    let (prose, cmds) = extract_commands("Try <run>ls</run> then <run>pwd");
    assert_eq!(prose, "Try  then <run>pwd");
    assert_eq!(cmds, vec!["ls"]);
}

#[test]
fn summary_prefers_stdout_then_stderr_then_says_no_output() {
    assert_eq!(summary("out\n", "err\n"), "out\n");
    assert_eq!(summary("", "err\n"), "err\n");
    assert_eq!(summary("", ""), "[no output]");
    let long = "é".repeat(501);
    assert_eq!(summary(&long, ""), "é".repeat(500));
    assert_eq!(summary(&"x".repeat(500), ""), "x".repeat(500));
}

#[test]
fn reply_with_several_commands_is_exactly_the_protocol_format() {
    let runs = [
        run("echo hi", "hi\n", "", Some(0)),
        run(
            "ls nope",
            "",
            "ls: cannot access 'nope': No such file or directory\n",
            Some(2),
        ),
        run("true", "", "", Some(0)),
        run("echo $(echo (a)): b\necho c", "(a): b\nc\n", "", Some(0)),
        failed_to_start("make", "sandbox: not built yet"),
    ];
    let text = render_reply("Here goes.", &runs);
    assert_eq!(
        text,
        "Here goes.\n\nOutput (echo hi):\nhi\n\n\nOutput (ls nope):\nls: cannot access 'nope': No such file or directory\n\n\nOutput (true):\n[no output]\n\nOutput (echo $(echo (a)): b\necho c):\n(a): b\nc\n\n\nError (make):\nsandbox: not built yet"
    );
}

#[test]
fn the_whole_reply_is_trimmed_at_both_ends() {
    // As the original worker: a reply with no prose starts with its block.
    assert_eq!(
        render_reply("", &[run("echo hi", "hi\n\n", "", Some(0))]),
        "Output (echo hi):\nhi"
    );
    assert_eq!(render_reply("Nothing to run.", &[]), "Nothing to run.");
}

#[test]
fn a_failing_command_with_output_is_an_output_block() {
    let text = render_reply("x", &[run("false; echo no", "no\n", "", Some(1))]);
    assert_eq!(text, "x\n\nOutput (false; echo no):\nno");
}

#[test]
fn parsing_the_text_finds_prose_and_blocks() {
    let text = "Here goes.\n\nOutput (echo $(echo (a)): b\necho c):\n(a): b\nc\n\n\nError (make):\nsandbox: not built yet\n\nOutput (true):\n[no output]";
    assert_eq!(
        parse(text, None),
        vec![
            Block::Prose("Here goes.".into()),
            output("echo $(echo (a)): b\necho c", "(a): b\nc\n"),
            Block::Error {
                cmd: "make".into(),
                message: "sandbox: not built yet".into()
            },
            output("true", "[no output]"),
        ]
    );
}

#[test]
fn parsing_reads_the_original_workers_form() {
    // The original removed the tags after appending: blank lines remain in
    // the prose, and a tag in an output vanished.
    let text = "Listing:\n\n\n\nthen done.\n\nOutput (ls):\na\nb\n\n\nOutput (cat x):\nsay  please";
    assert_eq!(
        parse(text, None),
        vec![
            Block::Prose("Listing:\n\n\n\nthen done.".into()),
            output("ls", "a\nb\n"),
            output("cat x", "say  please"),
        ]
    );
    assert_eq!(
        parse("Output (pwd):\n/workspace", None),
        vec![output("pwd", "/workspace")]
    );
}

#[test]
fn parsing_with_runs_takes_outputs_from_the_runs() {
    let runs = [
        run("echo hi", "hi\n", "warn\n", Some(0)),
        failed_to_start("make", "no sandbox"),
    ];
    let text = render_reply("Look:", &runs);
    assert_eq!(
        parse(&text, Some(&runs)),
        vec![
            Block::Prose("Look:".into()),
            output("echo hi", "hi\nwarn\n"),
            Block::Error {
                cmd: "make".into(),
                message: "no sandbox".into()
            },
        ]
    );
}

#[test]
fn parsing_with_runs_keeps_the_prose_of_every_round() {
    let first = [run("ls", "a\n", "", Some(0))];
    let second = [run("cat a", "", "", Some(0))];
    let round_one = render_reply("First.", &first);
    let text = render_reply(&format!("{round_one}\n\nSecond."), &second);
    let runs: Vec<Run> = first.iter().chain(second.iter()).cloned().collect();
    assert_eq!(
        parse(&text, Some(&runs)),
        vec![
            Block::Prose("First.".into()),
            output("ls", "a\n"),
            Block::Prose("Second.".into()),
            output("cat a", "[no output]"),
        ]
    );
}

#[test]
fn parsing_text_without_blocks_is_all_prose() {
    assert_eq!(parse("", None), vec![]);
    assert_eq!(
        parse("Output (not closed\n\nError (", None),
        vec![Block::Prose("Output (not closed\n\nError (".into())]
    );
}

/// Writes blocks back as text, with the blank line before each header but
/// a header at the very start.
fn rebuild(blocks: &[Block]) -> String {
    let mut text = String::new();
    for block in blocks {
        let (head, cmd, body) = match block {
            Block::Prose(p) => {
                text.push_str(p);
                continue;
            }
            Block::Output { cmd, output } => (OUTPUT_HEAD, cmd, output),
            Block::Error { cmd, message } => (ERROR_HEAD, cmd, message),
        };
        if !text.is_empty() {
            text.push_str(SEP);
        }
        text.push_str(&format!("{head}{cmd}):\n{body}"));
    }
    text
}

/// Text that often looks like blocks.
fn blocky_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("Output (".to_string()),
        Just("Error (".to_string()),
        Just("):".to_string()),
        Just("\n".to_string()),
        Just("\n\n".to_string()),
        Just("(".to_string()),
        Just(")".to_string()),
        Just("<run>".to_string()),
        Just("</run>".to_string()),
        "[a-zé ]{0,4}",
        any::<String>(),
    ];
    proptest::collection::vec(piece, 0..24).prop_map(|p| p.concat())
}

/// Whether no line of `s` starts a block header.
fn no_header_lines(s: &str) -> bool {
    !s.split('\n')
        .any(|line| line.starts_with(OUTPUT_HEAD) || line.starts_with(ERROR_HEAD))
}

fn a_run() -> impl Strategy<Value = Run> {
    let cmd = proptest::string::string_regex("[a-z()$: \n\"]{1,12}")
        .expect("a valid regex")
        .prop_filter("a trimmed command", |c| {
            c.trim() == c && !c.is_empty() && !c.contains("):\n")
        });
    let out = || blocky_text().prop_filter("no header lines", |s| no_header_lines(s));
    let message = proptest::string::string_regex("[a-z ]{0,10}").expect("a valid regex");
    (cmd, out(), out(), any::<bool>(), message).prop_map(
        |(cmd, stdout, stderr, fails, message): (String, String, String, bool, String)| {
            if fails {
                failed_to_start(&cmd, &message)
            } else {
                run(&cmd, &stdout, &stderr, Some(0))
            }
        },
    )
}

proptest! {
    #[test]
    fn parsing_never_panics_nor_drops_text(text in blocky_text()) {
        let blocks = parse(&text, None);
        let rebuilt = rebuild(&blocks);
        // A header at the very end may lack its line end.
        let short = rebuilt.strip_suffix('\n').unwrap_or(&rebuilt).to_string();
        let forms = [format!("{SEP}{rebuilt}"), format!("{SEP}{short}"), rebuilt.clone(), short.clone()];
        prop_assert!(forms.contains(&text), "{rebuilt:?}");
    }

    #[test]
    fn parsing_with_any_runs_never_panics(text in blocky_text(), runs in proptest::collection::vec(a_run(), 0..4)) {
        let _ = parse(&text, Some(&runs));
    }

    #[test]
    fn extracting_never_panics_and_keeps_prose(text in blocky_text()) {
        let (prose, cmds) = extract_commands(&text);
        prop_assert!(prose.len() <= text.len());
        prop_assert!(cmds.iter().all(|c| !c.is_empty() && c.trim() == c));
    }

    #[test]
    fn rendered_replies_parse_back_exactly(
        prose in blocky_text().prop_map(|p| p.trim().to_string()).prop_filter("no header lines", |p| no_header_lines(p)),
        runs in proptest::collection::vec(a_run(), 0..5),
    ) {
        let text = render_reply(&prose, &runs);
        let mut expected = Vec::new();
        if !prose.is_empty() {
            expected.push(Block::Prose(prose.clone()));
        }
        for run in &runs {
            expected.push(match &run.error {
                Some(message) => Block::Error { cmd: run.cmd.clone(), message: message.clone() },
                None => output(&run.cmd, &summary(&run.stdout, &run.stderr)),
            });
        }
        // The whole reply's trailing white space is trimmed.
        match expected.last_mut() {
            Some(Block::Prose(p)) => *p = p.trim_end().to_string(),
            Some(Block::Output { output: body, .. }) | Some(Block::Error { message: body, .. }) => {
                *body = body.trim_end().to_string()
            }
            None => {}
        }
        prop_assert_eq!(parse(&text, None), expected.clone());
        prop_assert_eq!(parse(&text, Some(&runs)).len(), expected.len());
    }
}

/// A reply as a turn stores it: the model's text with its commands' tags,
/// each run placed where its tag stood.
fn stored(model: &str, outputs: &[&str]) -> (String, Vec<Run>) {
    let (prose, placed) = extract_placed(model);
    let runs: Vec<Run> = placed
        .iter()
        .zip(outputs)
        .map(|((cmd, at), out)| Run {
            at: Some(*at as u64),
            ..run(cmd, out, "", Some(0))
        })
        .collect();
    (render_reply(&prose, &runs), runs)
}

#[test]
fn a_command_shows_where_it_was_asked_and_the_text_stays_byte_exact() {
    let model = "Let me check.\n\n<run>echo 1</run>\n\nThat should print 1.";
    let (text, runs) = stored(model, &["1\n"]);
    assert_eq!(
        text,
        "Let me check.\n\n\n\nThat should print 1.\n\nOutput (echo 1):\n1"
    );
    let expected = vec![
        Block::Prose("Let me check.".into()),
        output("echo 1", "1\n"),
        Block::Prose("That should print 1.".into()),
    ];
    assert_eq!(parse(&text, Some(&runs)), expected);
    assert_eq!(parse_streaming(model), {
        let mut live = expected.clone();
        live[1] = output("echo 1", "");
        live
    });
}

#[test]
fn placed_commands_keep_their_order_and_rounds() {
    let model = "<run>a</run> x é <run>b</run>\n\ny";
    let (text, runs) = stored(model, &["A", "B"]);
    let blocks = parse(&text, Some(&runs));
    assert_eq!(
        blocks,
        vec![
            output("a", "A"),
            Block::Prose("x é".into()),
            output("b", "B"),
            Block::Prose("y".into()),
        ]
    );
    // A place past the end, or none, never loses prose or a command.
    let lost = vec![
        Run {
            at: Some(10_000),
            ..runs[0].clone()
        },
        Run {
            at: None,
            ..runs[1].clone()
        },
    ];
    assert_eq!(parse(&text, Some(&lost)).len(), 3);
}
