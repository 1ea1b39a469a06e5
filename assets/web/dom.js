// Building DOM nodes: text is always a text node, never parsed as HTML.

/** An element with properties (`class`, `text`, `on*` listeners, other
 * attributes) and children (nodes or strings, nested arrays allowed). */
export function h(tag, props = {}, ...kids) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value == null || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'text') el.textContent = value;
    else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, kids);
  return el;
}

/** Appends children: nodes as they are, anything else as text. */
export function append(el, kids) {
  for (const kid of [kids].flat(Infinity)) {
    if (kid == null || kid === false) continue;
    el.append(kid instanceof Node ? kid : String(kid));
  }
  return el;
}

/** `HH:MM` of a time in ms, in the reader's own time zone. */
export function clock(ms) {
  const d = new Date(ms);
  return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
}

/** The element with `id`, which the page always has. */
export function byId(id) {
  return document.getElementById(id);
}
