#!/usr/bin/env node
// The docshare command. The CLI is TypeScript run as it is: Node ≥ 22.18 (type stripping) imports
// it directly; an older node hands over to the Node 24 this project installs (the `node` package).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';

if (process.features.typescript) {
  await import('../src/main.ts');
} else {
  let node;
  try {
    node = path.join(path.dirname(createRequire(import.meta.url).resolve('node/package.json')), 'bin', 'node');
  } catch {
    process.stderr.write(`docshare needs Node.js 22.18 or newer (this is ${process.version}); run it with npx docshare, or install a newer Node.js\n`);
    process.exit(2);
  }
  const main = new URL('../src/main.ts', import.meta.url).pathname;
  const child = spawn(node, [main, ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal === 'SIGINT' ? 130 : 1)));
}
