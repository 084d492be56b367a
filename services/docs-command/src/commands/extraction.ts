import type { ExtractionReport } from '@docshare/contracts';
import type { CommandMeta } from './command-handler.ts';
import type { CommandContext } from './context.ts';
import { recordedBy, type Recorded } from './recorded.ts';

/** What the text extractor asks of the write side (internal routes, or in process in embedded mode). */
export const makeExtractionCommands = ({ ctx }: { ctx: CommandContext }) => {
  /**
   * Where the text extractor stands on a file: `pending` (nothing recorded yet), `done` (text or
   * a failure recorded), `gone` (deleted, or never uploaded): only `pending` is worth extracting.
   */
  const extractionStatus = async (fileId: number): Promise<'pending' | 'done' | 'gone'> => {
    const state = await ctx.loadFile(fileId);
    if (state.status !== 'active') return 'gone';
    return state.file.extraction ? 'done' : 'pending';
  };

  /** Records what the text extractor found in the file's bytes `blobKey`; null when nothing was recorded. */
  const recordExtraction = async (fileId: number, blobKey: string, report: ExtractionReport, meta: CommandMeta): Promise<Recorded | null> =>
    recordedBy(await ctx.onFile(fileId, { type: 'RecordExtraction', fileId, blobKey, report, now: ctx.clock().toISOString() }, meta));

  return { extractionStatus, recordExtraction };
};
