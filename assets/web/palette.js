// The xterm 256-colour palette, and a colour of the screen or of SGR as CSS.

const BASE = [
  '#000000', '#cd0000', '#00cd00', '#cdcd00', '#0000ee', '#cd00cd', '#00cdcd', '#e5e5e5',
  '#7f7f7f', '#ff0000', '#00ff00', '#ffff00', '#5c5cff', '#ff00ff', '#00ffff', '#ffffff',
];
const hex = (n) => n.toString(16).padStart(2, '0');
const LEVELS = [0, 95, 135, 175, 215, 255];

export const PALETTE = (() => {
  // The first 16 follow the page's light or dark scheme (app.css).
  const out = BASE.map((_, i) => `var(--c${i})`);
  for (let r = 0; r < 6; r++)
    for (let g = 0; g < 6; g++)
      for (let b = 0; b < 6; b++) out.push(`#${hex(LEVELS[r])}${hex(LEVELS[g])}${hex(LEVELS[b])}`);
  for (let i = 0; i < 24; i++) {
    const v = hex(8 + 10 * i);
    out.push(`#${v}${v}${v}`);
  }
  return out;
})();

/** A colour (a palette index 0..255 or `#rrggbb`) as CSS; null for the
 * default or anything else. The xterm values of the first 16 are `BASE`. */
export function color(c) {
  if (Number.isInteger(c) && c >= 0 && c < 256) return PALETTE[c];
  if (typeof c === 'string' && /^#[0-9a-fA-F]{6}$/.test(c)) return c;
  return null;
}

/** Styles a span for a cell's attributes: `fg`, `bg`, `b`, `d`, `i`,
 * `u`, `r` (inverse: the colours swapped, defaults included). */
export function paint(el, a) {
  let fg = color(a.fg);
  let bg = color(a.bg);
  if (a.r) [fg, bg] = [bg || 'var(--term-bg)', fg || 'var(--term-fg)'];
  if (fg) el.style.color = fg;
  if (bg) el.style.backgroundColor = bg;
  const cls = [];
  if (a.b) cls.push('t-b');
  if (a.d) cls.push('t-d');
  if (a.i) cls.push('t-i');
  if (a.u) cls.push('t-u');
  if (cls.length) el.className = cls.join(' ');
  return el;
}
