// The message box in the terminal client's language: `!cmd` runs a
// command, `@agent …` asks the agent, and one switch says whom plain text
// is for. Enter sends, Shift+Enter starts a new line, Esc stops yours.
import { byId } from './dom.js';

const AT_AGENT = '@agent';
const MAX_CHARS = 8000;
const TYPING_EVERY_MS = 2000;

/** What a line sends: `{exec: cmd}`, `{message: {text, to}}`, or null. */
export function readLine(line, target) {
  const text = line.trim();
  if (!text) return null;
  if (text.slice(0, AT_AGENT.length).toLowerCase() === AT_AGENT) {
    const rest = text.slice(AT_AGENT.length);
    if (rest === '' || /^[\s:,]/.test(rest)) {
      const q = rest.replace(/^[\s:,]/, '').trim();
      return q ? { message: { text: q, to: 'agent' } } : null;
    }
  }
  if (text.startsWith('!')) {
    const cmd = text.slice(1).trim();
    return cmd ? { exec: cmd } : null;
  }
  return { message: { text, to: target } };
}

const SCREEN = { top: ['-b', '-bn1', '-n1'], htop: [], btop: [], vim: ['-es', '-Es'], vi: ['-es', '-Es'], nvim: ['--headless', '-es', '-Es'], nano: [], emacs: ['--batch', '--script'], less: [], more: [], man: ['-P', '-k', '-f', '-w'], watch: [], ssh: ['-V'], tmux: ['-V', 'ls', 'list-sessions'], screen: ['-ls', '-list', '-v'] };
const REPLS = new Set(['python3', 'python', 'ipython', 'node', 'irb', 'ghci', 'lua', 'bash', 'sh', 'zsh', 'fish', 'dash', 'sqlite3', 'psql', 'mysql']);
const REPL_FLAGS = new Set(['-i', '-q', '-u', '-l', '--login', '--interactive', '-B']);

/** The program of a command that needs a terminal (`top`, `vim`, a REPL
 * with nothing to run), if one does: such a command belongs in the
 * shared terminal (a command runs with no terminal and stdin from
 * /dev/null). Lines it cannot read are sent as written. */
export function needsTerminal(cmd) {
  if (/\$\(|`|["']/.test(cmd)) return null;
  let piped = false;
  for (const seg of cmd.split(/(\|\|?|&&|;|&)/)) {
    if (/^(\|\|?|&&|;|&)$/.test(seg)) {
      piped = seg === '|';
      continue;
    }
    const words = seg.trim().split(/\s+/).filter(Boolean);
    while (words.length && (/^\w+=/.test(words[0]) || ['sudo', 'env', 'time', 'exec', 'command', 'nice', 'nohup'].includes(words[0]))) words.shift();
    if (!words.length) continue;
    const name = words[0].split('/').pop();
    const args = [];
    for (const w of words.slice(1)) {
      if (/^(<|>|2>)/.test(w)) break;
      args.push(w);
    }
    if (args.some((a) => ['--help', '--version', '-h'].includes(a))) continue;
    if (name in SCREEN && !args.some((a) => SCREEN[name].includes(a))) return name;
    const fed = piped || /</.test(seg);
    if (REPLS.has(name) && !fed && args.every((a) => REPL_FLAGS.has(a))) return name;
  }
  return null;
}

export class Composer {
  /** `act`: `{exec(cmd), message({text, to}), stop(), typing()}`;
   * `say(sentence)`: a note to the person. */
  constructor(act, say) {
    this.act = act;
    this.say = say;
    this.input = byId('input');
    this.button = byId('target');
    this.lastTyping = 0;
    let saved = null;
    try {
      saved = localStorage.getItem('duet.target');
    } catch {
      saved = null;
    }
    this.setTarget(saved === 'agent' ? 'agent' : 'room');
    this.button.addEventListener('click', () => this.setTarget(this.target === 'room' ? 'agent' : 'room'));
    byId('composer').addEventListener('submit', (e) => {
      e.preventDefault();
      this.submit();
    });
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && !e.altKey && !e.ctrlKey && !e.metaKey) {
        e.preventDefault();
        this.submit();
      } else if (e.key === 'Escape' && !e.isComposing) {
        e.preventDefault();
        this.act.stop();
      }
    });
    this.input.addEventListener('input', () => {
      const now = Date.now();
      if (this.input.value.trim() && now - this.lastTyping >= TYPING_EVERY_MS) {
        this.lastTyping = now;
        this.act.typing();
      }
    });
  }

  setTarget(to) {
    this.target = to;
    this.button.textContent = to === 'agent' ? 'To: the agent' : 'To: the room';
    this.button.setAttribute('aria-pressed', String(to === 'agent'));
    this.button.title = 'Whom plain text goes to (click to switch)';
    try {
      localStorage.setItem('duet.target', to);
    } catch {
      // Not kept: the switch still works for this page.
    }
  }

  submit() {
    const op = readLine(this.input.value, this.target);
    if (!op) return;
    if (op.exec) {
      const program = needsTerminal(op.exec);
      if (program) {
        this.say({ error: `\`${program}\` needs a terminal: type it into the room's terminal (open it beside the chat)` }, true);
        return;
      }
      this.act.exec(op.exec);
    } else {
      const n = Array.from(op.message.text).length;
      if (n > MAX_CHARS) {
        this.say({ error: `Too long: ${n} characters, at most ${MAX_CHARS}` }, true);
        return;
      }
      this.act.message(op.message);
    }
    this.input.value = '';
    this.lastTyping = 0;
  }
}
