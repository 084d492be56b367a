/**
 * What slows a newcomer, counted (issue 20): lines per package, type assertions, request state on
 * the response, environment reads in libraries, variables declared more than once, hand-written
 * waits and retry loops, errors matched by message, and the files outside a service's own package
 * that name it. `npm run measure:house` prints the table; `--json` prints it as JSON.
 *
 * Product code only: `libs/<pkg>/src` and `services/<pkg>/src`, no tests, no generated client.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const root = join(import.meta.dirname, '..', '..');

const walk = (dir: string, keep: (path: string) => boolean): string[] => {
  let out: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of names) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out = out.concat(walk(path, keep));
    else if (keep(path)) out.push(path);
  }
  return out;
};

const isSource = (path: string): boolean => path.endsWith('.ts') && !path.endsWith('.d.ts');
const packages = ['libs', 'services'].flatMap((kind) =>
  readdirSync(join(root, kind)).filter((name) => statSync(join(root, kind, name)).isDirectory()).map((name) => `${kind}/${name}`));
/** The generated SDK is written by a generator, not by hand. */
const generated = (path: string): boolean => path.includes('/generated/') || path.endsWith('.gen.ts');
const productFiles = new Map(packages.map((pkg) => [pkg, walk(join(root, pkg, 'src'), (p) => isSource(p) && !generated(p))]));
const allProduct = [...productFiles.values()].flat();

const count = (text: string, pattern: RegExp): number => (text.match(pattern) ?? []).length;
const lines = (path: string): number => readFileSync(path, 'utf8').split('\n').length;

/** `x as T` and `<T>x`, except `as const` (which asserts nothing). */
const assertions = (path: string): number => {
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  let n = 0;
  const visit = (node: ts.Node): void => {
    if (ts.isAsExpression(node) || ts.isTypeAssertionExpression(node)) {
      const type = node.type;
      const isConst = ts.isTypeReferenceNode(type) && type.typeName.getText(source) === 'const';
      if (!isConst) n++;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return n;
};

/**
 * Loops (for, while, do) that wait between turns on a timer or a backoff of their own: hand-written
 * retry or poll loops (a loop on the shared `sleep`/`retrying` of libs/contracts is not one, nor
 * `retrying` itself).
 */
const waitingLoops = (path: string): number => {
  if (path.endsWith('libs/contracts/src/retrying.ts')) return 0;
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  let n = 0;
  const visit = (node: ts.Node): void => {
    if (ts.isForStatement(node) || ts.isWhileStatement(node) || ts.isDoStatement(node)) {
      if (/setTimeout\(|backoffMs\(|BackoffMs\(/.test(node.statement.getText(source))) n++;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return n;
};

const sum = (files: string[], f: (path: string) => number): number => files.reduce((total, path) => total + f(path), 0);
const textOf = (path: string): string => readFileSync(path, 'utf8');

/** Environment variables declared by a `NAME: xxxVar(` entry (a zod or var shape), with where. */
const declarations = new Map<string, string[]>();
for (const path of allProduct) {
  for (const match of textOf(path).matchAll(/\b([A-Z][A-Z0-9_]{2,}):\s*(?:\w+Var\(|z\.)/g)) {
    const name = match[1]!;
    declarations.set(name, [...declarations.get(name) ?? [], relative(root, path)]);
  }
}
const declaredTwice = [...declarations].filter(([, where]) => where.length > 1);

/** Services (their package names) and, for each, the files outside its package that spell its name. */
const serviceNames = readdirSync(join(root, 'services')).filter((name) => name !== 'standalone' && statSync(join(root, 'services', name)).isDirectory());
const everywhere = [
  ...walk(root, (p) => /\.(ts|ya?ml|sh|json)$/.test(p) && !p.includes('/node_modules/') && !p.endsWith('package-lock.json') && !p.includes('/.changeset/') && !p.includes('CHANGELOG')),
].filter((p) => !relative(root, p).startsWith('docs/'));
const spelledOutside = Object.fromEntries(serviceNames.map((name) => {
  const own = join(root, 'services', name) + '/';
  const files = everywhere.filter((p) => !p.startsWith(own) && !/\/test\/|\.test\.ts$|\.e2e\.ts$|\.readme\.ts$|\.browser\.ts$|^tests\//.test(relative(root, p)) && textOf(p).includes(name));
  return [name, files.map((p) => relative(root, p))];
}));

const report = {
  linesPerPackage: Object.fromEntries([...productFiles].map(([pkg, files]) => [pkg, sum(files, lines)])),
  productLines: sum(allProduct, lines),
  typeAssertions: sum(allProduct, assertions),
  typeAssertionsPerPackage: Object.fromEntries([...productFiles].map(([pkg, files]) => [pkg, sum(files, assertions)]).filter(([, n]) => Number(n) > 0)),
  resLocalsUses: sum(allProduct, (p) => count(textOf(p), /res\.locals/g)),
  patchedResponseMethods: sum(allProduct, (p) => count(textOf(p), /res\.(json|writeHead|send|end)\s*=/g)),
  libraryEnvReads: sum(allProduct.filter((p) => relative(root, p).startsWith('libs/') && !p.endsWith('/main.ts') && !relative(root, p).startsWith('libs/cli/')), (p) => count(textOf(p), /process\.env/g)),
  mainEnvReads: sum(allProduct.filter((p) => relative(root, p).startsWith('services/')), (p) => count(textOf(p), /process\.env/g)),
  variablesDeclared: declarations.size,
  variablesDeclaredMoreThanOnce: declaredTwice.length,
  variablesDeclaredMoreThanOnceList: Object.fromEntries(declaredTwice),
  handWrittenSleeps: sum(allProduct, (p) => count(textOf(p), /new Promise[^\n]*setTimeout\(/g)),
  handWrittenRetryLoops: sum(allProduct, waitingLoops),
  errorsMatchedByMessage: sum(allProduct, (p) => count(textOf(p), /\b(?:error|err|e|cause|failure|reason)\.message\s*(?:={2,3}|\.includes\(|\.startsWith\(|\.match\(|\.test\()|\/\.test\((?:error|err|e)\.message\)/g)),
  servicesSpelledOutsideTheirPackage: Object.fromEntries(Object.entries(spelledOutside).map(([name, files]) => [name, files.length])),
  servicesSpelledOutsideTheirPackageFiles: spelledOutside,
};

if (process.argv.includes('--json')) {
  console.log(JSON.stringify(report, null, 2));
} else {
  const { linesPerPackage, variablesDeclaredMoreThanOnceList, servicesSpelledOutsideTheirPackageFiles, typeAssertionsPerPackage, ...rest } = report;
  console.log('lines per package (product code):');
  for (const [pkg, n] of Object.entries(linesPerPackage)) console.log(`  ${pkg.padEnd(30)} ${String(n).padStart(6)}`);
  console.log('type assertions per package:');
  for (const [pkg, n] of Object.entries(typeAssertionsPerPackage)) console.log(`  ${pkg.padEnd(30)} ${String(n).padStart(6)}`);
  for (const [key, value] of Object.entries(rest)) console.log(`${key.padEnd(40)} ${typeof value === 'object' ? JSON.stringify(value) : String(value)}`);
  console.log('variables declared more than once:');
  for (const [name, where] of Object.entries(variablesDeclaredMoreThanOnceList)) console.log(`  ${name}: ${where.join(', ')}`);
  console.log('files outside a service that name it:');
  for (const [name, files] of Object.entries(servicesSpelledOutsideTheirPackageFiles)) console.log(`  ${name}: ${files.join(', ')}`);
}
