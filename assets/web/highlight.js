// A small generic highlighter for fenced code: keywords, strings,
// comments and numbers of common languages, as spans with classes.

const WORDS = {
  js: 'async await break case catch class const continue default delete do else export extends false finally for from function if import in instanceof let new null of return static super switch this throw true try typeof undefined var void while yield interface type enum implements readonly',
  rust: 'as async await break const continue crate dyn else enum extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type unsafe use where while Some None Ok Err',
  py: 'and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield self',
  go: 'break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var nil true false',
  c: 'auto break case char class const continue default delete do double else enum extern false float for goto if inline int long namespace new nullptr private protected public return short signed sizeof static struct switch template this throw true try typedef union unsigned using virtual void volatile while bool String final boolean import package extends implements',
  sh: 'if then else elif fi for in do done while until case esac function return local export readonly echo cd exit set unset source true false',
  sql: 'select from where insert into values update set delete create table drop alter join left right inner outer on group by order having limit and or not null as distinct primary key',
  ruby: 'begin break case class def do else elsif end ensure false for if in module next nil not or redo rescue retry return self super then true undef unless until when while yield require',
};
const ALIASES = {
  javascript: 'js', ts: 'js', typescript: 'js', tsx: 'js', jsx: 'js', mjs: 'js', json: 'js',
  rs: 'rust', python: 'py', python3: 'py', golang: 'go', cpp: 'c', 'c++': 'c', h: 'c', hpp: 'c',
  java: 'c', cs: 'c', csharp: 'c', kotlin: 'c', swift: 'c', bash: 'sh', shell: 'sh', zsh: 'sh',
  console: 'sh', sh: 'sh', toml: 'sh', yaml: 'sh', yml: 'sh', dockerfile: 'sh', rb: 'ruby', postgres: 'sql',
};
const HASH_COMMENTS = new Set(['py', 'sh', 'ruby']);
const sets = {};

function family(lang) {
  const l = (lang || '').toLowerCase();
  return WORDS[l] ? l : ALIASES[l] || null;
}

function pattern(fam) {
  const comment = HASH_COMMENTS.has(fam)
    ? '#[^\\n]*'
    : fam === 'sql'
      ? '--[^\\n]*'
      : '\\/\\/[^\\n]*|\\/\\*[\\s\\S]*?(?:\\*\\/|$)';
  return new RegExp(
    `(${comment})|("(?:[^"\\\\\\n]|\\\\.)*"?|'(?:[^'\\\\\\n]|\\\\.)*'?|\`(?:[^\`\\\\]|\\\\.)*\`?)` +
      '|(\\b(?:0x[0-9a-fA-F_]+|\\d[\\d_]*(?:\\.\\d+)?(?:e[+-]?\\d+)?)\\b)|([A-Za-z_][A-Za-z0-9_]*)',
    'g',
  );
}

/** `code` as a fragment of text and spans; unknown languages as plain text. */
export function highlight(code, lang) {
  const frag = document.createDocumentFragment();
  const fam = family(lang);
  if (!fam) {
    frag.append(code);
    return frag;
  }
  const words = (sets[fam] ||= new Set(WORDS[fam].split(' ')));
  const re = pattern(fam);
  let last = 0;
  let plain = '';
  const span = (cls, t) => {
    if (plain) frag.append(plain);
    plain = '';
    const s = document.createElement('span');
    s.className = cls;
    s.textContent = t;
    frag.append(s);
  };
  for (let m; (m = re.exec(code)); ) {
    if (m[0] === '') {
      re.lastIndex++;
      continue;
    }
    plain += code.slice(last, m.index);
    last = re.lastIndex;
    if (m[1]) span('tok-c', m[1]);
    else if (m[2]) span('tok-s', m[2]);
    else if (m[3]) span('tok-n', m[3]);
    else if (m[4] && words.has(fam === 'sql' ? m[4].toLowerCase() : m[4])) span('tok-k', m[4]);
    else plain += m[0];
  }
  plain += code.slice(last);
  if (plain) frag.append(plain);
  return frag;
}
