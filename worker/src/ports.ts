// The room's listening ports (the state's `ports`, docs/protocol.md
// "Background processes and ports"): looked for about once a second while
// a background process runs (which keeps the sandbox awake anyway) and for
// a few seconds after the last one ended, and once when a command ends (a
// `&` job may have started a server), at most once a second (a run of
// quick commands, as an agent's, costs the sandbox one look a second, not
// one a command). Never on a timer otherwise: a
// pending timer keeps the room's object from hibernating, and a look keeps
// the sandbox from its sleep.

import { describe } from "./http";
import { previewPath, type Port } from "./protocol";
import type { RoomSandbox } from "./sandbox/types";

/** How often the ports are looked for. */
const LOOK_EVERY_MS = 1_000;
/** How long after the last process ended they are still looked for (its port closes). */
const AFTER_PROCESSES_MS = 3_000;
/** Commands that end within this long of the last look after one share the next. */
const AFTER_COMMANDS_EVERY_MS = 1_000;

export interface PortsHost {
  sandbox(): RoomSandbox;
  /** The room state's `ports` changed. */
  changed(ports: Port[]): void;
}

export class Ports {
  private current: Port[] = [];
  private watching = false;
  private until = 0;
  private timer?: ReturnType<typeof setTimeout>;
  private looking = false;
  /** The look after a command that waits for its turn, and when the last one began. */
  private afterCommandTimer?: ReturnType<typeof setTimeout>;
  private lastAfterCommand = 0;
  /** Bumped when the sandbox goes: a look that was under way then is dropped. */
  private epoch = 0;

  constructor(
    private readonly room: string,
    private readonly host: PortsHost,
  ) {}

  state(): Port[] {
    return this.current.map((p) => ({ ...p }));
  }

  /** While processes run, look once a second (and for a few seconds after the last ended: its port closes). */
  watch(on: boolean): void {
    if (this.watching && !on) this.until = Date.now() + AFTER_PROCESSES_MS;
    this.watching = on;
    if (on) this.schedule(0);
  }

  /** A command ended: look once, now or (after a recent look) when a second has passed since it. */
  afterCommand(): void {
    if (this.watching || this.looking) return;
    const wait = this.lastAfterCommand + AFTER_COMMANDS_EVERY_MS - Date.now();
    // Past the second, a command looks itself (whatever became of a timer).
    if (wait <= 0) return this.lookAfterCommand();
    this.afterCommandTimer ??= setTimeout(() => this.lookAfterCommand(), wait);
  }

  private lookAfterCommand(): void {
    if (this.afterCommandTimer !== undefined) clearTimeout(this.afterCommandTimer);
    this.afterCommandTimer = undefined;
    this.lastAfterCommand = Date.now();
    void this.look();
  }

  /** The sandbox went away (or was cleaned up): nothing listens. */
  clear(quiet = false): void {
    this.epoch++;
    this.until = 0;
    if (this.afterCommandTimer !== undefined) clearTimeout(this.afterCommandTimer);
    this.afterCommandTimer = undefined;
    if (this.current.length === 0) return;
    this.current = [];
    if (!quiet) this.host.changed(this.state());
  }

  /** Looks now; the new list. */
  async look(): Promise<Port[]> {
    const epoch = this.epoch;
    let found;
    try {
      found = await this.host.sandbox().listeningPorts();
    } catch (e) {
      console.error(`room ${this.room}: looking for ports failed: ${describe(e)}`);
      return this.state();
    }
    if (epoch !== this.epoch) return this.state();
    const next: Port[] = found.map(({ port, url }) => ({ port, path: previewPath(this.room, port), ...(url !== undefined && { url }) }));
    if (JSON.stringify(next) !== JSON.stringify(this.current)) {
      this.current = next;
      this.host.changed(this.state());
    }
    return this.state();
  }

  private schedule(ms: number): void {
    if (this.timer !== undefined || this.looking) return;
    this.timer = setTimeout(() => void this.tick(), ms);
  }

  private async tick(): Promise<void> {
    this.timer = undefined;
    if (!this.watching && Date.now() > this.until) return;
    this.looking = true;
    try {
      await this.look();
    } finally {
      this.looking = false;
    }
    if (this.watching || Date.now() <= this.until) this.schedule(LOOK_EVERY_MS);
  }
}
