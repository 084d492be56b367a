import { readFileSync } from 'node:fs';
import { z } from 'zod';

/*
 * Configuration from environment variables, one schema per service: a shape that maps each
 * variable the service reads to how it is read (zod), so the schema is the list of what the
 * service can be told. `readConfig` parses all of it at once and reports every bad or missing
 * variable in one error; a service then exits with CONFIG_ERROR_EXIT_CODE, which supervisors
 * take as "a restart cannot fix this".
 */

/** sysexits' EX_CONFIG: the exit code of a process whose configuration is wrong. */
export const CONFIG_ERROR_EXIT_CODE = 78;

/** Every problem of a configuration, one per line. */
export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`configuration: ${problems.join('; ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

const present = (raw: string | undefined): raw is string => raw !== undefined && raw.trim() !== '';

/** An integer from `min` to `max`; absent or empty: `fallback`. */
export const intVar = (fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) => z.string().optional().transform((raw, ctx) => {
  if (!present(raw)) return fallback;
  const value = Number(raw);
  if (Number.isSafeInteger(value) && value >= min && value <= max) return value;
  const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
  ctx.addIssue({ code: 'custom', message: `must be an integer ${range}, got "${raw}"` });
  return z.NEVER;
});

/** A text; absent or empty: `fallback`, or required without one. */
export const stringVar = (fallback?: string) => z.string().optional().transform((raw, ctx) => {
  if (present(raw)) return raw;
  if (fallback !== undefined) return fallback;
  ctx.addIssue({ code: 'custom', message: 'is required' });
  return z.NEVER;
});

/** An integer from `min` that may be absent (empty counts as absent): its default then depends on another value. */
export const optionalIntVar = (min: number) => z.string().optional().transform((raw, ctx) => {
  if (!present(raw)) return undefined;
  const value = Number(raw);
  if (Number.isSafeInteger(value) && value >= min) return value;
  ctx.addIssue({ code: 'custom', message: `must be an integer >= ${min}, got "${raw}"` });
  return z.NEVER;
});

/** A TCP port that may be absent (empty counts as absent). */
export const optionalPortVar = () => z.string().optional().transform((raw, ctx) => {
  if (!present(raw)) return undefined;
  const value = Number(raw);
  if (Number.isSafeInteger(value) && value >= 1 && value <= 65_535) return value;
  ctx.addIssue({ code: 'custom', message: `must be a port number (1-65535), got "${raw}"` });
  return z.NEVER;
});

/** A text that may be absent (empty counts as absent). */
export const optionalVar = () => z.string().optional().transform((raw) => (present(raw) ? raw : undefined));

/** A comma-separated list (e.g. KAFKA_BROKERS), at least one entry. */
export const listVar = () => z.string().optional().transform((raw, ctx) => {
  const items = (raw ?? '').split(',').map((item) => item.trim()).filter((item) => item !== '');
  if (items.length > 0) return items;
  ctx.addIssue({ code: 'custom', message: 'is required (a comma-separated list)' });
  return z.NEVER;
});

/**
 * Secrets as files (Docker/compose secrets): for every variable `X` of `shape` that is unset,
 * `X_FILE` names a file whose content (without a trailing newline) is its value. A shape that
 * declares `X_FILE` itself gives it its own meaning (the gateway's JWT_SECRET_FILE creates the
 * file when missing). Returns the values read and a problem per file that cannot be read.
 */
const valuesFromFiles = (shape: z.ZodRawShape, env: NodeJS.ProcessEnv): { values: Record<string, string>; problems: string[] } => {
  const values: Record<string, string> = {};
  const problems: string[] = [];
  for (const key of Object.keys(shape)) {
    const fileKey = `${key}_FILE`;
    const path = env[fileKey];
    if (fileKey in shape || !present(path) || present(env[key])) continue;
    try {
      values[key] = readFileSync(path, 'utf8').replace(/\r?\n$/, '');
    } catch (error) {
      problems.push(`${fileKey} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}: ${path})`);
    }
  }
  return { values, problems };
};

/** Reads every variable of `shape` from `env` (or its `_FILE`); throws a ConfigError naming each bad or missing one. */
export const readConfig = <S extends z.ZodRawShape>(shape: S, env: NodeJS.ProcessEnv): z.output<z.ZodObject<S>> => {
  const files = valuesFromFiles(shape, env);
  const result = z.object(shape).safeParse({ ...env, ...files.values });
  if (result.success && files.problems.length === 0) return result.data;
  const issues = result.success ? [] : result.error.issues.map((issue) => `${issue.path.map(String).join('.')} ${issue.message}`);
  throw new ConfigError([...files.problems, ...issues]);
};

