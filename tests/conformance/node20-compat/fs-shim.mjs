// node:fs plus a globSync(pattern, {cwd}) built from Node 20 APIs (recursive readdir and
// path.matchesGlob). The suite uses it only to collect `**/checks.json` result files.
import fs from 'node:fs';
import path from 'node:path';
export * from 'node:fs';
export default fs;
export function globSync(pattern, opts = {}) {
  const cwd = opts.cwd ?? process.cwd();
  const entries = fs.readdirSync(cwd, { recursive: true });
  const bare = pattern.startsWith('**/') ? pattern.slice(3) : null;
  return entries.map(String).filter((rel) =>
    path.matchesGlob(rel, pattern) || (bare !== null && path.matchesGlob(rel, bare)));
}
