// Request and answer types of each operation, taken from the generated OpenAPI types (openapi.ts).
import type { operations } from './openapi.ts';

export type { components, operations, paths } from './openapi.ts';

/** The operationIds of the OpenAPI document. */
export type OperationId = keyof operations;

type ResponsesOf<O extends OperationId> = operations[O]['responses'];
type JsonContent<R> = R extends { content: { 'application/json': infer B } } ? B : never;

/** The JSON body of an operation's success answer (200, 201, or 202 for what is queued). */
export type SuccessBody<O extends OperationId> = JsonContent<ResponsesOf<O>[Extract<keyof ResponsesOf<O>, 200 | 201 | 202>]>;

/** The JSON request body of an operation. */
export type JsonRequest<O extends OperationId> = JsonContent<NonNullable<operations[O]['requestBody']>>;

/** The query parameters of an operation. */
export type QueryOf<O extends OperationId> = NonNullable<operations[O]['parameters']['query']>;

/** The error envelope every failure carries. */
export interface ErrorBody {
  status: 'error';
  message: string;
}

export type RegisterRequest = JsonRequest<'register'>;
export type RegisterResponse = SuccessBody<'register'>;
export type LoginRequest = JsonRequest<'login'>;
export type LoginResponse = SuccessBody<'login'>;

/** The multipart fields of an upload, apart from the file itself. */
export type UploadFields = Omit<NonNullable<operations['upload']['requestBody']>['content']['multipart/form-data'], 'file'>;
export type UploadResponse = SuccessBody<'upload'>;
export type License = UploadFields['cc_license'];

export type DownloadAuthorization = SuccessBody<'download'>;
export type DeleteResponse = SuccessBody<'deleteFile'>;
export type CommentRequest = JsonRequest<'postComment'>;
export type CommentResponse = SuccessBody<'postComment'>;
export type UpdateRequest = JsonRequest<'updateFile'>;
export type UpdateResponse = SuccessBody<'updateFile'>;
export type PurchaseResponse = SuccessBody<'purchase'>;
export type PurchasesQuery = QueryOf<'listPurchases'>;
export type PurchasesResponse = SuccessBody<'listPurchases'>;
export type Purchase = PurchasesResponse['data'][number];
export type CategoriesResponse = SuccessBody<'listCategories'>;
export type Category = CategoriesResponse['data'][number];

export type SearchRequest = JsonRequest<'search'>;
export type SearchOptions = Omit<SearchRequest, 'search'>;
export type SearchFilters = NonNullable<SearchRequest['filters']>;
export type SearchResponse = SuccessBody<'search'>;
export type SearchResult = SearchResponse['results'][number];

export type StatsResponse = SuccessBody<'stats'>;
export type Stats = StatsResponse['data'];
export type FilesQuery = QueryOf<'listFiles'>;
export type FilesResponse = SuccessBody<'listFiles'>;
export type UserFile = FilesResponse['files'][number];
export type CommentsQuery = QueryOf<'listComments'>;
export type CommentsResponse = SuccessBody<'listComments'>;
export type ReceivedComment = CommentsResponse['data'][number];

export type DailyStatsQuery = QueryOf<'dailyStats'>;
export type DailyStatsResponse = SuccessBody<'dailyStats'>;
export type DayStats = DailyStatsResponse['days'][number];
export type DayTotals = DailyStatsResponse['totals'];
export type TopFilesQuery = QueryOf<'topFiles'>;
export type TopMetric = NonNullable<TopFilesQuery['metric']>;
export type TopFilesResponse = SuccessBody<'topFiles'>;
export type TopFile = TopFilesResponse['results'][number];
export type TrendingQuery = QueryOf<'trendingFiles'>;
export type TrendingResponse = SuccessBody<'trendingFiles'>;
export type TrendingFile = TrendingResponse['results'][number];
