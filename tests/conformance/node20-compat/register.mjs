// Loaded with `node --import`: lets @modelcontextprotocol/conformance (engines: node >= 22) run on
// Node 20. The suite's dist does `import { globSync } from "fs"`, which Node 20 lacks (and the
// named exports of a builtin's ESM facade are fixed, so patching fs from a --require preload does
// not help). A resolve hook hands the suite's own `fs` imports a shim that adds globSync.
import { register } from 'node:module';
if (typeof (await import('node:fs')).globSync !== 'function') {
  register('./hooks.mjs', import.meta.url);
}
