// What the model is told: the system prompt, the project's AGENTS.md, the
// room's recent messages (the question with the files it names), the
// shared terminal's screen while one runs and, between rounds, the
// outputs of the commands it ran (src/ai/prompt.rs).

import { NO_OUTPUT, isErrorRun, parseBlocks } from "./blocks";
import type { ProjectContext } from "./context";
import type { FileOutcome } from "./filetools";
import { headAndTail } from "./fit";
import type { ChatMessage } from "./model";
import { type DuetMessage, type Run } from "./protocol";
import { trim } from "./text";

/** assets/system_prompt.md, as it is (a test checks they are the same). */
export const SYSTEM_PROMPT = "You are Duet's agent: a concise pair-programming assistant in a shared room. Several people may talk to you; each of their messages starts with the sender's name.\n\nYou have a Linux sandbox shared with the room: a bash session whose working directory is /workspace. Files and the working directory persist between commands; there is no network.\n\nTo run a command, put it in run tags, e.g. <run>ls -la</run>. Rules:\n- One shell command (or a short script) per tag; the commands run in order after your reply, and their outputs are shown to the room below it.\n- Never write or predict a command's output yourself; never write \"Output (\" blocks. Wait for the real output.\n- If you are given the outputs of your commands, use them to continue: run more commands or give your answer. Keep going until the job is done, then answer without any command.\n- Commands get no input (stdin is empty) and are stopped after a time limit: no editors, pagers or interactive programs.\n- To read and change files, use the read_file, write_file and edit_file tools when you have them; else cat, and a heredoc or printf.\n\nAnswer briefly and concretely. Use Markdown sparingly. Say so when you are unsure.\n";

/** Characters of one command's output given back to the model: its first and its last this many. */
const RESULT_CHARS = 2_000;

/** How the model is shown a message people wrote to each other, and a record of the room (src/ai/prompt.rs). */
export const ROOM_MARK = "[to the room, not to you]";
export const RECORD_MARK = "[in the room]";

/** The shared terminal's screen as the agent is shown it (src/screen.ts `text`). */
export interface TerminalScreen {
  cols: number;
  rows: number;
  text: string;
}

/** The note that shows the model the terminal's screen (src/ai/prompt.rs `add_terminal`). */
export function terminalNote(screen: TerminalScreen): string {
  const shown = trim(screen.text) === "" ? "(the screen is empty)" : screen.text;
  return `[the room's terminal, ${screen.cols}x${screen.rows}: its screen now, as text]\n${shown}`;
}

/**
 * The conversation for the first round: the system prompt and the last
 * messages of the room: people as `user` with their names (messages they
 * sent each other and the room's records marked as such), the agent as
 * `assistant`; other `system` notes (why a turn had no reply) are the
 * room's and are left out. While the shared terminal runs, its `screen`
 * comes just before the question. The `project`'s AGENTS.md follows the
 * system prompt, and the files the question names follow its text.
 */
export function conversation(history: DuetMessage[], screen?: TerminalScreen, project?: ProjectContext): ChatMessage[] {
  const out: ChatMessage[] = [{ role: "system", content: trim(SYSTEM_PROMPT) }];
  if (project?.instructions !== undefined) out.push({ role: "system", content: project.instructions });
  const head = out.length;
  for (const m of history) {
    if (m.role === "user") {
      const said = m.userId !== undefined ? `${m.userId}: ${m.text}` : m.text;
      out.push({ role: "user", content: m.to === "room" ? `${ROOM_MARK} ${said}` : said });
    } else if (m.role === "agent") {
      out.push(...agentTurn(m));
    } else if (m.event !== undefined) {
      out.push({ role: "user", content: `${RECORD_MARK} ${m.text}` });
    }
  }
  const question = out[out.length - 1];
  if (project && project.attachments !== "" && out.length > head && history[history.length - 1]?.role === "user") {
    question.content += project.attachments;
  }
  // The screen as it is now, just before the question (which stays last).
  if (screen !== undefined) out.splice(Math.max(head, out.length - 1), 0, { role: "user", content: terminalNote(screen) });
  return out;
}

/** An earlier agent reply as the model wrote it (commands back in tags; a cancelled one says so), then its outputs as a note. */
function agentTurn(m: DuetMessage): ChatMessage[] {
  const said: string[] = [];
  const results: string[] = [];
  for (const block of parseBlocks(m.text, m.runs)) {
    if (block.kind === "prose") said.push(trim(block.text));
    else if (block.kind === "output") {
      said.push(`<run>${block.cmd}</run>`);
      results.push(`Output (${block.cmd}):\n${cut(block.output)}`);
    } else {
      said.push(`<run>${block.cmd}</run>`);
      results.push(`Error (${block.cmd}):\n${block.message}`);
    }
  }
  if (m.cancelledBy !== undefined) said.push(`[${m.cancelledBy} cancelled this reply before it was finished]`);
  const out: ChatMessage[] = [{ role: "assistant", content: said.join("\n") }];
  if (results.length > 0) {
    out.push({ role: "user", content: `[outputs of the commands above]\n\n${results.join("\n\n")}` });
  }
  return out;
}

/** What one action of a round did: a command, or a file tool. */
export type Outcome = { run: Run } | { file: FileOutcome };

/** What the model is told after a round: each command's exit code and output, each file tool's result, and that it may go on. */
export function resultsNote(outcomes: (Run | Outcome)[]): string {
  let note = "The commands ran. Their results:";
  for (const outcome of outcomes) {
    note += "\n\n";
    if ("file" in outcome) {
      note += `${outcome.file.failed ? "Error" : "Result"} (${outcome.file.label}):\n${outcome.file.result}`;
      continue;
    }
    const run = "run" in outcome ? outcome.run : outcome;
    if (isErrorRun(run)) {
      note += `Error (${run.cmd}):\n${run.error ?? ""}`;
      continue;
    }
    const code = run.exitCode === null ? "none" : String(run.exitCode);
    note += `Output (${run.cmd}) [exit code ${code}]:\n`;
    let output = run.stdout;
    if (run.stderr !== "") {
      if (output !== "" && !output.endsWith("\n")) output += "\n";
      output += "[stderr]\n" + run.stderr;
    }
    if (output === "") output = NO_OUTPUT;
    note += cut(output);
  }
  return note + "\n\nContinue: run more commands in <run> tags if needed, or give your answer.";
}

/** An output's first and last `RESULT_CHARS` characters, saying what was cut between them. */
function cut(output: string): string {
  return headAndTail(output, RESULT_CHARS);
}
