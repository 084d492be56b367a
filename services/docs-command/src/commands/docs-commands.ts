import type { EventStore } from '@docshare/event-store';
import type { BlobStore } from '@docshare/blob-store';
import type { ClaimStore } from '@docshare/claim-store';
import type { Tokens, UrlSigner } from '@docshare/auth';
import type { Logger } from '@docshare/http';
import type { makeFilesQueries } from '@docshare/files-projector';
import { makeMemoryStorageLedger, type StorageLedger } from '@docshare/storage-ledger';
import { makeMemoryViewerSalts, makeViewerKeys, type ViewerKeys } from '@docshare/analytics';
import { makeCommandContext } from './context.ts';
import { makeUserCommands } from './users.ts';
import { makeCategories } from './categories.ts';
import { makeUploadCommands } from './uploads.ts';
import { makeFileCommands } from './files.ts';
import { makeContentCommands } from './content.ts';
import { makeContentLinks } from './links.ts';
import { makeSalesCommands } from './sales.ts';
import { makeExtractionCommands } from './extraction.ts';
import { makeStorageQuota, resolvedBy } from './storage-quota.ts';
import { DEFAULT_RESUMABLE, makeResumableUploads, resolvedHold, type ResumableSettings } from './resumable.ts';
import { fileStateFrom } from './blob-sweeper.ts';
import type { Committed, StoredChange } from './recorded.ts';
import { makeWebhookCommands, type WebhookCommandsDeps } from './webhooks.ts';
import { generateKekText, makeMemoryKeyStore, makePersonalData, parseKek, type PersonalData } from '@docshare/personal-data';
import { makeExports, type ExportSources } from './exports.ts';
import { makeAccountProcess, type ErasureReadModel } from './accounts.ts';
import { makeErasureLinks } from './user-links.ts';

export interface DocsCommandsDeps {
  events: EventStore;
  claims: ClaimStore;
  blobs: BlobStore;
  tokens: Tokens;
  signer: UrlSigner;
  logger: Logger;
  publicBaseUrl: string;
  downloadUrlTtlSeconds: number;
  /** Told after each recorded append (wakes the outbox relay); never waited on by the answer. */
  afterCommit?: (committed: Committed) => void;
  /** Told after each recorded upload and deletion, with the file's size (metrics: upload sizes, bytes stored). */
  onStored?: (change: StoredChange) => void;
  now?: () => Date;
  passwordCost?: number;
  /** Bytes each user may store (STORAGE_QUOTA_BYTES); 0 or absent means unlimited. */
  storageQuotaBytes?: number;
  /** Who viewed (libs/analytics makeViewerKeys on the process's salt store); default: salts in memory. */
  viewerKeys?: ViewerKeys;
  /** Bytes each user's files take (libs/storage-ledger), moved by uploads and deletions; default: in memory. */
  ledger?: StorageLedger;
  /** The files a user bought, a page of them, from the files read model (read-only); absent: api-purchases answers 503. */
  purchasesOf?: ReturnType<typeof makeFilesQueries>['purchasesOf'];
  /** Resumable uploads' limits (MAX_RESUMABLE_BYTES, UPLOAD_SESSION_TTL_SECONDS, UPLOAD_PART_BYTES, UPLOAD_PART_BYTES_PER_SECOND). */
  resumable?: ResumableSettings;
  /** Webhooks (issue 23): the limit and URL policy, the secrets' sealer, the dispatcher's delivery store; absent: the webhook routes answer 503. */
  webhooks?: Omit<WebhookCommandsDeps, 'ctx'>;
  /** Personal data sealed per person (issue 24): the e-mail index of account claims, names sealed in them, keys destroyed by erasures. */
  personalData?: PersonalData;
  /**
   * What the accounts process manager (erasures, exports) reads and removes beyond the command
   * side's own stores: the read models, the user's stored answers and delivery state. Absent: the
   * process manager is not run here (requests are still recorded).
   */
  accounts?: {
    readModel: ErasureReadModel;
    exportSources: ExportSources;
    idempotency: { removeScope(prefix: string): Promise<number> };
  };
}

/**
 * The write side's use cases, one module per entity (each validates against the entity's folded
 * state and records events, and returns what it recorded), composed on one command context: one
 * command handler and its cache, one clock, one storage quota on one ledger.
 */
export const makeDocsCommands = (deps: DocsCommandsDeps) => {
  const { events, claims, blobs, tokens, signer, logger, onStored } = deps;
  const ctx = makeCommandContext({ events, afterCommit: deps.afterCommit, now: deps.now });
  const ledger = deps.ledger ?? makeMemoryStorageLedger({ resolve: resolvedBy(fileStateFrom(events)), resolveHold: resolvedHold(events, deps.now) });
  const quota = makeStorageQuota({ quotaBytes: deps.storageQuotaBytes ?? 0, ledger });
  const links = makeContentLinks({ signer, publicBaseUrl: deps.publicBaseUrl, downloadUrlTtlSeconds: deps.downloadUrlTtlSeconds, clock: ctx.clock });
  const categories = makeCategories({ ctx, claims });

  // Absent (unit tests): keys in this process's memory under a random KEK.
  const personalData = deps.personalData ?? makePersonalData({ store: makeMemoryKeyStore(), kek: parseKek(generateKekText()) });
  const users = makeUserCommands({ ctx, claims, tokens, personalData, passwordCost: deps.passwordCost });
  const { register, login, issueToken, requestErasure, erasureStatus } = users;
  const uploads = makeUploadCommands({ ctx, blobs, logger, quota, ledger, categories, onStored });
  const { reserveStorage, uploadSink, upload } = uploads;
  const resumable = makeResumableUploads({
    ctx, blobs, logger, ledger, quotaBytes: deps.storageQuotaBytes ?? 0, categories, signer, publicBaseUrl: deps.publicBaseUrl, uploads,
    settings: deps.resumable ?? DEFAULT_RESUMABLE,
  });
  const viewerKeys = deps.viewerKeys ?? makeViewerKeys({ salts: makeMemoryViewerSalts({ now: ctx.clock }), now: ctx.clock });
  const { update, remove, comment, view, peek } = makeFileCommands({ ctx, blobs, logger, quota, ledger, viewerKeys, onStored });
  const { authorizeDownload, openContent } = makeContentCommands({ ctx, blobs, signer, links });
  const { purchase, purchases, purchaseUrl } = makeSalesCommands({ ctx, links, purchasesOf: deps.purchasesOf });
  const { extractionStatus, recordExtraction } = makeExtractionCommands({ ctx });
  const webhooks = deps.webhooks === undefined ? undefined : makeWebhookCommands({ ctx, ...deps.webhooks });
  const exports = makeExports({
    ctx, blobs, signer, publicBaseUrl: deps.publicBaseUrl, logger, ...(deps.accounts ? { sources: deps.accounts.exportSources } : {}),
  });
  const accounts = deps.accounts === undefined ? undefined : makeAccountProcess({
    ctx, users, removeFile: remove, readModel: deps.accounts.readModel, personalData, blobs,
    idempotency: deps.accounts.idempotency, exports, logger,
    ...(webhooks ? { webhooks, webhookStore: deps.webhooks!.store } : {}),
  });

  return {
    register, login, issueToken, reserveStorage, uploadSink, upload, remove, authorizeDownload, openContent, comment, update, purchase, purchaseUrl, purchases, view, peek,
    extractionStatus, recordExtraction, ledger, webhooks, ...resumable,
    requestErasure, erasureStatus, exports, accounts,
    /** Whether the user's account is being or was erased (their tokens no longer work): the user's stream, cached. */
    isErased: async (userId: number): Promise<boolean> => {
      const state = await users.loadUser(userId);
      return state.status === 'erasing' || state.status === 'erased';
    },
    erasureLinks: makeErasureLinks({ signer, publicBaseUrl: deps.publicBaseUrl, clock: ctx.clock }),
  };
};

export type DocsCommands = ReturnType<typeof makeDocsCommands>;
