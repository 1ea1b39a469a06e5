// The pure parts, with the cases of the Rust crate's unit tests: blocks
// (src/blocks_tests.rs), the SSE parser (src/ai/sse.rs), the prompt
// (src/ai/prompt.rs) and the text rules (src/protocol/).
import { describe, expect, it, inject } from "vitest";
import { addRound, extractCommands, extractPlaced, parseBlocks, partialProse, renderReply, summary, type Block } from "../src/blocks";
import { SseParser } from "../src/model";
import { SYSTEM_PROMPT, conversation, resultsNote } from "../src/prompt";
import { recordText } from "../src/records";
import { ROW_BUDGET, fitRuns } from "../src/store";
import { failedReply, partialReply } from "../src/progress";
import { type DuetMessage, type Run } from "../src/protocol";
import { capText, charCount, nameProblem, trim, validRoomId } from "../src/text";

const run = (cmd: string, stdout: string, stderr: string, exitCode: number | null): Run => ({ cmd, stdout, stderr, exitCode });
const failedToStart = (cmd: string, error: string): Run => ({ cmd, stdout: "", stderr: "", exitCode: null, error });
const output = (cmd: string, out: string): Block => ({ kind: "output", cmd, output: out });

describe("blocks", () => {
  it("take commands in order and trim the prose", () => {
    expect(extractCommands("  Let me look.\n<run>ls -la</run>\nThen <run>  cat a.txt \n</run> and <run> </run>done.\n")).toEqual([
      "Let me look.\n\nThen  and done.",
      ["ls -la", "cat a.txt"],
    ]);
    expect(extractCommands("<run>echo $(date) (now): ok</run><run>for i in 1 2\ndo echo $i\ndone</run>")).toEqual([
      "",
      ["echo $(date) (now): ok", "for i in 1 2\ndo echo $i\ndone"],
    ]);
    expect(extractCommands("Try <run>ls</run> then <run>pwd")).toEqual(["Try  then <run>pwd", ["ls"]]);
  });

  it("place each command where it was asked, the text byte exact (src/blocks_tests.rs)", () => {
    const [prose, placed] = extractPlaced("Let me check.\n\n<run>echo 1</run>\n\nThat should print 1.");
    const runs = [run("echo 1", "1\n", "", 0)];
    const text = addRound("", prose, placed, runs);
    expect(text).toBe("Let me check.\n\n\n\nThat should print 1.\n\nOutput (echo 1):\n1");
    expect(runs[0].at).toBe(15);
    expect(parseBlocks(text, runs)).toEqual([
      { kind: "prose", text: "Let me check." },
      output("echo 1", "1\n"),
      { kind: "prose", text: "That should print 1." },
    ]);
    const [p2, placed2] = extractPlaced("<run>a</run> x é <run>b</run>\n\ny");
    const runs2 = [run("a", "A", "", 0), run("b", "B", "", 0)];
    const round1 = addRound("", p2, placed2, runs2);
    expect(runs2.map((r) => r.at)).toEqual([0, 4]);
    expect(parseBlocks(round1, runs2)).toEqual([output("a", "A"), { kind: "prose", text: "x é" }, output("b", "B"), { kind: "prose", text: "y" }]);
    const later = [run("c", "C", "", 0)];
    const round2 = addRound(round1, "then", [["c", 4]], later);
    expect(later[0].at).toBe([...round1].length + 2 + 4);
    expect(parseBlocks(round2, [...runs2, ...later]).slice(-2)).toEqual([{ kind: "prose", text: "y\n\nthen" }, output("c", "C")]);
  });

  it("summarize stdout, else stderr, else say no output", () => {
    expect(summary("out\n", "err\n")).toBe("out\n");
    expect(summary("", "err\n")).toBe("err\n");
    expect(summary("", "")).toBe("[no output]");
    expect(summary("é".repeat(501), "")).toBe("é".repeat(500));
    expect(summary("😀".repeat(501), "")).toBe("😀".repeat(500));
    expect(summary("x".repeat(500), "")).toBe("x".repeat(500));
  });

  it("write exactly the protocol format", () => {
    const runs = [
      run("echo hi", "hi\n", "", 0),
      run("ls nope", "", "ls: cannot access 'nope': No such file or directory\n", 2),
      run("true", "", "", 0),
      run("echo $(echo (a)): b\necho c", "(a): b\nc\n", "", 0),
      failedToStart("make", "sandbox: not built yet"),
    ];
    expect(renderReply("Here goes.", runs)).toBe(
      "Here goes.\n\nOutput (echo hi):\nhi\n\n\nOutput (ls nope):\nls: cannot access 'nope': No such file or directory\n\n\nOutput (true):\n[no output]\n\nOutput (echo $(echo (a)): b\necho c):\n(a): b\nc\n\n\nError (make):\nsandbox: not built yet",
    );
    // Trimmed at both ends: a reply with no prose starts with the block.
    expect(renderReply("", [run("echo hi", "hi\n\n", "", 0)])).toBe("Output (echo hi):\nhi");
    expect(renderReply("", [run("  ", "", " \n", 0)])).toBe("Output (  ):");
    expect(renderReply("Nothing to run.", [])).toBe("Nothing to run.");
    expect(renderReply("x", [run("false; echo no", "no\n", "", 1)])).toBe("x\n\nOutput (false; echo no):\nno");
  });

  it("read back the text, in both forms", () => {
    const text =
      "Here goes.\n\nOutput (echo $(echo (a)): b\necho c):\n(a): b\nc\n\n\nError (make):\nsandbox: not built yet\n\nOutput (true):\n[no output]";
    expect(parseBlocks(text)).toEqual([
      { kind: "prose", text: "Here goes." },
      output("echo $(echo (a)): b\necho c", "(a): b\nc\n"),
      { kind: "error", cmd: "make", message: "sandbox: not built yet" },
      output("true", "[no output]"),
    ]);
    expect(parseBlocks("Listing:\n\n\n\nthen done.\n\nOutput (ls):\na\nb\n\n\nOutput (cat x):\nsay  please")).toEqual([
      { kind: "prose", text: "Listing:\n\n\n\nthen done." },
      output("ls", "a\nb\n"),
      output("cat x", "say  please"),
    ]);
    expect(parseBlocks("Output (pwd):\n/workspace")).toEqual([output("pwd", "/workspace")]);
    expect(parseBlocks("")).toEqual([]);
    expect(parseBlocks("Output (not closed\n\nError (")).toEqual([{ kind: "prose", text: "Output (not closed\n\nError (" }]);
  });

  it("read back with runs, keeping every round's prose", () => {
    const runs = [run("echo hi", "hi\n", "warn\n", 0), failedToStart("make", "no sandbox")];
    expect(parseBlocks(renderReply("Look:", runs), runs)).toEqual([
      { kind: "prose", text: "Look:" },
      output("echo hi", "hi\nwarn\n"),
      { kind: "error", cmd: "make", message: "no sandbox" },
    ]);
    const first = [run("ls", "a\n", "", 0)];
    const second = [run("cat a", "", "", 0)];
    const text = renderReply(`${renderReply("First.", first)}\n\nSecond.`, second);
    expect(parseBlocks(text, [...first, ...second])).toEqual([
      { kind: "prose", text: "First." },
      output("ls", "a\n"),
      { kind: "prose", text: "Second." },
      output("cat a", "[no output]"),
    ]);
  });
});

describe("blocks, on generated text", () => {
  // A fixed-seed generator: the same cases every run.
  let seed = 42;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const PIECES = ["Output (", "Error (", "):", "\n", "\n\n", "(", ")", "<run>", "</run>", "ab", "é", " ", "😀", "x y"];
  const blocky = () => Array.from({ length: rand(24) }, () => PIECES[rand(PIECES.length)]).join("");
  const noHeaderLines = (s: string) => !s.split("\n").some((l) => l.startsWith("Output (") || l.startsWith("Error ("));

  it("never throw, and rendered replies parse back into their pieces, in order", () => {
    for (let i = 0; i < 2000; i++) {
      const text = blocky();
      parseBlocks(text);
      extractCommands(text);
      let prose = trim(blocky());
      if (!noHeaderLines(prose)) prose = "";
      const runs: Run[] = Array.from({ length: rand(4) }, (_, k) => {
        const cmd = `c${k} (x): y`;
        const out = blocky();
        const err = blocky();
        if (!noHeaderLines(out) || !noHeaderLines(err)) return run(cmd, "", "", 0);
        return rand(2) ? failedToStart(cmd, `no ${k}`) : run(cmd, out, err, 0);
      });
      const rendered = renderReply(prose, runs);
      // The pieces come back in order: the prose, then each run's block.
      const expected = [
        ...(prose !== "" ? ["prose"] : []),
        ...runs.map((r) => `${r.error !== undefined ? "error" : "output"} ${r.cmd}`),
      ];
      const shape = (blocks: Block[]) => blocks.map((b) => (b.kind === "prose" ? "prose" : `${b.kind} ${b.cmd}`));
      expect(shape(parseBlocks(rendered)), JSON.stringify({ prose, runs })).toEqual(expected);
      expect(shape(parseBlocks(rendered, runs)), JSON.stringify({ prose, runs })).toEqual(expected);
    }
  });
});

describe("the model's stream", () => {
  it("finds deltas in data lines split anywhere", () => {
    const parser = new SseParser();
    const enc = new TextEncoder();
    const events = [
      ...parser.feed(enc.encode(': comment\r\ndata: {"choices":[{"delta":{"content":"Hel')),
      ...parser.feed(enc.encode('lo"}}]}\r\n\r\ndata: {"choices":[{"delta":{},"finish_reason":"stop"}]}\n')),
      ...parser.feed(enc.encode("data: [DONE]")),
      ...parser.finish(),
    ];
    expect(events).toEqual([{ kind: "delta", text: "Hello" }, { kind: "finished" }, { kind: "done" }]);
    // A character split between reads is whole.
    const bytes = enc.encode('data: {"choices":[{"delta":{"content":"é"}}]}\n');
    const split = bytes.indexOf(0xc3) + 1;
    const p2 = new SseParser();
    expect([...p2.feed(bytes.slice(0, split)), ...p2.feed(bytes.slice(split))]).toEqual([{ kind: "delta", text: "é" }]);
  });

  it("reports errors inside the stream", () => {
    const parser = new SseParser();
    const enc = new TextEncoder();
    expect(parser.feed(enc.encode('data: {"error":{"message":"overloaded"}}\n'))).toEqual([{ kind: "error", message: "overloaded" }]);
    expect(parser.feed(enc.encode("data: {oops\n"))[0].kind).toBe("error");
  });
});

describe("the prompt", () => {
  it("is assets/system_prompt.md", () => {
    expect(SYSTEM_PROMPT).toBe(inject("systemPromptFile"));
  });

  const message = (role: DuetMessage["role"], userId: string | undefined, text: string, runs?: Run[]): DuetMessage => ({
    id: "m",
    role,
    ...(userId !== undefined && { userId }),
    text,
    ts: 0,
    ...(runs && { runs }),
  });

  it("shows the model the messages with names, without system notes (fit.ts bounds them)", () => {
    const history = Array.from({ length: 12 }, (_, i) => message("user", "ada", `m${i}`));
    history.push(message("system", undefined, "cancelled"));
    const chat = conversation(history);
    expect(chat[0].role).toBe("system");
    expect(chat.length).toBe(13);
    expect(chat[1].content).toBe("ada: m0");
    expect(chat[12].content).toBe("ada: m11");
  });

  it("says an earlier reply was cancelled, and by whom", () => {
    const chat = conversation([{ ...message("agent", undefined, "Half"), cancelledBy: "bob" }]);
    expect(chat[1]).toEqual({ role: "assistant", content: "Half\n[bob cancelled this reply before it was finished]" });
  });

  it("gives earlier replies back as tags and outputs", () => {
    const r = run("ls", "a\n", "", 0);
    const chat = conversation([message("agent", undefined, renderReply("Listing.", [r]), [r])]);
    expect(chat[1]).toEqual({ role: "assistant", content: "Listing.\n<run>ls</run>" });
    expect(chat[2].role).toBe("user");
    expect(chat[2].content.endsWith("Output (ls):\na\n")).toBe(true);
  });

  it("marks messages people sent each other, and the room's records", () => {
    const history: DuetMessage[] = [
      { ...message("user", "bob", "ok thanks"), to: "room" },
      { ...message("system", "ann", "ann uploaded a.txt (3 bytes)"), event: { kind: "upload", by: "ann", path: "a.txt", size: 3 } },
      message("system", "ann", "Model error: down"),
      { ...message("user", "ann", "and now?"), to: "agent" },
    ];
    expect(conversation(history).slice(1)).toEqual([
      { role: "user", content: "[to the room, not to you] bob: ok thanks" },
      { role: "user", content: "[in the room] ann uploaded a.txt (3 bytes)" },
      { role: "user", content: "ann: and now?" },
    ]);
  });

  it("tells the results of a round", () => {
    const note = resultsNote([run("echo one", "one\n", "err\n", 0), failedToStart("make", "gone")]);
    expect(note).toBe(
      "The commands ran. Their results:\n\nOutput (echo one) [exit code 0]:\none\n[stderr]\nerr\n\n\nError (make):\ngone\n\nContinue: run more commands in <run> tags if needed, or give your answer.",
    );
  });
});

describe("cancelled replies", () => {
  it("keep the prose streamed so far, never a command tag still open", () => {
    expect(partialProse("Let me see.\n<run>ls</run>\nAnd <run>cat a")).toBe("Let me see.\n\nAnd");
    expect(partialProse("Half a sent")).toBe("Half a sent");
    expect(partialProse("")).toBe("");
  });

  it("are the finished rounds, then the current one's prose and commands", () => {
    const one = run("echo one", "one\n", "", 0);
    const two = run("echo two", "two\n", "", 0);
    expect(partialReply({ text: "", runs: [], raw: "", roundRuns: [], rounds: 0, ended: 0 })).toEqual({ text: "", runs: [] });
    expect(partialReply({ text: "First.\n\nOutput (echo one):\none", runs: [one], raw: "Then <run>echo two</run> <run>sle", roundRuns: [two], rounds: 2, ended: 1 })).toEqual({
      text: "First.\n\nOutput (echo one):\none\n\nThen\n\nOutput (echo two):\ntwo",
      runs: [one, { ...two, at: 36 }],
    });
    // The usage of the calls so far, with the rounds the loop counted (the one under way too).
    const usage = { promptTokens: 10, completionTokens: 2, rounds: 1, estimated: true as const };
    expect(partialReply({ text: "", runs: [], raw: "Hal", roundRuns: [], rounds: 3, ended: 2, usage }).usage).toEqual({ ...usage, rounds: 3 });
  });
});

describe("replies of a model that failed after a round", () => {
  it("keep the ended rounds, not the failed answer's text, then say the model failed", () => {
    const one = run("echo one", "one\n", "", 0);
    const answered = { promptTokens: 10, completionTokens: 2, rounds: 1 };
    const usage = { promptTokens: 30, completionTokens: 3, rounds: 2, estimated: true as const };
    const p = { text: "First.\n\nOutput (echo one):\none", runs: [one], raw: "Half of", roundRuns: [], rounds: 2, ended: 1, usage, answered };
    expect(failedReply(p)).toEqual({
      text: "First.\n\nOutput (echo one):\none\n\nThe agent stopped after 1 round: the model failed; ask it to go on.",
      runs: [one],
      usage: answered,
    });
  });
});

describe("records", () => {
  it("read as what people did", () => {
    expect(recordText({ kind: "cleanup", by: "bob" })).toBe("bob cleaned up the room");
    expect(recordText({ kind: "cancel", by: "ann", turnId: "t1" })).toBe("ann cancelled the agent's turn");
    expect(recordText({ kind: "interrupt", by: "bob", execId: "x1", cmd: "sleep 100" })).toBe("bob interrupted `sleep 100`");
    expect(recordText({ kind: "upload", by: "ann", path: "notes.txt", size: 12 })).toBe("ann uploaded notes.txt (12 bytes)");
    expect(recordText({ kind: "upload", by: "ann", path: "a", size: 1 })).toBe("ann uploaded a (1 byte)");
    expect(recordText({ kind: "upload", by: "ann", path: "a", size: 3 * 1024 * 1024 })).toBe("ann uploaded a (3.0 MiB)");
    const long = `echo ${"x".repeat(80)}\necho two`;
    expect(recordText({ kind: "interrupt", by: "bob", execId: "x1", cmd: long })).toBe(`bob interrupted \`echo ${"x".repeat(55)}…\``);
    expect(recordText({ kind: "interrupt", by: "bob", execId: "x1", cmd: "ls  " })).toBe("bob interrupted `ls`");
    expect(recordText({ kind: "rename", by: "bob", from: "bob", to: "ann" })).toBe("bob is now ann");
    const shell = { kind: "shell", by: "ann", cwd: "/workspace", reset: true, execId: "x2" } as const;
    expect(recordText({ ...shell, reason: "exit" }, "exit")).toBe("`exit` ended the shell: the next command runs in a fresh shell in /workspace");
    expect(recordText({ ...shell, reason: "timeout", cwd: "/tmp", reset: false }, "sleep 9")).toBe(
      "`sleep 9` ran out of time: the next command runs in /tmp, with the exported variables kept",
    );
    expect(recordText({ ...shell, reason: "stopped", cwd: "/tmp", reset: false }, "kill -STOP $$")).toBe(
      "The shell was stopped while running `kill -STOP $$`: the next command runs in /tmp, with the exported variables kept",
    );
  });
});

describe("text rules", () => {
  it("room ids are 1-63 of A-Z a-z 0-9 _ -, first and last alphanumeric", () => {
    for (const ok of ["a", "room-1", "A_b-9", "x".repeat(63)]) expect(validRoomId(ok), ok).toBe(true);
    for (const bad of ["", "-a", "a-", "_a", "a b", "a/b", "é", "x".repeat(64), "a.b"]) expect(validRoomId(bad), bad).toBe(false);
  });

  it("names are 1-32 printable characters", () => {
    expect(nameProblem("ada")).toBeUndefined();
    expect(nameProblem("é".repeat(32))).toBeUndefined();
    expect(nameProblem("😀".repeat(32))).toBeUndefined();
    expect(nameProblem("")).toBe("must not be empty");
    expect(nameProblem("a".repeat(33))).toBe("must be at most 32 characters");
    expect(nameProblem("a\nb")).toBe("must be printable characters");
    expect(nameProblem("a\u0085b")).toBe("must be printable characters");
  });

  it("trim and count as Rust does", () => {
    expect(trim("\u0085 x \u2003")).toBe("x");
    expect(trim("\ufeffx")).toBe("\ufeffx");
    expect(charCount("😀é")).toBe(2);
    expect(capText("héllo", 2)).toEqual(["h", true]);
    expect(capText("abc", 3)).toEqual(["abc", false]);
    expect(capText("a".repeat(20000), 16384)).toEqual(["a".repeat(16384), true]);
  });
});

describe("stored replies", () => {
  it("fit one row: many commands' outputs are cut, a few are kept whole", () => {
    const few = [run("a", "x".repeat(16 * 1024), "y".repeat(16 * 1024), 0)];
    expect(fitRuns("text", few)).toBe(few);
    const many = Array.from({ length: 100 }, (_, i) => run(`cmd ${i}`, "x".repeat(16 * 1024), "y".repeat(16 * 1024), 0));
    const fitted = fitRuns("text", many);
    expect(JSON.stringify(fitted).length).toBeLessThan(ROW_BUDGET);
    expect(fitted.every((r) => r.truncated && r.stdout.length === r.stderr.length && r.stdout.length >= 4096)).toBe(true);
  });
});
