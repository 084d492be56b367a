// A progress bar on stderr (cli-progress), drawn only when stderr is a terminal.
import cliProgress from 'cli-progress';
import type { Progress } from '@docshare/client';

export interface ProgressSink {
  update(progress: Progress): void;
  /** Renames the bar (before it is first drawn). */
  setLabel(label: string): void;
  stop(): void;
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** 1536 → `1.5 KiB`. */
export function formatBytes(n: number): string {
  let v = n;
  let unit = 0;
  while (v >= 1024 && unit < UNITS.length - 1) {
    v /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${v} B` : `${v.toFixed(v < 10 ? 1 : 0)} ${UNITS[unit]}`;
}

const NOOP: ProgressSink = { update: () => {}, setLabel: () => {}, stop: () => {} };

/**
 * A bar labelled `label` on `stream` when it is a TTY and `enabled`; else nothing at all (so
 * logs and pipes never get carriage returns). A total that is unknown draws no bar.
 */
export function progressBar(initialLabel: string, stream: NodeJS.WriteStream, enabled: boolean): ProgressSink {
  if (!enabled || stream.isTTY !== true) return NOOP;
  let label = initialLabel;
  let bar: cliProgress.SingleBar | undefined;
  let started = 0;
  const payload = (loaded: number, total: number): Record<string, string> => {
    const seconds = (Date.now() - started) / 1000;
    return {
      label,
      done: formatBytes(loaded),
      size: formatBytes(total),
      speed: seconds > 0.2 ? ` | ${formatBytes(Math.round(loaded / seconds))}/s` : '',
    };
  };
  return {
    update({ loaded, total }) {
      if (total === undefined) return;
      if (bar === undefined) {
        started = Date.now();
        bar = new cliProgress.SingleBar({
          stream,
          format: '{label} [{bar}] {percentage}% | {done} / {size}{speed} | ETA {eta_formatted}',
          barCompleteChar: '=', barIncompleteChar: ' ', barsize: 24,
          hideCursor: true, gracefulExit: false, fps: 10, etaBuffer: 50,
        });
        bar.start(Math.max(total, 1), Math.min(loaded, total), payload(loaded, total));
        return;
      }
      bar.update(Math.min(loaded, total), payload(loaded, total));
    },
    setLabel(text) {
      label = text;
    },
    stop() {
      bar?.stop();
      bar = undefined;
    },
  };
}
