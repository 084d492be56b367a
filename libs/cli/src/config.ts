// The CLI's configuration file: the server to use and, per server, the token that login or
// register got from it. $XDG_CONFIG_HOME/docshare/config.json (else ~/.config/docshare), mode 0600
// in a directory of mode 0700; written whole to a temporary file, then renamed.
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const DEFAULT_URL = 'http://localhost:8080';

export interface ServerLogin {
  token: string;
  user_id?: number;
  email?: string;
  saved_at?: string;
}

export interface Config {
  /** The server the last login or register used: the default for later commands. */
  url?: string;
  /** Tokens by server base URL: a token is only ever sent to the server that issued it. */
  servers?: Record<string, ServerLogin>;
  /** Files larger than this use resumable uploads: bytes, or `64M`, `1G` (binary units). */
  resumable_threshold?: string | number;
}

export type Env = Record<string, string | undefined>;

function configDir(env: Env): string {
  const xdg = env['XDG_CONFIG_HOME'];
  const base = xdg !== undefined && path.isAbsolute(xdg) ? xdg : path.join(env['HOME'] ?? os.homedir(), '.config');
  return path.join(base, 'docshare');
}

export const configPath = (env: Env): string => path.join(configDir(env), 'config.json');

const normalizeUrl = (url: string): string => url.trim().replace(/\/+$/, '');

export async function readConfig(env: Env): Promise<Config> {
  let text: string;
  try {
    text = await readFile(configPath(env), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : {};
  } catch {
    throw new Error(`${configPath(env)} is not valid JSON: fix or remove it`);
  }
}

export async function writeConfig(env: Env, config: Config): Promise<string> {
  const dir = configDir(env);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const file = configPath(env);
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    await writeFile(tmp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
    await chmod(tmp, 0o600);
    await rename(tmp, file);
  } finally {
    await rm(tmp, { force: true });
  }
  return file;
}

/** The base URL: --url, else DOCSHARE_URL, else the config's, else http://localhost:8080. */
export function resolveBaseUrl(flag: string | undefined, env: Env, config: Config): string {
  return normalizeUrl(flag ?? env['DOCSHARE_URL'] ?? config.url ?? DEFAULT_URL);
}

/** The token to send to `url`: DOCSHARE_TOKEN, else the one saved for that server. */
export function resolveToken(url: string, env: Env, config: Config): { token: string; source: 'env' | 'config' } | undefined {
  const fromEnv = env['DOCSHARE_TOKEN'];
  if (fromEnv !== undefined && fromEnv !== '') return { token: fromEnv, source: 'env' };
  const saved = config.servers?.[url]?.token;
  return saved === undefined ? undefined : { token: saved, source: 'config' };
}

const UNIT: Record<string, number> = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/** `67108864`, `64M`, `64MiB`, `1g` → bytes; undefined when it is not a size. */
export function parseSize(text: string | number): number | undefined {
  if (typeof text === 'number') return Number.isSafeInteger(text) && text >= 0 ? text : undefined;
  const m = /^\s*(\d+)\s*([kmgt]?)(?:i?b)?\s*$/i.exec(text);
  if (m === null) return undefined;
  const n = Number(m[1]) * (UNIT[(m[2] ?? '').toLowerCase()] ?? 1);
  return Number.isSafeInteger(n) ? n : undefined;
}

/**
 * The size above which `upload` uses the resumable protocol: DOCSHARE_RESUMABLE_THRESHOLD, else the
 * config's `resumable_threshold`, else undefined (the SDK's 64 MiB). Throws on a value that is not a size.
 */
export function resolveResumableThreshold(env: Env, config: Config): number | undefined {
  const fromEnv = env['DOCSHARE_RESUMABLE_THRESHOLD'];
  const [raw, where] = fromEnv !== undefined && fromEnv !== '' ? [fromEnv, 'DOCSHARE_RESUMABLE_THRESHOLD'] : [config.resumable_threshold, `resumable_threshold in ${configPath(env)}`];
  if (raw === undefined) return undefined;
  const bytes = parseSize(raw);
  if (bytes === undefined) throw new Error(`${where} must be a size in bytes (or 64M, 1G), got '${String(raw)}'`);
  return bytes;
}
