// What a push may hold (docs/protocol.md "Archives"), checked as the tar
// streams through the Worker, before the sandbox unpacks anything: member
// names (ustar prefixes, GNU long names, pax `path`/`linkpath`/`size`),
// their kinds (folders, regular files, symlinks), symlink targets that stay
// in the folder (through the archive's own symlinks too), no member through
// a symlink of the archive, and an end-of-archive block at the end. Only
// headers and long names are held; file contents pass by uncounted but for
// their length. The unpacking in the container (src/sandbox/trees.ts)
// checks what only it can see: symlinks already in the workspace.

import { RefusedMember } from "./sandbox/types";

export { RefusedMember };

/** The body is not a tar archive (or it ended inside one): 400 `details.member`, as duet serve says it. */
export class NotAnArchive extends RefusedMember {
  constructor(detail: string) {
    super("(archive)", `is not a tar archive, or it is cut short: ${detail}`);
  }
}

/** A tar that stops without an end-of-archive block (its writer died): 400, as duet serve says it. */
export class CutShort extends RefusedMember {
  constructor() {
    super("(archive)", "is cut short (it has no end-of-archive block)");
  }
}

/** What a checked archive holds. */
export interface ArchiveSummary {
  /** Regular files. */
  files: number;
  /** Their total length. */
  bytes: number;
  /** Every member's normalized name (folders too), relative to the folder pushed into. */
  names: string[];
}

const BLOCK = 512;
/** Symlinks followed at most in resolving one target (the kernel's own bound). */
const MAX_LINKS = 40;
/** The longest pax header or GNU long name held (a path is far shorter). */
const MAX_META_BYTES = 1024 * 1024;

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

type Kind = "file" | "dir" | "symlink";

/** Reads a tar stream's headers as its bytes go by. */
export class TarChecker {
  private header = new Uint8Array(BLOCK);
  private headerFill = 0;
  /** Data bytes of the current member still to pass (then its padding). */
  private skip = 0;
  /** The content of a pax header or GNU long name being gathered, and what it is. */
  private meta?: { kind: "pax" | "longName" | "longLink"; bytes: Uint8Array; fill: number; padding: number };
  private pax: Record<string, string> = {};
  private longName?: string;
  private longLink?: string;
  private ended = false;
  private zeroBlocks = 0;
  private readonly symlinks = new Set<string>();
  /** Every symlink member in order, each checked once the archive's last links are known. */
  private readonly linkMembers: { raw: string; name: string; target: string }[] = [];
  /** The symlinks the unpacked archive holds (a later member at a path replaces an earlier one): name to target. */
  private readonly finalLinks = new Map<string, string>();
  /** Every path a member was at so far: only a replaced one can have had links beneath it. */
  private readonly seen = new Set<string>();
  /** Regular files so far: a later member beneath one would be inside a file. */
  private readonly files = new Set<string>();
  readonly summary: ArchiveSummary = { files: 0, bytes: 0, names: [] };

  /**
   * @param fileBytesAllowed bytes of file content the disk has room for:
   *   beyond it `onTooLarge` throws (507)
   */
  constructor(
    private readonly fileBytesAllowed: number = Number.POSITIVE_INFINITY,
    private readonly onTooLarge: () => Error = () => new Error("the room's disk is full"),
  ) {}

  /** Checks the next bytes; throws RefusedMember, NotAnArchive or onTooLarge's error. */
  push(chunk: Uint8Array): void {
    let at = 0;
    while (at < chunk.byteLength && !this.ended) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, chunk.byteLength - at);
        this.skip -= n;
        at += n;
      } else if (this.meta) {
        at = this.gatherMeta(chunk, at);
      } else {
        const n = Math.min(BLOCK - this.headerFill, chunk.byteLength - at);
        this.header.set(chunk.subarray(at, at + n), this.headerFill);
        this.headerFill += n;
        at += n;
        if (this.headerFill === BLOCK) {
          this.headerFill = 0;
          this.readHeader(this.header);
        }
      }
    }
  }

  /** The stream ended: throws when it ended inside a member or without an end-of-archive block; the summary. */
  finish(): ArchiveSummary {
    // In duet serve's order: a member through a link is refused as it
    // comes, the end once all came, the links' targets last.
    this.checkThroughSymlinks();
    const between = this.skip === 0 && !this.meta && this.headerFill === 0;
    if (!this.ended && !between) throw new NotAnArchive("the archive ended in the middle of a member");
    // One zero block is a common (lenient) end; none is a writer that died
    // at a member's end (an empty body too, as duet serve says).
    if (!this.ended && this.zeroBlocks === 0) throw new CutShort();
    this.checkLinksResolved();
    return this.summary;
  }

  private gatherMeta(chunk: Uint8Array, at: number): number {
    const meta = this.meta as NonNullable<typeof this.meta>;
    const n = Math.min(meta.bytes.byteLength - meta.fill, chunk.byteLength - at);
    meta.bytes.set(chunk.subarray(at, at + n), meta.fill);
    meta.fill += n;
    if (meta.fill === meta.bytes.byteLength) {
      this.meta = undefined;
      this.skip = meta.padding;
      this.readMeta(meta.kind, meta.bytes);
    }
    return at + n;
  }

  private readHeader(h: Uint8Array): void {
    if (h.every((b) => b === 0)) {
      this.zeroBlocks++;
      if (this.zeroBlocks >= 2) this.ended = true;
      return;
    }
    if (this.zeroBlocks > 0) throw new NotAnArchive("a zero block came before a member");
    if (!checksumOk(h)) throw new NotAnArchive("a header's checksum is wrong");
    const type = String.fromCharCode(h[156]);
    const size = this.pax.size !== undefined && type !== "x" && type !== "g" ? Number(this.pax.size) : numberField(h, 124, 12);
    if (!Number.isSafeInteger(size) || size < 0) throw new NotAnArchive("a header's size is not a number");
    const padding = (BLOCK - (size % BLOCK)) % BLOCK;
    if (type === "x" || type === "g" || type === "L" || type === "K") {
      if (size > MAX_META_BYTES) throw new NotAnArchive(`a ${type} header of ${size} bytes is too long`);
      const kind = type === "L" ? "longName" : type === "K" ? "longLink" : "pax";
      // A global pax header applies to no member here: read and dropped.
      if (type === "g") {
        this.skip = size + padding;
        return;
      }
      this.meta = { kind, bytes: new Uint8Array(size), fill: 0, padding };
      if (size === 0) this.gatherMeta(new Uint8Array(0), 0);
      return;
    }
    const name = this.memberName(h);
    const link = this.longLink ?? this.pax.linkpath ?? text(h, 157, 100, name);
    this.pax = {};
    this.longName = undefined;
    this.longLink = undefined;
    this.skip = size + padding;
    this.member(name, type, link, size);
  }

  /** The member's name: pax `path`, else a GNU long name, else ustar's prefix and name. */
  private memberName(h: Uint8Array): string {
    if (this.pax.path !== undefined) return this.pax.path;
    if (this.longName !== undefined) return this.longName;
    const short = text(h, 0, 100, "");
    const ustar = h[257] === 0x75 && h[258] === 0x73 && h[259] === 0x74 && h[260] === 0x61 && h[261] === 0x72 && h[262] === 0;
    const prefix = ustar ? text(h, 345, 155, short) : "";
    return prefix === "" ? short : `${prefix}/${short}`;
  }

  private readMeta(kind: "pax" | "longName" | "longLink", bytes: Uint8Array): void {
    if (kind !== "pax") {
      const end = bytes.indexOf(0);
      const value = decode(end < 0 ? bytes : bytes.subarray(0, end), "a long name");
      if (kind === "longName") this.longName = value;
      else this.longLink = value;
      return;
    }
    // Records: "LEN key=value\n", LEN counting the whole record.
    let at = 0;
    while (at < bytes.byteLength) {
      const space = bytes.indexOf(0x20, at);
      if (space < 0) break;
      const len = Number(decode(bytes.subarray(at, space), "a pax header"));
      if (!Number.isSafeInteger(len) || len <= space - at || at + len > bytes.byteLength) {
        throw new NotAnArchive("a pax header is malformed");
      }
      const record = decode(bytes.subarray(space + 1, at + len - 1), "a pax header");
      const eq = record.indexOf("=");
      if (eq > 0) this.pax[record.slice(0, eq)] = record.slice(eq + 1);
      at += len;
    }
  }

  private member(raw: string, type: string, link: string, size: number): void {
    const kind = kindOf(type);
    const name = normalize(raw, kind === "dir");
    if (name === null) return; // "./": the folder pushed into itself
    if (kind === undefined) throw new RefusedMember(raw, refusedKind(type));
    if (kind === "symlink") {
      if (link === "") throw new RefusedMember(raw, "is a symlink to nothing");
      if (link.startsWith("/")) throw new RefusedMember(raw, "is a symlink out of the folder (absolute target)");
      if (leaves(name, link)) throw new RefusedMember(raw, "is a symlink out of the folder");
      this.symlinks.add(name);
      this.linkMembers.push({ raw, name, target: link });
    }
    this.replace(name, kind, link);
    for (let cut = name.indexOf("/"); cut >= 0; cut = name.indexOf("/", cut + 1)) {
      if (this.files.has(name.slice(0, cut))) throw new RefusedMember(raw, "is inside a file");
    }
    // A later member at the same path replaces an earlier one.
    if (kind === "file") this.files.add(name);
    else this.files.delete(name);
    if (kind === "file") {
      this.summary.files++;
      this.summary.bytes += size;
      if (this.summary.bytes > this.fileBytesAllowed) throw this.onTooLarge();
    }
    this.summary.names.push(name);
  }

  /** What the unpacked archive holds at `name` after this member: its symlinks as they end up. */
  private replace(name: string, kind: Kind, link: string): void {
    // A file or symlink replaces a folder there whole, and its links with it.
    if (kind !== "dir" && this.seen.has(name)) {
      for (const other of this.finalLinks.keys()) if (other.startsWith(`${name}/`)) this.finalLinks.delete(other);
    }
    this.seen.add(name);
    if (kind === "symlink") this.finalLinks.set(name, link);
    else this.finalLinks.delete(name);
  }

  /** Each symlink's target, resolved through the archive's own symlinks as the kernel would, stays in the folder (`y -> .`, `x -> y/..` does not). */
  private checkLinksResolved(): void {
    if (this.finalLinks.size === 0) return;
    for (const { raw, name, target } of this.linkMembers) {
      const parents = name.split("/").slice(0, -1);
      if (!staysInside(this.finalLinks, parents, target)) throw new RefusedMember(raw, "is a symlink out of the folder");
    }
  }

  /** A member beneath a symlink of the archive would be written through it. */
  private checkThroughSymlinks(): void {
    if (this.symlinks.size === 0) return;
    for (const name of this.summary.names) {
      for (let cut = name.indexOf("/"); cut >= 0; cut = name.indexOf("/", cut + 1)) {
        if (this.symlinks.has(name.slice(0, cut))) throw new RefusedMember(name, "passes through a symlink");
      }
    }
  }
}

/** Folders nest at most this deep in a push or a file's path (duet serve walks trees no deeper: src/sandbox/files.rs). */
export const MAX_DEPTH = 256;

/**
 * A member's name, its empty and `.` segments dropped (`./src//a` is
 * `src/a`); null for the folder itself (`./`). Throws RefusedMember.
 */
export function normalize(raw: string, folder: boolean): string | null {
  if (raw.startsWith("/")) throw new RefusedMember(raw, "is absolute");
  const parts = raw.split("/").filter((p) => p !== "" && p !== ".");
  if (parts.includes("..")) throw new RefusedMember(raw, "leaves the folder");
  if (parts.length > MAX_DEPTH) {
    // Its first levels say where (as duet serve's src/sandbox/local/tree.rs `too_deep`).
    throw new RefusedMember(`${raw.split("/").slice(0, 8).join("/")}/…`, `nests more than ${MAX_DEPTH} folders deep`);
  }
  if (raw.includes("\0")) throw new RefusedMember(raw, "has a NUL in its name");
  if (parts.length === 0) {
    if (folder) return null;
    throw new RefusedMember(raw, "has an empty name");
  }
  return parts.join("/");
}

/** Whether symlink `name`'s target, read from its folder, leaves the folder pushed into. */
function leaves(name: string, target: string): boolean {
  let depth = name.split("/").length - 1;
  for (const part of target.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") depth--;
    else depth++;
    if (depth < 0) return true;
  }
  return false;
}

/**
 * Whether `target`, a symlink's in folder `parents`, resolves inside the
 * folder pushed into, following the archive's symlinks `links` on the way
 * (what is not one of them is taken as written).
 */
function staysInside(links: ReadonlyMap<string, string>, parents: string[], target: string): boolean {
  const at = [...parents];
  const todo = target.split("/");
  let followed = 0;
  for (let part = todo.shift(); part !== undefined; part = todo.shift()) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (at.pop() === undefined) return false;
      continue;
    }
    const next = links.get([...at, part].join("/"));
    if (next === undefined) {
      at.push(part);
      continue;
    }
    followed++;
    if (followed > MAX_LINKS || next.startsWith("/")) return false;
    todo.unshift(...next.split("/"));
  }
  return true;
}

function kindOf(type: string): Kind | undefined {
  if (type === "0" || type === "\0" || type === "7") return "file";
  if (type === "5") return "dir";
  if (type === "2") return "symlink";
  return undefined;
}

function refusedKind(type: string): string {
  switch (type) {
    case "1":
      return "is a hard link";
    case "3":
    case "4":
      return "is a device node";
    case "6":
      return "is a FIFO";
    default:
      return "is not a folder, a regular file or a symlink";
  }
}

/** A NUL-terminated UTF-8 field; `member` names it in the error. */
function text(h: Uint8Array, at: number, len: number, member: string): string {
  const field = h.subarray(at, at + len);
  const end = field.indexOf(0);
  return decode(end < 0 ? field : field.subarray(0, end), member === "" ? "a member's name" : `the link of ${member}`);
}

function decode(bytes: Uint8Array, what: string): string {
  try {
    return utf8.decode(bytes);
  } catch {
    const shown = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true }).decode(bytes);
    throw new RefusedMember(shown, what === "a member's name" ? "is not UTF-8" : `${what} is not UTF-8`);
  }
}

/** An octal field (NUL or space terminated), or GNU's base-256 for large values. */
function numberField(h: Uint8Array, at: number, len: number): number {
  if (h[at] & 0x80) {
    let n = h[at] & 0x7f;
    for (let i = at + 1; i < at + len; i++) n = n * 256 + h[i];
    return n;
  }
  let s = "";
  for (let i = at; i < at + len; i++) {
    const c = h[i];
    if (c === 0 || c === 0x20) {
      if (s === "") continue;
      break;
    }
    s += String.fromCharCode(c);
  }
  return /^[0-7]+$/.test(s) ? parseInt(s, 8) : s === "" ? 0 : NaN;
}

/** The header's checksum: its bytes summed, the checksum field counted as spaces. */
function checksumOk(h: Uint8Array): boolean {
  const stored = numberField(h, 148, 8);
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : h[i];
  return stored === sum;
}
