// Keys as the bytes xterm sends for them (the terminal's modes decide
// the arrows), and paste with bracketed paste.

const CSI = '\x1b[';
const TILDE = { Insert: 2, Delete: 3, PageUp: 5, PageDown: 6, F5: 15, F6: 17, F7: 18, F8: 19, F9: 20, F10: 21, F11: 23, F12: 24 };
const SS3 = { ArrowUp: 'A', ArrowDown: 'B', ArrowRight: 'C', ArrowLeft: 'D', Home: 'H', End: 'F', F1: 'P', F2: 'Q', F3: 'R', F4: 'S' };
const CTRL_SYMBOLS = { ' ': '\x00', '@': '\x00', '2': '\x00', '[': '\x1b', '3': '\x1b', '\\': '\x1c', '4': '\x1c', ']': '\x1d', '5': '\x1d', '^': '\x1e', '6': '\x1e', '_': '\x1f', '-': '\x1f', '7': '\x1f', '/': '\x1f', '?': '\x7f', '8': '\x7f' };

/** The bytes (as a string of characters) a key event sends; null when the
 * page leaves the key to the browser (Meta combinations, lone modifiers,
 * composition). */
export function keyBytes(e, modes = {}) {
  if (e.isComposing || e.key === 'Process' || e.key === 'Unidentified' || e.key === 'Dead') return null;
  if (e.metaKey) return null;
  const mod = 1 + (e.shiftKey ? 1 : 0) + (e.altKey ? 2 : 0) + (e.ctrlKey ? 4 : 0);
  const key = e.key;
  if (key in SS3) {
    const arrowOrHome = !key.startsWith('F');
    if (mod > 1) return `${CSI}1;${mod}${SS3[key]}`;
    if (!arrowOrHome) return `\x1bO${SS3[key]}`;
    return (modes.appCursor ? '\x1bO' : CSI) + SS3[key];
  }
  if (key in TILDE) return mod > 1 ? `${CSI}${TILDE[key]};${mod}~` : `${CSI}${TILDE[key]}~`;
  const alt = e.altKey ? '\x1b' : '';
  switch (key) {
    case 'Enter':
      return alt + '\r';
    case 'Backspace':
      return alt + (e.ctrlKey ? '\x08' : '\x7f');
    case 'Tab':
      return e.shiftKey ? `${CSI}Z` : alt + '\t';
    case 'Escape':
      return alt + '\x1b';
  }
  if ([...key].length !== 1) return null;
  if (e.ctrlKey) {
    // Ctrl+letter by the key's place, whatever the layout.
    const letter = /^Key([A-Z])$/.exec(e.code || '');
    const ch = letter ? letter[1].toLowerCase() : key.toLowerCase();
    if (/^[a-z]$/.test(ch)) return alt + String.fromCharCode(ch.charCodeAt(0) - 96);
    if (ch in CTRL_SYMBOLS) return alt + CTRL_SYMBOLS[ch];
    return null;
  }
  return alt + key;
}

/** Pasted text as the terminal gets it: line ends as Enter, wrapped in
 * bracketed-paste marks when the program asked for them. */
export function pasteBytes(text, modes = {}) {
  const body = text.replace(/\r\n?|\n/g, '\r');
  return modes.bracketedPaste ? `${CSI}200~${body.replace(/\x1b\[20[01]~/g, '')}${CSI}201~` : body;
}

/** Base64 of the UTF-8 of `text`, in parts of at most `max` bytes. */
export function base64Parts(text, max = 65536) {
  const bytes = new TextEncoder().encode(text);
  const parts = [];
  for (let at = 0; at < bytes.length; at += max) {
    const chunk = bytes.subarray(at, at + max);
    let bin = '';
    for (let i = 0; i < chunk.length; i += 0x8000) bin += String.fromCharCode(...chunk.subarray(i, i + 0x8000));
    parts.push(btoa(bin));
  }
  return parts;
}
