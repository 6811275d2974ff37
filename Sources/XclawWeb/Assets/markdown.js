// xclaw web view: Markdown and code highlighting for text the model wrote, in plain JavaScript, loaded before app.js
// (whose `h` helper builds the nodes). Untrusted text becomes DOM nodes and text, never HTML. ARCHITECTURE.md says
// why this is xclaw's own rather than marked and highlight.js.
"use strict";
// ---------------------------------------------------------------------------------------------------------------
// Syntax highlighting: a small tokenizer per language; keywords, types, literals, strings, comments and numbers
// become spans with classes (tok-kw, tok-type, tok-lit, tok-str, tok-com, tok-num).

const words = (text) => new Set(text.split(/\s+/).filter(Boolean));

const C_KEYWORDS =
  "auto break case char const continue default do double else enum extern float for goto if inline int long " +
  "register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while " +
  "_Bool _Complex bool #include #define #ifdef #ifndef #endif #if #else #elif #pragma #undef";

const LANGUAGES = {
  swift: {
    keywords: words(
      "actor any associatedtype async await break case catch class continue default defer deinit do else enum " +
        "extension fallthrough fileprivate final for func guard if import in indirect init inout internal is lazy let " +
        "mutating nonisolated open operator override private protocol public repeat rethrows return some static " +
        "struct subscript super switch throw throws try typealias var weak where while consume borrowing consuming"
    ),
    literals: words("true false nil self Self"),
    types: words("Int Int8 Int16 Int32 Int64 UInt UInt8 UInt16 UInt32 UInt64 Double Float String Bool Character Array Dictionary Set Optional Void Any AnyObject Error Data URL Date Result Task"),
    line: "//",
    block: ["/*", "*/"],
    strings: ['"""', '"'],
    attributes: true,
  },
  python: {
    keywords: words(
      "and as assert async await break class continue def del elif else except finally for from global if import " +
        "in is lambda nonlocal not or pass raise return try while with yield match case"
    ),
    literals: words("True False None self cls"),
    types: words("int float str bool list dict set tuple bytes object type Exception"),
    line: "#",
    strings: ['"""', "'''", '"', "'"],
    prefixes: true,
  },
  javascript: {
    keywords: words(
      "async await break case catch class const continue debugger default delete do else export extends finally " +
        "for from function if import in instanceof let new of return static super switch this throw try typeof var " +
        "void while with yield interface type enum implements private public protected readonly declare namespace " +
        "abstract as keyof"
    ),
    literals: words("true false null undefined NaN Infinity"),
    types: words("string number boolean any unknown never object Array Promise Map Set Object String Number Boolean Error JSON Math Date RegExp"),
    line: "//",
    block: ["/*", "*/"],
    strings: ['"', "'", "`"],
  },
  bash: {
    keywords: words(
      "if then else elif fi for while until do done case esac in function return local export readonly declare " +
        "set unset shift exit break continue source alias echo printf cd test trap eval exec"
    ),
    literals: words("true false"),
    types: words(""),
    line: "#",
    hashNeedsSpace: true,
    strings: ['"', "'"],
    variables: true,
  },
  json: {
    keywords: words(""),
    literals: words("true false null"),
    types: words(""),
    strings: ['"'],
  },
  c: {
    keywords: words(C_KEYWORDS + " class namespace template typename public private protected virtual override new delete using nullptr this constexpr noexcept"),
    literals: words("true false NULL nullptr"),
    types: words("size_t ssize_t uint8_t uint16_t uint32_t uint64_t int8_t int16_t int32_t int64_t FILE std string vector"),
    line: "//",
    block: ["/*", "*/"],
    strings: ['"', "'"],
    directives: true,
  },
};

const LANGUAGE_ALIASES = {
  swift: "swift",
  python: "python",
  py: "python",
  python3: "python",
  javascript: "javascript",
  js: "javascript",
  jsx: "javascript",
  mjs: "javascript",
  typescript: "javascript",
  ts: "javascript",
  tsx: "javascript",
  bash: "bash",
  sh: "bash",
  shell: "bash",
  zsh: "bash",
  console: "bash",
  json: "json",
  jsonc: "json",
  c: "c",
  h: "c",
  cpp: "c",
  "c++": "c",
  cc: "c",
  hpp: "c",
  objc: "c",
};

/** Highlights `code` of `language` into a DocumentFragment of text and spans (never HTML). */
function highlight(code, language) {
  const fragment = document.createDocumentFragment();
  const spec = LANGUAGES[LANGUAGE_ALIASES[(language || "").toLowerCase()]];
  if (!spec) {
    fragment.append(code);
    return fragment;
  }
  let plain = "";
  const flush = () => {
    if (plain) fragment.append(plain);
    plain = "";
  };
  const span = (cls, text) => {
    flush();
    fragment.append(h("span", { class: cls }, text));
  };
  const n = code.length;
  let i = 0;
  while (i < n) {
    const c = code[i];
    const rest = (k) => code.startsWith(k, i);
    // Comments.
    if (spec.block && rest(spec.block[0])) {
      const end = code.indexOf(spec.block[1], i + spec.block[0].length);
      const stop = end < 0 ? n : end + spec.block[1].length;
      span("tok-com", code.slice(i, stop));
      i = stop;
      continue;
    }
    if (spec.line && rest(spec.line) && !(spec.hashNeedsSpace && i > 0 && !/\s/.test(code[i - 1]))) {
      if (!(spec.line === "#" && spec.hashNeedsSpace && code[i + 1] === "!" && i === 0 && false)) {
        const end = code.indexOf("\n", i);
        const stop = end < 0 ? n : end;
        span("tok-com", code.slice(i, stop));
        i = stop;
        continue;
      }
    }
    // C preprocessor directives.
    if (spec.directives && c === "#" && /(^|\n)[ \t]*$/.test(code.slice(Math.max(0, i - 40), i))) {
      const m = /^#\s*[a-z]+/.exec(code.slice(i));
      if (m) {
        span("tok-kw", m[0]);
        i += m[0].length;
        continue;
      }
    }
    // Strings (a Python prefix such as f, r, b is part of the string).
    let prefix = "";
    if (spec.prefixes) {
      const m = /^[rRbBfFuU]{1,2}(?=["'])/.exec(code.slice(i, i + 3));
      if (m && !(i > 0 && /[\w]/.test(code[i - 1]))) prefix = m[0];
    }
    const quote = spec.strings.find((q) => code.startsWith(q, i + prefix.length));
    if (quote) {
      let j = i + prefix.length + quote.length;
      while (j < n) {
        if (code[j] === "\\" && spec !== LANGUAGES.bash) {
          j += 2;
          continue;
        }
        if (code[j] === "\\" && quote === '"') {
          j += 2;
          continue;
        }
        if (code.startsWith(quote, j)) {
          j += quote.length;
          break;
        }
        if (code[j] === "\n" && quote.length === 1 && quote !== "`" && spec !== LANGUAGES.bash) break;
        j++;
      }
      span("tok-str", code.slice(i, Math.min(j, n)));
      i = Math.min(j, n);
      continue;
    }
    // Shell variables.
    if (spec.variables && c === "$") {
      const m = /^\$(\{[^}\n]*\}|[A-Za-z_][\w]*|[0-9@#?$!*-])/.exec(code.slice(i));
      if (m) {
        span("tok-type", m[0]);
        i += m[0].length;
        continue;
      }
    }
    // Numbers.
    if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(code[i + 1] || ""))) {
      if (i === 0 || !/[\w$]/.test(code[i - 1])) {
        const m = /^(0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|(\d[\d_]*)?\.?\d[\d_]*([eE][+-]?\d+)?)[a-zA-Z]*/.exec(code.slice(i));
        if (m && m[0]) {
          span("tok-num", m[0]);
          i += m[0].length;
          continue;
        }
      }
    }
    // Words.
    if (/[A-Za-z_@$]/.test(c)) {
      const m = /^[@]?[A-Za-z_$][\w$]*/.exec(code.slice(i));
      if (m) {
        const word = m[0];
        if (spec.keywords.has(word)) span("tok-kw", word);
        else if (spec.literals.has(word)) span("tok-lit", word);
        else if (spec.types.has(word)) span("tok-type", word);
        else if (spec.attributes && word.startsWith("@")) span("tok-kw", word);
        else plain += word;
        i += word.length;
        continue;
      }
    }
    plain += c;
    i++;
  }
  flush();
  return fragment;
}

// ---------------------------------------------------------------------------------------------------------------
// Markdown: the model's text is untrusted. It is parsed into DOM nodes; nothing is ever inserted as HTML. Links
// are kept only for http(s) addresses and open without a referrer.

const LIST_ITEM = /^(\s*)([-*+]|\d{1,9}[.)])(\s+|$)(.*)$/;
const FENCE = /^\s{0,3}(`{3,}|~{3,})\s*([^\s`]*)[^`]*$/;
const TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;

/** Renders Markdown text into a fresh `.md` element. */
function renderMarkdown(text) {
  const root = h("div", { class: "md" });
  root.append(markdownBlocks(String(text).replace(/\r\n?/g, "\n").split("\n")));
  return root;
}

function indentOf(line) {
  let width = 0;
  for (const c of line) {
    if (c === " ") width++;
    else if (c === "\t") width += 4 - (width % 4);
    else break;
  }
  return width;
}

function splitRow(line) {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  const cells = [];
  let cell = "";
  let inCode = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === "\\" && s[i + 1] === "|") {
      cell += "|";
      i++;
    } else if (c === "`") {
      inCode = !inCode;
      cell += c;
    } else if (c === "|" && !inCode) {
      cells.push(cell.trim());
      cell = "";
    } else cell += c;
  }
  cells.push(cell.trim());
  return cells;
}

function isBlockStart(line, next) {
  return (
    FENCE.test(line) ||
    HEADING.test(line) ||
    RULE.test(line) ||
    QUOTE.test(line) ||
    LIST_ITEM.test(line) ||
    (line.includes("|") && next !== undefined && TABLE_RULE.test(next) && next.includes("-"))
  );
}

function markdownBlocks(lines) {
  const out = document.createDocumentFragment();
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i++;
      continue;
    }
    let m;
    if ((m = FENCE.exec(line))) {
      const fence = m[1];
      const lang = m[2] || "";
      const body = [];
      i++;
      while (i < lines.length && !(lines[i].trim().startsWith(fence[0].repeat(fence.length)) && !lines[i].trim().slice(fence.length).trim())) {
        body.push(lines[i]);
        i++;
      }
      i++; // the closing fence (absent while a reply still streams)
      const code = h("code", { class: lang ? "language-" + lang.toLowerCase() : null }, highlight(body.join("\n"), lang));
      out.append(h("pre", { "data-lang": lang || null }, code));
      continue;
    }
    if ((m = HEADING.exec(line))) {
      out.append(h("h" + m[1].length, {}, inline(m[2])));
      i++;
      continue;
    }
    if (RULE.test(line) && !LIST_ITEM.test(line.replace(/^\s*[-*]\s+[-*]/, "x"))) {
      out.append(h("hr"));
      i++;
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      const header = splitRow(line);
      const aligns = splitRow(lines[i + 1]).map((c) =>
        c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : c.startsWith(":") ? "left" : null
      );
      i += 2;
      const rows = [];
      while (i < lines.length && lines[i].trim() && lines[i].includes("|")) {
        rows.push(splitRow(lines[i]));
        i++;
      }
      const cell = (tag, text, k) => {
        const el = h(tag, {}, inline(text || ""));
        if (aligns[k]) el.style.textAlign = aligns[k];
        return el;
      };
      out.append(
        h(
          "table",
          {},
          h("thead", {}, h("tr", {}, header.map((c, k) => cell("th", c, k)))),
          h("tbody", {}, rows.map((r) => h("tr", {}, header.map((_, k) => cell("td", r[k], k)))))
        )
      );
      continue;
    }
    if (QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && (m = QUOTE.exec(lines[i]))) {
        body.push(m[1]);
        i++;
      }
      out.append(h("blockquote", {}, markdownBlocks(body)));
      continue;
    }
    if (LIST_ITEM.test(line)) {
      i = markdownList(lines, i, out);
      continue;
    }
    const para = [line.trim()];
    i++;
    while (i < lines.length && lines[i].trim() && !isBlockStart(lines[i], lines[i + 1])) {
      para.push(lines[i].trim());
      i++;
    }
    out.append(h("p", {}, inline(para.join("\n"))));
  }
  return out;
}

/** A list starting at `start`, with its nested lists; returns the index after it. */
function markdownList(lines, start, out) {
  const first = LIST_ITEM.exec(lines[start]);
  const base = indentOf(first[1]);
  const ordered = /\d/.test(first[2]);
  const list = h(ordered ? "ol" : "ul");
  if (ordered && parseInt(first[2], 10) !== 1) list.setAttribute("start", String(parseInt(first[2], 10)));
  let i = start;
  while (i < lines.length) {
    const m = LIST_ITEM.exec(lines[i]);
    if (!m || indentOf(m[1]) !== base || /\d/.test(m[2]) !== ordered) break;
    const contentIndent = base + m[2].length + Math.min(Math.max(m[3].length, 1), 4);
    const body = [m[4]];
    i++;
    while (i < lines.length) {
      const line = lines[i];
      if (!line.trim()) {
        // A blank line continues the item only when an indented line follows.
        const next = lines[i + 1];
        if (next !== undefined && next.trim() && indentOf(next) > base) {
          body.push("");
          i++;
          continue;
        }
        break;
      }
      const indent = indentOf(line);
      if (indent <= base && (LIST_ITEM.test(line) || isBlockStart(line, lines[i + 1]))) break;
      if (indent <= base && body.length > 1 && !body[body.length - 1].trim()) break;
      // Continuation: strip the item's indentation (nested lists keep what is beyond it).
      let strip = Math.min(indent, contentIndent);
      if (indent > base && indent < contentIndent) strip = indent > base + 1 ? base + 2 : indent;
      body.push(dedent(line, strip));
      i++;
    }
    const li = h("li");
    const content = markdownBlocks(body);
    // A tight item: its first paragraph is the item's own text.
    if (content.firstChild && content.firstChild.nodeName === "P" && !body.includes("")) {
      const p = content.firstChild;
      content.removeChild(p);
      li.append(...p.childNodes);
    }
    li.append(content);
    list.append(li);
    if (i < lines.length && !lines[i].trim()) {
      const next = lines[i + 1];
      const nm = next !== undefined ? LIST_ITEM.exec(next) : null;
      if (nm && indentOf(nm[1]) === base) i++;
    }
  }
  out.append(list);
  return i;
}

function dedent(line, width) {
  let removed = 0;
  let k = 0;
  while (k < line.length && removed < width) {
    if (line[k] === " ") removed++;
    else if (line[k] === "\t") removed += 4 - (removed % 4);
    else break;
    k++;
  }
  return line.slice(k);
}

function safeURL(text) {
  try {
    const url = new URL(text);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch (_) {
    return null;
  }
}

function link(href, children) {
  const url = safeURL(href);
  if (!url) return children;
  return h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, children);
}

/** Inline Markdown (code, links, bold, italic, strikethrough, line breaks) as DOM nodes. */
function inline(text) {
  const out = document.createDocumentFragment();
  let plain = "";
  const flush = () => {
    if (plain) out.append(plain);
    plain = "";
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    const rest = text.slice(i);
    let m;
    if (c === "\\" && /[\\`*_{}\[\]()#+\-.!|~<>]/.test(text[i + 1] || "")) {
      plain += text[i + 1];
      i += 2;
      continue;
    }
    if (c === "`" && (m = /^(`+)([\s\S]*?[^`])\1(?!`)/.exec(rest))) {
      flush();
      out.append(h("code", {}, m[2].replace(/^ (.*) $/, "$1")));
      i += m[0].length;
      continue;
    }
    if (c === "[" && (m = /^\[([^\]]*)\]\(\s*<?([^\s()<>]+(?:\([^\s()]*\))?)>?(?:\s+"[^"]*")?\s*\)/.exec(rest))) {
      flush();
      out.append(link(m[2], inline(m[1])));
      i += m[0].length;
      continue;
    }
    if (c === "<" && (m = /^<(https?:\/\/[^\s<>]+)>/.exec(rest))) {
      flush();
      out.append(link(m[1], m[1]));
      i += m[0].length;
      continue;
    }
    if ((c === "h" || c === "H") && !/\w/.test(text[i - 1] || "") && (m = /^https?:\/\/[^\s<>"'`]+[^\s<>"'`.,;:!?)\]]/.exec(rest))) {
      flush();
      out.append(link(m[0], m[0]));
      i += m[0].length;
      continue;
    }
    if ((c === "*" || c === "_") && (m = (c === "*" ? /^\*\*(?=\S)([\s\S]*?\S)\*\*/ : /^__(?=\S)([\s\S]*?\S)__(?!\w)/).exec(rest))) {
      if (c === "*" || !/\w/.test(text[i - 1] || "")) {
        flush();
        out.append(h("strong", {}, inline(m[1])));
        i += m[0].length;
        continue;
      }
    }
    if ((c === "*" || c === "_") && (m = (c === "*" ? /^\*(?=[^\s*])([\s\S]*?[^\s*])\*(?!\*)/ : /^_(?=\S)([\s\S]*?\S)_(?!\w)/).exec(rest))) {
      if (c === "*" || !/\w/.test(text[i - 1] || "")) {
        flush();
        out.append(h("em", {}, inline(m[1])));
        i += m[0].length;
        continue;
      }
    }
    if (c === "~" && (m = /^~~(?=\S)([\s\S]*?\S)~~/.exec(rest))) {
      flush();
      out.append(h("del", {}, inline(m[1])));
      i += m[0].length;
      continue;
    }
    if (c === "\n") {
      flush();
      if (/ {2,}$/.test(text.slice(0, i)) || text[i - 1] === "\\") out.append(h("br"));
      else out.append("\n");
      i++;
      continue;
    }
    plain += c;
    i++;
  }
  flush();
  return out;
}
