// A room's open sockets, listed anew only after a connect or a close: the
// SDK's own list reads every socket's attachment again each time, and its
// `state` getter copies the attachment on every read, which a frame's
// fan-out would pay once per socket.

import type { Connection } from "agents";

export class SocketList<C extends Connection> {
  private list?: C[];
  /** The same sockets by what they asked for (deltas or full states), sorted once per list. */
  private grouped?: { of: C[]; deltas: C[]; full: C[] };

  /** `read` lists the sockets as the SDK's `getConnections()` does; `wantsDeltas` says what one asked for. */
  constructor(
    private readonly read: () => Iterable<C>,
    private readonly wantsDeltas: (c: C) => boolean,
  ) {}

  /** A socket connected, closed or changed what it asked for: list them anew when next asked. */
  forget(): void {
    this.list = undefined;
  }

  /** The open sockets. */
  all(): C[] {
    const list = (this.list ??= [...this.read()]);
    return list.every(open) ? list : list.filter(open);
  }

  /** The open sockets that asked for deltas, and the others (full states). */
  groups(): { deltas: C[]; full: C[] } {
    const of = this.all();
    if (this.grouped?.of === of) return this.grouped;
    const deltas: C[] = [];
    const full: C[] = [];
    for (const c of of) (this.wantsDeltas(c) ? deltas : full).push(c);
    this.grouped = { of, deltas, full };
    return this.grouped;
  }
}

/** Whether a socket is still open (a closing one is left out until its close event lists the sockets anew). */
function open(c: Connection): boolean {
  return c.readyState === WebSocket.READY_STATE_OPEN;
}
