// A room's persistence in its Durable Object's SQLite: one row per message
// (records too) and per command, all kept until a cleanup (never the SDK's
// `setState`, whose single row is capped at 2 MB in production), the
// counters that keep ids unique, and the shell's working directory.

import { STATE_EXECS, STATE_MESSAGES, SERVER_STOPPED, STORED_OUTPUT_CAP, WORKSPACE, runJson, usageJson, type DuetMessage, type ExecRecord, type Role, type RoomEvent, type Checkpoint, type Process, type Run, type Usage } from "./protocol";
import { capText } from "./text";
import type { WorkspaceCopy } from "./sandbox/types";
import type { Policy } from "./approvals";
import type { Invite } from "./invites";

/** An invite, its token's hash, and whether it was revoked, as stored. */
export interface StoredInvite {
  invite: Invite;
  hash: string;
  revoked: boolean;
}

/** A checkpoint and where its copy is, as stored. */
export interface StoredCheckpoint {
  checkpoint: Checkpoint;
  copy: WorkspaceCopy;
}

/** A listed process and its logs, as stored. */
export interface StoredProcess {
  process: Process;
  stdout: string;
  stderr: string;
}

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS duet_counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS duet_messages (
     id TEXT PRIMARY KEY, role TEXT NOT NULL, user_id TEXT, text TEXT NOT NULL,
     ts INTEGER NOT NULL, runs TEXT)`,
  `CREATE TABLE IF NOT EXISTS duet_execs (
     exec_id TEXT PRIMARY KEY, cmd TEXT NOT NULL, by_name TEXT NOT NULL, source TEXT NOT NULL,
     stdout TEXT NOT NULL, stderr TEXT NOT NULL, exit_code INTEGER, duration INTEGER NOT NULL,
     ts INTEGER NOT NULL, truncated INTEGER NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS duet_values (name TEXT PRIMARY KEY, value TEXT NOT NULL)`,
  // Background processes: the listed ones (running, and the last ended with their logs).
  `CREATE TABLE IF NOT EXISTS duet_processes (
     id TEXT PRIMARY KEY, seq INTEGER NOT NULL, process TEXT NOT NULL, stdout TEXT NOT NULL, stderr TEXT NOT NULL)`,
  // Checkpoints: the listed one and its copy's handle (the SDK's DirectoryBackup).
  `CREATE TABLE IF NOT EXISTS duet_checkpoints (
     id TEXT PRIMARY KEY, seq INTEGER NOT NULL, checkpoint TEXT NOT NULL, copy TEXT NOT NULL)`,
  // Invites: each one as listed, its token's SHA-256 (never the token), and whether it was revoked.
  `CREATE TABLE IF NOT EXISTS duet_invites (
     id TEXT PRIMARY KEY, seq INTEGER NOT NULL, invite TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, revoked INTEGER NOT NULL)`,
];

/** Columns added since the first schema, added to older tables when the room loads. */
const ADDED_COLUMNS: [string, string][] = [
  // The client's id of a user message (`clientId`), and its turn's answer
  // `{reply, error?}` once the turn ended: a repeated `clientId` is answered from them.
  ["client_id", "TEXT"],
  ["answer", "TEXT"],
  // Whom a user message is for (`to`), a record's event (JSON), and who
  // cancelled an agent message's turn.
  ["addressee", "TEXT"],
  ["event", "TEXT"],
  ["cancelled_by", "TEXT"],
  // An agent message's `usage` (JSON).
  ["usage", "TEXT"],
];

/**
 * Columns of `duet_execs` added later: a command's `error`, and whether it
 * ended (its row is written as it starts, its output as it comes).
 */
const ADDED_EXEC_COLUMNS: [string, string][] = [
  ["error", "TEXT"],
  ["ended", "INTEGER NOT NULL DEFAULT 1"],
  // How it was stopped: "timeout" or "interrupted" (src/server/store.rs).
  ["stopped", "TEXT"],
];

/** The columns a message is read from, in messageFromRow's terms. */
const MESSAGE_COLUMNS = "id, role, user_id, client_id, text, ts, runs, addressee, event, cancelled_by, usage";

type Row = Record<string, SqlStorageValue>;

/** What a message with a `clientId` was answered, if its turn ended. */
export interface ClientAnswer {
  messageId: string;
  /** Absent while the turn runs, or when a restart cut it off. */
  answer?: { reply: string | null; error?: string };
}

/** Bytes a message's row may take: production caps a row at 2 MB. */
export const ROW_BUDGET = 1_800_000;

const utf8 = new TextEncoder();

/**
 * `runs` whose stored outputs fit one row beside `text`: each stream is cut
 * (and the run marked `truncated`) to half as much until they fit. A reply
 * with a few commands is never touched (16 KiB per stream).
 */
export function fitRuns(text: string, runs: Run[]): Run[] {
  let cap = STORED_OUTPUT_CAP;
  let fitted = runs;
  const size = (r: Run[]) => utf8.encode(text).length + utf8.encode(JSON.stringify(r.map(runJson))).length;
  while (size(fitted) > ROW_BUDGET && cap > 64) {
    cap = Math.floor(cap / 2);
    fitted = runs.map((r) => {
      const [stdout, cutOut] = capText(r.stdout, cap);
      const [stderr, cutErr] = capText(r.stderr, cap);
      return cutOut || cutErr ? { ...r, stdout, stderr, truncated: true } : r;
    });
  }
  return fitted;
}

export class Store {
  private readonly sql: SqlStorage;

  /** Resolves once every write so far is durable (what the output gate waits for before an answer). */
  sync(): Promise<void> {
    return this.storage.sync();
  }

  constructor(private readonly storage: DurableObjectStorage) {
    this.sql = storage.sql;
    for (const statement of SCHEMA) this.sql.exec(statement);
    const have = new Set(this.sql.exec("PRAGMA table_info(duet_messages)").toArray().map((r) => String(r.name)));
    for (const [name, type] of ADDED_COLUMNS) {
      if (!have.has(name)) this.sql.exec(`ALTER TABLE duet_messages ADD COLUMN ${name} ${type}`);
    }
    this.sql.exec("CREATE UNIQUE INDEX IF NOT EXISTS duet_messages_client_id ON duet_messages (client_id)");
    const execColumns = new Set(this.sql.exec("PRAGMA table_info(duet_execs)").toArray().map((r) => String(r.name)));
    for (const [name, type] of ADDED_EXEC_COLUMNS) {
      if (!execColumns.has(name)) this.sql.exec(`ALTER TABLE duet_execs ADD COLUMN ${name} ${type}`);
    }
    // The object just started: no command runs, so one left running was cut off by a restart.
    this.sql.exec("UPDATE duet_execs SET ended = 1, exit_code = NULL, error = ? WHERE ended = 0", SERVER_STOPPED);
  }

  /** The message a `clientId` stored, and its turn's answer if it ended. */
  clientAnswer(clientId: string): ClientAnswer | undefined {
    const row = this.sql.exec("SELECT id, answer FROM duet_messages WHERE client_id = ?", clientId).toArray()[0];
    if (!row) return undefined;
    const found: ClientAnswer = { messageId: String(row.id) };
    if (row.answer !== null) found.answer = JSON.parse(String(row.answer)) as ClientAnswer["answer"];
    return found;
  }

  /** Keeps the answer of the turn of message `id` (one stored with a `clientId`). */
  setAnswer(id: string, reply: string | null, error: string | undefined): void {
    const answer = JSON.stringify({ reply, ...(error !== undefined && { error }) });
    this.sql.exec("UPDATE duet_messages SET answer = ? WHERE id = ?", answer, id);
  }

  /** The next number of counter `name` (message or command), starting at 1. */
  private counter(name: string): number {
    const row = this.sql.exec("SELECT value FROM duet_counters WHERE name = ?", name).toArray()[0];
    return row ? Number(row.value) : 1;
  }

  private setCounter(name: string, value: number): void {
    this.sql.exec(
      "INSERT INTO duet_counters (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
      name,
      value,
    );
  }

  nextMessage(): number {
    return this.counter("message");
  }

  /** Takes the next command number (kept, so no id is used twice). */
  takeExecNumber(): number {
    const n = this.counter("exec");
    this.setCounter("exec", n + 1);
    return n;
  }

  /** Stores a message and the next message number, in one transaction. */
  insertMessage(m: DuetMessage, next: number): void {
    this.storage.transactionSync(() => {
      this.sql.exec(
        `INSERT INTO duet_messages (${MESSAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        m.id,
        m.role,
        m.userId ?? null,
        m.clientId ?? null,
        m.text,
        m.ts,
        m.runs === undefined ? null : JSON.stringify(m.runs.map(runJson)),
        m.to ?? null,
        m.event === undefined ? null : JSON.stringify(m.event),
        m.cancelledBy ?? null,
        m.usage === undefined ? null : JSON.stringify(usageJson(m.usage)),
      );
      this.setCounter("message", next);
    });
  }

  /** The shell's working directory as last known (a fresh shell's at first). */
  shellCwd(): string {
    const row = this.sql.exec("SELECT value FROM duet_values WHERE name = 'shell.cwd'").toArray()[0];
    return row ? String(row.value) : WORKSPACE;
  }

  setShellCwd(cwd: string): void {
    this.sql.exec(
      "INSERT INTO duet_values (name, value) VALUES ('shell.cwd', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
      cwd,
    );
  }

  /** Stores a command's record (all are kept until a cleanup: `GET /execs` pages through them). */
  insertExec(r: ExecRecord): void {
    this.writeExec(r, true);
  }

  /**
   * Stores a command that starts (`ended` false: a restart leaves it so,
   * and the object's next start ends it) or that ended.
   */
  writeExec(r: ExecRecord, ended: boolean): void {
    this.sql.exec(
      `INSERT OR REPLACE INTO duet_execs (exec_id, cmd, by_name, source, stdout, stderr, exit_code, duration, ts, truncated, error, ended, stopped)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      r.execId,
      r.cmd,
      r.by,
      r.source,
      r.stdout,
      r.stderr,
      r.exitCode,
      r.duration,
      r.ts,
      r.truncated ? 1 : 0,
      r.error ?? null,
      ended ? 1 : 0,
      r.timedOut ? "timeout" : r.interrupted ? "interrupted" : null,
    );
  }

  /** Forgets a command that did not run and is asked for again (the sandbox was starting). */
  dropExec(execId: string): void {
    this.sql.exec("DELETE FROM duet_execs WHERE exec_id = ? AND ended = 0", execId);
  }

  /** What a running command printed so far (a row `writeExec` began that has not ended). */
  execOutput(execId: string, stdout: string, stderr: string, truncated: boolean, duration: number): void {
    this.sql.exec(
      "UPDATE duet_execs SET stdout = ?, stderr = ?, truncated = ?, duration = ? WHERE exec_id = ? AND ended = 0",
      stdout,
      stderr,
      truncated ? 1 : 0,
      duration,
      execId,
    );
  }

  /** Takes the next process number (kept, so no id is used twice). */
  takeProcessNumber(): number {
    const n = this.counter("process");
    this.setCounter("process", n + 1);
    return n;
  }

  /** Stores a listed process (replacing what was stored of it). */
  saveProcess(p: StoredProcess): void {
    const seq = Number(p.process.id.replace(/^p/, "")) || 0;
    this.sql.exec(
      "INSERT OR REPLACE INTO duet_processes (id, seq, process, stdout, stderr) VALUES (?, ?, ?, ?, ?)",
      p.process.id,
      seq,
      JSON.stringify(p.process),
      p.stdout,
      p.stderr,
    );
  }

  forgetProcess(id: string): void {
    this.sql.exec("DELETE FROM duet_processes WHERE id = ?", id);
  }

  /** The listed processes, oldest first. */
  processes(): StoredProcess[] {
    return this.sql
      .exec("SELECT process, stdout, stderr FROM duet_processes ORDER BY seq")
      .toArray()
      .map((r) => ({ process: JSON.parse(String(r.process)) as Process, stdout: String(r.stdout), stderr: String(r.stderr) }));
  }

  /** Takes the next checkpoint number (kept, so no id is used twice). */
  takeCheckpointNumber(): number {
    const n = this.counter("checkpoint");
    this.setCounter("checkpoint", n + 1);
    return n;
  }

  saveCheckpoint(c: StoredCheckpoint): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO duet_checkpoints (id, seq, checkpoint, copy) VALUES (?, ?, ?, ?)",
      c.checkpoint.id,
      Number(c.checkpoint.id.replace(/^c/, "")) || 0,
      JSON.stringify(c.checkpoint),
      JSON.stringify(c.copy),
    );
  }

  forgetCheckpoint(id: string): void {
    this.sql.exec("DELETE FROM duet_checkpoints WHERE id = ?", id);
  }

  /** The checkpoints, oldest first. */
  checkpoints(): StoredCheckpoint[] {
    return this.sql
      .exec("SELECT checkpoint, copy FROM duet_checkpoints ORDER BY seq")
      .toArray()
      .map((r) => ({ checkpoint: JSON.parse(String(r.checkpoint)) as Checkpoint, copy: JSON.parse(String(r.copy)) as WorkspaceCopy }));
  }

  /** Takes the next invite number (kept, so no id is used twice; a cleanup keeps it). */
  takeInviteNumber(): number {
    const n = this.counter("invite");
    this.setCounter("invite", n + 1);
    return n;
  }

  saveInvite(i: StoredInvite): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO duet_invites (id, seq, invite, hash, revoked) VALUES (?, ?, ?, ?, ?)",
      i.invite.id,
      Number(i.invite.id.replace(/^i/, "")) || 0,
      JSON.stringify(i.invite),
      i.hash,
      i.revoked ? 1 : 0,
    );
  }

  /** Every invite the room gave out, oldest first. */
  invites(): StoredInvite[] {
    return this.sql
      .exec("SELECT invite, hash, revoked FROM duet_invites ORDER BY seq")
      .toArray()
      .map((r) => ({ invite: JSON.parse(String(r.invite)) as Invite, hash: String(r.hash), revoked: Number(r.revoked) !== 0 }));
  }

  /** The room's approval policy and its own allow list. */
  policy(): { policy: Policy; allow: string[] } {
    const value = (name: string) => this.sql.exec("SELECT value FROM duet_values WHERE name = ?", name).toArray()[0]?.value;
    const policy = value("policy");
    const allow = value("allow");
    return {
      policy: policy === "ask" || policy === "off" ? policy : "auto",
      allow: allow === undefined ? [] : (JSON.parse(String(allow)) as string[]),
    };
  }

  setPolicy(policy: Policy, allow: string[]): void {
    this.storage.transactionSync(() => {
      for (const [name, value] of [["policy", policy], ["allow", JSON.stringify(allow)]]) {
        this.sql.exec(
          "INSERT INTO duet_values (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
          name,
          value,
        );
      }
    });
  }

  /** The model the room chose, if it chose one. */
  model(): string | undefined {
    const row = this.sql.exec("SELECT value FROM duet_values WHERE name = 'model'").toArray()[0];
    return row ? String(row.value) : undefined;
  }

  setModel(model: string): void {
    this.sql.exec(
      "INSERT INTO duet_values (name, value) VALUES ('model', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
      model,
    );
  }

  /** Someone joined the room (it exists from then on: a fork cannot take its name). */
  markJoined(): void {
    this.sql.exec("INSERT OR IGNORE INTO duet_values (name, value) VALUES ('joined', '1')");
  }

  /**
   * Whether the room exists in the terms of docs/protocol.md's fork: anything
   * was ever stored in it (each message, command, process and checkpoint
   * takes a number first, and a cleanup keeps the numbers) or someone joined.
   */
  everUsed(): boolean {
    const one = (table: string) => this.sql.exec(`SELECT 1 FROM ${table} LIMIT 1`).toArray().length > 0;
    return one("duet_counters") || one("duet_messages") || one("duet_execs") || one("duet_checkpoints") ||
      this.sql.exec("SELECT 1 FROM duet_values WHERE name = 'joined'").toArray().length > 0;
  }

  /** Until when a fork into this room holds its name (0: none does). */
  forkReservedUntil(): number {
    const row = this.sql.exec("SELECT value FROM duet_values WHERE name = 'fork.reserved'").toArray()[0];
    return row ? Number(row.value) || 0 : 0;
  }

  setForkReservedUntil(until: number): void {
    if (until === 0) this.sql.exec("DELETE FROM duet_values WHERE name = 'fork.reserved'");
    else {
      this.sql.exec(
        "INSERT INTO duet_values (name, value) VALUES ('fork.reserved', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        String(until),
      );
    }
  }

  /** Deletes the messages and commands; the counters stay. */
  clear(): void {
    this.storage.transactionSync(() => {
      this.sql.exec("DELETE FROM duet_messages");
      this.sql.exec("DELETE FROM duet_execs");
      this.sql.exec("DELETE FROM duet_checkpoints");
    });
  }

  /** The most recent messages of the state, oldest first. */
  recentMessages(): DuetMessage[] {
    return this.page(undefined, STATE_MESSAGES)[0];
  }

  /** The most recent commands of the state, oldest first. */
  recentExecs(): ExecRecord[] {
    return this.execPage(undefined, STATE_EXECS)[0];
  }

  /** Commands strictly older than `before` (default: all), oldest first, and whether older ones remain. */
  execPage(before: string | undefined, limit: number): [ExecRecord[], boolean] {
    const columns = "exec_id, cmd, by_name, source, stdout, stderr, exit_code, duration, ts, truncated, error, stopped";
    // Command ids have a fixed width: their text order is their order. Running ones are not records yet.
    const rows =
      before === undefined
        ? this.sql.exec(`SELECT ${columns} FROM duet_execs WHERE ended = 1 ORDER BY exec_id DESC LIMIT ?`, limit + 1).toArray()
        : this.sql
            .exec(`SELECT ${columns} FROM duet_execs WHERE ended = 1 AND exec_id < ? ORDER BY exec_id DESC LIMIT ?`, before, limit + 1)
            .toArray();
    return [rows.slice(0, limit).reverse().map(execFromRow), rows.length > limit];
  }

  /** Messages strictly older than `before` (default: all), oldest first, and whether older ones remain. */
  page(before: string | undefined, limit: number): [DuetMessage[], boolean] {
    const columns = MESSAGE_COLUMNS;
    const rows =
      before === undefined
        ? this.sql.exec(`SELECT ${columns} FROM duet_messages ORDER BY id DESC LIMIT ?`, limit + 1).toArray()
        : this.sql
            .exec(`SELECT ${columns} FROM duet_messages WHERE id < ? ORDER BY id DESC LIMIT ?`, before, limit + 1)
            .toArray();
    const more = rows.length > limit;
    return [rows.slice(0, limit).reverse().map(messageFromRow), more];
  }
}

function messageFromRow(r: Row): DuetMessage {
  const m: DuetMessage = { id: String(r.id), role: String(r.role) as Role, text: String(r.text), ts: Number(r.ts) };
  if (r.user_id !== null) m.userId = String(r.user_id);
  if (r.client_id !== null) m.clientId = String(r.client_id);
  if (r.runs !== null) m.runs = JSON.parse(String(r.runs)) as Run[];
  if (r.addressee === "agent" || r.addressee === "room") m.to = r.addressee;
  if (r.event !== null) m.event = JSON.parse(String(r.event)) as RoomEvent;
  if (r.cancelled_by !== null) m.cancelledBy = String(r.cancelled_by);
  if (r.usage !== null && r.usage !== undefined) m.usage = JSON.parse(String(r.usage)) as Usage;
  return m;
}

function execFromRow(r: Row): ExecRecord {
  return {
    execId: String(r.exec_id),
    cmd: String(r.cmd),
    by: String(r.by_name),
    source: r.source === "agent" ? "agent" : "user",
    stdout: String(r.stdout),
    stderr: String(r.stderr),
    exitCode: r.exit_code === null ? null : Number(r.exit_code),
    duration: Number(r.duration),
    ts: Number(r.ts),
    ...(Number(r.truncated) !== 0 && { truncated: true }),
    ...(r.error !== null && r.error !== undefined && { error: String(r.error) }),
    ...(r.stopped === "timeout" && { timedOut: true }),
    ...(r.stopped === "interrupted" && { interrupted: true }),
  };
}
