// The commands behind the archive routes (docs/protocol.md "Archives"),
// run in the container beside the shell: a checked push unpacked into a
// staging folder and moved into place, a folder packed into a tar, and a
// checkpoint's copy compared with /workspace by git. The scratch they use in
// /workspace is hidden (`.duet-*`) and left out of what they pack, delete
// and compare.

import { shellQuote } from "./signal";
import { UPLOAD_DIR_PREFIX, WORKSPACE_DIR, workspacePath } from "./sdkio";

/** A push's parts and staging folder, in /workspace (on the room's disk, where the stand-in's files reach). */
export const PUSH_DIR_PREFIX = ".duet-push-";
/** A packed folder waiting to be read out. */
export const ARCHIVE_FILE_PREFIX = ".duet-archive-";
/** A diff waiting to be read out. */
export const DIFF_FILE_PREFIX = ".duet-diff-";
/** Where a checkpoint's copy is restored for a diff: outside /workspace, so it is not compared with itself. */
export const DIFF_COPY_PREFIX = "/tmp/duet-diff-";

/** The scratch of the routes (and of uploads and backups) at the top of /workspace. */
const SCRATCH = [PUSH_DIR_PREFIX, ARCHIVE_FILE_PREFIX, DIFF_FILE_PREFIX, UPLOAD_DIR_PREFIX];

/** Whether a workspace path (relative, no `./`) is the routes' own scratch. */
export function isScratch(path: string): boolean {
  const top = path.split("/")[0];
  return top === ".duet-backup" || SCRATCH.some((p) => top.startsWith(p));
}

/** find(1) tests that prune the scratch, for a `find .` in /workspace itself ("" elsewhere). */
function pruneScratch(root: boolean): string {
  if (!root) return "";
  const tests = [...SCRATCH.map((p) => `-path ${shellQuote(`./${p}*`)}`), "-path ./.duet-backup"].join(" -o ");
  return `\\( ${tests} \\) -prune -o`;
}

/** The folder's absolute path ("" is /workspace). */
export function folderPath(dir: string): string {
  return dir === "" ? WORKSPACE_DIR : `${WORKSPACE_DIR}/${dir}`;
}

/**
 * Fails (exit 3, `through`) when the folder's path passes through a symlink,
 * and (exit 4, `notdir`) when a part of it is not a folder.
 */
function folderChecks(dir: string): string {
  const parts = dir === "" ? [] : dir.split("/");
  if (parts.length === 0) return "";
  return (
    `p=${WORKSPACE_DIR}; for c in ${parts.map(shellQuote).join(" ")}; do p="$p/$c"; ` +
    `if [ -L "$p" ]; then echo through; fail ${THROUGH_SYMLINK}; fi; if [ -e "$p" ] && [ ! -d "$p" ]; then echo notdir; fail ${NOT_A_FOLDER}; fi; done; `
  );
}

/** Exit statuses of the commands, and what they print before them. */
export const THROUGH_SYMLINK = 3;
export const NOT_A_FOLDER = 4;
export const OVER_SYMLINK = 5;
export const ABSENT = 6;
export const IS_A_FOLDER = 7;

/**
 * Joins an upload's parts (folder `parts`) into file `path` of the
 * workspace: each part removed once copied, the old file's mode kept, the
 * parent folders made, then renamed over the file. Refused before anything
 * is written, as `duet serve` refuses it: a folder on the way or the file
 * itself a symlink (exit 3), a part of the way not a folder (4), the file
 * a folder (7). In a subshell: the shell it runs in lives on.
 */
export function joinPartsCommand(parts: string, path: string): string {
  const cut = path.lastIndexOf("/");
  const dir = cut < 0 ? "" : path.slice(0, cut);
  const d = shellQuote(parts);
  const t = shellQuote(workspacePath(path));
  return (
    `(fail() { exit "$1"; }; ` +
    folderChecks(dir) +
    `if [ -L ${t} ]; then echo through; fail ${THROUGH_SYMLINK}; fi; if [ -d ${t} ]; then echo isdir; fail ${IS_A_FOLDER}; fi; ` +
    `set -e; : >| ${d}/whole; for p in ${d}/part-*; do cat "$p" >> ${d}/whole; rm -f "$p"; done; ` +
    `if [ -f ${t} ]; then chmod --reference=${t} ${d}/whole; fi; mkdir -p -- ${shellQuote(folderPath(dir))}; mv -f -T ${d}/whole ${t})`
  );
}

/**
 * Unpacks a push whose parts (`{scratch}/parts/part-NNNNNN`, a checked tar)
 * arrived: into `{scratch}/x` (owners dropped, setuid/setgid/sticky bits
 * cleared), refused (exit 5, `symlink\tDIR`) when one of its folders is a
 * symlink in the workspace, then with `mirror` what the folder holds and
 * the archive does not is deleted (each path removed counted), what the
 * archive replaces is removed (a file over a folder, a folder over a
 * file), and the tree is linked into place (copied where links fail).
 * Prints `deleted N`. The scratch is removed either way.
 */
export function unpackCommand(scratch: string, dir: string, mirror: boolean): string {
  const s = shellQuote(scratch);
  const d = shellQuote(folderPath(dir));
  return (
    `(S=${s}; D=${d}; fail() { cd /; rm -rf -- "$S"; exit "$1"; }; ` +
    folderChecks(dir) +
    `mkdir -p -- "$S/x" || fail 1; ` +
    `cat "$S"/parts/part-* | tar -x -p --delay-directory-restore -f - -C "$S/x" --no-same-owner 2>"$S/err" || { cat "$S/err" >&2; fail 1; }; ` +
    `rm -rf -- "$S/parts"; ` +
    `find "$S/x" ! -type l -perm /7000 -exec chmod ug-s,o-t -- {} + || fail 1; ` +
    `cd "$S/x" || fail 1; ` +
    // A folder holding members, where the workspace has a symlink: they would be written through it.
    `while IFS= read -r -d '' f; do if [ -L "$D/$f" ]; then printf 'symlink\\t%s\\n' "$f"; fail ${OVER_SYMLINK}; fi; ` +
    `done < <(find . -mindepth 1 -type d ! -empty -printf '%P\\0'); ` +
    `deleted=0; ` +
    (mirror
      ? `if [ -d "$D" ]; then gone=; while IFS= read -r -d '' f; do ` +
        `if [ -n "$gone" ] && [[ "$f" == "$gone"/* ]]; then deleted=$((deleted+1)); continue; fi; ` +
        `if [ ! -e "$S/x/$f" ] && [ ! -L "$S/x/$f" ]; then rm -rf -- "$D/$f" || fail 1; deleted=$((deleted+1)); gone=$f; fi; ` +
        `done < <(cd "$D" && find . -mindepth 1 ${pruneScratch(dir === "")} -printf '%P\\0'); fi; `
      : "") +
    `while IFS= read -r -d '' e; do f=\${e:2}; ` +
    `if [ "\${e:0:1}" = d ]; then if [ -L "$D/$f" ] || { [ -e "$D/$f" ] && [ ! -d "$D/$f" ]; }; then rm -f -- "$D/$f" || fail 1; fi; ` +
    `elif [ -d "$D/$f" ] && [ ! -L "$D/$f" ]; then rm -rf -- "$D/$f" || fail 1; fi; ` +
    `done < <(find . -mindepth 1 -printf '%y %P\\0'); ` +
    `mkdir -p -- "$D" || fail 1; ` +
    `cp -a -l --remove-destination . "$D/" 2>/dev/null || cp -a --remove-destination . "$D/" || fail 1; ` +
    `cd / && rm -rf -- "$S"; echo "deleted $deleted")`
  );
}

/**
 * Packs folder `dir` into tar file `out`: its folders, regular files and
 * symlinks (never followed), names relative to it, each folder's entries
 * in byte order after the folder; permission bits and mtimes kept, owners 0. Exit 6 (`absent`) when it is not there.
 */
export function packCommand(dir: string, out: string): string {
  const d = shellQuote(folderPath(dir));
  const o = shellQuote(out);
  return (
    `(fail() { rm -f -- ${o}; exit "$1"; }; ` +
    folderChecks(dir) +
    `if [ ! -e ${d} ]; then echo absent; fail ${ABSENT}; fi; if [ ! -d ${d} ]; then echo notdir; fail ${NOT_A_FOLDER}; fi; ` +
    `set -o pipefail; cd ${d} || fail 1; ` +
    // Each folder's entries in byte order, a folder before what it holds: sorted with `/` as \\001, below any byte of a name.
    `find . -mindepth 1 ${pruneScratch(dir === "")} \\( -type d -o -type f -o -type l \\) -printf '%P\\0' ` +
    `| tr '/\\001' '\\001/' | LC_ALL=C sort -z | tr '/\\001' '\\001/' ` +
    `| tar --null --no-recursion -T - --owner=0 --group=0 --numeric-owner --mode=u-s,g-s,o-t -cf ${o}; rc=$?; ` +
    // GNU tar: 1 is "some files changed while read", still a good archive.
    `if [ $rc -gt 1 ]; then fail 1; fi)`
  );
}

/**
 * Puts git's files in byte order of whole path (git's no-index walk goes
 * folder by folder: `a/x` before `a.txt`): each `diff --git` section is one
 * NUL-ended record keyed by its path (git quotes a path with a control
 * character, so a key has none), sorted (stably: a file that became a
 * symlink is two sections), and the keys dropped.
 */
function byPath(file: string): string {
  return (
    String.raw`LC_ALL=C awk 'BEGIN{ORS=""} /^diff --git /{ if (n) printf "%c", 0; n=1; key=substr($0, 12); ` +
    String.raw`key=substr(key, 1, (length(key)-1)/2); sub(/^"?[ab]\//, "", key); print key "\t" } { print $0 "\n" } END{ if (n) printf "%c", 0 }' ` +
    `${file} ` +
    String.raw`| LC_ALL=C sort -s -z -t "$(printf '\t')" -k1,1 | LC_ALL=C sed -z 's/^[^[:cntrl:]]*\t//' | tr -d '\000'`
  );
}

/**
 * Compares the copy restored in `{copyDir}/old` with /workspace, as git
 * writes it (`--binary --full-index`, no renames, paths as `a/P b/P`
 * through the links `a` and `b`, the user's git configuration left out),
 * files in byte order of path, into `out`.
 */
export function diffCommand(copyDir: string, out: string): string {
  const c = shellQuote(copyDir);
  const o = shellQuote(out);
  return (
    `(set -o pipefail; cd ${c} && mkdir -p old && ln -sfn old a && ln -sfn ${WORKSPACE_DIR} b && ` +
    `{ GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null HOME=${c} git -c core.quotepath=false ` +
    `diff --no-index --binary --full-index --no-renames --no-prefix --no-color --no-ext-diff --no-textconv a/ b/ > ${c}/git; ` +
    `rc=$?; if [ $rc -gt 1 ]; then exit $rc; fi; } && ${byPath(`${c}/git`)} > ${c}/out && mv -f ${c}/out ${o})`
  );
}

/** Removes a diff's copy (an overlay the SDK mounted there first) and its output. */
export function diffCleanupCommand(copyDir: string, out: string): string {
  const c = shellQuote(copyDir);
  return `({ command -v fusermount3 >/dev/null && fusermount3 -uz ${c}/old 2>/dev/null; true; }; rm -rf -- ${c} ${shellQuote(out)})`;
}
