export { BULK_ACTION_STATUSES, BULK_ACTION_TYPES, isFinalBulkActionStatus, type BulkActionStatus, type BulkActionType } from "./statuses.ts";
export { filtersOf, type BulkActionRow } from "./store.ts";
export { listBulkActions } from "./store.ts";
export { MAX_BULK_ACTION_RUN_IDS, abortBulkAction, createBulkAction, retrieveBulkAction, type NewBulkAction } from "./create-bulk-action.ts";
export { BULK_ACTION_CHUNK_SIZE, processNextChunk, type BulkRunFailure, type ChunkResult } from "./process-chunk.ts";
export { bulkActionWork, type BulkActionWorkOptions } from "./due-bulk-actions.ts";
