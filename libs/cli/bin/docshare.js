#!/usr/bin/env node
// The docshare command: the CLI's entry point, imported by the package's own name so `exports`
// chooses it: the built JavaScript (dist/main.js, Node >= 20) wherever the package is installed,
// the TypeScript sources (src/main.ts) in the docshare repository, where npm runs everything with
// --conditions=@docshare/source (.npmrc).
await import('@docshare/cli');
