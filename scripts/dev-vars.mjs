// The .dev.vars format as wrangler reads it (KEY=VALUE lines, `#` comments, optional `export`,
// values bare or in '…', "…" or `…` quotes; "…" may span lines and turns \n into a newline; no
// $VAR expansion), and the env file scripts/start.mjs hands wrangler with `--env-file`. Wrangler
// expands $VAR in env files, so every `$` is written escaped. Tested by test/node/scripts/dev-vars.test.ts.

const KEY = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

/** The variables of a .dev.vars text; throws naming the line that does not parse. */
export function parseDevVars(text) {
  const out = {};
  const src = text.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
  let at = 0;
  let line = 1;
  while (at < src.length) {
    const end = src.indexOf("\n", at) < 0 ? src.length : src.indexOf("\n", at);
    const raw = src.slice(at, end);
    const trimmed = raw.trim();
    if (trimmed === "" || trimmed.startsWith("#")) {
      at = end + 1;
      line++;
      continue;
    }
    const m = /^\s*(?:export\s+)?([^=\s]+)\s*=\s*/.exec(raw);
    if (!m || !KEY.test(m[1])) throw new Error(`line ${line}: expected KEY=VALUE`);
    const key = m[1];
    const start = at + m[0].length;
    const q = src[start];
    if (q === "'" || q === '"' || q === "`") {
      let close = src.indexOf(q, start + 1);
      // Inside "…" a \" does not close the value (and, as wrangler reads it, keeps its backslash).
      while (q === '"' && close > 0 && src[close - 1] === "\\") close = src.indexOf(q, close + 1);
      if (close < 0) throw new Error(`line ${line}: the ${q} quote of ${key} is never closed`);
      let value = src.slice(start + 1, close);
      if (q === '"') value = value.replace(/\\n/g, "\n").replace(/\\r/g, "\r");
      out[key] = value;
      line += (src.slice(at, close).match(/\n/g) ?? []).length;
      const next = src.indexOf("\n", close);
      at = next < 0 ? src.length : next + 1;
      line++;
      continue;
    }
    const hash = raw.indexOf("#", m[0].length);
    out[key] = (hash < 0 ? raw.slice(m[0].length) : raw.slice(m[0].length, hash)).trim();
    at = end + 1;
    line++;
  }
  return out;
}

/**
 * An env file wrangler reads back as exactly `vars`: each value quoted so nothing in it is read as
 * syntax, `$` escaped. A value that no quoting can carry (a newline together with a double quote)
 * is refused with a message saying where to put it instead.
 */
export function encodeEnvFile(vars) {
  const lines = [];
  for (const [key, value] of Object.entries(vars)) {
    if (!KEY.test(key)) throw new Error(`${key} is not a variable name wrangler accepts`);
    const v = String(value).replace(/\$/g, "\\$");
    let quoted;
    if (!/[\n\r]/.test(v)) {
      if (!v.includes("'")) quoted = `'${v}'`;
      else if (!v.includes("`")) quoted = `\`${v}\``;
      else if (!v.includes('"')) quoted = `"${v}"`;
    } else if (!v.includes('"') && !/\\[nr]/.test(value)) {
      quoted = `"${v.replace(/\n/g, "\\n").replace(/\r/g, "\\r")}"`;
    }
    if (quoted === undefined)
      throw new Error(`the value of ${key} mixes quotes and line breaks in a way an env file cannot carry: put it in .dev.vars instead`);
    lines.push(`${key}=${quoted}`);
  }
  return lines.join("\n") + "\n";
}
