// The production Sandbox binding (wrangler.jsonc): the SDK's Sandbox
// class, plus the workspace's trip through R2 across a sleep and the room
// it tells when its container stops; and the SDK's host-based previews.

import { proxyToSandbox, Sandbox as SdkSandbox } from "@cloudflare/sandbox";
import type { Env } from "../env";
import { ROOM_LABEL, tellSandboxStopped } from "../rooms";
import { WorkspacePersistence, type WorkspaceHost } from "./backup";
import { TUNNEL_PATH, tunnelOverSocket } from "./tunnel";
import { CONTROL_PORT, nothingListens } from "./sdkio";

/** Where the production Sandbox keeps the id of its room. */
const ROOM_KEY = "duetRoom";

/**
 * The production binding: the SDK's Sandbox, plus the workspace's trip
 * through R2 across a sleep (src/sandbox/backup.ts): restored when a
 * container starts, archived just before the idle timer stops it. A backup
 * that fails keeps the container awake instead, so nothing is lost.
 *
 * The restore is not awaited in onStart, which runs inside
 * blockConcurrencyWhile (an object is reset past 30 s, and a large
 * workspace may take longer): the calls the adapter makes wait for it
 * instead. Written from the SDK's source; it needs Docker, so only the
 * stand-in's equivalent is tested here.
 */
export class Sandbox extends SdkSandbox<Env> {
  private persistence?: WorkspacePersistence;
  /** This container's restore, from its onStart until it stops. */
  private restoring?: Promise<boolean>;
  /** Whether this instance saw the container's restore (or started it). */
  private started = false;

  private workspace(): WorkspacePersistence {
    this.persistence ??= new WorkspacePersistence(this.env.WORKSPACES, this.ctx.id.toString());
    return this.persistence;
  }

  /** The SDK's own methods, which do not wait for the restore. */
  private direct(): WorkspaceHost {
    return {
      exec: (cmd) => super.exec(cmd),
      readFile: (path, options) => super.readFile(path, options),
      writeFile: (path, content, options) => super.writeFile(path, content, options),
    };
  }

  /** Waits until the workspace is back; starts the container if it sleeps. */
  private async restored(): Promise<void> {
    // The start runs onStart, which begins the restore.
    if (!this.started && !this.restoring) await super.exec("true");
    this.started = true;
    await this.restoring;
  }

  override async onStart(): Promise<void> {
    await super.onStart();
    this.restoring = this.workspace().restore(this.direct());
  }

  override async onStop(params: Parameters<SdkSandbox["onStop"]>[0]): Promise<void> {
    this.restoring = undefined;
    this.started = false;
    await super.onStop(params);
    // Its shell is gone: the room's next command runs in a fresh one in /workspace.
    await tellSandboxStopped(this.env, await this.ctx.storage.get<string>(ROOM_KEY));
  }

  /** Keeps the room the labels name (getSandbox sets them), to tell it when the container stops. */
  override async setLabels(labels: Record<string, string>): Promise<void> {
    await super.setLabels(labels);
    const room = labels[ROOM_LABEL];
    if (room) await this.ctx.storage.put(ROOM_KEY, room);
  }

  override async onActivityExpired(): Promise<void> {
    await this.restoring;
    if (await this.workspace().backup(this.direct())) {
      await super.onActivityExpired();
    } else {
      this.renewActivityTimeout();
    }
  }

  override async exec(...args: Parameters<SdkSandbox["exec"]>): ReturnType<SdkSandbox["exec"]> {
    await this.restored();
    return super.exec(...args);
  }

  override async execStream(...args: Parameters<SdkSandbox["execStream"]>): ReturnType<SdkSandbox["execStream"]> {
    await this.restored();
    return super.execStream(...args);
  }

  override async writeFile(...args: Parameters<SdkSandbox["writeFile"]>): ReturnType<SdkSandbox["writeFile"]> {
    await this.restored();
    return super.writeFile(...args);
  }

  override async mkdir(...args: Parameters<SdkSandbox["mkdir"]>): ReturnType<SdkSandbox["mkdir"]> {
    await this.restored();
    return super.mkdir(...args);
  }

  override async startProcess(...args: Parameters<SdkSandbox["startProcess"]>): ReturnType<SdkSandbox["startProcess"]> {
    await this.restored();
    return super.startProcess(...args);
  }

  override async listFiles(...args: Parameters<SdkSandbox["listFiles"]>): ReturnType<SdkSandbox["listFiles"]> {
    await this.restored();
    return super.listFiles(...args);
  }

  override async deleteFile(...args: Parameters<SdkSandbox["deleteFile"]>): ReturnType<SdkSandbox["deleteFile"]> {
    await this.restored();
    return super.deleteFile(...args);
  }

  /** A checkpoint: the workspace as it is once the sleep's backup is back. */
  override async createBackup(...args: Parameters<SdkSandbox["createBackup"]>): ReturnType<SdkSandbox["createBackup"]> {
    await this.restored();
    return super.createBackup(...args);
  }

  /**
   * A checkpoint restored: a FUSE overlay that lasts while this container
   * runs. The sleep's backup (onActivityExpired) archives /workspace
   * through it, so the next container unpacks the restored files as plain
   * ones; the checkpoint's own objects are not needed after this call.
   */
  override async restoreBackup(...args: Parameters<SdkSandbox["restoreBackup"]>): ReturnType<SdkSandbox["restoreBackup"]> {
    await this.restored();
    return super.restoreBackup(...args);
  }

  /**
   * Duet's tunnel (src/sandbox/tunnel.ts): a WebSocket upgrade of
   * TUNNEL_PATH/{port} becomes a raw TCP connection to that port of the
   * container (workerd's `getTcpPort(port).connect`), never starting it.
   * Everything else is the SDK's (its preview URLs, its PTY).
   */
  override async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (!url.pathname.startsWith(TUNNEL_PATH)) return super.fetch(request);
    const port = Number(url.pathname.slice(TUNNEL_PATH.length));
    const rate = Number(url.searchParams.get("rate")) || Number.POSITIVE_INFINITY;
    const container = this.ctx.container;
    if (!container?.running || port === CONTROL_PORT) return nothingListens(port);
    const socket = container.getTcpPort(port).connect(`localhost:${port}`);
    try {
      await socket.opened;
    } catch {
      return nothingListens(port);
    }
    this.renewActivityTimeout();
    return tunnelOverSocket(socket, rate, () => this.renewActivityTimeout());
  }

  override async readFileStream(...args: Parameters<SdkSandbox["readFileStream"]>): ReturnType<SdkSandbox["readFileStream"]> {
    await this.restored();
    return super.readFileStream(...args);
  }

  // readFile is overloaded (its result depends on `encoding`): one
  // signature that passes both through.
  override async readFile(path: string, options?: any): Promise<any> {
    await this.restored();
    return super.readFile(path, options);
  }
}

/**
 * Host-based previews (`exposePort` URLs under DUET_PREVIEW_HOST): the
 * SDK's answer for such a request, else null.
 */
export async function previewByHost(request: Request, env: Env): Promise<Response | null> {
  if (!env.DUET_PREVIEW_HOST) return null;
  return proxyToSandbox(request, env as never);
}
