export type { ExportContents, ExportManifest, ExportOriginal, ExportResult, ExportedOriginal } from './contents.ts';
export { writeAccountExport, ZIP_OPTIONS } from './write-account-export.ts';
export { makeOriginalNamer, safeFileName } from './entry-names.ts';
