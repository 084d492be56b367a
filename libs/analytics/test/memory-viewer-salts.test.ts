import { viewerSaltsContract } from '../src/contract.ts';
import { makeMemoryViewerSalts, type ViewerSalts } from '../src/viewer-key.ts';

// One adapter per storage: a "reopen" is the same memory (its close releases nothing).
viewerSaltsContract('memory', () => {
  let salts: ViewerSalts | undefined;
  return async (options) => (salts ??= makeMemoryViewerSalts(options));
});
