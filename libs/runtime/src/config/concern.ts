import type { z } from 'zod';
import { ConfigError, CONFIG_ERROR_EXIT_CODE, readConfig } from '@docshare/http';

/**
 * One concern of a service's configuration (http, mongo, kafka, blob, auth ...): the variables it
 * reads (a zod shape, each variable declared once, with its one default) and how their values
 * become the typed settings a main passes down. `read` may throw a ConfigError (a rule across
 * variables: "JWT_SECRET or JWT_SECRET_FILE is required").
 */
export interface Concern<S extends z.ZodRawShape = z.ZodRawShape, T = unknown> {
  readonly vars: S;
  read(values: z.output<z.ZodObject<S>>, env: NodeJS.ProcessEnv): T;
  /**
   * Defaults `read` applies itself, for a variable whose schema has none because one service
   * differs on purpose (MONGO_SOCKET_TIMEOUT_MS) or requires it (DOCS_COMMAND_URL): the README
   * table is tested against these and the schemas' own defaults.
   */
  readonly defaults?: Readonly<Record<string, string | number>>;
}

/** A concern from its variables and how they are read (types inferred). */
export const concern = <S extends z.ZodRawShape, T>(
  vars: S, read: (values: z.output<z.ZodObject<S>>, env: NodeJS.ProcessEnv) => T, defaults?: Readonly<Record<string, string | number>>,
): Concern<S, T> => (defaults === undefined ? { vars, read } : { vars, read, defaults });

/** What `loadConfig(env, concerns)` returns: each concern's settings under its name. */
export type ConfigOf<C extends Record<string, Concern>> = { [K in keyof C]: ReturnType<C[K]['read']> };

/** Every variable the concerns read, as one shape (a variable shared by two concerns is the same schema). */
export const varsOf = (concerns: Record<string, Concern>): z.ZodRawShape =>
  Object.assign({}, ...Object.values(concerns).map((c) => c.vars)) as z.ZodRawShape;

/**
 * A service's whole configuration, read once at start from `env` (and `X_FILE` secrets): each
 * concern's variables are parsed and its settings built. Throws one ConfigError naming every bad
 * or missing variable of every concern.
 */
export const loadConfig = <C extends Record<string, Concern>>(env: NodeJS.ProcessEnv, concerns: C): ConfigOf<C> => {
  const problems = new Set<string>();
  const settings: Record<string, unknown> = {};
  for (const [name, c] of Object.entries(concerns)) {
    try {
      settings[name] = c.read(readConfig(c.vars, env), env);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      // A variable two concerns share is named once.
      for (const problem of error.problems) problems.add(problem);
    }
  }
  if (problems.size > 0) throw new ConfigError([...problems]);
  return settings as ConfigOf<C>;
};

/**
 * loadConfig for a service's main: a bad configuration is logged (or printed) and the process exits
 * with CONFIG_ERROR_EXIT_CODE (78), which supervisors take as "a restart cannot fix this".
 */
export const loadConfigOrExit = <C extends Record<string, Concern>>(
  env: NodeJS.ProcessEnv, concerns: C, log: (message: string) => void = (message) => process.stderr.write(`${message}\n`),
): ConfigOf<C> => {
  try {
    return loadConfig(env, concerns);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    log(error.message);
    process.exit(CONFIG_ERROR_EXIT_CODE);
  }
};
