// The browser page, assets/web/, in the Worker's own bundle (src/web.ts
// serves it): each file a Text module (the `rules` of wrangler.jsonc), so a
// request is the Worker's alone, with no asset server in front of every
// call. Plain JS beside its types (pagefiles.d.ts): TypeScript does not type
// other files' text. A file added to the folder is added here; the neutral
// test tests/it/neutral/web_access asks both backends for every one.
import ansi_js from "../../assets/web/ansi.js";
import api_js from "../../assets/web/api.js";
import app_css from "../../assets/web/app.css";
import app_js from "../../assets/web/app.js";
import blocks_js from "../../assets/web/blocks.js";
import composer_js from "../../assets/web/composer.js";
import dom_js from "../../assets/web/dom.js";
import explain_js from "../../assets/web/explain.js";
import highlight_js from "../../assets/web/highlight.js";
import icon_svg from "../../assets/web/icon.svg";
import index_html from "../../assets/web/index.html";
import keys_js from "../../assets/web/keys.js";
import markdown_js from "../../assets/web/markdown.js";
import palette_js from "../../assets/web/palette.js";
import people_js from "../../assets/web/people.js";
import records_js from "../../assets/web/records.js";
import session_js from "../../assets/web/session.js";
import socket_js from "../../assets/web/socket.js";
import state_js from "../../assets/web/state.js";
import terminal_js from "../../assets/web/terminal.js";
import termpane_js from "../../assets/web/termpane.js";
import timeline_js from "../../assets/web/timeline.js";

/** The page's files by name: their text. */
export const PAGE_FILES = new Map(Object.entries({
  "ansi.js": ansi_js,
  "api.js": api_js,
  "app.css": app_css,
  "app.js": app_js,
  "blocks.js": blocks_js,
  "composer.js": composer_js,
  "dom.js": dom_js,
  "explain.js": explain_js,
  "highlight.js": highlight_js,
  "icon.svg": icon_svg,
  "index.html": index_html,
  "keys.js": keys_js,
  "markdown.js": markdown_js,
  "palette.js": palette_js,
  "people.js": people_js,
  "records.js": records_js,
  "session.js": session_js,
  "socket.js": socket_js,
  "state.js": state_js,
  "terminal.js": terminal_js,
  "termpane.js": termpane_js,
  "timeline.js": timeline_js,
}));
