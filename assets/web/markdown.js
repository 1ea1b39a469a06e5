// A small, safe markdown renderer: it builds DOM nodes (text is always a
// text node), for headings, lists, quotes, tables, emphasis, links
// (http and https only), inline code and fenced code with colour.
import { h } from './dom.js';
import { highlight } from './highlight.js';

const FENCE = /^\s{0,3}(`{3,}|~{3,})\s*([^\s`]*)/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^\s{0,3}>\s?/;
const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TABLE_SEP = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/;

/** `text` as a fragment of block elements. */
export function render(text) {
  const frag = document.createDocumentFragment();
  blocks(text.replace(/\r\n?/g, '\n').split('\n'), frag);
  return frag;
}

function starts(line, next) {
  return (
    FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) ||
    ITEM.test(line) || (line.includes('|') && next !== undefined && TABLE_SEP.test(next) && next.includes('-'))
  );
}

function blocks(lines, out) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (!line.trim()) {
      i++;
    } else if ((m = line.match(FENCE))) {
      const [fence, lang] = [m[1], m[2]];
      const body = [];
      for (i++; i < lines.length; i++) {
        const close = lines[i].trim();
        if (close.startsWith(fence[0].repeat(fence.length)) && /^[`~]+$/.test(close)) {
          i++;
          break;
        }
        body.push(lines[i]);
      }
      const code = h('code', lang ? { 'data-lang': lang } : {});
      code.append(highlight(body.join('\n'), lang));
      out.append(h('pre', {}, code));
    } else if ((m = line.match(HEADING))) {
      const level = Math.min(m[1].length + 2, 6);
      out.append(inline(m[2], h(`h${level}`)));
      i++;
    } else if (RULE.test(line)) {
      out.append(h('hr'));
      i++;
    } else if (QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && QUOTE.test(lines[i])) inner.push(lines[i++].replace(QUOTE, ''));
      const quote = h('blockquote');
      blocks(inner, quote);
      out.append(quote);
    } else if (ITEM.test(line)) {
      i = list(lines, i, out);
    } else if (line.includes('|') && TABLE_SEP.test(lines[i + 1] || '') && (lines[i + 1] || '').includes('-')) {
      i = table(lines, i, out);
    } else {
      const p = h('p');
      let first = true;
      while (i < lines.length && lines[i].trim() && (first || !starts(lines[i], lines[i + 1]))) {
        if (!first) p.append(h('br'));
        inline(lines[i].trim(), p);
        first = false;
        i++;
      }
      out.append(p);
    }
  }
}

function list(lines, i, out) {
  const first = lines[i].match(ITEM);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const el = h(ordered ? 'ol' : 'ul');
  if (ordered && parseInt(first[2], 10) !== 1) el.setAttribute('start', String(parseInt(first[2], 10)));
  while (i < lines.length) {
    const m = lines[i].match(ITEM);
    if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
    const content = [m[3]];
    for (i++; i < lines.length; i++) {
      const next = lines[i];
      const nm = next.match(ITEM);
      if (!next.trim()) break;
      if (nm && nm[1].length <= indent) break;
      if (!nm && !/^\s/.test(next) && starts(next, lines[i + 1])) break;
      content.push(next.replace(new RegExp(`^\\s{0,${indent + 2}}`), ''));
    }
    const li = h('li');
    if (content.length === 1) inline(content[0], li);
    else blocks(content, li);
    el.append(li);
  }
  out.append(el);
  return i;
}

function cells(line) {
  return line.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
}

function table(lines, i, out) {
  const head = cells(lines[i]);
  const el = h('table', {}, h('thead', {}, h('tr', {}, head.map((c) => inline(c, h('th'))))));
  const body = h('tbody');
  for (i += 2; i < lines.length && lines[i].includes('|') && lines[i].trim(); i++) {
    body.append(h('tr', {}, cells(lines[i]).map((c) => inline(c, h('td')))));
  }
  el.append(body);
  out.append(h('div', { class: 'table' }, el));
  return i;
}

/** A link's address when it is http or https; null otherwise. */
export function safeUrl(url) {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch {
    return null;
  }
}

function link(text, url) {
  const href = safeUrl(url);
  if (!href) return document.createTextNode(text);
  return h('a', { href, rel: 'noopener noreferrer', target: '_blank' }, text);
}

const EMPH = [
  ['**', 'strong'],
  ['__', 'strong'],
  ['~~', 'del'],
  ['*', 'em'],
  ['_', 'em'],
];

/** Inline markdown of `text` appended to `el` (returned). */
export function inline(text, el) {
  let buf = '';
  const flush = () => {
    if (buf) el.append(buf);
    buf = '';
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '\\' && i + 1 < text.length && /[\\`*_[\]()#+\-.!~>|]/.test(text[i + 1])) {
      buf += text[i + 1];
      i += 2;
      continue;
    }
    if (c === '`') {
      const run = text.slice(i).match(/^`+/)[0];
      const end = text.indexOf(run, i + run.length);
      if (end > 0) {
        flush();
        el.append(h('code', {}, text.slice(i + run.length, end)));
        i = end + run.length;
        continue;
      }
      buf += run;
      i += run.length;
      continue;
    }
    if (c === '[') {
      const m = text.slice(i).match(/^\[([^\]]+)\]\(\s*<?((?:[^()\s>]|\([^()\s]*\))+)>?(?:\s+"[^"]*")?\s*\)/);
      if (m) {
        flush();
        el.append(link(m[1], m[2]));
        i += m[0].length;
        continue;
      }
    }
    if ((c === 'h' && /^https?:\/\//.test(text.slice(i, i + 8))) && !/\w/.test(text[i - 1] || '')) {
      const m = text.slice(i).match(/^https?:\/\/[^\s<>"]+/);
      const url = m[0].replace(/[.,;:!?)\]}'"]+$/, '');
      flush();
      el.append(link(url, url));
      i += url.length;
      continue;
    }
    const emph = EMPH.find(([mark]) => text.startsWith(mark, i));
    if (emph) {
      const [mark, tag] = emph;
      const after = text[i + mark.length];
      const wordy = mark[0] === '_' && /\w/.test(text[i - 1] || '');
      const end = after && !/\s/.test(after) && !wordy ? closing(text, mark, i + mark.length) : -1;
      if (end > 0) {
        flush();
        el.append(inline(text.slice(i + mark.length, end), h(tag)));
        i = end + mark.length;
        continue;
      }
      buf += mark;
      i += mark.length;
      continue;
    }
    buf += c;
    i++;
  }
  flush();
  return el;
}

/** Where `mark` closes an emphasis opened before `from` (-1: it does not). */
function closing(text, mark, from) {
  for (let j = text.indexOf(mark, from); j > from - 1 && j !== -1; j = text.indexOf(mark, j + 1)) {
    if (j === from) continue;
    if (/\s/.test(text[j - 1])) continue;
    if (mark.length === 1 && text[j + 1] === mark) {
      j++;
      continue;
    }
    if (mark[0] === '_' && /\w/.test(text[j + mark.length] || '')) continue;
    return j;
  }
  return -1;
}
