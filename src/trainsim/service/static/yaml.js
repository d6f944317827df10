// A reader and writer for the YAML subset run configs use: nested mappings by indentation,
// "- item" lists, inline [a, b] and {k: v}, scalars (numbers, true/false, null, quoted text),
// and # comments. Enough for trainsim's examples; anything else is reported with its line.
"use strict";

const TrainsimYaml = (() => {
  function scalar(text, line) {
    const t = text.trim();
    if (t === "" || t === "~" || t === "null") return null;
    if (t === "true" || t === "True") return true;
    if (t === "false" || t === "False") return false;
    if (/^[-+]?(\d[\d_]*)?\.?\d+([eE][-+]?\d+)?$/.test(t)) return Number(t.replace(/_/g, ""));
    if (/^".*"$/.test(t)) return JSON.parse(t);
    if (/^'.*'$/.test(t)) return t.slice(1, -1).replace(/''/g, "'");
    if (t.startsWith("[") || t.startsWith("{")) return flow(t, line);
    return t;
  }

  function flow(text, line) {
    let i = 0;
    const fail = () => { throw new Error(`line ${line}: cannot read ${text}`); };
    const ws = () => { while (i < text.length && /\s/.test(text[i])) i++; };
    function atom(stops) {
      ws();
      if (text[i] === '"' || text[i] === "'") {
        const j = text.indexOf(text[i], i + 1);
        if (j < 0) fail();
        const s = text.slice(i + 1, j);
        i = j + 1;
        return s;
      }
      const start = i;
      while (i < text.length && !stops.includes(text[i])) i++;
      return scalar(text.slice(start, i), line);
    }
    function value() {
      ws();
      if (text[i] === "[" || text[i] === "{") {
        const list = text[i] === "[";
        const close = list ? "]" : "}";
        const out = list ? [] : {};
        i++;
        ws();
        if (text[i] === close) { i++; return out; }
        for (;;) {
          if (list) out.push(value());
          else {
            const key = atom(":");
            if (text[i] !== ":") fail();
            i++;
            out[String(key)] = value();
          }
          ws();
          if (text[i] === ",") { i++; continue; }
          if (text[i] === close) { i++; return out; }
          fail();
        }
      }
      return atom(",]}");
    }
    const v = value();
    ws();
    if (i !== text.length) fail();
    return v;
  }

  function stripComment(s) {
    let q = null;
    for (let i = 0; i < s.length; i++) {
      const c = s[i];
      if (q) { if (c === q) q = null; continue; }
      if (c === '"' || c === "'") q = c;
      else if (c === "#" && (i === 0 || /\s/.test(s[i - 1]))) return s.slice(0, i);
    }
    return s;
  }

  function parse(text) {
    const lines = [];
    text.split(/\r?\n/).forEach((raw, i) => {
      const s = stripComment(raw).replace(/\s+$/, "");
      if (s.trim() === "" || s.trim() === "---") return;
      if (/^\t/.test(s)) throw new Error(`line ${i + 1}: tabs are not allowed for indentation`);
      lines.push({ indent: s.length - s.trimStart().length, text: s.trim(), line: i + 1 });
    });
    let pos = 0;
    function block(indent) {
      if (pos >= lines.length) return null;
      const isList = lines[pos].text.startsWith("- ") || lines[pos].text === "-";
      const out = isList ? [] : {};
      while (pos < lines.length && lines[pos].indent === indent) {
        const l = lines[pos];
        if (isList) {
          if (!(l.text.startsWith("- ") || l.text === "-")) throw new Error(`line ${l.line}: expected "- item"`);
          const rest = l.text.slice(1).trim();
          pos++;
          if (rest === "") out.push(block(lines[pos] ? lines[pos].indent : indent + 2));
          else if (/^[^'"\[{][^:]*:(\s|$)/.test(rest)) {
            // "- key: value" starts a mapping item
            lines.splice(pos, 0, { indent: indent + 2, text: rest, line: l.line });
            out.push(block(indent + 2));
          } else out.push(scalar(rest, l.line));
          continue;
        }
        const m = /^("[^"]+"|'[^']+'|[^:]+?)\s*:(\s+(.*))?$/.exec(l.text);
        if (!m) throw new Error(`line ${l.line}: expected "key: value", got ${l.text}`);
        const key = m[1].replace(/^["']|["']$/g, "");
        const value = m[3];
        pos++;
        if (value !== undefined && value !== "") out[key] = scalar(value, l.line);
        else if (pos < lines.length && lines[pos].indent > indent) out[key] = block(lines[pos].indent);
        else out[key] = null;
      }
      if (pos < lines.length && lines[pos].indent > indent) {
        throw new Error(`line ${lines[pos].line}: unexpected indentation`);
      }
      return out;
    }
    const doc = block(0);
    if (pos < lines.length) throw new Error(`line ${lines[pos].line}: unexpected indentation`);
    return doc || {};
  }

  function dump(value, indent) {
    // one "key: value" per line; nested mappings indented by two spaces
    const lines = [];
    for (const [k, v] of Object.entries(value)) {
      if (v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length) {
        lines.push(`${indent}${k}:`);
        lines.push(dump(v, indent + "  "));
      } else lines.push(`${indent}${k}: ${JSON.stringify(v)}`);
    }
    return lines.join("\n");
  }

  return { parse, dump: v => dump(v, "") + "\n" };
})();
