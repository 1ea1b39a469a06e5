// A record (a system message with an `event`) as one sentence, in the
// terminal client's words; a kind it does not know by its own text.

const oneLine = (s) => String(s ?? '').split(/\s+/).filter(Boolean).join(' ');

/** `812 bytes`, `2.1 KB`, `3.4 MB`. */
export function bytes(n) {
  const size = Number(n) || 0;
  if (size < 1000) return `${size} bytes`;
  if (size < 1e6) return `${(size / 1e3).toFixed(1)} KB`;
  return `${(size / 1e6).toFixed(1)} MB`;
}

const SHELL = {
  exit: (by) => `the shell exited after ${by}'s command`,
  timeout: (by) => `${by}'s command timed out`,
  stopped: (by) => `${by}'s command stopped the shell`,
};

const KINDS = {
  cleanup: (e) => `${e.by} cleaned up the room (history and sandbox)`,
  cancel: (e) => `${e.by} cancelled the agent's turn`,
  interrupt: (e) => `${e.by} interrupted \`${oneLine(e.cmd)}\``,
  upload: (e) => `${e.by} uploaded ${e.path} (${bytes(e.size)})`,
  rename: (e) => `${e.from} is now ${e.to}`,
  shell: (e) => {
    const what = (SHELL[e.reason] || ((by) => `the shell was replaced after ${by}'s command (${e.reason})`))(e.by);
    const next = e.reset
      ? `a fresh shell in ${e.cwd}, directory and variables reset`
      : `a new shell goes on in ${e.cwd}, variables kept`;
    return `${what}: ${next}`;
  },
  delete: (e) => `${e.by} deleted /workspace/${e.path}`,
  checkpoint: (e) => `${e.by} saved checkpoint ${e.name}`,
  restore: (e) => `${e.by} restored checkpoint ${e.name}: /workspace is as it was then`,
  fork: (e) =>
    `${e.by} forked room ${e.from} into room ${e.to}${e.checkpointId ? ` (from checkpoint ${e.checkpointId})` : ''}`,
  policy: (e) => `${e.by} set the agent's commands to ${e.policy}`,
  process: (e) => `${e.by} started ${e.name} in the background: \`${oneLine(e.cmd)}\``,
  push: (e) => `${e.by} pushed ${e.files} files (${bytes(e.bytes)}) into /workspace${e.path ? `/${e.path}` : ''}`,
  edit: (e) => `the agent edited ${e.path} (+${e.added ?? 0} −${e.removed ?? 0})`,
  model: (e) => `${e.by} set the agent's model to ${e.model}`,
};

/** The sentence of a record message. */
export function recordText(msg) {
  const e = msg.event || {};
  const say = Object.hasOwn(KINDS, e.kind) ? KINDS[e.kind] : null;
  try {
    const text = say ? say(e) : null;
    if (text && !/undefined/.test(text)) return text;
  } catch {
    // Fields of another shape: the record's own text says it.
  }
  return oneLine(msg.text) || `${e.by || 'someone'} did something (${oneLine(e.kind) || 'a record'})`;
}
