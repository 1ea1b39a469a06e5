// How the adapter signals a running command: the Sandbox SDK 0.12.10 has no
// call for it (`exec`'s AbortSignal only stops reading, `killProcess`
// ignores its signal), so it starts `kill` as a background process, beside
// the busy shell. The stand-in reads the same command back (SIGNAL_COMMAND).

export type Signal = "INT" | "KILL";

/** The shell command that sends `signal` to `pid`'s process group, else to `pid`. */
export function signalCommand(signal: Signal, pid: number): string {
  return `kill -${signal} -- -${pid} 2>/dev/null || kill -${signal} -- ${pid}`;
}

/** Matches what signalCommand writes: [, signal, pid]. */
export const SIGNAL_COMMAND = /^kill -(INT|KILL) -- -(\d+) 2>\/dev\/null \|\| kill -\1 -- \2$/;
