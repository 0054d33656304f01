const shim = new URL('./fs-shim.mjs', import.meta.url).href;
export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') &&
      context.parentURL?.includes('/node_modules/@modelcontextprotocol/conformance/')) {
    return { url: shim, shortCircuit: true };
  }
  return next(specifier, context);
}
