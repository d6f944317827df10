// A writer of the YAML run configs take: nested mappings by indentation, every value as JSON
// (a JSON scalar or list is YAML too). There is no reader here: a pasted config goes to the
// server as text and is read by the CLI's loader (trainsim.config.safe_load), so the browser
// never reads a number differently (Number("0.10") is 0.1, a different framework version).
"use strict";

const TrainsimYaml = (() => {
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

  return { dump: v => dump(v, "") + "\n" };
})();
